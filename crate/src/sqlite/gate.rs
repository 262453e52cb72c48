//! The write gate (docs/decisions/write-gate.md; off by default, `OpenOptions::write_gate(true)`
//! turns it on: it wins with hundreds of writer processes, loses with tens): before
//! `BEGIN IMMEDIATE`, a store opened on a WAL file natively takes an exclusive open-file-description lock (`F_OFD_SETLKW`) on a side
//! file, `<db>-leasefence-gate`, and drops it right after its `COMMIT` or `ROLLBACK`. Gated
//! writers of one file then wait in the kernel, which wakes one when the holder lets go, instead
//! of each polling SQLite's write lock with the busy handler's sleeps (the collapse measured in
//! docs/decisions/blocking-locks.md).
//!
//! The gate is only an optimisation in front of SQLite's own locking, never a replacement: behind
//! it `BEGIN IMMEDIATE` still takes SQLite's write lock, with the busy handler, so a writer that
//! does not know the gate (the Python seed, an older leasefence, a caller's own connection) is
//! excluded exactly as before, only without the queue's order.
//!
//! The wait keeps the store's busy timeout. POSIX has no lock call with a time limit, so a write
//! that finds the gate taken hands a descriptor of the side file to a helper thread, which blocks
//! in `F_OFD_SETLKW`, while the caller waits on a condition variable until the helper has the lock
//! or the deadline passes. At the deadline the caller answers busy (as SQLite would) and leaves
//! the helper behind: when its lock comes, it finds nobody waiting and closes the descriptor,
//! which releases the lock at once. The next write of the same store joins that helper instead of
//! starting another, so a stopped holder costs at most one parked thread per store. Neither side
//! polls: the caller sleeps on the condition variable, the helper in the kernel. An uncontended
//! write takes the lock with one non-blocking `F_OFD_SETLK` and starts no thread.
//!
//! The time spent at the gate counts against the busy timeout: the busy handler of SQLite's own
//! wait behind the gate starts its clock at the gate's (see [`WaitStart`]), so one operation waits
//! at most the busy timeout in all.
//!
//! Open-file-description locks (not classic POSIX record locks) because they belong to the
//! descriptor, not the process: two stores of one process exclude each other, closing an
//! unrelated descriptor of the side file drops nothing, and the kernel drops the lock when the
//! descriptor closes, including when the process dies (SIGKILL).

use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Result};

/// The connection's client-data name under which its gate lives (so the gate closes with the
/// connection, and [`enter`] finds it from the connection alone).
const CLIENT_DATA: &std::ffi::CStr = c"leasefence_write_gate";

/// What the side file's name adds to the database's.
pub(crate) const SUFFIX: &str = "-leasefence-gate";

/// When the current operation began waiting at the gate, shared with the connection's busy
/// handler: set while an operation that waited runs `BEGIN IMMEDIATE`, so SQLite's wait behind the
/// gate counts from the same start.
pub(crate) type WaitStart = Arc<Mutex<Option<Instant>>>;

/// One store's gate: a path, an idle descriptor to reuse, and the helper's wait.
pub(crate) struct Gate {
    path: PathBuf,
    timeout: Duration,
    /// The descriptor the next write locks with; `None` while a helper has it (or before the
    /// first write after a helper kept one).
    spare: RefCell<Option<File>>,
    /// Set when the side file cannot be locked at all (a file system without OFD locks): the
    /// store then writes ungated, as before the gate existed.
    broken: Cell<bool>,
    wait: Arc<Wait>,
    began: WaitStart,
}

/// The state shared with the helper thread.
struct Wait {
    state: Mutex<State>,
    changed: Condvar,
}

enum State {
    /// No helper.
    Idle,
    /// A helper is blocked in `F_OFD_SETLKW`; `wanted` when a caller is waiting for it.
    Blocked { wanted: bool },
    /// The helper got the lock while a caller was waiting: the caller takes the descriptor.
    Granted(File),
    /// The helper's lock call failed: the caller goes on ungated.
    Failed,
}

/// A held gate: released (and its descriptor kept for the next write) when dropped.
pub(crate) struct Pass<'c> {
    gate: &'c Gate,
    file: Option<File>,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            if set_lock(&file, libc::F_UNLCK, false).is_ok() {
                *self.gate.spare.borrow_mut() = Some(file);
            }
            // Otherwise the descriptor closes here, which releases the lock too.
        }
    }
}

/// Attaches a gate to `conn`, a native WAL connection on `db` whose busy handler counts from
/// the returned [`WaitStart`]. Creates the side file (with the database's permission bits) if it
/// is missing. `None` when the side file cannot be opened: the store then writes ungated.
pub(crate) fn attach(conn: &Connection, db: &Path, timeout: Duration) -> Option<WaitStart> {
    let mut name = db.as_os_str().to_owned();
    name.push(SUFFIX);
    let path = PathBuf::from(name);
    let mode = std::fs::metadata(db)
        .map(|m| m.mode() & 0o777)
        .unwrap_or(0o644);
    let file = open_side_file(&path, mode).ok()?;
    let began: WaitStart = Arc::default();
    let gate = Gate {
        path,
        timeout,
        spare: RefCell::new(Some(file)),
        broken: Cell::new(false),
        wait: Arc::new(Wait {
            state: Mutex::new(State::Idle),
            changed: Condvar::new(),
        }),
        began: began.clone(),
    };
    // SAFETY: the name is ours alone and always holds a `Gate` (read back in `enter` as one).
    unsafe { conn.set_clientdata(CLIENT_DATA, Some(gate)) }.ok()?;
    Some(began)
}

fn gate_of(conn: &Connection) -> Option<&Gate> {
    // SAFETY: only `attach` sets this name, always to a `Gate`.
    unsafe { conn.get_clientdata::<Gate, _>(CLIENT_DATA) }
        .ok()
        .flatten()
}

/// Takes `conn`'s gate before its `BEGIN IMMEDIATE`, waiting at most the busy timeout. `Ok(None)`
/// when the connection has no gate or it cannot be used now (the write then goes on ungated,
/// behind SQLite's lock alone); a busy [`Error::Storage`] of `operation` at the deadline.
pub(crate) fn enter<'c>(conn: &'c Connection, operation: &'static str) -> Result<Option<Pass<'c>>> {
    let Some(gate) = gate_of(conn) else {
        return Ok(None);
    };
    if gate.broken.get() {
        return Ok(None);
    }
    gate.enter(operation)
}

/// Clears the gate's wait start once `BEGIN IMMEDIATE` has returned, so that a later, unrelated
/// busy wait of the connection counts from its own start.
pub(crate) fn began_writing(conn: &Connection) {
    if let Some(gate) = gate_of(conn) {
        *lock(&gate.began) = None;
    }
}

impl Gate {
    fn enter(&self, operation: &'static str) -> Result<Option<Pass<'_>>> {
        let started = Instant::now();
        let wait = &self.wait;
        let mut state = lock(&wait.state);
        if matches!(*state, State::Idle | State::Failed) {
            *state = State::Idle;
            let file = match self.spare.borrow_mut().take() {
                Some(file) => file,
                None => match open_side_file(&self.path, 0o644) {
                    Ok(file) => file,
                    Err(_) => return Ok(None),
                },
            };
            match set_lock(&file, libc::F_WRLCK, false) {
                Ok(()) => return Ok(Some(self.pass(file))),
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES)) => {}
                Err(_) => {
                    self.broken.set(true);
                    return Ok(None);
                }
            }
            let helper = Arc::clone(wait);
            let spawned = std::thread::Builder::new()
                .name("leasefence-gate".into())
                .stack_size(64 * 1024)
                .spawn(move || helper.block(file));
            if spawned.is_err() {
                // No thread to wait with: wait in SQLite's busy handler, as without a gate.
                return Ok(None);
            }
            *state = State::Blocked { wanted: true };
        } else if let State::Blocked { wanted } = &mut *state {
            // A helper left by an earlier write that gave up is still waiting: wait for it.
            *wanted = true;
        }
        *lock(&self.began) = Some(started);
        let deadline = started + self.timeout;
        loop {
            match std::mem::replace(&mut *state, State::Idle) {
                State::Granted(file) => return Ok(Some(self.pass(file))),
                State::Failed | State::Idle => return Ok(None),
                State::Blocked { .. } => {
                    let now = Instant::now();
                    if now >= deadline {
                        *state = State::Blocked { wanted: false };
                        *lock(&self.began) = None;
                        return Err(busy(operation, &self.path));
                    }
                    *state = State::Blocked { wanted: true };
                    state = wait
                        .changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }

    fn pass(&self, file: File) -> Pass<'_> {
        Pass {
            gate: self,
            file: Some(file),
        }
    }
}

impl Wait {
    /// The helper thread: blocks until the lock is `file`'s, then hands it to the waiting caller
    /// or, when nobody waits any more, closes `file` (which releases the lock).
    fn block(&self, file: File) {
        let locked = loop {
            match set_lock(&file, libc::F_WRLCK, true) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let mut state = lock(&self.state);
        let wanted = matches!(*state, State::Blocked { wanted: true });
        *state = match (locked, wanted) {
            (Ok(()), true) => State::Granted(file),
            (Ok(()), false) => State::Idle, // `file` closes below: the lock is released.
            (Err(_), true) => State::Failed,
            (Err(_), false) => State::Idle,
        };
        drop(state);
        self.changed.notify_all();
    }
}

fn open_side_file(path: &Path, mode: u32) -> io::Result<File> {
    // Read and write: a write lock needs a descriptor open for writing. Close-on-exec (std's
    // default), so a child program never inherits the lock.
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(mode)
        .open(path)
}

/// `F_OFD_SETLK(W)` of the whole file: `kind` is `F_WRLCK` or `F_UNLCK`.
fn set_lock(file: &File, kind: libc::c_int, wait: bool) -> io::Result<()> {
    // SAFETY: an all-zero `flock` is valid (it is plain integers); the fields that matter are set
    // below, and `l_pid` must be 0 for OFD locks.
    let mut region: libc::flock = unsafe { std::mem::zeroed() };
    region.l_type = kind as libc::c_short;
    region.l_whence = libc::SEEK_SET as libc::c_short;
    region.l_start = 0;
    region.l_len = 0; // to the end of the file, however long
    let command = if wait {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    // SAFETY: a descriptor that `file` keeps open, and a pointer to a live `flock`.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), command, &mut region) };
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The busy error SQLite itself gives when the busy timeout passes, with where the wait was.
fn busy(operation: &'static str, gate: &Path) -> Error {
    let message = format!(
        "database is locked (another leasefence process held the write gate {} for the whole \
         busy timeout)",
        gate.display()
    );
    Error::storage(operation)(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
        Some(message),
    ))
}

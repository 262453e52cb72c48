//! The write gate (docs/decisions/write-gate.md; on by default, `OpenOptions::write_gate(false)`
//! turns it off: it wins with tens and hundreds of writer processes, costs a fifth with a few):
//! before
//! `BEGIN IMMEDIATE`, a store opened on a WAL file natively joins a first-come, first-served
//! queue kept with open-file-description locks (`F_OFD_SETLK(W)`) on a side file,
//! `<db>-leasefence-gate`, and leaves it right after its `COMMIT` or `ROLLBACK`. Gated writers of
//! one file wait in the kernel, each woken when the writer ahead of it lets go, instead of each
//! polling SQLite's write lock with the busy handler's sleeps (the collapse measured in
//! docs/decisions/blocking-locks.md).
//!
//! The queue is a ticket lock made of byte-range locks (a CLH queue): under a short lock on the
//! file's first byte (the tail) a writer reads the last ticket from the file's first 8 bytes,
//! writes the next, and locks that ticket's one-byte slot; then it waits for the previous
//! ticket's slot, which its holder keeps until its write ends, and takes the gate's own lock (the
//! second byte) for its write. One lock of the whole file, as before, would let a writer that had
//! just let go take it again before the waiter the kernel woke could run: two writers could pass
//! it back and forth while the others starved (tests: `gated_writers_alone_share_the_jobs_fairly`).
//! A writer that dies lets go of its slot with its descriptor, so the next ticket is served.
//!
//! A writer that is stopped (SIGSTOP, a debugger) while it waits in the queue still holds its
//! slot, and would hold up everyone behind it until it runs again. So a waiting writer looks at
//! the whole gate every [`STALL`]: each writer counts its pass in the file's bytes 8..16, and when
//! no writer passed since the last look and the gate's lock is free, the writer goes ahead of the
//! queue and takes the gate's lock directly; it lets go of its own slot after its write, so the
//! writers behind it follow in order again. (If the stopped writer holds the tail, so that no
//! ticket can be taken, a store whose helper still waits there writes behind SQLite's lock alone
//! until the tail frees: no second parked thread per write.) Going ahead costs only the order:
//! the gate's lock still lets one writer in at a time.
//!
//! A writer stopped *holding* the gate is mostly inside its write and holds SQLite's write lock
//! too; nobody can go past that one, with or without a gate. But stopped just before its
//! `BEGIN IMMEDIATE` or just after its `COMMIT`, it holds the gate alone. So a waiter that sees the
//! gate held and nobody passing for [`HELD_STALL`] (a quarter of a shorter busy timeout) gives up
//! its place and writes behind SQLite's lock alone, whose exclusion is all correctness needs; its
//! store keeps doing so while the gate stays held at the same pass count.
//!
//! The gate is only an optimisation in front of SQLite's own locking, never a replacement: behind
//! it `BEGIN IMMEDIATE` still takes SQLite's write lock, with the busy handler, so a writer that
//! does not know the gate (the Python seed, an older leasefence, a caller's own connection) is
//! excluded exactly as before, only without the queue's order.
//!
//! The wait keeps the store's busy timeout. POSIX has no lock call with a time limit, so a write
//! that has to wait hands a descriptor of the side file to a helper thread, which blocks in
//! `F_OFD_SETLKW`, while the caller waits on a condition variable until the helper's ticket is
//! served or the deadline passes. At the deadline the caller answers busy (as SQLite would) and
//! leaves the helper behind: when its turn comes, it finds nobody waiting and closes the
//! descriptor, which passes the turn on at once. The next write of the same store joins that
//! helper instead of starting another, so a stopped holder costs at most one parked thread per
//! store. Neither side polls: the caller sleeps on the condition variable (looking at the gate
//! once every [`STALL`]), the helper in the kernel. An uncontended write joins and passes with
//! non-blocking `F_OFD_SETLK` calls (six, and one more to leave; two reads and writes of 8 bytes
//! in the page cache) and starts no thread.
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
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
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

/// How long a waiting writer lets the whole gate stand still (no writer passed it) before it
/// goes ahead of the queue, when the gate itself is free: the writer ahead of it is stopped
/// (SIGSTOP, a debugger) or starved of CPU. Going ahead costs only the order, never the
/// exclusion, which the gate's own lock keeps.
const STALL: Duration = Duration::from_millis(100);

/// How long a waiting writer lets the whole gate stand still while the gate's own lock is held
/// before it stops waiting for it and writes behind SQLite's lock alone: the holder is stopped
/// between the gate and SQLite's lock (or after its commit), or in a write longer than this. A
/// quarter of a shorter busy timeout.
const HELD_STALL: Duration = Duration::from_secs(1);

/// One store's gate: a path, an idle descriptor to reuse, and the helper's wait.
pub(crate) struct Gate {
    path: PathBuf,
    timeout: Duration,
    /// The descriptor the next write queues with; `None` while a helper has it (or before the
    /// first write after a helper kept one).
    spare: RefCell<Option<Arc<File>>>,
    /// Set when the side file cannot be locked at all (a file system without OFD locks): the
    /// store then writes ungated, as before the gate existed.
    broken: Cell<bool>,
    /// The state shared with the current helper thread; a helper left behind by a write that went
    /// ahead keeps its own, and the next write starts a fresh one.
    wait: RefCell<Arc<Wait>>,
    /// Set when a write stopped waiting for a held gate: a descriptor to look with and the pass
    /// count then. While the count stands and the gate is still held, writes go behind SQLite's
    /// lock at once instead of each waiting [`HELD_STALL`] (and parking one more helper).
    stuck: RefCell<Option<(Arc<File>, u64)>>,
    began: WaitStart,
}

/// The state shared with a helper thread.
struct Wait {
    state: Mutex<State>,
    changed: Condvar,
}

impl Wait {
    fn new() -> Arc<Wait> {
        Arc::new(Wait {
            state: Mutex::new(State::Idle),
            changed: Condvar::new(),
        })
    }
}

enum State {
    /// No helper.
    Idle,
    /// A helper is on its way through the queue with `file`; `wanted` when a caller is waiting
    /// for it, `ticket` once it has one, `at_gate` once it is served and waits for the gate's own
    /// lock (from then on the caller never goes ahead: both would hold the lock of one
    /// descriptor).
    Queued {
        file: Arc<File>,
        wanted: bool,
        ticket: Option<u64>,
        at_gate: bool,
    },
    /// The helper is through (its slot and the gate held) while a caller was waiting: the caller
    /// takes the descriptor and the ticket.
    Granted(Arc<File>, u64),
    /// The caller went ahead of a stalled queue with the helper's descriptor: whatever the helper
    /// gets from now on it lets go of at once. `at_tail` when the helper had no ticket yet (it
    /// waits for the tail lock).
    WentAhead { at_tail: bool },
    /// The helper's lock call failed: the caller goes on ungated.
    Failed,
}

/// A held gate: released (and its descriptor kept for the next write) when dropped.
pub(crate) struct Pass<'c> {
    gate: &'c Gate,
    file: Arc<File>,
    /// The ticket whose slot this write holds (none when it went ahead before its helper had
    /// one); letting go of it serves the next ticket.
    ticket: Option<u64>,
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        // The gate first, then the slot: the next ticket's writer, woken by the slot, finds the
        // gate free.
        let gate = set_lock(&self.file, libc::F_UNLCK, GATE, false);
        let slot = self.ticket.map_or(Ok(()), |t| {
            set_lock(&self.file, libc::F_UNLCK, slot(t), false)
        });
        // A descriptor a helper still shares (this write went ahead of it) is the helper's to
        // close; one that failed to unlock closes here, which releases its locks too.
        if gate.is_ok() && slot.is_ok() && Arc::strong_count(&self.file) == 1 {
            *self.gate.spare.borrow_mut() = Some(Arc::clone(&self.file));
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
        spare: RefCell::new(Some(Arc::new(file))),
        broken: Cell::new(false),
        wait: RefCell::new(Wait::new()),
        stuck: RefCell::new(None),
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
        let stuck = self.stuck.borrow_mut().take();
        if let Some((file, passes)) = stuck {
            if generation(&file) == Some(passes) && gate_held(&file) {
                // Still the same holder, still not moving.
                *self.stuck.borrow_mut() = Some((file, passes));
                return Ok(None);
            }
        }
        let went_ahead = match *lock(&self.wait.borrow().state) {
            State::WentAhead { at_tail } => Some(at_tail),
            _ => None,
        };
        if let Some(at_tail) = went_ahead {
            if at_tail && Arc::strong_count(&self.wait.borrow()) > 1 {
                // The helper of a write that went ahead still waits for the tail, which a stopped
                // writer holds: joining again would wait there too (a STALL each write, and one
                // more parked thread). Until it comes through, write behind SQLite's lock alone.
                return Ok(None);
            }
            // Otherwise its place was given up and the queue behind it moves: join afresh, and
            // leave the helper on its own.
            *self.wait.borrow_mut() = Wait::new();
        }
        let wait = Arc::clone(&self.wait.borrow());
        let mut state = lock(&wait.state);
        match &mut *state {
            State::Idle | State::Failed => {
                *state = State::Idle;
                let file = match self.spare.borrow_mut().take() {
                    Some(file) => file,
                    None => match open_side_file(&self.path, 0o644) {
                        Ok(file) => Arc::new(file),
                        Err(_) => return Ok(None),
                    },
                };
                let (step, ticket, at_gate) = match queue_up(&file, false) {
                    Ok(Queued::Served(ticket)) => match set_lock(&file, libc::F_WRLCK, GATE, false)
                    {
                        Ok(()) => {
                            bump_generation(&file);
                            return Ok(Some(self.pass(file, Some(ticket))));
                        }
                        Err(e) if would_block(&e) => (Step::Gate(ticket), Some(ticket), true),
                        Err(_) => {
                            self.broken.set(true);
                            return Ok(None);
                        }
                    },
                    Ok(Queued::Behind(ticket)) => (Step::Behind(ticket), Some(ticket), false),
                    Ok(Queued::TailTaken) => (Step::Join, None, false),
                    Err(_) => {
                        self.broken.set(true);
                        return Ok(None);
                    }
                };
                let helper = Arc::clone(&wait);
                let theirs = Arc::clone(&file);
                let spawned = std::thread::Builder::new()
                    .name("leasefence-gate".into())
                    .stack_size(64 * 1024)
                    .spawn(move || helper.block(theirs, step));
                if spawned.is_err() {
                    // No thread to wait with (and the descriptor, with any place in the queue it
                    // took, closes with the last reference): wait in SQLite's busy handler, as
                    // without a gate.
                    return Ok(None);
                }
                *state = State::Queued {
                    file,
                    wanted: true,
                    ticket,
                    at_gate,
                };
            }
            // A helper left by an earlier write that gave up is still queued: wait for it.
            State::Queued { wanted, .. } => *wanted = true,
            State::Granted(..) | State::WentAhead { .. } => {}
        }
        *lock(&self.began) = Some(started);
        let deadline = started + self.timeout;
        // The pass count at the last look, and when that look was.
        let (mut seen, mut looked) = (None, started);
        loop {
            match std::mem::replace(&mut *state, State::Idle) {
                State::Granted(file, ticket) => return Ok(Some(self.pass(file, Some(ticket)))),
                State::Failed | State::Idle | State::WentAhead { .. } => return Ok(None),
                State::Queued {
                    file,
                    ticket,
                    at_gate,
                    ..
                } => {
                    let now = Instant::now();
                    if now >= deadline {
                        *state = State::Queued {
                            file,
                            wanted: false,
                            ticket,
                            at_gate,
                        };
                        *lock(&self.began) = None;
                        return Err(busy(operation, &self.path));
                    }
                    // Every STALL, a look at the whole gate: if no writer passed it since the
                    // last look and it is free, the queue ahead is stuck; go ahead of it.
                    let passed = generation(&file);
                    let still = match passed {
                        Some(_) if passed == seen => now.duration_since(looked),
                        _ => Duration::ZERO,
                    };
                    if !at_gate
                        && still >= STALL
                        && set_lock(&file, libc::F_WRLCK, GATE, false).is_ok()
                    {
                        *state = State::WentAhead {
                            at_tail: ticket.is_none(),
                        };
                        bump_generation(&file);
                        return Ok(Some(self.pass(file, ticket)));
                    }
                    // Held and standing still for longer: its holder is stopped outside SQLite's
                    // lock (between the gate and `BEGIN IMMEDIATE`, or after its commit), which
                    // would hold every gated writer up until it runs again. SQLite's own lock is
                    // all the exclusion correctness needs: write behind it alone, and give up
                    // this place in the queue so the writers behind follow.
                    if still >= self.held_stall() {
                        *state = State::WentAhead {
                            at_tail: ticket.is_none(),
                        };
                        if let Some(ticket) = ticket {
                            // The helper, when it comes through, lets go of it again (or finds
                            // the caller gone and never takes it): harmless twice.
                            let _ = set_lock(&file, libc::F_UNLCK, slot(ticket), false);
                        }
                        if let Some(passes) = passed {
                            *self.stuck.borrow_mut() = Some((file, passes));
                        }
                        return Ok(None);
                    }
                    if passed != seen {
                        (seen, looked) = (passed, now);
                    }
                    *state = State::Queued {
                        file,
                        wanted: true,
                        ticket,
                        at_gate,
                    };
                    state = wait
                        .changed
                        .wait_timeout(state, (deadline - now).min(STALL).min(self.held_stall()))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }

    /// A quarter of the busy timeout, at most [`HELD_STALL`]: a write always gets to SQLite's
    /// lock well before its deadline.
    fn held_stall(&self) -> Duration {
        (self.timeout / 4).min(HELD_STALL)
    }

    fn pass(&self, file: Arc<File>, ticket: Option<u64>) -> Pass<'_> {
        Pass {
            gate: self,
            file,
            ticket,
        }
    }
}

/// Where a helper thread starts.
enum Step {
    /// Take a ticket (the tail was taken when the caller tried), then wait for the predecessor.
    Join,
    /// The ticket is taken and its slot held: wait for the predecessor's slot.
    Behind(u64),
    /// Served: wait for the gate's own lock (held by a writer that went ahead, or by a process
    /// of the first version, which locks the whole side file).
    Gate(u64),
}

impl Wait {
    /// The helper thread: waits in the kernel until `file`'s ticket is served and the gate is
    /// its, then hands both to the waiting caller or, when nobody waits any more, lets go of
    /// them, so the queue moves on through it.
    fn block(&self, file: Arc<File>, step: Step) {
        let through = self.go_through(&file, step);
        let mut state = lock(&self.state);
        let wanted = matches!(*state, State::Queued { wanted: true, .. });
        match (through, wanted) {
            (Ok(Some(ticket)), true) => *state = State::Granted(file, ticket),
            (Ok(Some(ticket)), false) => {
                let _ = set_lock(&file, libc::F_UNLCK, GATE, false);
                let _ = set_lock(&file, libc::F_UNLCK, slot(ticket), false);
                *state = State::Idle;
            }
            // The caller went ahead: it is on its own, and so is this helper.
            (Ok(None), _) => {}
            (Err(_), true) => *state = State::Failed,
            (Err(_), false) => *state = State::Idle,
        }
        drop(state);
        self.changed.notify_all();
    }

    /// The queue's steps from `step` on; `Ok(None)` when the caller went ahead meanwhile (what
    /// this helper held is let go of by then).
    fn go_through(&self, file: &File, step: Step) -> io::Result<Option<u64>> {
        let (ticket, served) = match step {
            Step::Join => match queue_up(file, true)? {
                Queued::Served(ticket) => (ticket, true),
                Queued::Behind(ticket) => (ticket, false),
                Queued::TailTaken => unreachable!("a blocking wait returns with the tail"),
            },
            Step::Behind(ticket) => (ticket, false),
            Step::Gate(ticket) => (ticket, true),
        };
        if !self.note(|ticket_of, _| *ticket_of = Some(ticket)) {
            // Went ahead before this ticket existed: nobody will let go of its slot but us.
            set_lock(file, libc::F_UNLCK, slot(ticket), false)?;
            return Ok(None);
        }
        if !served {
            wait_for_predecessor(file, ticket)?;
        }
        if !self.note(|_, at_gate| *at_gate = true) {
            // The caller holds (or held) this ticket's slot and lets go of it itself.
            return Ok(None);
        }
        loop {
            match set_lock(file, libc::F_WRLCK, GATE, true) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        }
        bump_generation(file);
        Ok(Some(ticket))
    }

    /// Records progress in the shared state; `false` when the caller went ahead instead.
    fn note(&self, change: impl FnOnce(&mut Option<u64>, &mut bool)) -> bool {
        match &mut *lock(&self.state) {
            State::Queued {
                ticket, at_gate, ..
            } => {
                change(ticket, at_gate);
                true
            }
            _ => false,
        }
    }
}

/// The outcome of joining the queue.
enum Queued {
    /// Ticket taken and the predecessor already gone: next is the gate's own lock.
    Served(u64),
    /// Ticket taken, its slot held; the predecessor still holds its own.
    Behind(u64),
    /// (Non-blocking only) another writer is taking a ticket right now.
    TailTaken,
}

/// Joins the queue: under the tail lock, reads the last ticket handed out, writes the next one,
/// and locks that ticket's slot; then tries the predecessor's slot once. With `wait`, waits for
/// the tail lock; without, answers [`Queued::TailTaken`] instead.
fn queue_up(file: &File, wait: bool) -> io::Result<Queued> {
    loop {
        match set_lock(file, libc::F_WRLCK, TAIL, wait) {
            Ok(()) => break,
            Err(e) if wait && e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if !wait && would_block(&e) => return Ok(Queued::TailTaken),
            Err(e) => return Err(e),
        }
    }
    let taken = take_ticket(file);
    // The tail lock is released on every path; an error of the unlock itself only means the
    // descriptor is unusable, which the next call finds.
    let _ = set_lock(file, libc::F_UNLCK, TAIL, false);
    let ticket = taken?;
    match set_lock(file, libc::F_WRLCK, slot(ticket.wrapping_sub(1)), false) {
        Ok(()) => {
            set_lock(file, libc::F_UNLCK, slot(ticket.wrapping_sub(1)), false)?;
            Ok(Queued::Served(ticket))
        }
        Err(e) if would_block(&e) => Ok(Queued::Behind(ticket)),
        Err(e) => Err(e),
    }
}

/// Under the tail lock: the next ticket, written back, with its slot locked. A slot that is
/// somehow held already (the counter was reset under live writers, say) is skipped for the next
/// ticket, so joining never waits while holding the tail.
fn take_ticket(file: &File) -> io::Result<u64> {
    let mut ticket = read_u64(file, LAST_TICKET_AT).unwrap_or(0);
    for _ in 0..64 {
        ticket = ticket.wrapping_add(1);
        match set_lock(file, libc::F_WRLCK, slot(ticket), false) {
            Ok(()) => {
                file.write_all_at(&ticket.to_le_bytes(), LAST_TICKET_AT)?;
                return Ok(ticket);
            }
            Err(e) if would_block(&e) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free slot in the write gate's queue"))
}

/// Waits until the slot before `ticket` is free (its holder wrote and let go, gave up, or died),
/// then lets go of it again: a writer holds only its own slot through its write.
fn wait_for_predecessor(file: &File, ticket: u64) -> io::Result<()> {
    let before = slot(ticket.wrapping_sub(1));
    loop {
        match set_lock(file, libc::F_WRLCK, before, true) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => break other?,
        }
    }
    set_lock(file, libc::F_UNLCK, before, false)
}

/// How many writers have passed the gate (wrapping), as its holder last wrote it; `None` when it
/// cannot be read.
fn generation(file: &File) -> Option<u64> {
    read_u64(file, GENERATION_AT)
}

/// Counts one more pass; called with the gate held. Losing a count only delays a stall's
/// detection, so a failed write is ignored.
fn bump_generation(file: &File) {
    let next = generation(file).unwrap_or(0).wrapping_add(1);
    let _ = file.write_all_at(&next.to_le_bytes(), GENERATION_AT);
}

/// Whether another descriptor holds the gate's own lock (`F_OFD_GETLK`); `false` when the
/// kernel cannot say, so the caller queues as usual.
fn gate_held(file: &File) -> bool {
    // SAFETY: as in `set_lock`: plain integers, `l_pid` 0 for OFD locks.
    let mut flock: libc::flock = unsafe { std::mem::zeroed() };
    flock.l_type = libc::F_WRLCK as libc::c_short;
    flock.l_whence = libc::SEEK_SET as libc::c_short;
    flock.l_start = GATE.start;
    flock.l_len = GATE.len;
    // SAFETY: a descriptor that `file` keeps open, and a pointer to a live `flock`.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut flock) };
    rc == 0 && flock.l_type != libc::F_UNLCK as libc::c_short
}

fn read_u64(file: &File, at: u64) -> Option<u64> {
    let mut bytes = [0u8; 8];
    match file.read_at(&mut bytes, at) {
        Ok(8) => Some(u64::from_le_bytes(bytes)),
        Ok(_) => Some(0), // a new side file: nothing written there yet
        Err(_) => None,
    }
}

fn would_block(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES))
}

/// A byte-range of the side file: `start` and `len` as in `struct flock`.
#[derive(Clone, Copy)]
struct Region {
    start: i64,
    len: i64,
}

/// The tail lock: held only while a writer takes a ticket.
const TAIL: Region = Region { start: 0, len: 1 };
/// The gate's own lock: held by the writer whose turn it is, through its write.
const GATE: Region = Region { start: 1, len: 1 };
/// Where the last ticket handed out and the passes are counted: the file's first 16 bytes, in
/// the page cache only (never synced: they only need to outlive the writers that are running).
const LAST_TICKET_AT: u64 = 0;
const GENERATION_AT: u64 = 8;

/// Where the slots begin, and how many there are before they wrap around.
const SLOTS_START: i64 = 4096;
const SLOT_COUNT: u64 = 1 << 40;

/// Ticket `ticket`'s slot: one byte, locked by its writer from taking the ticket to the end of
/// its write, and waited for by the next ticket's writer.
fn slot(ticket: u64) -> Region {
    Region {
        start: SLOTS_START + (ticket % SLOT_COUNT) as i64,
        len: 1,
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

/// `F_OFD_SETLK(W)` of `region`: `kind` is `F_WRLCK` or `F_UNLCK`.
fn set_lock(file: &File, kind: libc::c_int, region: Region, wait: bool) -> io::Result<()> {
    // SAFETY: an all-zero `flock` is valid (it is plain integers); the fields that matter are set
    // below, and `l_pid` must be 0 for OFD locks.
    let mut flock: libc::flock = unsafe { std::mem::zeroed() };
    flock.l_type = kind as libc::c_short;
    flock.l_whence = libc::SEEK_SET as libc::c_short;
    flock.l_start = region.start;
    flock.l_len = region.len;
    let command = if wait {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    // SAFETY: a descriptor that `file` keeps open, and a pointer to a live `flock`.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), command, &mut flock) };
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

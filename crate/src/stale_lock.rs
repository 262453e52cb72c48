//! Clearing a dot-file lock (`<db>.lock`) that nobody can hold any more.
//!
//! Files shared with Node use dot-file locks: native SQLite's `unix-dotfile` VFS holds the lock as
//! an empty directory `<db>.lock`, the Node package as a file with an owner record. The Node
//! package breaks a record whose process died by itself; a directory has no owner to check, so
//! when a native process is killed while holding one, every other process waits on it forever.
//!
//! The rule used here needs no owner: **a process holds the lock only while it has the database
//! file open**, so when no process on this machine has it open, the lock is stale and is removed.
//! Every open file descriptor of every process is checked through `/proc` (by device and inode,
//! so other names of the same file count too). If any process has the file open, or a process's
//! descriptors cannot be read (another user's, without root), nothing is removed: the caller is
//! told who uses the file. Two clearers never race: each takes an exclusive `flock` on the lock
//! itself first, and a lock that appears in between belongs to a process that has the file open.
//!
//! Limits: processes on another machine (a network file system) or in another PID namespace (a
//! container sharing the volume) are invisible in `/proc`; run this only where every user of the
//! file runs on this machine's process table. Linux only (`/proc`).

use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What [`clear_stale_lock`] found, and did.
///
/// ```no_run
/// use leasefence::LockCheck;
/// match leasefence::clear_stale_lock("jobs.db".as_ref())? {
///     LockCheck::Free => println!("no lock"),
///     LockCheck::Cleared => println!("removed a lock left by a dead process"),
///     LockCheck::InUse { pids } => println!("in use by {pids:?}: stop them first"),
/// }
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockCheck {
    /// There is no `<db>.lock`.
    Free,
    /// `<db>.lock` existed while no process had the database open; it was removed.
    Cleared,
    /// These processes have the database open (or could not be checked), so the lock may be
    /// theirs; nothing was removed.
    InUse {
        /// The process ids, ascending.
        pids: Vec<u32>,
    },
}

/// Removes `<db>.lock` if no process on this machine has the database file open (see the
/// module's rules); otherwise says who has it open. Never touches the database file itself.
///
/// ```no_run
/// let check = leasefence::clear_stale_lock("jobs.db".as_ref())?;
/// assert_ne!(check, leasefence::LockCheck::Cleared, "nobody had died holding it");
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn clear_stale_lock(db: &Path) -> Result<LockCheck> {
    let failed = |problem: String| Error::Open {
        path: db.display().to_string(),
        problem,
    };
    let db_meta = std::fs::metadata(db).map_err(|err| {
        failed(format!(
            "cannot look at the database file ({err}); give the path of an existing database"
        ))
    })?;
    let lock_path = lock_path(db);
    // Open the lock itself (file or directory) and hold an exclusive flock on it: a second
    // clearer fails here instead of racing this one.
    let lock = match std::fs::File::open(&lock_path) {
        Ok(lock) => lock,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(LockCheck::Free),
        Err(err) => {
            return Err(failed(format!(
                "cannot open {}: {err}",
                lock_path.display()
            )))
        }
    };
    // SAFETY: flock on a descriptor this function owns; no memory is shared.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(failed(format!(
            "another process is clearing {} right now; try again in a moment",
            lock_path.display()
        )));
    }
    let lock_meta = lock
        .metadata()
        .map_err(|err| failed(format!("cannot look at {}: {err}", lock_path.display())))?;

    let pids = processes_with_open(db_meta.dev(), db_meta.ino())
        .map_err(|err| failed(format!("cannot list processes in /proc: {err}")))?;
    if !pids.is_empty() {
        return Ok(LockCheck::InUse { pids });
    }
    // Still the lock we checked? (No one can have replaced it: only a process with the database
    // open takes the lock, and there is none; this guards against a clearer's mistake, cheaply.)
    match std::fs::symlink_metadata(&lock_path) {
        Ok(now) if now.dev() == lock_meta.dev() && now.ino() == lock_meta.ino() => {}
        Ok(_) | Err(_) => return Ok(LockCheck::Free),
    }
    let removed = if lock_meta.is_dir() {
        std::fs::remove_dir(&lock_path)
    } else {
        std::fs::remove_file(&lock_path)
    };
    match removed {
        Ok(()) => Ok(LockCheck::Cleared),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(LockCheck::Free),
        Err(err) => Err(failed(format!(
            "cannot remove the stale lock {}: {err}",
            lock_path.display()
        ))),
    }
}

fn lock_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Every process with a descriptor on the file `(dev, ino)`, plus every process whose
/// descriptors cannot be read (it might have the file open). This process counts too: a
/// connection of its own may be the holder (the function itself never opens the database).
fn processes_with_open(dev: u64, ino: u64) -> std::io::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let Some(pid) = entry?
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let fds = match std::fs::read_dir(format!("/proc/{pid}/fd")) {
            Ok(fds) => fds,
            // Exited since the listing.
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(_) => {
                pids.push(pid);
                continue;
            }
        };
        for fd in fds.flatten() {
            // metadata() follows the /proc link to the open file itself.
            if let Ok(meta) = std::fs::metadata(fd.path()) {
                if meta.dev() == dev && meta.ino() == ino {
                    pids.push(pid);
                    break;
                }
            }
        }
    }
    pids.sort_unstable();
    Ok(pids)
}

/// Removes `<db>.lock` if it provably belongs to a process of an earlier boot, which no longer
/// exists: a lock directory (native SQLite's) or a file last modified before this machine booted,
/// a record written under another boot id, or a file without a complete record (a live holder
/// always publishes a record it already wrote, so only a power loss leaves one empty or torn).
/// Native openers of dot-file-locked files call it, so that after a power loss they come back by
/// themselves, like the Node package, which applies the same rules. Removal follows the Node
/// package's break protocol (crate/src/wasm/node_vfs/dotlock.rs): the per-instance mutex
/// `<db>.lock.break-<id>` is taken first, and the lock is removed only if it is still the same
/// instance and still stale, so two breakers never remove a lock taken in between. Returns
/// whether a lock was removed; any doubt leaves the lock alone (the opener then waits as before).
pub(crate) fn clear_lock_from_before_boot(db: &Path) -> bool {
    let lock = lock_path(db);
    match stale_instance(&lock) {
        Some(id) => break_instance(&lock, &id, 0),
        None => false,
    }
}

/// The id (as the Node package names it: the record's nonce, or `i<inode>`) of the lock at
/// `lock` when it is stale by the boot rules above.
fn stale_instance(lock: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(lock).ok()?;
    let boot_ms = boot_time_secs().map(|secs| secs * 1000);
    let mtime_ms = meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000;
    let before_boot = boot_ms.is_some_and(|boot| mtime_ms < boot);
    let by_inode = format!("i{}", meta.ino());
    if meta.is_dir() {
        return before_boot.then_some(by_inode);
    }
    if !meta.is_file() {
        return None;
    }
    let text = std::fs::read(lock).ok()?;
    let Some(record) = crate::lock_record::parse(&String::from_utf8_lossy(&text)) else {
        return Some(by_inode); // empty or torn: a record lost with the power
    };
    let stale = match (record.boot.as_deref(), boot_id().as_deref()) {
        (Some(theirs), Some(ours)) => theirs != ours,
        _ => before_boot,
    };
    stale.then_some(record.nonce)
}

fn break_instance(lock: &Path, id: &str, depth: u32) -> bool {
    if depth >= 4 {
        return false;
    }
    let mut mutex = lock.as_os_str().to_owned();
    mutex.push(format!(".break-{id}"));
    let mutex = PathBuf::from(mutex);
    for _ in 0..3 {
        if publish_record(&mutex) {
            let removed = stale_instance(lock).as_deref() == Some(id)
                && match std::fs::symlink_metadata(lock) {
                    Ok(meta) if meta.is_dir() => std::fs::remove_dir(lock).is_ok(),
                    Ok(_) => std::fs::remove_file(lock).is_ok(),
                    Err(_) => false,
                };
            let _ = std::fs::remove_file(&mutex);
            return removed;
        }
        // Another breaker holds the mutex (leave it to them), or one that died with the power
        // left it behind: break that first.
        match stale_instance(&mutex) {
            Some(dead) => {
                break_instance(&mutex, &dead, depth + 1);
            }
            None => return false,
        }
    }
    false
}

/// Publishes an owner record of this process at `target` the Node package's way (write a temp
/// file, sync it, hard-link it); false when `target` exists or anything fails.
fn publish_record(target: &Path) -> bool {
    use std::io::Write;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let pid = std::process::id();
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let nonce = format!("{pid}-{:016x}-{n}", clock ^ (u64::from(pid) << 40));
    let start = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            let after = stat.rfind(')').map(|i| stat[i + 1..].to_string())?;
            after.split_whitespace().nth(19).map(str::to_string)
        });
    let record = crate::lock_record::format(
        pid,
        start.as_deref(),
        &hostname(),
        0,
        boot_id().as_deref(),
        &nonce,
    );
    let mut tmp = target.as_os_str().to_owned();
    tmp.push(format!(".{nonce}.tmp"));
    let tmp = PathBuf::from(tmp);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut file| {
            file.write_all(record.as_bytes())?;
            file.sync_data()
        });
    let linked = written.is_ok() && std::fs::hard_link(&tmp, target).is_ok();
    let _ = std::fs::remove_file(&tmp);
    linked
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into a buffer this function owns.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    if ok {
        String::from_utf8_lossy(&buf[..len]).into_owned()
    } else {
        String::new()
    }
}

fn boot_id() -> Option<String> {
    let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_string())
}

fn boot_time_secs() -> Option<i64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .find_map(|line| line.strip_prefix("btime "))
        .and_then(|secs| secs.trim().parse().ok())
}

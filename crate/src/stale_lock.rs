//! Clearing a dot-file lock (`<db>.lock`) that nobody can hold any more: `leasefence unlock`.
//!
//! Files shared with Node use dot-file locks. leasefence itself, Node and native, holds the lock
//! as a file with an owner record (crate/src/dot_lock), and the next opener breaks a record whose
//! process died by itself: no one needs this module for those. SQLite's own `unix-dotfile` VFS
//! (an older native leasefence, or another SQLite program sharing the file) holds it as an empty
//! directory, which has no owner to check: when such a process is killed while holding one, every
//! other process waits on it, until this clears it.
//!
//! The rule used here needs no owner: **a process holds the lock only while it has the database
//! file open**, so when no process on this machine has it open, the lock is stale and is removed.
//! Every open file descriptor of every process is checked through `/proc` (by device and inode,
//! so other names of the same file count too). If any process has the file open, or a process's
//! descriptors cannot be read (another user's, without root), nothing is removed: the caller is
//! told who uses the file. Two clearers never race: each takes an exclusive `flock` on the lock
//! itself first (waiting up to two seconds for another), and a lock that appears in between
//! belongs to a process that has the file open.
//! It clears a record file the same way (whatever its record says).
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
/// ```
/// use leasefence::LockCheck;
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("jobs.db");
/// drop(leasefence::LeaseStore::open(&db)?);
/// // A lock directory a dead process left behind (SQLite's unix-dotfile names it so).
/// std::fs::create_dir(dir.path().join("jobs.db.lock")).unwrap();
/// match leasefence::clear_stale_lock(&db)? {
///     LockCheck::Free => panic!("the lock is there"),
///     LockCheck::Cleared => assert!(!dir.path().join("jobs.db.lock").exists()),
///     LockCheck::InUse { pids } => panic!("in use by {pids:?}: nobody has it open"),
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
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("jobs.db");
/// let store = leasefence::LeaseStore::open(&db)?;
/// // No lock file: nothing to clear, with the store open or not.
/// assert_eq!(leasefence::clear_stale_lock(&db)?, leasefence::LockCheck::Free);
/// drop(store);
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
    if !flock_within(&lock, CLEARER_WAIT) {
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

/// How long a clearer waits for another one's `flock` on the lock. A clearer holds it for one
/// scan of `/proc`; a process forked by another thread of a clearer's program (between its fork
/// and its exec) holds a copy of the descriptor, and with it the `flock`, for as long again.
const CLEARER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Takes an exclusive `flock` on `file`, polling until `wait` has passed; false if it is still
/// held by another open file description then.
fn flock_within(file: &std::fs::File, wait: std::time::Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        // SAFETY: flock on a descriptor the caller owns; no memory is shared.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// A database file nobody has open, and a lock directory beside it.
    fn stale(dir: &Path) -> (PathBuf, PathBuf) {
        let db = dir.join("jobs.db");
        std::fs::write(&db, b"").unwrap();
        let lock = lock_path(&db);
        std::fs::create_dir(&lock).unwrap();
        (db, lock)
    }

    fn hold_flock(lock: &Path) -> std::fs::File {
        let held = std::fs::File::open(lock).unwrap();
        // SAFETY: flock on a descriptor this test owns.
        assert_eq!(
            unsafe { libc::flock(held.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        held
    }

    #[test]
    fn a_clearer_waits_for_a_flock_held_briefly_then_clears() {
        // The flock a forked child holds until its exec, or a second clearer's scan.
        let dir = tempfile::tempdir().unwrap();
        let (db, lock) = stale(dir.path());
        let held = hold_flock(&lock);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        assert_eq!(clear_stale_lock(&db).unwrap(), LockCheck::Cleared);
        assert!(!lock.exists());
        release.join().unwrap();
    }

    #[test]
    fn a_clearer_gives_up_on_a_flock_held_past_its_wait_and_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let (db, lock) = stale(dir.path());
        let _held = hold_flock(&lock);
        let started = Instant::now();
        let err = clear_stale_lock(&db).unwrap_err();
        assert!(started.elapsed() >= CLEARER_WAIT, "it waited first");
        assert!(
            err.to_string().contains("another process is clearing"),
            "{err}"
        );
        assert!(lock.is_dir(), "nothing was removed");
    }
}

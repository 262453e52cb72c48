//! Waking idle workers on an SQLite file (Linux): inotify on the file's directory, filtered to
//! the names a commit writes (docs/decisions/waking.md). In rollback-journal modes a commit
//! writes the database file and then deletes, truncates or zeroes `-journal` (its commit point);
//! in WAL mode it appends to `-wal` (a checkpoint later writes the database file). The directory
//! is watched rather than the files because `-wal` and `-journal` come and go. Shared memory
//! (`-shm`) is written through `mmap`, which inotify never reports.
//!
//! One thread per watch blocks in `poll(2)` on the inotify descriptor and on a pipe that the
//! watch's drop closes, so an idle worker's process wakes only when the file is written. Each
//! read of events that names one of the files calls the [`Wakeup`] once, however many writes
//! it holds.

use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::thread::JoinHandle;

use crate::wake::{Wakeup, Watch};

/// The watch's thread and the pipe whose closing stops it.
struct Running {
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Closing the write end makes the read end readable (end of file): the thread returns.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Watches the database file at `path`; `None` when inotify cannot (no such directory, the
/// watch limit reached): the worker then polls.
pub(crate) fn watch_file(path: &Path, wakeup: Wakeup) -> Option<Watch> {
    let name = path.file_name()?.to_owned();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let names = commit_names(&name);
    let dir = CString::new(dir.into_os_string().into_vec()).ok()?;
    // SAFETY: plain system calls on descriptors this function owns from here on.
    let inotify = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
    if inotify < 0 {
        return None;
    }
    // SAFETY: a fresh descriptor, owned by nothing else.
    let inotify = unsafe { OwnedFd::from_raw_fd(inotify) };
    let mask = libc::IN_MODIFY
        | libc::IN_CLOSE_WRITE
        | libc::IN_CREATE
        | libc::IN_DELETE
        | libc::IN_MOVED_TO;
    // SAFETY: `dir` is a NUL-terminated path.
    if unsafe { libc::inotify_add_watch(inotify.as_raw_fd(), dir.as_ptr(), mask) } < 0 {
        return None;
    }
    let mut ends = [0; 2];
    // SAFETY: `ends` has room for the two descriptors.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
        return None;
    }
    // SAFETY: fresh descriptors from pipe2.
    let (stopped, stop) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    let thread = std::thread::Builder::new()
        .name("leasefence-watch".into())
        .spawn(move || watch_loop(&inotify, &stopped, &names, &*wakeup))
        .ok()?;
    Some(Watch::new(Running {
        stop: Some(stop),
        thread: Some(thread),
    }))
}

/// The names in the directory whose change may be a commit to the database `name`.
fn commit_names(name: &OsStr) -> [OsString; 3] {
    let with = |suffix: &str| {
        let mut full = name.to_owned();
        full.push(suffix);
        full
    };
    [name.to_owned(), with("-wal"), with("-journal")]
}

fn watch_loop(inotify: &OwnedFd, stopped: &OwnedFd, names: &[OsString], wakeup: &dyn Fn()) {
    // Room for many events at once; inotify wants a buffer aligned for `inotify_event`.
    #[repr(C, align(8))]
    struct Buffer([u8; 16384]);
    let mut buffer = Buffer([0; 16384]);
    loop {
        let mut fds = [
            libc::pollfd {
                fd: inotify.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stopped.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfd entries; no timeout: the thread sleeps until an event.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        let mut relevant = false;
        loop {
            // SAFETY: reads into the buffer, at most its length.
            let read = unsafe {
                libc::read(
                    inotify.as_raw_fd(),
                    buffer.0.as_mut_ptr().cast(),
                    buffer.0.len(),
                )
            };
            if read <= 0 {
                break;
            }
            relevant |= names_one_of(&buffer.0[..read as usize], names);
        }
        if relevant {
            wakeup();
        }
    }
}

/// Whether a read of inotify events names one of `names` (or overflowed: anything may have
/// changed).
fn names_one_of(events: &[u8], names: &[OsString]) -> bool {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut at = 0;
    while at + HEADER <= events.len() {
        let word = |offset: usize| {
            u32::from_ne_bytes(
                events[at + offset..at + offset + 4]
                    .try_into()
                    .unwrap_or_default(),
            )
        };
        // struct inotify_event { int wd; uint32_t mask; uint32_t cookie; uint32_t len; name[] }
        let (mask, len) = (word(4), word(12) as usize);
        if mask & libc::IN_Q_OVERFLOW != 0 {
            return true;
        }
        let name = events.get(at + HEADER..at + HEADER + len).unwrap_or(&[]);
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
        if names.iter().any(|n| n.as_bytes() == name) {
            return true;
        }
        at += HEADER + len;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn wait_for(count: &AtomicUsize, at_least: usize) -> bool {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if count.load(Ordering::Acquire) >= at_least {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    #[test]
    fn a_commit_from_another_connection_wakes_in_both_journal_modes() {
        for journal in [crate::Journal::Wal, crate::Journal::Rollback] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("q.db");
            let options = crate::OpenOptions::new().journal(journal);
            let _store = options.open(&db).unwrap();
            let count = Arc::new(AtomicUsize::new(0));
            let seen = Arc::clone(&count);
            let watch = watch_file(
                &db,
                Arc::new(move || {
                    seen.fetch_add(1, Ordering::AcqRel);
                }),
            )
            .expect("inotify watch");
            // Another file in the directory wakes nobody.
            std::fs::write(dir.path().join("other.txt"), "x").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(count.load(Ordering::Acquire), 0, "{journal:?}");
            let other = options.open(&db).unwrap();
            other.enqueue("job").unwrap();
            assert!(
                wait_for(&count, 1),
                "{journal:?}: no wake-up after a commit"
            );
            drop(watch);
            let before = count.load(Ordering::Acquire);
            other.enqueue("job-2").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            assert_eq!(
                count.load(Ordering::Acquire),
                before,
                "woken after the drop"
            );
        }
    }
}

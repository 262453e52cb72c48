//! The lock protocol (the rules are in the module above): acquire, release, judge a holder,
//! break a stale lock under its break mutex, and sweep debris. File-system calls only through
//! [`LockFs`], so Node and native run this same code.

use core::cell::Cell;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{FsErrorKind, FsResult, LockFile, LockFs};
use crate::lock_record::{self, parse};

/// Counts nonces, so that each names one record for ever (with the pid and the identity's seed).
static RECORDS: AtomicU64 = AtomicU64::new(0);

fn new_record(fs: &impl LockFs) -> (String, String) {
    let n = RECORDS.fetch_add(1, Ordering::Relaxed) + 1;
    let me = fs.identity();
    let nonce = format!("{}-{:016x}-{n}", me.pid, me.seed);
    let record = lock_record::format(
        me.pid,
        me.start.as_deref(),
        &me.host,
        me.thread,
        me.boot_id.as_deref(),
        &nonce,
    );
    (record, nonce)
}

enum Holder {
    Gone,
    Live,
    Stale(Instance),
}

/// One stale lock instance: `id` names it for its break mutex (the record's nonce, or `i<inode>`
/// for a lock without a readable record), `dir` says how to remove it.
struct Instance {
    id: String,
    dir: bool,
}

/// The id that names the lock instance `lock` (see [`Instance`]).
fn instance_id(lock: &LockFile) -> String {
    lock.text
        .as_deref()
        .and_then(parse)
        .map(|o| o.nonce)
        .unwrap_or_else(|| format!("i{}", lock.ino))
}

fn inspect(fs: &impl LockFs, path: &str) -> FsResult<Holder> {
    let lock = match fs.read_lock(path) {
        Err(e) if e.kind == FsErrorKind::NotFound => return Ok(Holder::Gone),
        Err(e) => return Err(e),
        Ok(lock) => lock,
    };
    let me = fs.identity();
    let before_boot = me.boot_ms.is_some_and(|boot| lock.mtime_ms < boot);
    let stale = Holder::Stale(Instance {
        id: instance_id(&lock),
        dir: lock.is_dir,
    });
    let Some(text) = lock.text.as_deref() else {
        // SQLite's unix-dotfile holds the lock as an empty directory, with no owner to check.
        return Ok(if before_boot { stale } else { Holder::Live });
    };
    let Some(o) = parse(text) else {
        return Ok(stale); // empty or torn: a record lost with the power
    };
    let dead = match (o.boot.as_deref(), me.boot_id.as_deref()) {
        (Some(theirs), Some(ours)) if theirs != ours => true,
        // Written in this boot: the owner's process is what decides.
        (Some(_), Some(_)) => o.host == me.host && !fs.pid_alive(o.pid, o.start.as_deref()),
        // A record without a boot id (or a system that tells none): its age, then its process.
        _ => before_boot || (o.host == me.host && !fs.pid_alive(o.pid, o.start.as_deref())),
    };
    Ok(if dead { stale } else { Holder::Live })
}

/// Atomically creates `target` holding `record`. Ok(false) if it already exists.
fn try_create(fs: &impl LockFs, target: &str, record: &str, nonce: &str) -> FsResult<bool> {
    let tmp = format!("{target}.{nonce}.tmp");
    if let Err(e) = fs.create_new(&tmp, record) {
        if e.kind != FsErrorKind::Exists {
            return Err(e);
        }
        fs.unlink(&tmp)?;
        fs.create_new(&tmp, record)?;
    }
    let linked = fs.link(&tmp, target);
    let _ = fs.unlink(&tmp);
    match linked {
        Ok(()) => Ok(true),
        Err(e) if e.kind == FsErrorKind::Exists => Ok(false),
        Err(e) => Err(e),
    }
}

fn unlink_quiet(fs: &impl LockFs, path: &str) -> FsResult<()> {
    match fs.unlink(path) {
        Err(e) if e.kind != FsErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn remove_lock(fs: &impl LockFs, path: &str, dir: bool) -> FsResult<()> {
    let removed = if dir { fs.rmdir(path) } else { fs.unlink(path) };
    match removed {
        Err(e) if e.kind != FsErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn break_stale(
    fs: &impl LockFs,
    target: &str,
    stale: &Instance,
    depth: u32,
    stats: &LockStats,
) -> FsResult<()> {
    if depth >= 4 {
        return Ok(());
    }
    let mutex = format!("{target}.break-{}", stale.id);
    for _ in 0..3 {
        let (record, nonce) = new_record(fs);
        if try_create(fs, &mutex, &record, &nonce)? {
            // Holding the break mutex for exactly this stale instance: if it is still there,
            // nobody else may remove it. A nonce names one record for ever; an inode can be
            // reused (by a lock directory, say), so such an instance must also still be stale by
            // the rules.
            let still_there = if stale.id.starts_with('i') {
                matches!(inspect(fs, target), Ok(Holder::Stale(now)) if now.id == stale.id)
            } else {
                current_instance(fs, target).as_deref() == Some(stale.id.as_str())
            };
            let broken = if still_there {
                stats.broken.set(stats.broken.get() + 1);
                remove_lock(fs, target, stale.dir)
            } else {
                Ok(())
            };
            unlink_quiet(fs, &mutex)?;
            return broken;
        }
        match inspect(fs, &mutex)? {
            Holder::Gone => continue,
            Holder::Live => return Ok(()),
            Holder::Stale(m) => break_stale(fs, &mutex, &m, depth + 1, stats)?,
        }
    }
    Ok(())
}

/// The id of the lock instance at `path`, if there is one.
fn current_instance(fs: &impl LockFs, path: &str) -> Option<String> {
    fs.read_lock(path).ok().map(|lock| instance_id(&lock))
}

/// Removes debris left by processes killed at awkward moments; never touches a lock that can
/// still matter:
///  * `<lock>...<nonce>.tmp`: a private temp file; removed if its pid is dead.
///  * `X.break-N`: a break mutex for lock instance N of X; once X is no longer instance N it
///    never will be again (nonces are unique; a reused inode can only carry a live record, which
///    has a nonce), so it is inert.
///
/// Returns the number of files removed.
pub(crate) fn gc(fs: &impl LockFs, lock_path: &str) -> u32 {
    let (dir, base) = match lock_path.rfind('/') {
        Some(i) => (&lock_path[..i.max(1)], &lock_path[i + 1..]),
        None => (".", lock_path),
    };
    let prefix = format!("{base}.");
    let Ok(names) = fs.read_dir(dir) else {
        return 0;
    };
    let my_pid = fs.identity().pid;
    let mut removed = 0;
    for name in names.iter().filter(|n| n.starts_with(&prefix)) {
        let full = format!("{dir}/{name}");
        let garbage = if let Some(stem) = name.strip_suffix(".tmp") {
            let nonce = stem.rsplit('.').next().unwrap_or("");
            match nonce.split('-').next().and_then(|p| p.parse::<u32>().ok()) {
                Some(pid) => my_pid != pid && !fs.pid_alive(pid, None),
                None => false,
            }
        } else if let Some(i) = name.rfind(".break-") {
            let owner = format!("{dir}/{}", &name[..i]);
            current_instance(fs, &owner).as_deref() != Some(&name[i + 7..])
        } else {
            false
        };
        if garbage && fs.unlink(&full).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Breaks the lock of `db_path` when its record names this process and worker thread
/// `thread_id`, which has exited: its owner can no longer release it, and its process is alive,
/// so it cannot be proven stale otherwise. Returns true if a lock was broken.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn break_dead_thread_lock(
    fs: &impl LockFs,
    db_path: &str,
    thread_id: u32,
    stats: &LockStats,
) -> FsResult<bool> {
    let path = format!("{db_path}.lock");
    let text = match fs.read_lock(&path) {
        Err(e) if e.kind == FsErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
        Ok(lock) => lock.text,
    };
    let Some(o) = text.as_deref().and_then(parse) else {
        return Ok(false);
    };
    let me = fs.identity();
    if o.host != me.host
        || o.pid != me.pid
        || o.start != me.start
        || o.thread != Some(thread_id)
        || thread_id == me.thread
    {
        return Ok(false);
    }
    let before = stats.broken.get();
    let instance = Instance {
        id: o.nonce,
        dir: false,
    };
    break_stale(fs, &path, &instance, 0, stats)?;
    Ok(stats.broken.get() > before)
}

/// Who holds the lock of `db_path` and is alive, in words for an error message ("process 123 on
/// host h"); `None` when the lock is free or its owner is dead (the next acquire breaks it).
/// Answers from a read alone: it takes nothing.
pub(crate) fn live_owner(fs: &impl LockFs, db_path: &str) -> FsResult<Option<String>> {
    let path = format!("{db_path}.lock");
    if !matches!(inspect(fs, &path)?, Holder::Live) {
        return Ok(None);
    }
    let owner = fs
        .read_lock(&path)
        .ok()
        .and_then(|lock| lock.text)
        .as_deref()
        .and_then(parse);
    Ok(Some(match owner {
        Some(o) if o.thread.is_some_and(|t| t > 0) => {
            format!(
                "process {} (worker thread {}) on host {}",
                o.pid,
                o.thread.unwrap_or(0),
                o.host
            )
        }
        Some(o) => format!("process {} on host {}", o.pid, o.host),
        None => "another program".to_string(),
    }))
}

/// What one connection's lock did, for tests and reports.
#[derive(Default)]
pub(crate) struct LockStats {
    pub acquired: Cell<u64>,
    pub busy: Cell<u64>,
    pub broken: Cell<u64>,
    pub lost: Cell<u64>,
}

/// The lock of one database file, as one connection holds it.
pub(crate) struct DotLock<F: LockFs> {
    fs: F,
    pub path: String,
    held: Option<String>,
}

impl<F: LockFs> DotLock<F> {
    pub fn new(fs: F, db_path: &str) -> Self {
        DotLock {
            fs,
            path: format!("{db_path}.lock"),
            held: None,
        }
    }

    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Ok(true) = acquired, Ok(false) = held by a live owner (SQLITE_BUSY).
    pub fn acquire(&mut self, stats: &LockStats) -> FsResult<bool> {
        debug_assert!(self.held.is_none());
        let fs = &self.fs;
        // A waiter retries many times a second: while a live holder has the lock, answer busy
        // from a read alone, without writing and syncing a record that cannot be linked.
        if matches!(inspect(fs, &self.path), Ok(Holder::Live)) {
            stats.busy.set(stats.busy.get() + 1);
            return Ok(false);
        }
        for _ in 0..4 {
            let (record, nonce) = new_record(fs);
            if try_create(fs, &self.path, &record, &nonce)? {
                self.held = Some(record);
                stats.acquired.set(stats.acquired.get() + 1);
                return Ok(true);
            }
            match inspect(fs, &self.path)? {
                Holder::Gone => continue,
                Holder::Live => break,
                Holder::Stale(stale) => {
                    break_stale(fs, &self.path, &stale, 0, stats)?;
                    gc(fs, &self.path);
                }
            }
        }
        stats.busy.set(stats.busy.get() + 1);
        Ok(false)
    }

    pub fn release(&mut self, stats: &LockStats) -> FsResult<()> {
        let Some(record) = self.held.take() else {
            return Ok(());
        };
        match self.fs.read_lock(&self.path) {
            Ok(lock) if lock.text.as_deref() == Some(record.as_str()) => {
                unlink_quiet(&self.fs, &self.path)
            }
            // Someone removed or replaced our lock: a protocol violation (a human deleted it, say).
            // Never delete somebody else's lock.
            Ok(_) => {
                stats.lost.set(stats.lost.get() + 1);
                Ok(())
            }
            Err(e) if e.kind == FsErrorKind::NotFound => {
                stats.lost.set(stats.lost.get() + 1);
                Ok(())
            }
            // The record could not be read back (an I/O error). It is still ours: while this
            // process lives and its record is whole, the protocol lets nobody else remove or
            // replace it. Leaving it would keep every other connection waiting on a live
            // process for ever, so it is removed unread.
            Err(_) => unlink_quiet(&self.fs, &self.path),
        }
    }

    /// True if some *other* connection may hold the lock (only meaningful when we hold nothing;
    /// while we hold it nobody else can).
    pub fn exists(&self) -> bool {
        self.fs.exists(&self.path)
    }
}

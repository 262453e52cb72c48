//! Cross-process dot-lock with safe stale-lock recovery.
//!
//! The lock is the path `<db>.lock` (same name native SQLite's `unix-dotfile`
//! VFS uses).  Holding it means "this connection owns the database" (every
//! SQLite lock level above NONE is mapped to it, exactly like unix-dotfile).
//!
//! * Acquire: write an owner record to a private temp file, sync it, then
//!   `link()` it to `<db>.lock`.  link(2) is atomic and fails with EEXIST if
//!   *anything* (our file, or native SQLite's lock *directory*) already
//!   exists, so while the machine runs the lock never exists without a
//!   complete owner record.
//! * Release: unlink `<db>.lock` (after checking it is still our record).
//! * Stale: the record names pid + /proc start time + hostname + boot id +
//!   a unique nonce.  It is stale if it was written under another boot (the
//!   machine restarted: every process of that boot is gone), or if the host
//!   is ours and the pid is dead (ESRCH from process.kill(pid, 0)) or was
//!   reused (start time differs).
//! * After a power loss: the link can reach the disk while the record does
//!   not (an empty or torn file), and native SQLite's lock directory carries
//!   no record at all.  A live holder always links a record it already wrote,
//!   so a lock without a readable record can only be a lost write: stale.  A
//!   lock of either kind last modified before this boot (`btime` of
//!   `/proc/stat`) belongs to a process that no longer exists: stale too.  A
//!   native directory modified since the boot is never stale (its owner may
//!   be alive; `leasefence unlock` clears one left by a killed process).
//!   Why not also sync the directory after the link: a link lost with the
//!   power is the lock of a process that died with it, which nobody waits
//!   for; and SQLite syncs this same directory when it creates the journal,
//!   before the transaction writes the database.
//! * Breaking a stale instance `c` (named by its nonce, or by its inode when
//!   it has no record) is serialized by a per-instance mutex
//!   `<db>.lock.break-<id(c)>` acquired with the same link protocol.  The
//!   only processes that may remove `<db>.lock` while it is `c` are c's
//!   owner (dead) and the live holder of that break mutex, so "re-inspect,
//!   still c, remove" cannot remove a live lock.  A break mutex whose holder
//!   died is itself broken recursively by the same rule (bounded depth).
use super::node_fs::{self as node, NResult};
use crate::lock_record::{self, parse};
use core::cell::Cell;

thread_local! {
    static COUNTER: Cell<u64> = const { Cell::new(0) };
    static IDENT: (u32, Option<String>, String, u64, u32) = {
        let pid = node::pid();
        let mut seed = [0u8; 8];
        // Randomness keeps nonces unique across wasm instances (worker_threads
        // share a pid) and across pid reuse.
        let _ = getrandom_js(&mut seed);
        (pid, node::proc_start_time(pid), node::hostname(), u64::from_le_bytes(seed), node::thread_id())
    };
    /// This boot's id and start (ms since the epoch), when the system tells them.
    static BOOT: (Option<String>, Option<f64>) = (node::boot_id(), node::boot_time_ms());
}

fn getrandom_js(buf: &mut [u8]) -> Result<(), ()> {
    use wasm_bindgen::JsValue;
    let crypto =
        js_sys::Reflect::get(&js_sys::global(), &JsValue::from_str("crypto")).map_err(|_| ())?;
    let arr = js_sys::Uint8Array::new_with_length(buf.len() as u32);
    let f = js_sys::Reflect::get(&crypto, &JsValue::from_str("getRandomValues")).map_err(|_| ())?;
    let f: js_sys::Function = f.into();
    f.call1(&crypto, &arr).map_err(|_| ())?;
    arr.copy_to(buf);
    Ok(())
}

fn new_record() -> (String, String) {
    let n = COUNTER.with(|c| {
        let v = c.get() + 1;
        c.set(v);
        v
    });
    let boot = BOOT.with(|b| b.0.clone());
    IDENT.with(|(pid, start, host, seed, thread)| {
        let nonce = format!("{pid}-{seed:016x}-{n}");
        let rec = lock_record::format(
            *pid,
            start.as_deref(),
            host,
            *thread,
            boot.as_deref(),
            &nonce,
        );
        (rec, nonce)
    })
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

/// The id that names the lock instance now at `path` (see [`Instance`]).
fn instance_id(lock: &node::LockFile) -> String {
    lock.text
        .as_deref()
        .and_then(parse)
        .map(|o| o.nonce)
        .unwrap_or_else(|| format!("i{}", lock.ino))
}

fn inspect(path: &str) -> NResult<Holder> {
    let lock = match node::read_lock(path) {
        Err(e) if e.is("ENOENT") => return Ok(Holder::Gone),
        Err(e) => return Err(e),
        Ok(lock) => lock,
    };
    let (my_boot, boot_ms) = BOOT.with(|b| b.clone());
    let before_boot = boot_ms.is_some_and(|boot| lock.mtime_ms < boot);
    let stale = Holder::Stale(Instance {
        id: instance_id(&lock),
        dir: lock.is_dir,
    });
    let Some(text) = lock.text.as_deref() else {
        // Native unix-dotfile holds the lock as an empty directory, with no owner to check.
        return Ok(if before_boot { stale } else { Holder::Live });
    };
    let Some(o) = parse(text) else {
        return Ok(stale); // empty or torn: a record lost with the power
    };
    let my_host = IDENT.with(|i| i.2.clone());
    let dead = match (o.boot.as_deref(), my_boot.as_deref()) {
        (Some(theirs), Some(ours)) if theirs != ours => true,
        // Written in this boot: the owner's process is what decides.
        (Some(_), Some(_)) => o.host == my_host && !node::pid_alive(o.pid, o.start.as_deref()),
        // An earlier version's record (no boot id): its age, then its process.
        _ => before_boot || (o.host == my_host && !node::pid_alive(o.pid, o.start.as_deref())),
    };
    Ok(if dead { stale } else { Holder::Live })
}

/// Atomically create `target` holding `rec`. Ok(false) if it already exists.
fn try_create(target: &str, rec: &str, nonce: &str) -> NResult<bool> {
    let tmp = format!("{target}.{nonce}.tmp");
    if let Err(e) = node::create_new_with(&tmp, rec) {
        if !e.is("EEXIST") {
            return Err(e);
        }
        node::unlink(&tmp)?;
        node::create_new_with(&tmp, rec)?;
    }
    let r = node::link(&tmp, target);
    let _ = node::unlink(&tmp);
    match r {
        Ok(()) => Ok(true),
        Err(e) if e.is("EEXIST") => Ok(false),
        Err(e) => Err(e),
    }
}

fn unlink_quiet(path: &str) -> NResult<()> {
    match node::unlink(path) {
        Err(e) if !e.is("ENOENT") => Err(e),
        _ => Ok(()),
    }
}

fn remove_lock(path: &str, dir: bool) -> NResult<()> {
    let removed = if dir {
        node::rmdir(path)
    } else {
        node::unlink(path)
    };
    match removed {
        Err(e) if !e.is("ENOENT") => Err(e),
        _ => Ok(()),
    }
}

fn break_stale(target: &str, stale: &Instance, depth: u32, stats: &LockStats) -> NResult<()> {
    if depth >= 4 {
        return Ok(());
    }
    let mutex = format!("{target}.break-{}", stale.id);
    for _ in 0..3 {
        let (rec, nonce) = new_record();
        if try_create(&mutex, &rec, &nonce)? {
            // Holding the break mutex for exactly this stale instance: if it is still there,
            // nobody else may remove it. A nonce names one record for ever; an inode can be
            // reused (by a native lock directory, say), so such an instance must also still be
            // stale by the rules.
            let still_there = if stale.id.starts_with('i') {
                matches!(inspect(target), Ok(Holder::Stale(now)) if now.id == stale.id)
            } else {
                current_instance(target).as_deref() == Some(stale.id.as_str())
            };
            let broken = if still_there {
                stats.broken.set(stats.broken.get() + 1);
                remove_lock(target, stale.dir)
            } else {
                Ok(())
            };
            unlink_quiet(&mutex)?;
            return broken;
        }
        match inspect(&mutex)? {
            Holder::Gone => continue,
            Holder::Live => return Ok(()),
            Holder::Stale(m) => break_stale(&mutex, &m, depth + 1, stats)?,
        }
    }
    Ok(())
}

/// The id of the lock instance at `path`, if there is one.
fn current_instance(path: &str) -> Option<String> {
    node::read_lock(path).ok().map(|lock| instance_id(&lock))
}

/// Remove debris left by processes killed at awkward moments; never touches a
/// lock that can still matter:
///  * `<lock>...<nonce>.tmp`: a private temp file; removed if its pid is dead.
///  * `X.break-N`: a break mutex for lock instance N of X; once X is no longer
///    instance N it never will be again (nonces are unique; a reused inode
///    can only carry a live record, which has a nonce), so it is inert.
///
/// Returns the number of files removed.
pub fn gc(lock_path: &str) -> u32 {
    let (dir, base) = match lock_path.rfind('/') {
        Some(i) => (&lock_path[..i.max(1)], &lock_path[i + 1..]),
        None => (".", lock_path),
    };
    let prefix = format!("{base}.");
    let Ok(names) = node::readdir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for name in names.iter().filter(|n| n.starts_with(&prefix)) {
        let full = format!("{dir}/{name}");
        let garbage = if let Some(stem) = name.strip_suffix(".tmp") {
            let nonce = stem.rsplit('.').next().unwrap_or("");
            match nonce.split('-').next().and_then(|p| p.parse::<u32>().ok()) {
                Some(pid) => IDENT.with(|i| i.0) != pid && !node::pid_alive(pid, None),
                None => false,
            }
        } else if let Some(i) = name.rfind(".break-") {
            let owner = format!("{dir}/{}", &name[..i]);
            current_instance(&owner).as_deref() != Some(&name[i + 7..])
        } else {
            false
        };
        if garbage && node::unlink(&full).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Called by the owning process after worker `thread_id` has exited (Worker
/// 'exit' event): a lock recorded for (our pid, that thread) can no longer be
/// released by its owner, so it is broken with the normal break protocol.
/// Returns true if a lock was broken.
pub fn break_dead_thread_lock(db_path: &str, thread_id: u32, stats: &LockStats) -> NResult<bool> {
    let path = format!("{db_path}.lock");
    let s = match node::read_text(&path) {
        Err(e) if e.is("ENOENT") || e.is("EISDIR") => return Ok(false),
        Err(e) => return Err(e),
        Ok(s) => s,
    };
    let Some(o) = parse(&s) else { return Ok(false) };
    let (my_pid, my_start, my_host, my_thread) =
        IDENT.with(|i| (i.0, i.1.clone(), i.2.clone(), i.4));
    if o.host != my_host
        || o.pid != my_pid
        || o.start != my_start
        || o.thread != Some(thread_id)
        || thread_id == my_thread
    {
        return Ok(false);
    }
    let before = stats.broken.get();
    let instance = Instance {
        id: o.nonce,
        dir: false,
    };
    break_stale(&path, &instance, 0, stats)?;
    Ok(stats.broken.get() > before)
}

#[derive(Default)]
pub struct LockStats {
    pub acquired: Cell<u64>,
    pub busy: Cell<u64>,
    pub broken: Cell<u64>,
    pub lost: Cell<u64>,
}

pub struct DotLock {
    pub path: String,
    held: Option<String>,
}

impl DotLock {
    pub fn new(db_path: &str) -> Self {
        DotLock {
            path: format!("{db_path}.lock"),
            held: None,
        }
    }

    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Ok(true) = acquired, Ok(false) = held by a live owner (SQLITE_BUSY).
    pub fn acquire(&mut self, stats: &LockStats) -> NResult<bool> {
        debug_assert!(self.held.is_none());
        for _ in 0..4 {
            let (rec, nonce) = new_record();
            if try_create(&self.path, &rec, &nonce)? {
                self.held = Some(rec);
                stats.acquired.set(stats.acquired.get() + 1);
                return Ok(true);
            }
            match inspect(&self.path)? {
                Holder::Gone => continue,
                Holder::Live => break,
                Holder::Stale(stale) => {
                    break_stale(&self.path, &stale, 0, stats)?;
                    gc(&self.path);
                }
            }
        }
        stats.busy.set(stats.busy.get() + 1);
        Ok(false)
    }

    pub fn release(&mut self, stats: &LockStats) -> NResult<()> {
        let Some(rec) = self.held.take() else {
            return Ok(());
        };
        match node::read_text(&self.path) {
            Ok(s) if s == rec => unlink_quiet(&self.path),
            // Someone removed or replaced our lock: protocol violation (e.g. a
            // human deleted it).  Never delete somebody else's lock.
            Ok(_) => {
                stats.lost.set(stats.lost.get() + 1);
                Ok(())
            }
            Err(e) if e.is("ENOENT") => {
                stats.lost.set(stats.lost.get() + 1);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// True if some *other* connection may hold the lock (only meaningful
    /// when we hold nothing; while we hold it nobody else can).
    pub fn exists(&self) -> bool {
        node::access(&self.path, false, false).is_ok()
    }
}

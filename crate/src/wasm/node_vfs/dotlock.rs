//! The dot-file lock in Node: the lock protocol of crate/src/dot_lock (the rules are there, shared
//! with native openers) over Node's `fs` and `process`.
use super::node_fs::{self as node, NodeErr};
use crate::dot_lock::{FsError, FsErrorKind, FsResult, Identity, LockFile, LockFs};

pub(crate) use crate::dot_lock::LockStats;

/// The lock of one database file in this wasm instance.
pub(crate) type DotLock = crate::dot_lock::DotLock<NodeFs>;

/// Node's [`LockFs`]: one identity per wasm instance (a worker thread has its own).
#[derive(Clone, Copy, Default)]
pub(crate) struct NodeFs;

thread_local! {
    static IDENTITY: &'static Identity = Box::leak(Box::new(identity()));
}

fn identity() -> Identity {
    let pid = node::pid();
    let mut seed = [0u8; 8];
    // Randomness keeps nonces unique across wasm instances (worker_threads share a pid) and
    // across pid reuse.
    let _ = getrandom_js(&mut seed);
    Identity {
        pid,
        start: node::proc_start_time(pid),
        host: node::hostname(),
        thread: node::thread_id(),
        seed: u64::from_le_bytes(seed),
        boot_id: node::boot_id(),
        boot_ms: node::boot_time_ms(),
    }
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

fn fs_error(what: &str, path: &str, e: NodeErr) -> FsError {
    let kind = match e.code.as_str() {
        "ENOENT" => FsErrorKind::NotFound,
        "EEXIST" => FsErrorKind::Exists,
        _ => FsErrorKind::Other,
    };
    FsError {
        kind,
        message: format!("{what} {path}: {} {}", e.code, e.message),
    }
}

impl LockFs for NodeFs {
    fn identity(&self) -> &Identity {
        IDENTITY.with(|identity| *identity)
    }

    fn create_new(&self, path: &str, content: &str) -> FsResult<()> {
        node::create_new_with(path, content).map_err(|e| fs_error("create", path, e))
    }

    fn link(&self, existing: &str, new_path: &str) -> FsResult<()> {
        node::link(existing, new_path).map_err(|e| fs_error("link", new_path, e))
    }

    fn unlink(&self, path: &str) -> FsResult<()> {
        node::unlink(path).map_err(|e| fs_error("unlink", path, e))
    }

    fn rmdir(&self, path: &str) -> FsResult<()> {
        node::rmdir(path).map_err(|e| fs_error("rmdir", path, e))
    }

    fn read_lock(&self, path: &str) -> FsResult<LockFile> {
        let lock = node::read_lock(path).map_err(|e| fs_error("read", path, e))?;
        Ok(LockFile {
            is_dir: lock.is_dir,
            ino: lock.ino,
            mtime_ms: lock.mtime_ms,
            text: lock.text,
        })
    }

    fn read_dir(&self, dir: &str) -> FsResult<Vec<String>> {
        node::readdir(dir).map_err(|e| fs_error("list", dir, e))
    }

    fn exists(&self, path: &str) -> bool {
        node::access(path, false, false).is_ok()
    }

    fn pid_alive(&self, pid: u32, start: Option<&str>) -> bool {
        node::pid_alive(pid, start)
    }
}

/// Removes the debris of processes killed while taking or breaking the lock `lock_path`.
pub(crate) fn gc(lock_path: &str) -> u32 {
    crate::dot_lock::protocol::gc(&NodeFs, lock_path)
}

/// Who holds the lock of `db_path` (a full path) and is alive, in words; `None` if nobody.
pub(crate) fn live_owner(db_path: &str) -> FsResult<Option<String>> {
    crate::dot_lock::protocol::live_owner(&NodeFs, db_path)
}

/// Called by the owning process after worker `thread_id` has exited (Worker 'exit' event): a
/// lock recorded for (our pid, that thread) can no longer be released by its owner, so it is
/// broken with the normal break protocol. Returns true if a lock was broken.
pub(crate) fn break_dead_thread_lock(
    db_path: &str,
    thread_id: u32,
    stats: &LockStats,
) -> FsResult<bool> {
    crate::dot_lock::protocol::break_dead_thread_lock(&NodeFs, db_path, thread_id, stats)
}

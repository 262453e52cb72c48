//! Node backend: SQLite files on disk through Node's synchronous `fs`, locked across processes
//! and worker threads with SQLite's dot-file protocol.
//!
//! - `vfs`: the SQLite VFS (`nodefs`) on sqlite-wasm-rs' VFS traits: reads, writes, `fsync`
//!   (a real `fs.fsyncSync`, plus the directory after creating or deleting a journal; a kept
//!   journal whose entry this thread already synced costs no directory sync).
//! - `dotlock`: the lock, the protocol of crate/src/dot_lock over Node's `fs`. Every SQLite lock
//!   level above NONE is one exclusive `<db>.lock`; a native leasefence opening with dot-file
//!   locking (it does so by itself for files marked as shared with Node) runs the same protocol,
//!   so the two exclude each other, and either breaks a lock left by a killed process of the
//!   other, only after proving its owner dead, never while it lives.
//! - `node_fs`: the `fs`, `os` and `process` calls, imported with wasm-bindgen.
//!
//! Shared memory between processes does not exist here, so the journal is the rollback journal,
//! kept between transactions (`PERSIST`, see [`keep_journal`]); a WAL-mode file (a native
//! leasefence's default) is refused with an explanation. The one exception is a file opened with
//! `exclusive`: one connection owns it until its close, in WAL mode with the WAL index in heap
//! memory (crate/src/sqlite/exclusive.rs); other openers are refused while it lives, and a WAL
//! it left by dying is recovered by the next opener. docs/decisions/node-syncs.md counts the
//! syncs of a commit and says why each is needed.

mod dotlock;
mod node_fs;
mod vfs;

use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_rs::vfs::VfsStore;
use wasm_bindgen::prelude::*;

use crate::sqlite::exclusive;
use crate::{Error, Journal, LeaseStore, OpenOptions, Result};

/// Opens `path` with the `nodefs` VFS and marks the file as shared with Node. `exclusive`: the
/// connection owns the file alone until its close, in WAL mode (crate/src/sqlite/exclusive.rs).
pub(crate) fn open(path: &str, busy_timeout_ms: f64, exclusive: bool) -> Result<LeaseStore> {
    check_path(path)?;
    if !(busy_timeout_ms.is_finite() && busy_timeout_ms >= 0.0) {
        return Err(Error::invalid(
            "busyTimeout",
            "must be a finite number of milliseconds >= 0",
        ));
    }
    let timeout = std::time::Duration::from_millis(busy_timeout_ms as u64);
    let conn = open_connection_waiting(path, timeout)?;
    let options = OpenOptions::new()
        .journal(Journal::Rollback)
        .busy_timeout(timeout);
    let store = LeaseStore::set_up(conn, path, &options)?;
    crate::options::mark_shared_with_node(store.connection())?;
    keep_journal(&store, path)?;
    if exclusive {
        exclusive::enter(store.connection(), path, timeout)?;
    }
    Ok(store)
}

/// Before a store's close: a connection in exclusive WAL mode puts the file back in the rollback
/// journal (`PERSIST`), checkpointing its WAL, so that every opener finds the file as usual. A
/// failure leaves the WAL for the next opener to recover.
pub(crate) fn before_close(store: &LeaseStore) {
    let conn = store.connection();
    if exclusive::is_exclusive_wal(conn) {
        let _ = exclusive::leave(conn, "PERSIST");
    }
}

/// `journal_mode = PERSIST`: a commit zeroes the journal's header and syncs it, where DELETE
/// unlinks the journal and syncs the directory, and then creates it again (with another directory
/// sync) for the next transaction. Both are rollback journals, so native dot-file openers (which
/// delete the journal at their commits) share the file as before; a zeroed journal is not hot.
fn keep_journal(store: &LeaseStore, path: &str) -> Result<()> {
    let mode: String = store
        .connection()
        .query_row("PRAGMA journal_mode = PERSIST", [], |row| row.get(0))
        .map_err(crate::Error::storage("open"))?;
    if !mode.eq_ignore_ascii_case("persist") {
        return Err(Error::Open {
            path: path.to_string(),
            problem: format!("SQLite refused journal_mode PERSIST (the file stays in {mode} mode)"),
        });
    }
    Ok(())
}

/// Opens `path` with the `nodefs` VFS as a plain SQLite connection: the path checks and the
/// lock's leftovers, nothing of the lease store's schema (the fence guard opens the
/// application's own file this way).
pub(crate) fn open_connection(path: &str) -> Result<Connection> {
    open_connection_waiting(path, OpenOptions::new().busy_timeout)
}

/// [`open_connection`], waiting up to `timeout` for the lock when a WAL left by an exclusive
/// owner that died is to be recovered.
fn open_connection_waiting(path: &str, timeout: std::time::Duration) -> Result<Connection> {
    let open_error = |problem: String| Error::Open {
        path: path.to_string(),
        problem,
    };
    check_path(path)?;
    match node_fs::not_a_file(path) {
        Ok(Some(kind)) => return Err(crate::rules::path_kind::not_a_regular_file(path, kind)),
        Ok(None) => {}
        Err(e) if e.is("ENOENT") => {} // missing: SQLite creates it
        Err(e) => return Err(open_error(format!("cannot stat it: {}", e.message))),
    }
    vfs::register().map_err(|e| open_error(format!("cannot register the Node VFS: {e}")))?;
    let left_by_owner = check_wal_file(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs(path, flags, vfs::VFS_NAME).map_err(|e| {
        open_error(format!(
            "{e}; check that the directory exists and is writable"
        ))
    })?;
    if let Some(full) = conn.path() {
        // Leftovers of processes that died while taking or breaking a lock.
        dotlock::gc(&format!("{full}.lock"));
    }
    if left_by_owner {
        exclusive::recover_wal(&conn, path, "PERSIST", timeout)?;
    }
    Ok(conn)
}

fn check_path(path: &str) -> Result<()> {
    if path.is_empty() || path.contains('\0') {
        return Err(Error::invalid(
            "path",
            "must be a non-empty file path without NUL",
        ));
    }
    Ok(())
}

/// The first 8 bytes of `path` (zeros when it is missing or shorter).
fn file_start(path: &str) -> [u8; 8] {
    let mut start = [0u8; 8];
    if let Ok(fd) = node_fs::open(
        path,
        node_fs::OpenFlags {
            write: false,
            create: false,
            exclusive: false,
        },
    ) {
        if !matches!(node_fs::read_at(fd, &mut start, 0), Ok(8)) {
            start = [0; 8];
        }
        let _ = node_fs::close(fd);
    }
    start
}

/// Reads the header of `path`: Ok(true) for a WAL left by an exclusive owner that is gone, or a
/// hot journal of a file shared with Node (to recover), an error while an exclusive owner lives, Ok(false) for a file in rollback mode (or none).
/// Any other WAL database needs shared memory between its users, which Node processes cannot
/// have: refused with an explanation.
fn check_wal_file(path: &str) -> Result<bool> {
    let Ok(fd) = node_fs::open(
        path,
        node_fs::OpenFlags {
            write: false,
            create: false,
            exclusive: false,
        },
    ) else {
        return Ok(false); // missing: SQLite creates it, in rollback mode
    };
    let mut header = [0u8; 100];
    let read = node_fs::read_at(fd, &mut header, 0);
    let _ = node_fs::close(fd);
    if !matches!(read, Ok(100)) {
        return Ok(false);
    }
    if exclusive::left_in_exclusive_wal(&header) {
        let full =
            vfs::Store::full_pathname(&Default::default(), path).map_err(|e| Error::Open {
                path: path.to_string(),
                problem: format!("cannot resolve its path: {e}"),
            })?;
        return match dotlock::live_owner(&full) {
            Ok(Some(owner)) => Err(exclusive::owned_exclusively(path, &owner)),
            Ok(None) => Ok(true),
            Err(e) => Err(Error::Open {
                path: path.to_string(),
                problem: format!("cannot read its lock: {e}"),
            }),
        };
    }
    if exclusive::hot_journal_of_node_file(&header, &file_start(&format!("{path}-journal"))) {
        return Ok(true);
    }
    if exclusive::plain_wal(&header) {
        return Err(Error::Open {
            path: path.to_string(),
            problem: "the database is in WAL mode (the native leasefence default), which needs \
                      memory shared between processes that Node cannot provide. Create the file \
                      from Node first, or open it natively with dot-file locking \
                      (`leasefence --locking dotfile`, `OpenOptions::locking(Locking::Dotfile)`) \
                      after switching it back with `PRAGMA journal_mode=DELETE`"
                .into(),
        });
    }
    Ok(false)
}

/// Frees the lock of a worker thread that ended without closing its store (a `terminate()`d
/// worker): its process is alive, so the lock cannot be proven stale otherwise. Call it from the
/// parent's `exit` handler. Returns whether a lock was freed.
#[wasm_bindgen(js_name = breakDeadThreadLock)]
pub fn break_dead_thread_lock(db_path: &str, thread_id: u32) -> std::result::Result<bool, JsValue> {
    let full = vfs::Store::full_pathname(&Default::default(), db_path)
        .map_err(|e| super::js_error("storage", &e.to_string()))?;
    vfs::STATS
        .with(|stats| dotlock::break_dead_thread_lock(&full, thread_id, stats))
        .map_err(|e| super::js_error("storage", &format!("cannot free the lock: {e}")))
}

/// Counters of this thread's VFS, as JSON: locks `acquired`, `busy` answers, stale locks
/// `brokenStale`, locks `lost` (must stay 0) and `syncs` (real `fsync` calls). For tests.
#[wasm_bindgen(js_name = vfsStats)]
pub fn vfs_stats() -> String {
    vfs::STATS.with(|s| {
        format!(
            "{{\"acquired\":{},\"busy\":{},\"brokenStale\":{},\"lost\":{},\"syncs\":{}}}",
            s.acquired.get(),
            s.busy.get(),
            s.broken.get(),
            s.lost.get(),
            vfs::sync_count()
        )
    })
}

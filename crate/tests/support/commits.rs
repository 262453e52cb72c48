//! Commits counted as syncs: a `LeaseStore` on the fault VFS (support/fault_vfs.rs, registered
//! for the test's directory) in WAL mode with automatic checkpoints off, so that every commit
//! that wrote something is exactly one sync (of the WAL), and the counts compare commits.

use std::path::Path;

use leasefence::LeaseStore;

use super::fault_vfs::{self, Kind};

/// Syncs of the registered directory's files since the VFS was registered.
pub fn syncs() -> u64 {
    fault_vfs::calls()[Kind::Sync as usize]
}

/// A store on `db` (in the registered directory) whose commits are one sync each.
pub fn store_counting_commits(db: &Path) -> LeaseStore {
    let conn = fault_vfs::open_connection(db).unwrap();
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
        .unwrap();
    conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
    LeaseStore::from_connection(conn, &db.display().to_string()).unwrap()
}

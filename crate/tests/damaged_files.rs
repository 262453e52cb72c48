#![cfg(not(target_arch = "wasm32"))]
//! Damaged and unwritable databases: a clear error naming the problem, and the file is never
//! modified.

#[path = "support/cli_bin.rs"]
mod cli_bin;

use std::path::Path;
use std::process::Command;

use leasefence::{Error, LeaseStore};
use rusqlite::Connection;

/// A rollback-journal database written by another SQLite program, big enough to span pages.
fn foreign_contract_db(path: &Path, rows: usize) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(
        "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
         fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);",
    )
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    for i in 0..rows {
        tx.execute(
            "INSERT INTO jobs(id, result) VALUES (?1, ?2)",
            (format!("job-{i:05}"), "x".repeat(200)),
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

fn expect_damaged(result: leasefence::Result<LeaseStore>, what: &str) -> String {
    match result {
        Err(Error::NotLeasefenceDatabase { problem, .. }) => problem,
        Err(other) => panic!("{what}: expected NotLeasefenceDatabase, got {other}"),
        Ok(_) => panic!("{what}: a damaged file was accepted"),
    }
}

#[test]
fn a_truncated_database_is_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("truncated.db");
    foreign_contract_db(&path, 2000);
    let full = std::fs::read(&path).unwrap();
    // Cut at a page boundary in the middle: every page that is left is a valid page.
    let cut = &full[..(full.len() / 2 / 4096) * 4096];
    std::fs::write(&path, cut).unwrap();
    let problem = expect_damaged(LeaseStore::open(&path), "truncated");
    assert!(problem.contains("damaged"), "{problem}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        cut,
        "the truncated file was modified"
    );
}

#[test]
fn corrupted_pages_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("corrupt.db");
    foreign_contract_db(&path, 2000);
    let mut bytes = std::fs::read(&path).unwrap();
    // Break the header of a B-tree page in the middle of the file (its type and cell count).
    let at = (bytes.len() / 2 / 4096) * 4096;
    bytes[at..at + 8].fill(0xA5);
    std::fs::write(&path, &bytes).unwrap();
    let problem = expect_damaged(LeaseStore::open(&path), "corrupted");
    assert!(problem.contains("damaged"), "{problem}");
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "the corrupted file was modified"
    );
}

#[test]
fn corruption_found_later_is_a_storage_error_that_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ours.db");
    {
        let store = LeaseStore::open(&path).unwrap();
        let tx = store.connection().unchecked_transaction().unwrap();
        for i in 0..2000 {
            tx.execute(
                "INSERT INTO jobs(id, result) VALUES (?1, ?2)",
                (format!("job-{i:05}"), "y".repeat(200)),
            )
            .unwrap();
        }
        tx.commit().unwrap();
        // Move everything from the WAL into the file, so that the damage below hits real pages.
        store
            .connection()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    // A leaf page of `jobs` itself (only it holds the 200-byte results), from the middle of them:
    // a page in the middle of the file may belong to a table or index `jobs()` never reads.
    let results: Vec<usize> = (0..bytes.len() / 4096)
        .map(|page| page * 4096)
        .filter(|&at| {
            bytes[at..at + 4096]
                .windows(200)
                .any(|w| w.iter().all(|&b| b == b'y'))
        })
        .collect();
    assert!(results.len() > 10, "{} pages of results", results.len());
    let at = results[results.len() / 2];
    bytes[at..at + 8].fill(0x5A);
    std::fs::write(&path, &bytes).unwrap();
    // Already ours and in WAL mode: opening writes nothing and does not scan the file.
    let store = LeaseStore::open(&path).unwrap();
    let err = match store.jobs() {
        Ok(rows) => panic!("read {} rows through a corrupted page", rows.len()),
        Err(err) => err,
    };
    assert_eq!(err.code(), "storage");
    let text = err.to_string();
    assert!(
        text.contains("malformed") || text.contains("corrupt"),
        "{text}"
    );
    drop(store);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        bytes,
        "a failed operation modified the file"
    );
}

#[test]
fn a_read_only_file_is_a_clear_error_and_stays_as_it_was() {
    // Permission bits do not stop root, so the CLI runs as `nobody` here.
    if Command::new("setpriv").arg("--version").output().is_err() {
        eprintln!("setpriv missing: skipping the read-only check");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read-only.db");
    LeaseStore::open(&path).unwrap().enqueue("job").unwrap();
    // Back to a single file (no WAL), then make file and folder read-only for everyone.
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "journal_mode", "DELETE")
        .unwrap();
    let before = std::fs::read(&path).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o555)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cli_bin::bin())
        .args([
            "--db",
            path.to_str().unwrap(),
            "claim",
            "job",
            "--owner",
            "a",
            "--ttl",
            "5",
        ])
        .output()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("\"code\":\"storage\""), "{stdout}");
    assert!(
        stdout.contains("read-only")
            || stdout.contains("readonly")
            || stdout.contains("permission"),
        "{stdout}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

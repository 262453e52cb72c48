#![cfg(target_os = "linux")]
//! A dot-file lock left by a killed process: `clear_stale_lock` and `leasefence unlock`.
//!
//! The holder is real native SQLite on its `unix-dotfile` VFS (Python's `sqlite3`, which can pick
//! a VFS by URI), killed with SIGKILL in the middle of a write transaction: it leaves the
//! `<db>.lock` directory and a hot journal, as a killed native `leasefence --locking dotfile`
//! process would.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use leasefence::{clear_stale_lock, LockCheck, Locking, OpenOptions};
use support::batch::bin;

const HOLDER: &str = r#"
import sqlite3, sys, time
conn = sqlite3.connect("file:" + sys.argv[1] + "?vfs=unix-dotfile", uri=True, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE jobs SET result = 'half-written' WHERE id = 'job'")
print("holding", flush=True)
time.sleep(600)
"#;

/// Starts a native SQLite process that takes the dot-file lock and writes, and waits until it
/// holds the lock.
fn start_holder(db: &Path) -> Child {
    let mut child = Command::new("python3")
        .args(["-c", HOLDER, db.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 runs the holder");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "holding", "the holder did not take the lock");
    child
}

/// One test at a time: a process one test spawns holds copies of every descriptor the other
/// tests have open (until its exec), so it would count as a user of their files.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn dotfile(busy_ms: u64) -> OpenOptions {
    OpenOptions::new()
        .locking(Locking::Dotfile)
        .busy_timeout(Duration::from_millis(busy_ms))
}

fn unlock_cli(db: &Path) -> (i32, serde_json::Value) {
    let out = Command::new(bin())
        .args(["--db", db.to_str().unwrap(), "unlock"])
        .output()
        .unwrap();
    let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} / {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap(), value)
}

#[test]
fn a_killed_holders_lock_is_cleared_only_once_nobody_has_the_file_open() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let lock = dir.path().join("shared.db.lock");
    {
        let store = dotfile(10_000).open(&db).unwrap();
        assert!(store.enqueue("job").unwrap());
    }
    assert_eq!(clear_stale_lock(&db).unwrap(), LockCheck::Free);
    assert_eq!(unlock_cli(&db), (0, serde_json::json!({"value": "free"})));

    let mut holder = start_holder(&db);
    assert!(lock.is_dir(), "unix-dotfile holds its lock as a directory");
    // Alive: its pid is named and nothing is removed, by the library or the CLI.
    let pid = holder.id();
    match clear_stale_lock(&db).unwrap() {
        LockCheck::InUse { pids } => assert!(pids.contains(&pid), "{pids:?} lacks {pid}"),
        other => panic!("a live holder's lock: {other:?}"),
    }
    let (code, value) = unlock_cli(&db);
    assert_eq!(code, 1, "{value}");
    assert_eq!(value["value"], "in_use");
    assert!(
        value["pids"].as_array().unwrap().contains(&pid.into()),
        "{value}"
    );
    assert!(lock.is_dir());
    let err = dotfile(200)
        .open(&db)
        .and_then(|s| s.claim("job", "b", 0.0, 10.0))
        .unwrap_err();
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains("unlock"),
        "the busy message points at unlock: {err}"
    );

    // Killed in the middle of its transaction: the directory stays, and everyone would wait.
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(lock.is_dir());
    assert!(dotfile(200).open(&db).and_then(|s| s.state("job")).is_err());

    // A connection of this very process counts as a user too.
    {
        let conn = rusqlite::Connection::open_with_flags_and_vfs(
            &db,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            "unix-dotfile",
        )
        .unwrap();
        match clear_stale_lock(&db).unwrap() {
            LockCheck::InUse { pids } => assert_eq!(pids, [std::process::id()]),
            other => panic!("this process has the file open: {other:?}"),
        }
        drop(conn);
    }

    // Nobody has it open now: cleared; the next opener rolls the hot journal back.
    assert_eq!(clear_stale_lock(&db).unwrap(), LockCheck::Cleared);
    assert!(!lock.exists());
    let store = dotfile(1_000).open(&db).unwrap();
    let row = store.state("job").unwrap().unwrap();
    assert_eq!(
        row.result, None,
        "the killed transaction's write was rolled back"
    );
    assert_eq!(
        store.claim("job", "b", 0.0, 10.0).unwrap().granted(),
        Some(1)
    );
    drop(store);
    assert_eq!(clear_stale_lock(&db).unwrap(), LockCheck::Free);
}

#[test]
fn the_cli_clears_a_killed_holders_lock_and_refuses_what_it_cannot_check() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    let mut holder = start_holder(&db);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(
        unlock_cli(&db),
        (0, serde_json::json!({"value": "cleared"}))
    );
    assert!(!dir.path().join("cli.db.lock").exists());
    assert_eq!(unlock_cli(&db), (0, serde_json::json!({"value": "free"})));

    // A database that is not there, and a PostgreSQL URL: errors, nothing created.
    let missing = dir.path().join("missing.db");
    let (code, value) = unlock_cli(&missing);
    assert_eq!(code, 3, "{value}");
    assert!(value["error"]["message"]
        .as_str()
        .unwrap()
        .contains("existing database"));
    assert!(!missing.exists());
    let out = Command::new(bin())
        .args(["--db", "postgres://localhost/queue", "unlock"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stdout).contains("invalid_argument"));
}

/// Sets a path's modification time to 2000-01-01, long before this machine booted. In-process,
/// not with `touch`: a child process of this test, while it exits, would count as a user of the
/// file for the other tests' `clear_stale_lock` (its descriptors cannot be read then).
fn age_before_boot(path: &Path) {
    let long_ago = std::time::UNIX_EPOCH + Duration::from_secs(946_684_800);
    std::fs::File::open(path)
        .and_then(|file| file.set_modified(long_ago))
        .unwrap();
}

#[test]
fn after_a_power_loss_a_native_opener_clears_a_lock_no_process_of_this_boot_can_hold() {
    let _serial = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("power.db");
    let lock = dir.path().join("power.db.lock");
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    let boot_id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let record = |boot: &str| {
        format!(
            "leasefence-dotlock v1\npid={}\nstart=-\nhost=h\nthread=0\nboot={boot}\nnonce=1-00000000000000ab-1\n",
            std::process::id()
        )
    };
    type Make = Box<dyn Fn(&Path)>;
    let stale: Vec<(&str, Make)> = vec![
        (
            "a native lock directory from before the boot",
            Box::new(|p| {
                std::fs::create_dir(p).unwrap();
                age_before_boot(p);
            }),
        ),
        (
            "an empty lock file (the link reached the disk, the record did not)",
            Box::new(|p| std::fs::write(p, "").unwrap()),
        ),
        (
            "a lock file of NUL bytes",
            Box::new(|p| std::fs::write(p, [0u8; 512]).unwrap()),
        ),
        (
            "a Node record of another boot",
            Box::new(move |p| {
                std::fs::write(p, record("00000000-0000-0000-0000-000000000000")).unwrap()
            }),
        ),
    ];
    for (what, make) in &stale {
        make(&lock);
        let store = dotfile(2_000)
            .open(&db)
            .unwrap_or_else(|err| panic!("{what}: {err}"));
        assert!(store.state("job").unwrap().is_some(), "{what}");
        assert!(!lock.exists(), "{what}: the lock is still there");
    }
    // What a live holder may have made is left alone: a directory made since the boot, and this
    // boot's record (its process, this one, is alive); the opener waits and gives up.
    let live: Vec<(&str, Make)> = vec![
        (
            "a native lock directory made since the boot",
            Box::new(|p| std::fs::create_dir(p).unwrap()),
        ),
        (
            "a Node record of this boot",
            Box::new(move |p| std::fs::write(p, record(boot_id.trim())).unwrap()),
        ),
    ];
    for (what, make) in &live {
        make(&lock);
        let err = dotfile(200)
            .open(&db)
            .and_then(|s| s.state("job"))
            .unwrap_err();
        assert!(err.is_retryable(), "{what}: {err}");
        assert!(lock.exists(), "{what}: a lock that may be live was removed");
        let _ = std::fs::remove_dir(&lock).or_else(|_| std::fs::remove_file(&lock));
    }
    // No break mutex or temp file is left behind.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".lock."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#![cfg(not(target_arch = "wasm32"))]
//! Opening files that are not leasefence databases (SPEC section 1): a foreign file is refused
//! with `Error::NotLeasefenceDatabase` and left byte-for-byte untouched, with no journal, WAL or
//! shared-memory file left next to it; a missing directory is `Error::Open` and creates nothing;
//! an empty file becomes a new database; a foreign SQLite database without `jobs` gets the table
//! and keeps everything else. Checked through the library and through the CLI.

#[path = "support/cells.rs"]
mod cells;
#[path = "support/cli_bin.rs"]
mod cli_bin;

use std::path::{Path, PathBuf};
use std::process::Command;

use cells::{rows, Cell};
use leasefence::{Error, Journal, LeaseStore, OpenOptions};
use rusqlite::Connection;
use serde_json::Value;

/// The exact table of SPEC section 1.
const SPEC_TABLE: &str =
    "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
     fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)";

/// Every name in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Deterministic pseudo-random bytes (xorshift64*), so a failure is reproducible.
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

/// Creates an SQLite database at `path` by running `sql` (rollback journal, as most programs do).
fn sqlite_file(path: &Path, sql: &str) {
    let conn = Connection::open(path).unwrap();
    conn.execute_batch(sql)
        .unwrap_or_else(|e| panic!("fixture SQL failed: {e}\n{sql}"));
}

fn cli(db: &Path, args: &[&str], stdin: Option<&str>) -> (i32, String) {
    let mut cmd = Command::new(cli_bin::bin());
    cmd.arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LEASEFENCE_DB");
    let output = match stdin {
        None => cmd.stdin(std::process::Stdio::null()).output().unwrap(),
        Some(input) => {
            use std::io::Write;
            let mut child = cmd
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
            child.wait_with_output().unwrap()
        }
    };
    let code = output
        .status
        .code()
        .expect("the CLI was killed by a signal");
    (code, String::from_utf8(output.stdout).unwrap())
}

/// Parses one `{"error": {"code", "message"}}` line and returns (code, message).
fn error_line(line: &str) -> (String, String) {
    let value: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"));
    let obj = value.as_object().expect("response is an object");
    assert_eq!(
        obj.keys().collect::<Vec<_>>(),
        ["error"],
        "only `error`: {line}"
    );
    let err = obj["error"].as_object().unwrap();
    let mut keys: Vec<_> = err.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["code", "message"], "{line}");
    let message = err["message"].as_str().unwrap().to_string();
    assert!(!message.is_empty());
    (err["code"].as_str().unwrap().to_string(), message)
}

/// A way to create a foreign file, and what the refusal's `problem` must mention.
struct Foreign {
    name: &'static str,
    make: Box<dyn Fn(&Path)>,
    mentions: &'static [&'static str],
}

fn foreign_files() -> Vec<Foreign> {
    let bytes = |data: Vec<u8>| -> Box<dyn Fn(&Path)> {
        Box::new(move |p: &Path| std::fs::write(p, &data).unwrap())
    };
    let sql = |sql: &'static str| -> Box<dyn Fn(&Path)> { Box::new(move |p| sqlite_file(p, sql)) };
    let not_sqlite: &[&str] = &["not an SQLite database"];
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("line {i}: id,owner,until,fence — naïve ✓\n"));
    }
    let mut header_then_junk = b"SQLite format 3\0".to_vec();
    header_then_junk.extend(pseudo_random(8192, 7));
    vec![
        Foreign {
            name: "random bytes (4 KiB)",
            make: bytes(pseudo_random(4096, 1)),
            mentions: not_sqlite,
        },
        Foreign {
            name: "random bytes (65 KiB + 7)",
            make: bytes(pseudo_random(65 * 1024 + 7, 2)),
            mentions: not_sqlite,
        },
        Foreign {
            name: "random bytes (2 bytes)",
            make: bytes(pseudo_random(2, 3)),
            mentions: not_sqlite,
        },
        Foreign {
            name: "random bytes (99 bytes, shorter than the SQLite header)",
            make: bytes(pseudo_random(99, 4)),
            mentions: not_sqlite,
        },
        Foreign {
            name: "zero bytes (4 KiB of NUL)",
            make: bytes(vec![0; 4096]),
            mentions: not_sqlite,
        },
        Foreign {
            name: "a text file",
            make: bytes(text.into_bytes()),
            mentions: not_sqlite,
        },
        Foreign {
            name: "SQLite header followed by junk",
            make: bytes(header_then_junk),
            mentions: &[],
        },
        Foreign {
            name: "jobs without the done column",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT);
                 INSERT INTO jobs(id, owner) VALUES ('a', 'w');"),
            mentions: &["`jobs` table", "result TEXT)"],
        },
        Foreign {
            name: "jobs with an extra column",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0, \
                 priority INTEGER);
                 INSERT INTO jobs(id, priority) VALUES ('a', 5);"),
            mentions: &["`jobs` table", "priority"],
        },
        Foreign {
            name: "jobs with until INTEGER",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until INTEGER NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);"),
            mentions: &["`jobs` table", "until INTEGER"],
        },
        Foreign {
            name: "jobs with fence TEXT and id INTEGER",
            make: sql("CREATE TABLE jobs(id INTEGER PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence TEXT NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);
                 INSERT INTO jobs(id) VALUES (1);"),
            mentions: &["`jobs` table", "fence TEXT"],
        },
        Foreign {
            name: "jobs with the right columns in another order",
            make: sql("CREATE TABLE jobs(owner TEXT, id TEXT PRIMARY KEY, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);"),
            mentions: &["`jobs` table"],
        },
        Foreign {
            name: "jobs without NOT NULL on until",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);"),
            mentions: &["`jobs` table"],
        },
        Foreign {
            name: "jobs with another default for fence",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 1, result TEXT, done INTEGER NOT NULL DEFAULT 0);"),
            mentions: &["`jobs` table"],
        },
        Foreign {
            name: "jobs without a primary key",
            make: sql("CREATE TABLE jobs(id TEXT, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);"),
            mentions: &["`jobs` table"],
        },
        Foreign {
            name: "jobs WITHOUT ROWID",
            make: sql("CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
                 INSERT INTO jobs(id) VALUES ('a');"),
            mentions: &["`jobs` table"],
        },
        Foreign {
            name: "a view named jobs",
            make: sql("CREATE TABLE t(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);
                 INSERT INTO t(id) VALUES ('a');
                 CREATE VIEW jobs AS SELECT * FROM t;"),
            mentions: &["view"],
        },
        Foreign {
            name: "an index named jobs",
            make: sql("CREATE TABLE other(x); CREATE INDEX jobs ON other(x);"),
            mentions: &["index"],
        },
        Foreign {
            name: "a foreign jobs table in a WAL-mode database",
            make: sql("PRAGMA journal_mode = WAL;
                 CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT);
                 INSERT INTO jobs VALUES ('a', 'b');"),
            mentions: &["`jobs` table"],
        },
    ]
}

/// Checks the library's refusal of the file at `path`; returns the problem text.
fn expect_refused(result: leasefence::Result<LeaseStore>, path: &Path, case: &str) -> String {
    match result {
        Err(Error::NotLeasefenceDatabase {
            path: reported,
            problem,
        }) => {
            assert_eq!(reported, path.display().to_string(), "{case}");
            assert!(!problem.trim().is_empty(), "{case}: empty problem");
            let shown = Error::NotLeasefenceDatabase {
                path: reported,
                problem: problem.clone(),
            }
            .to_string();
            assert!(
                shown.contains(&path.display().to_string()),
                "{case}: {shown}"
            );
            assert!(
                shown.contains("not a leasefence database"),
                "{case}: {shown}"
            );
            assert!(shown.contains("untouched"), "{case}: {shown}");
            problem
        }
        Err(other) => panic!("{case}: expected NotLeasefenceDatabase, got {other:?} ({other})"),
        Ok(_) => panic!("{case}: a foreign file was accepted"),
    }
}

#[test]
fn foreign_files_are_refused_and_left_byte_for_byte_untouched() {
    let cases = foreign_files();
    assert!(cases.len() >= 15);
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.db");
        (case.make)(&path);
        let before = std::fs::read(&path).unwrap();
        assert!(
            !before.is_empty(),
            "{}: fixture must not be empty",
            case.name
        );
        let files = listing(dir.path());
        assert_eq!(
            files,
            ["foreign.db"],
            "{}: fixture left extra files",
            case.name
        );

        // The library, with both journal modes.
        for (how, result) in [
            ("LeaseStore::open", LeaseStore::open(&path)),
            (
                "OpenOptions(Rollback)",
                OpenOptions::new().journal(Journal::Rollback).open(&path),
            ),
            (
                "OpenOptions(Wal)",
                OpenOptions::new().journal(Journal::Wal).open(&path),
            ),
        ] {
            let label = format!("{} via {how}", case.name);
            let problem = expect_refused(result, &path, &label);
            for needle in case.mentions {
                assert!(
                    problem.contains(needle),
                    "{label}: problem should mention {needle:?}: {problem}"
                );
            }
            assert_eq!(
                std::fs::read(&path).unwrap(),
                before,
                "{label}: file changed"
            );
            assert_eq!(listing(dir.path()), files, "{label}: files appeared");
        }
        // The seed wrappers open the same way.
        assert!(
            matches!(
                leasefence::seed::enqueue(&path, "job"),
                Err(Error::NotLeasefenceDatabase { .. })
            ),
            "{}: seed::enqueue",
            case.name
        );
        assert_eq!(std::fs::read(&path).unwrap(), before, "{}", case.name);

        // The CLI: exit 3 and one JSON error line, for a write, a read and init.
        for args in [&["enqueue", "job"][..], &["state", "job"], &["init"]] {
            let (code, out) = cli(&path, args, None);
            let label = format!("{}: leasefence {args:?}", case.name);
            assert_eq!(code, 3, "{label}: stdout {out}");
            assert_eq!(out.lines().count(), 1, "{label}: {out}");
            let (err_code, message) = error_line(out.trim_end());
            assert_eq!(err_code, "storage", "{label}");
            assert!(
                message.contains("not a leasefence database"),
                "{label}: {message}"
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                before,
                "{label}: file changed"
            );
            assert_eq!(listing(dir.path()), files, "{label}: files appeared");
        }
        // And `batch`: every valid line gets the storage error, a bad line still bad_request.
        let (code, out) = cli(
            &path,
            &["batch"],
            Some("{\"op\":\"enqueue\",\"job\":\"j\"}\nnot json\n{\"op\":\"init\"}\n"),
        );
        assert_eq!(code, 0, "{}: batch exit", case.name);
        let codes: Vec<String> = out.lines().map(|l| error_line(l).0).collect();
        assert_eq!(
            codes,
            ["storage", "bad_request", "storage"],
            "{}",
            case.name
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{}: batch",
            case.name
        );
        assert_eq!(listing(dir.path()), files, "{}: batch", case.name);
    }
}

#[test]
fn missing_directory_is_an_open_error_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for rel in ["missing/q.db", "missing/deeper/q.db"] {
        let path = dir.path().join(rel);
        match LeaseStore::open(&path) {
            Err(Error::Open {
                path: reported,
                problem,
            }) => {
                assert_eq!(reported, path.display().to_string());
                assert!(problem.contains("does not exist"), "{problem}");
                assert!(problem.contains("missing"), "{problem}");
            }
            Err(other) => panic!("{rel}: expected Error::Open, got {other:?}"),
            Ok(_) => panic!("{rel}: opened a file in a missing directory"),
        }
        assert!(
            listing(dir.path()).is_empty(),
            "{rel}: something was created"
        );
        assert!(leasefence::seed::init_db(&path).is_err());
        assert!(
            listing(dir.path()).is_empty(),
            "{rel}: seed created something"
        );

        for args in [&["enqueue", "job"][..], &["init"], &["state", "job"]] {
            let (code, out) = cli(&path, args, None);
            assert_eq!(code, 3, "{rel} {args:?}: {out}");
            let (err_code, message) = error_line(out.trim_end());
            assert_eq!(err_code, "storage");
            assert!(message.contains("does not exist"), "{message}");
        }
        assert!(
            listing(dir.path()).is_empty(),
            "{rel}: the CLI created something"
        );
    }
}

/// A path with a NUL byte names no file: `invalid_argument`, nothing created (as the wasm
/// engine says it; the Node addon opens through this).
#[test]
fn a_path_with_a_nul_byte_is_an_invalid_argument_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a\0b.db", "nul\0.db"] {
        let path = dir.path().join(name);
        match LeaseStore::open(&path) {
            Err(
                err @ Error::InvalidArgument {
                    argument: "path", ..
                },
            ) => {
                assert!(err.to_string().contains("NUL"), "{err}");
            }
            Err(other) => panic!("{name:?}: expected invalid_argument, got {other:?}"),
            Ok(_) => panic!("{name:?}: opened a path with a NUL byte"),
        }
    }
    assert!(listing(dir.path()).is_empty(), "something was created");
}

/// The shape of `jobs` as SQLite reports it.
fn table_info(conn: &Connection) -> Vec<Vec<Cell>> {
    rows(
        conn,
        "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('jobs')",
    )
}

#[test]
fn an_empty_file_is_accepted_as_a_new_database() {
    let dir = tempfile::tempdir().unwrap();
    let reference = dir.path().join("reference.db");
    sqlite_file(&reference, SPEC_TABLE);
    let expected_shape = table_info(&Connection::open(&reference).unwrap());
    assert_eq!(expected_shape.len(), 6);

    // Library.
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    {
        let store = LeaseStore::open(&path).expect("a 0-byte file is a new database");
        assert_eq!(table_info(store.connection()), expected_shape);
        assert!(store.enqueue("job").unwrap());
        assert_eq!(
            store.claim("job", "w", 0.0, 10.0).unwrap().granted(),
            Some(1)
        );
    }
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    let store = LeaseStore::open(&path).expect("reopens");
    assert_eq!(store.state("job").unwrap().unwrap().fence, 1);
    drop(store);

    // CLI.
    let path = dir.path().join("empty-cli.db");
    std::fs::write(&path, b"").unwrap();
    let (code, out) = cli(&path, &["enqueue", "job"], None);
    assert_eq!((code, out.as_str()), (0, "{\"value\":true}\n"));
    let (code, out) = cli(
        &path,
        &["claim", "job", "--owner", "w", "--ttl", "5", "--now", "1"],
        None,
    );
    assert_eq!((code, out.as_str()), (0, "{\"value\":1}\n"));
    assert_eq!(
        table_info(&Connection::open(&path).unwrap()),
        expected_shape
    );
}

#[test]
fn the_exact_schema_written_by_another_program_is_accepted_with_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    for (name, create) in [
        ("spec.db", SPEC_TABLE.to_string()),
        (
            "lowercase.db",
            SPEC_TABLE
                .replace("TEXT", "text")
                .replace("REAL", "real")
                .replace("INTEGER", "integer")
                .replace("NOT NULL DEFAULT", "not null default")
                .replace("PRIMARY KEY", "primary key"),
        ),
    ] {
        let path = dir.path().join(name);
        sqlite_file(
            &path,
            &format!(
                "{create}; INSERT INTO jobs VALUES ('a', 'w', 50.5, 3, NULL, 0), \
                 ('b', NULL, 0, 1, 'r ✓', 1);"
            ),
        );
        let before = rows(
            &Connection::open(&path).unwrap(),
            "SELECT * FROM jobs ORDER BY rowid",
        );
        let store = LeaseStore::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            rows(store.connection(), "SELECT * FROM jobs ORDER BY rowid"),
            before
        );
        assert_eq!(
            store.claim("a", "x", 50.5, 1.0).unwrap().granted(),
            Some(4),
            "{name}: fence continues from the stored one"
        );
    }
}

#[test]
fn a_foreign_sqlite_database_without_jobs_gets_the_table_and_keeps_the_rest() {
    const FOREIGN: &str = "
        CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT NOT NULL, weight REAL, blob BLOB);
        INSERT INTO notes(body, weight, blob) VALUES
            ('first', 1.5, x'00ff10'), ('ünïcödé ✓ 😀', -0.0, NULL), ('third', NULL, x'');
        CREATE INDEX notes_by_body ON notes(body);
        CREATE VIEW heavy_notes AS SELECT id, body FROM notes WHERE weight > 1;
        CREATE TABLE job_archive(job TEXT, note TEXT);
        INSERT INTO job_archive VALUES ('old', 'kept');
        CREATE TRIGGER notes_touch AFTER INSERT ON notes BEGIN
            INSERT INTO job_archive VALUES ('trigger', NEW.body);
        END;";
    let snapshot = |conn: &Connection| {
        (
            rows(
                conn,
                "SELECT type, name, tbl_name, sql FROM sqlite_schema \
                        WHERE name NOT IN ('jobs', 'leasefence_claimable') AND name NOT LIKE 'leasefence!_%' ESCAPE '!' \
                        AND name NOT LIKE 'sqlite!_autoindex!_leasefence%' ESCAPE '!' \
                        AND name NOT LIKE 'sqlite_autoindex_jobs%' ORDER BY name",
            ),
            rows(conn, "SELECT rowid, * FROM notes ORDER BY rowid"),
            rows(conn, "SELECT rowid, * FROM job_archive ORDER BY rowid"),
            rows(conn, "SELECT * FROM heavy_notes ORDER BY id"),
        )
    };
    let dir = tempfile::tempdir().unwrap();

    // Library.
    let path = dir.path().join("foreign.db");
    sqlite_file(&path, FOREIGN);
    let before = snapshot(&Connection::open(&path).unwrap());
    assert_eq!(before.1.len(), 3);
    {
        let store = LeaseStore::open(&path).expect("a database without jobs is accepted");
        assert!(store.enqueue("job").unwrap());
        assert_eq!(
            store.claim("job", "w", 0.0, 10.0).unwrap().granted(),
            Some(1)
        );
        assert_eq!(
            snapshot(store.connection()),
            before,
            "other objects changed"
        );
    }
    let conn = Connection::open(&path).unwrap();
    assert_eq!(snapshot(&conn), before);
    assert_eq!(table_info(&conn).len(), 6);
    let ok: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    drop(conn);

    // CLI.
    let path = dir.path().join("foreign-cli.db");
    sqlite_file(&path, FOREIGN);
    let (code, out) = cli(&path, &["enqueue", "job"], None);
    assert_eq!((code, out.as_str()), (0, "{\"value\":true}\n"));
    let conn = Connection::open(&path).unwrap();
    assert_eq!(snapshot(&conn), before);
    let n: i64 = conn
        .query_row("SELECT count(*) FROM jobs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

/// Regression: SQLite names are case-insensitive, so a foreign `JOBS` table (or a `Jobs` view) is
/// the `jobs` table and must be checked, not overlooked and then modified.
#[test]
fn foreign_jobs_table_or_view_in_another_case_is_refused_untouched() {
    for (name, sql) in [
        (
            "JOBS table",
            "CREATE TABLE JOBS(id TEXT PRIMARY KEY, until REAL, done INTEGER, extra BLOB);
             INSERT INTO JOBS VALUES ('x', 1, 0, NULL);",
        ),
        (
            "Jobs view",
            "CREATE TABLE t(a); CREATE VIEW Jobs AS SELECT a FROM t;",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.db");
        sqlite_file(&path, sql);
        let before = std::fs::read(&path).unwrap();
        expect_refused(LeaseStore::open(&path), &path, name);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "{name}: file changed"
        );
        assert_eq!(listing(dir.path()), ["foreign.db"], "{name}");
    }
}

/// Regression: SQLite reports a 1-byte file as size 0 (os_unix.c, ticket #3260), so without our
/// own size check a 1-byte foreign file would open as an empty database and be overwritten.
#[test]
fn a_one_byte_file_is_refused_untouched() {
    for byte in [b'x', 0u8, 0xff] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("one-byte.db");
        std::fs::write(&path, [byte]).unwrap();
        expect_refused(LeaseStore::open(&path), &path, "1-byte file");
        assert_eq!(std::fs::read(&path).unwrap(), [byte]);
        assert_eq!(listing(dir.path()), ["one-byte.db"]);
    }
}

/// QUESTIONABLE (see the report): when only NOT NULL, a default, the primary key or WITHOUT
/// ROWID differ, the message lists the same columns twice ("has columns (X), the contract needs
/// (X)"), and the dedicated WITHOUT ROWID message is unreachable.
#[test]
fn shape_mismatch_messages_name_the_difference() {
    for (name, sql) in [
        (
            "WITHOUT ROWID",
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
             fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID",
        ),
        (
            "no NOT NULL",
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL DEFAULT 0, \
             fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("foreign.db");
        sqlite_file(&path, sql);
        let problem = expect_refused(LeaseStore::open(&path), &path, name);
        if name == "WITHOUT ROWID" {
            assert!(problem.contains("WITHOUT ROWID"), "{problem}");
        }
        if let Some((found, needed)) = problem
            .split_once("has columns (")
            .and_then(|(_, rest)| rest.split_once("), the contract needs ("))
        {
            assert_ne!(found, needed.trim_end_matches(')'), "{name}: {problem}");
        }
    }
}

#[test]
fn a_directory_as_database_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sub: PathBuf = dir.path().join("a-directory");
    std::fs::create_dir(&sub).unwrap();
    let err = LeaseStore::open(&sub).expect_err("a directory is not a database");
    assert!(matches!(err, Error::Open { .. }), "{err:?}");
    assert!(listing(&sub).is_empty());
    assert_eq!(listing(dir.path()), ["a-directory"]);
    let (code, out) = cli(&sub, &["enqueue", "job"], None);
    assert_eq!(code, 3, "{out}");
    assert_eq!(error_line(out.trim_end()).0, "storage");
    assert_eq!(listing(dir.path()), ["a-directory"]);
}

/// Opens `path` on a thread and waits at most 30 s: a FIFO used to block the opener for ever.
fn open_within_limit<T: Send + 'static>(
    path: PathBuf,
    open: fn(PathBuf) -> leasefence::Result<T>,
) -> leasefence::Result<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(open(path));
    });
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("the open did not return within 30 s (blocked on the path)")
}

#[test]
fn a_path_that_is_not_a_regular_file_is_refused_naming_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("queue.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success(), "mkfifo");
    let folder = dir.path().join("a-directory");
    std::fs::create_dir(&folder).unwrap();
    let cases = [
        (fifo.clone(), "named pipe"),
        (folder.clone(), "a directory"),
        (PathBuf::from("/dev/zero"), "character device"),
    ];
    for (path, words) in cases {
        let store = open_within_limit(path.clone(), |p| LeaseStore::open(p).map(drop));
        let guard = open_within_limit(path.clone(), |p| {
            leasefence::guard::SqliteGuard::open(p).map(drop)
        });
        for (what, result) in [("LeaseStore::open", store), ("SqliteGuard::open", guard)] {
            let err = result.expect_err(what);
            let text = err.to_string();
            assert!(matches!(err, Error::Open { .. }), "{what}: {err:?}");
            assert_eq!(err.code(), "storage");
            assert!(!err.is_retryable(), "{what}: {text}");
            assert!(
                text.contains(&path.display().to_string())
                    && text.contains(words)
                    && text.contains("not a regular file"),
                "{what} {}: {text}",
                path.display()
            );
        }
    }
    // Nothing was made next to the FIFO or inside the directory.
    assert_eq!(listing(dir.path()), ["a-directory", "queue.fifo"]);
    assert!(listing(&folder).is_empty());
    // The CLI answers the same, as a protocol error line.
    let mut child = Command::new(cli_bin::bin())
        .args(["batch", "--db"])
        .arg(&fifo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, r#"{{"op":"state","job":"x"}}"#).unwrap();
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("leasefence batch on a FIFO did not answer within 30 s")
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("named pipe"), "{text}");
}

#![cfg(not(target_arch = "wasm32"))]
//! What a hostile or careless caller's fenced statements could do to the store beyond its tables,
//! on SQLite: steer the planner (ANALYZE, planted `sqlite_stat1` rows) so that `claim_next` scans
//! the whole table, or take a name in the library's namespace by renaming a table of its own.
//! Each is refused with `invalid_argument` and nothing changes; and statistics planted by the
//! application's own connection (which the library cannot refuse) do not change the plan of
//! `claim_next`, which is pinned to its index.

use leasefence::{Error, Finish, Lease, LeaseStore, Outcome, Statement};
use rusqlite::Connection;

fn store_with_lease(dir: &tempfile::TempDir) -> (LeaseStore, i64) {
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    store
        .connection()
        .execute_batch("CREATE TABLE app(k TEXT PRIMARY KEY, v INTEGER)")
        .unwrap();
    for n in 0..50 {
        store.enqueue(&format!("job-{n}")).unwrap();
    }
    let fence = store
        .claim("job-0", "me", 0.0, 100.0)
        .unwrap()
        .granted()
        .unwrap();
    (store, fence)
}

fn refused(result: leasefence::Result<Outcome<()>>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        other => panic!("expected invalid_argument, got {other:?}"),
    }
}

fn fenced(store: &LeaseStore, fence: i64, sql: &str) -> leasefence::Result<Outcome<()>> {
    store.fenced(
        &Lease::new("job-0", "me", fence),
        1.0,
        &[
            Statement::new("INSERT OR REPLACE INTO app(k, v) VALUES ('before', 1)", []),
            Statement::new(sql, []),
        ],
        Finish::KeepLease,
    )
}

/// The rows of `sqlite_stat1`, or none when the table does not exist.
fn stat_rows(conn: &Connection) -> Vec<(String, Option<String>, String)> {
    let exists: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM sqlite_schema WHERE name = 'sqlite_stat1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if !exists {
        return Vec::new();
    }
    let mut stmt = conn
        .prepare("SELECT tbl, idx, stat FROM sqlite_stat1 ORDER BY tbl, idx")
        .unwrap();
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

fn app_rows(store: &LeaseStore) -> i64 {
    store
        .connection()
        .query_row("SELECT count(*) FROM app", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn analyze_and_writes_to_the_planner_statistics_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    // A sqlite_stat1 table made by the application itself, outside fenced writes.
    store.connection().execute_batch("ANALYZE").unwrap();
    let planted = stat_rows(store.connection());
    assert!(!planted.is_empty());
    for sql in [
        "ANALYZE",
        "ANALYZE jobs",
        "ANALYZE main.leasefence_claimable",
        "DELETE FROM sqlite_stat1 WHERE tbl = 'jobs'",
        "INSERT INTO sqlite_stat1 VALUES ('jobs', 'leasefence_claimable', '100000000 100000000')",
        "UPDATE sqlite_stat1 SET stat = '1 1' WHERE tbl = 'jobs'",
        "DROP TABLE sqlite_stat1",
    ] {
        let why = refused(fenced(&store, fence, sql));
        assert!(
            why.contains("ANALYZE") || why.contains("sqlite_stat1"),
            "{sql}: {why}"
        );
    }
    assert_eq!(stat_rows(store.connection()), planted, "nothing changed");
    assert_eq!(
        app_rows(&store),
        0,
        "the statement before each refused one was rolled back"
    );
    // The lease is untouched and the fenced write still works.
    assert!(fenced(&store, fence, "UPDATE app SET v = 2")
        .unwrap()
        .is_granted());
}

#[test]
fn a_table_cannot_be_renamed_into_the_librarys_namespace() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    for sql in [
        "ALTER TABLE app RENAME TO leasefence_mine",
        "ALTER TABLE main.app RENAME TO \"LEASEFENCE_Mine\"",
    ] {
        let why = refused(fenced(&store, fence, sql));
        assert!(why.contains("RENAME"), "{sql}: {why}");
    }
    let names: Vec<String> = {
        let mut stmt = store
            .connection()
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
            .unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    };
    assert!(names.contains(&"app".to_string()), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.eq_ignore_ascii_case("leasefence_mine")),
        "{names:?}"
    );
    assert_eq!(app_rows(&store), 0);
    // Altering a table of one's own is still allowed, a rename to a name of one's own too.
    assert!(
        fenced(&store, fence, "ALTER TABLE app ADD COLUMN note TEXT")
            .unwrap()
            .is_granted()
    );
    assert!(fenced(&store, fence, "ALTER TABLE app RENAME TO app_v2")
        .unwrap()
        .is_granted());
}

/// `claim_next`'s own statements (the probes of `leasefence_order` and the claim by id), each
/// planned on `conn`.
fn claim_next_plan(conn: &Connection) -> String {
    let statements: [(&str, &[&dyn rusqlite::ToSql]); 6] = [
        (include_str!("../src/sqlite/sql/first_queue.sql"), &[]),
        (
            include_str!("../src/sqlite/sql/next_queue.sql"),
            &[&"default"],
        ),
        (
            include_str!("../src/sqlite/sql/top_priority.sql"),
            &[&"default"],
        ),
        (
            include_str!("../src/sqlite/sql/lower_priority.sql"),
            &[&"default", &0],
        ),
        (
            include_str!("../src/sqlite/sql/first_claimable.sql"),
            &[&"default", &0, &1.0],
        ),
        (
            include_str!("../src/sqlite/sql/claim_picked.sql"),
            &[&"job-1", &"o", &10.0, &1.0],
        ),
    ];
    statements
        .iter()
        .map(|(sql, args)| {
            let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
            let rows = stmt.query_map(*args, |r| r.get::<_, String>(3)).unwrap();
            rows.map(Result::unwrap).collect::<Vec<_>>().join("; ")
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

#[test]
fn planted_statistics_do_not_turn_claim_next_into_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = store_with_lease(&dir);
    // The application's own connection plants statistics that make the table look tiny and the
    // claimable index useless (what a fenced write can no longer do, but any connection to the file can).
    store
        .connection()
        .execute_batch(
            "ANALYZE;
             DELETE FROM sqlite_stat1 WHERE tbl = 'jobs';
             INSERT INTO sqlite_stat1 VALUES ('jobs', 'leasefence_claimable',
                                              '100000000 100000000 100000000');
             INSERT INTO sqlite_stat1 VALUES ('jobs', 'sqlite_autoindex_jobs_1', '1 1');
             INSERT INTO sqlite_stat1 VALUES ('jobs', NULL, '1');
             DELETE FROM sqlite_stat1 WHERE tbl = 'leasefence_order';
             INSERT INTO sqlite_stat1 VALUES ('leasefence_order', 'leasefence_next',
                                              '100000000 100000000 100000000 100000000');
             INSERT INTO sqlite_stat1 VALUES ('leasefence_order', NULL, '1');",
        )
        .unwrap();
    drop(store);
    // A fresh connection reads the planted statistics when it loads the schema.
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    let plan = claim_next_plan(store.connection());
    // Every probe of the claim order goes through its index in the index's order (no sort, so
    // LIMIT 1 stops at the first entry: the one "SCAN ... USING COVERING INDEX" is the first
    // queue name), the claim itself by the key.
    let parts: Vec<&str> = plan.split(" | ").collect();
    assert_eq!(parts.len(), 6, "{plan}");
    for probe in &parts[..5] {
        assert!(
            probe.contains("INDEX leasefence_next") && !probe.contains("TEMP B-TREE"),
            "a claim_next probe is planned as: {probe} (all: {plan})"
        );
    }
    for probe in &parts[1..5] {
        assert!(
            probe.starts_with("SEARCH"),
            "not a search: {probe} (all: {plan})"
        );
    }
    assert!(
        parts[5].contains("sqlite_autoindex_jobs_1") && !parts[5].contains("SCAN jobs"),
        "claim_next's claim is planned as: {} (all: {plan})",
        parts[5]
    );
    let claimed = store.claim_next("w", 1.0, 10.0).unwrap().unwrap();
    assert_eq!(claimed.job, "job-1");
}

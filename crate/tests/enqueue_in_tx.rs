#![cfg(not(target_arch = "wasm32"))]
//! Enqueue in your own transaction (docs/contract.md section 11): a job enqueued together with
//! the caller's own rows commits with them or not at all.
//!
//! - SQLite: `LeaseStore::enqueue_in` on the caller's own `rusqlite::Transaction` (committed:
//!   the job is claimable; rolled back: no job), the refusal of a file without the store's
//!   tables, and the statement-list form `enqueue_many_with` (a failing statement keeps neither
//!   the rows nor the jobs; a statement writing `jobs` is refused), also through a `SharedStore`.
//! - PostgreSQL (`#[ignore]`d; `bash scripts/postgres.sh cargo test -p leasefence --test
//!   enqueue_in_tx -- --ignored`): `PgStore::enqueue_in` on the caller's `postgres::Transaction`,
//!   and `enqueue_many_with`, each in a schema of its own.

use leasefence::{Error, LeaseStore, Leases, NewJob, SharedStore, Statement};

fn temp_file(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |row| row.get(0)).unwrap()
}

#[test]
fn sqlite_caller_transaction_commits_the_job_with_the_rows() {
    let (_dir, path) = temp_file("shop.db");
    let store = LeaseStore::open(&path).unwrap();
    let mut app = rusqlite::Connection::open(&path).unwrap();
    app.execute("CREATE TABLE orders(id TEXT PRIMARY KEY)", [])
        .unwrap();

    let tx = app.transaction().unwrap();
    tx.execute("INSERT INTO orders VALUES ('o-1')", []).unwrap();
    let jobs = [
        NewJob::new("ship-o-1").queue("mail").priority(4),
        NewJob::new("bill-o-1").payload("{\"order\":\"o-1\"}"),
        NewJob::new("ship-o-1"),
    ];
    assert_eq!(
        LeaseStore::enqueue_in(&tx, &jobs).unwrap(),
        [true, true, false]
    );
    // Not visible to the store before the commit.
    assert!(store.state("ship-o-1").unwrap().is_none());
    tx.commit().unwrap();

    assert_eq!(count(&app, "SELECT count(*) FROM orders"), 1);
    let first = store.claim_next("w", 1.0, 30.0).unwrap().unwrap();
    assert_eq!(first.job, "ship-o-1", "priority 4 first");
    let second = store.claim_next("w", 1.0, 30.0).unwrap().unwrap();
    assert_eq!(second.job, "bill-o-1");
    assert_eq!(second.payload.as_deref(), Some("{\"order\":\"o-1\"}"));
    let report = store.inspect("ship-o-1").unwrap().unwrap();
    assert_eq!((report.queue.as_str(), report.priority), ("mail", 4));
}

#[test]
fn sqlite_caller_transaction_rolled_back_leaves_no_job() {
    let (_dir, path) = temp_file("shop.db");
    let store = LeaseStore::open(&path).unwrap();
    let mut app = rusqlite::Connection::open(&path).unwrap();
    app.execute("CREATE TABLE orders(id TEXT PRIMARY KEY)", [])
        .unwrap();

    let tx = app.transaction().unwrap();
    tx.execute("INSERT INTO orders VALUES ('o-2')", []).unwrap();
    assert_eq!(
        LeaseStore::enqueue_in(&tx, &[NewJob::new("ship-o-2").queue("mail")]).unwrap(),
        [true]
    );
    tx.rollback().unwrap();

    assert_eq!(count(&app, "SELECT count(*) FROM orders"), 0);
    assert!(store.state("ship-o-2").unwrap().is_none());
    assert!(store.claim_next("w", 1.0, 30.0).unwrap().is_none());
    assert_eq!(
        count(&app, "SELECT count(*) FROM leasefence_order"),
        0,
        "the side row went with the job"
    );

    // Dropped without commit: the same.
    let tx = app.transaction().unwrap();
    LeaseStore::enqueue_in(&tx, &[NewJob::new("ship-o-3")]).unwrap();
    drop(tx);
    assert!(store.state("ship-o-3").unwrap().is_none());
}

#[test]
fn sqlite_caller_transaction_without_the_schema_is_refused() {
    let (_dir, path) = temp_file("plain.db");
    let mut app = rusqlite::Connection::open(&path).unwrap();
    app.execute("CREATE TABLE orders(id TEXT)", []).unwrap();
    let tx = app.transaction().unwrap();
    tx.execute("INSERT INTO orders VALUES ('o')", []).unwrap();
    let err = LeaseStore::enqueue_in(&tx, &[NewJob::new("j")]).unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArgument { message, .. } if message.contains("LeaseStore::open")),
        "{err:?}"
    );
    // The caller's transaction is still usable.
    tx.execute("INSERT INTO orders VALUES ('p')", []).unwrap();
    tx.commit().unwrap();
    assert_eq!(count(&app, "SELECT count(*) FROM orders"), 2);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM sqlite_schema WHERE name = 'jobs'"
        ),
        0
    );
}

#[test]
fn sqlite_caller_transaction_keeps_working_after_a_refused_list() {
    let (_dir, path) = temp_file("shop.db");
    let store = LeaseStore::open(&path).unwrap();
    let mut app = rusqlite::Connection::open(&path).unwrap();
    // The application's own trigger refuses one id: a storage error in the middle of a list.
    app.execute_batch(
        "CREATE TRIGGER no_boom BEFORE INSERT ON jobs WHEN NEW.id = 'boom' \
         BEGIN SELECT RAISE(ABORT, 'no boom'); END",
    )
    .unwrap();
    let tx = app.transaction().unwrap();
    LeaseStore::enqueue_in(&tx, &[NewJob::new("a")]).unwrap();
    let err = LeaseStore::enqueue_in(&tx, &[NewJob::new("a2"), NewJob::new("boom")]).unwrap_err();
    assert_eq!(err.code(), "storage", "{err:?}");
    let err = LeaseStore::enqueue_in(&tx, &[NewJob::new("b").run_at(f64::NAN)]).unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    // The failed list was undone to where it began; the transaction goes on.
    tx.execute("CREATE TABLE after(x)", []).unwrap();
    tx.commit().unwrap();
    assert!(store.state("a").unwrap().is_some());
    assert!(store.state("a2").unwrap().is_none(), "undone with its list");
    assert!(store.state("b").unwrap().is_none());
}

fn orders_store() -> LeaseStore {
    let store = LeaseStore::open_in_memory().unwrap();
    store
        .connection()
        .execute("CREATE TABLE orders(id TEXT PRIMARY KEY)", [])
        .unwrap();
    store
}

fn order(id: &str) -> Statement {
    Statement::new("INSERT INTO orders(id) VALUES ($1)", [id.into()])
}

fn orders(store: &LeaseStore) -> i64 {
    count(store.connection(), "SELECT count(*) FROM orders")
}

#[test]
fn statement_list_commits_rows_and_jobs_together() {
    let store = orders_store();
    let answers = store
        .enqueue_many_with(
            &[NewJob::new("ship-1"), NewJob::new("ship-2").run_at(5.0)],
            &[order("o-1"), order("o-2")],
        )
        .unwrap();
    assert_eq!(answers, [true, true]);
    assert_eq!(orders(&store), 2);
    assert_eq!(
        store.claim_next("w", 10.0, 30.0).unwrap().unwrap().job,
        "ship-1"
    );
}

#[test]
fn a_failing_statement_keeps_neither_rows_nor_jobs() {
    let store = orders_store();
    store.enqueue_many_with(&[], &[order("o-1")]).unwrap();
    // The second statement violates the primary key: nothing of the call is kept.
    let err = store
        .enqueue_many_with(
            &[NewJob::new("ship-2").queue("mail"), NewJob::new("ship-3")],
            &[order("o-2"), order("o-1")],
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Statement { index: 1, busy: false, message } if message.contains("UNIQUE")),
        "{err:?}"
    );
    assert_eq!(err.code(), "storage");
    assert_eq!(orders(&store), 1);
    assert!(store.state("ship-2").unwrap().is_none());
    assert!(store.state("ship-3").unwrap().is_none());
    assert_eq!(
        count(store.connection(), "SELECT count(*) FROM leasefence_order"),
        0
    );
    // The store goes on.
    assert_eq!(
        store.enqueue_many(&[NewJob::new("ship-2")]).unwrap(),
        [true]
    );
}

#[test]
fn statements_writing_the_library_tables_are_refused() {
    let store = orders_store();
    store.enqueue("old").unwrap();
    for refused in [
        "UPDATE jobs SET fence = 9",
        "DELETE FROM leasefence_order",
        "INSERT INTO leasefence_payloads VALUES ('old', 'x')",
        "COMMIT",
        "PRAGMA journal_mode = DELETE",
    ] {
        let err = store
            .enqueue_many_with(
                &[NewJob::new("new")],
                &[order("o-1"), Statement::new(refused, [])],
            )
            .unwrap_err();
        assert_eq!(err.code(), "invalid_argument", "{refused}: {err:?}");
    }
    assert_eq!(orders(&store), 0);
    assert!(store.state("new").unwrap().is_none());
    assert_eq!(store.state("old").unwrap().unwrap().fence, 0);
    assert_eq!(
        store.claim_next("w", 0.0, 30.0).unwrap().unwrap().job,
        "old"
    );
}

#[test]
fn shared_store_runs_the_statement_list_in_its_group() {
    let (_dir, path) = temp_file("shared.db");
    let setup = LeaseStore::open(&path).unwrap();
    setup
        .connection()
        .execute("CREATE TABLE orders(id TEXT PRIMARY KEY)", [])
        .unwrap();
    drop(setup);
    let shared = SharedStore::open(&path).unwrap();
    let store: &dyn Leases = &shared;
    assert_eq!(
        store
            .enqueue_many_with(&[NewJob::new("a")], &[order("o-1")])
            .unwrap(),
        [true]
    );
    let err = store
        .enqueue_many_with(&[NewJob::new("b")], &[order("o-1")])
        .unwrap_err();
    assert!(matches!(err, Error::Statement { index: 0, .. }), "{err:?}");
    assert!(store.state("b").unwrap().is_none());
    assert!(store.state("a").unwrap().is_some());
    let check = rusqlite::Connection::open(&path).unwrap();
    assert_eq!(count(&check, "SELECT count(*) FROM orders"), 1);
}

#[allow(dead_code)] // url_named: the PostgreSQL suite's
#[path = "support/pg_schema.rs"]
mod pg_schema;

mod postgres_backend {
    use super::pg_schema::PgSchema;
    use super::*;
    use leasefence::PgStore;

    fn orders(app: &mut postgres::Client) -> i64 {
        app.query_one("SELECT count(*) FROM orders", &[])
            .unwrap()
            .get(0)
    }

    #[test]
    #[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test enqueue_in_tx -- --ignored"]
    fn pg_caller_transaction_commits_or_rolls_back_the_job_with_the_rows() {
        let schema = PgSchema::new("enqtx_caller_tx");
        let store = PgStore::connect(&schema.url).unwrap();
        store.init().unwrap();
        let mut app = schema.admin();
        app.batch_execute("CREATE TABLE orders(id TEXT PRIMARY KEY)")
            .unwrap();

        // Rolled back: neither the order nor the job.
        let mut tx = app.transaction().unwrap();
        tx.execute("INSERT INTO orders VALUES ($1)", &[&"o-1"])
            .unwrap();
        let jobs = [NewJob::new("ship-o-1").queue("mail").priority(2)];
        assert_eq!(PgStore::enqueue_in(&mut tx, &jobs).unwrap(), [true]);
        tx.rollback().unwrap();
        assert_eq!(orders(&mut app), 0);
        assert!(store.state("ship-o-1").unwrap().is_none());
        assert!(store.claim_next("w", 1.0, 30.0).unwrap().is_none());

        // Committed: both, and the job claimable with its queue and priority.
        let mut tx = app.transaction().unwrap();
        tx.execute("INSERT INTO orders VALUES ($1)", &[&"o-1"])
            .unwrap();
        let jobs = [
            NewJob::new("bill-o-1").payload("p"),
            NewJob::new("ship-o-1").queue("mail").priority(2),
            NewJob::new("bill-o-1"),
        ];
        assert_eq!(
            PgStore::enqueue_in(&mut tx, &jobs).unwrap(),
            [true, true, false]
        );
        assert!(
            store.state("ship-o-1").unwrap().is_none(),
            "not before the commit"
        );
        // A refused list leaves the caller's transaction usable.
        assert_eq!(
            PgStore::enqueue_in(&mut tx, &[NewJob::new("bad\0id")])
                .unwrap_err()
                .code(),
            "invalid_argument"
        );
        tx.execute("INSERT INTO orders VALUES ($1)", &[&"o-2"])
            .unwrap();
        tx.commit().unwrap();
        assert_eq!(orders(&mut app), 2);
        let first = store.claim_next("w", 1.0, 30.0).unwrap().unwrap();
        assert_eq!(first.job, "ship-o-1", "priority 2 first");
        let second = store.claim_next("w", 1.0, 30.0).unwrap().unwrap();
        assert_eq!(
            (second.job.as_str(), second.payload.as_deref()),
            ("bill-o-1", Some("p"))
        );
        let report = store.inspect("ship-o-1").unwrap().unwrap();
        assert_eq!((report.queue.as_str(), report.priority), ("mail", 2));
    }

    #[test]
    #[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test enqueue_in_tx -- --ignored"]
    fn pg_caller_transaction_without_the_schema_is_refused() {
        let schema = PgSchema::new("enqtx_no_schema");
        let mut app = schema.admin();
        app.batch_execute("CREATE TABLE orders(id TEXT)").unwrap();
        let mut tx = app.transaction().unwrap();
        tx.execute("INSERT INTO orders VALUES ('o')", &[]).unwrap();
        let err = PgStore::enqueue_in(&mut tx, &[NewJob::new("j")]).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { message, .. } if message.contains("search_path")),
            "{err:?}"
        );
        tx.execute("INSERT INTO orders VALUES ('p')", &[]).unwrap();
        tx.commit().unwrap();
        assert_eq!(orders(&mut app), 2);
    }

    #[test]
    #[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test enqueue_in_tx -- --ignored"]
    fn pg_statement_list_is_all_or_nothing() {
        let schema = PgSchema::new("enqtx_statements");
        let store = PgStore::connect(&schema.url).unwrap();
        store.init().unwrap();
        let mut app = schema.admin();
        app.batch_execute("CREATE TABLE orders(id TEXT PRIMARY KEY)")
            .unwrap();
        let leases: &dyn Leases = &store;

        assert_eq!(
            leases
                .enqueue_many_with(&[NewJob::new("ship-1").queue("mail")], &[order("o-1")])
                .unwrap(),
            [true]
        );
        // A failing statement (the key again): neither rows nor jobs.
        let err = leases
            .enqueue_many_with(
                &[NewJob::new("ship-2"), NewJob::new("ship-3")],
                &[order("o-2"), order("o-1")],
            )
            .unwrap_err();
        assert!(matches!(err, Error::Statement { index: 1, .. }), "{err:?}");
        // A refused statement: the same.
        for refused in [
            "UPDATE jobs SET fence = 9",
            "INSERT INTO leasefence_payloads VALUES ('ship-1', 'x')",
            "UPDATE jobs SET priority = 9",
            "COMMIT",
        ] {
            let err = leases
                .enqueue_many_with(
                    &[NewJob::new("ship-2")],
                    &[order("o-2"), Statement::new(refused, [])],
                )
                .unwrap_err();
            assert_eq!(err.code(), "invalid_argument", "{refused}: {err:?}");
        }
        assert_eq!(orders(&mut app), 1);
        assert!(leases.state("ship-2").unwrap().is_none());
        assert!(leases.state("ship-3").unwrap().is_none());
        assert_eq!(leases.state("ship-1").unwrap().unwrap().fence, 0);
        // The store's session goes on.
        let claimed = leases.claim_next("w", 1.0, 30.0).unwrap().unwrap();
        assert_eq!(claimed.job, "ship-1");
        assert!(leases.claim_next("w", 1.0, 30.0).unwrap().is_none());
    }
}

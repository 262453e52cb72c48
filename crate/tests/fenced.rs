#![cfg(not(target_arch = "wasm32"))]
//! Fenced writes on SQLite files (docs/contract.md section 8) beyond the shared vectors: the
//! closure API, the ways a statement could reach `jobs` (triggers, views, temporary tables,
//! attached files), what the authorizer leaves behind, a swallowed failure, the lock held across
//! the statements, and the fence guard.

use std::time::{Duration, Instant};

use leasefence::guard::{self, Guarded, SqliteGuard};
use leasefence::{
    fenced_value, Error, Finish, Lease, LeaseStore, Leases, Outcome, Reason, SqlValue, Statement,
};

mod support;

/// The `Lease` value from a claim through renew, the fenced writes, fail, release and complete,
/// through `&dyn Leases` on an SQLite file (the PostgreSQL run is in `postgres.rs`).
#[test]
fn the_lease_value_round_trips_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    support::lease_value::round_trip(&store);
}

fn store_with_lease(dir: &tempfile::TempDir) -> (LeaseStore, i64) {
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    store
        .connection()
        .execute_batch(
            "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('a', 0);",
        )
        .unwrap();
    store.enqueue("j").unwrap();
    let fence = store
        .claim("j", "me", 0.0, 100.0)
        .unwrap()
        .granted()
        .unwrap();
    (store, fence)
}

fn value(store: &LeaseStore) -> i64 {
    store
        .connection()
        .query_row("SELECT v FROM t WHERE k = 'a'", [], |r| r.get(0))
        .unwrap()
}

fn refused<T: std::fmt::Debug>(result: leasefence::Result<Outcome<T>>) -> String {
    match result {
        Err(Error::InvalidArgument { message, .. }) => message,
        other => panic!("expected invalid_argument, got {other:?}"),
    }
}

#[test]
fn an_error_from_the_closure_rolls_everything_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let result = store.fenced_with(
        &Lease::new("j", "me", fence),
        1.0,
        Finish::Complete(None),
        |tx| {
            tx.execute("UPDATE t SET v = 5", [])?;
            Err::<(), _>(Error::InvalidArgument {
                argument: "mine",
                message: "changed my mind".into(),
            })
        },
    );
    assert!(matches!(
        result,
        Err(Error::InvalidArgument {
            argument: "mine",
            ..
        })
    ));
    assert_eq!(value(&store), 0);
    assert!(!store.state("j").unwrap().unwrap().done);
}

#[test]
fn the_closure_reads_and_writes_in_the_same_transaction_and_returns_its_value() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let got = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            1.0,
            Finish::KeepLease,
            |tx| {
                let v: i64 = tx
                    .query_row("SELECT v FROM t WHERE k = ?1", ["a"], |r| r.get(0))?
                    .unwrap();
                tx.execute("UPDATE t SET v = ?1", [v + 1])?;
                Ok(v + 1)
            },
        )
        .unwrap();
    assert_eq!(got, Outcome::Granted(1));
    assert_eq!(value(&store), 1);
}

#[test]
fn a_swallowed_failure_still_rolls_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let result = store.fenced_with(
        &Lease::new("j", "me", fence),
        1.0,
        Finish::KeepLease,
        |tx| {
            tx.execute("UPDATE t SET v = 7", [])?;
            let _ignored = tx.execute("INSERT INTO t VALUES ('a', 1)", []);
            Ok(())
        },
    );
    assert!(refused(result).contains("went on"));
    assert_eq!(value(&store), 0);
}

#[test]
fn writes_through_triggers_views_temp_tables_and_attached_files_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    // Made outside any fenced write, as an application might have them.
    store
        .connection()
        .execute_batch(
            "CREATE TRIGGER t_bumps_jobs AFTER UPDATE ON t BEGIN UPDATE jobs SET fence = 99; END;
             CREATE VIEW jv AS SELECT id FROM jobs;
             CREATE TRIGGER jv_insert INSTEAD OF INSERT ON jv BEGIN INSERT INTO jobs(id) VALUES (NEW.id); END;
             CREATE TABLE u(x);",
        )
        .unwrap();
    let attempts = [
        "UPDATE t SET v = 1",
        "INSERT INTO jv VALUES ('planted')",
        "CREATE TEMP TABLE jobs(id)",
        "CREATE TEMP VIEW leasefence_x AS SELECT 1",
        "CREATE TRIGGER later AFTER INSERT ON u BEGIN DELETE FROM jobs; END",
        "ALTER TABLE jobs ADD COLUMN extra",
        "DROP TABLE jobs",
        "CREATE INDEX ji ON jobs(owner)",
        "PRAGMA writable_schema = ON",
        "SAVEPOINT s",
        "RELEASE s",
        "END",
    ];
    for sql in attempts {
        let result = store.fenced(
            &Lease::new("j", "me", fence),
            1.0,
            &[Statement::new(sql, [])],
            Finish::KeepLease,
        );
        let message = refused(result);
        assert!(!message.is_empty(), "{sql}");
    }
    let attach = format!(
        "ATTACH DATABASE '{}' AS other",
        dir.path().join("o.db").display()
    );
    refused(store.fenced(
        &Lease::new("j", "me", fence),
        1.0,
        &[Statement::new(attach, [])],
        Finish::KeepLease,
    ));
    assert_eq!(store.state("j").unwrap().unwrap().fence, fence);
    assert_eq!(store.state("planted").unwrap(), None);
    assert_eq!(value(&store), 0);
}

#[test]
fn the_authorizer_is_gone_after_the_fenced_write() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    refused(store.fenced(
        &Lease::new("j", "me", fence),
        1.0,
        &[Statement::new("PRAGMA user_version = 3", [])],
        Finish::KeepLease,
    ));
    // The application's own connection use and the store's operations are unrestricted again.
    store
        .connection()
        .execute_batch("PRAGMA user_version = 3")
        .unwrap();
    assert!(store
        .renew(&Lease::new("j", "me", fence), 2.0, 100.0)
        .unwrap()
        .is_granted());
    assert!(store
        .complete(&Lease::new("j", "me", fence), 3.0, Some("r"))
        .unwrap()
        .is_granted());
}

/// A failing statement of the caller's is `Error::Statement`, naming its index and SQLite's
/// message (code `storage`, not retryable), in the list form and the closure form; a refusal stays
/// `invalid_argument`; nothing is applied.
#[test]
fn a_failing_statement_is_a_statement_error_naming_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let list = [
        Statement::new("UPDATE t SET v = 7", []),
        Statement::new("UPDATE t SET v = v + 1", []),
        Statement::new("INSERT INTO t VALUES ('a', 1)", []),
    ];
    let err = store
        .fenced(
            &Lease::new("j", "me", fence),
            1.0,
            &list,
            Finish::Complete(None),
        )
        .unwrap_err();
    match &err {
        Error::Statement {
            index,
            message,
            busy,
        } => {
            assert_eq!((*index, *busy), (2, false));
            assert!(
                message.contains("UNIQUE constraint failed: t.k"),
                "{message}"
            );
        }
        other => panic!("expected a statement error, got {other:?}"),
    }
    assert_eq!((err.code(), err.is_retryable()), ("storage", false));
    assert!(err.to_string().contains("statement #2"), "{err}");
    assert_eq!(value(&store), 0);
    assert!(!store.state("j").unwrap().unwrap().done);

    let err = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            1.0,
            Finish::KeepLease,
            |tx| {
                tx.execute_values("UPDATE t SET v = 8", &[])?;
                tx.execute("SELECT * FROM no_such_table", [])
            },
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Statement { index: 1, message, .. } if message.contains("no such table")),
        "{err:?}"
    );
    assert_eq!(value(&store), 0);

    let refused = store.fenced(
        &Lease::new("j", "me", fence),
        1.0,
        &[Statement::new("DELETE FROM jobs", [])],
        Finish::KeepLease,
    );
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
}

/// The backend-neutral form through `&dyn Leases`: reads as `Rows`, writes, a value out, a stale
/// lease rolled back with its reason, a failing statement rolled back.
#[test]
fn the_neutral_handle_through_dyn_leases() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let leases: &dyn Leases = &store;
    let got = fenced_value(
        leases,
        &Lease::new("j", "me", fence),
        1.0,
        Finish::KeepLease,
        |tx| {
            let read = tx.query(
                "SELECT k, v, 1.5 AS f, NULL AS z FROM t WHERE k = $1",
                &["a".into()],
            )?;
            assert_eq!(read.columns, ["k", "v", "f", "z"]);
            assert_eq!(
                read.rows,
                [vec![
                    SqlValue::Text("a".into()),
                    SqlValue::Integer(0),
                    SqlValue::Real(1.5),
                    SqlValue::Null
                ]]
            );
            tx.execute("UPDATE t SET v = $1", &[3.into()])
        },
    )
    .unwrap();
    assert_eq!(got, Outcome::Granted(1));
    assert_eq!(value(&store), 3);
    let stale = leases
        .fenced_with(
            &Lease::new("j", "me", fence + 1),
            2.0,
            Finish::KeepLease,
            &mut |tx| tx.execute("UPDATE t SET v = 50", &[]).map(drop),
        )
        .unwrap();
    assert_eq!(stale.reason(), Some(&Reason::StaleFence { current: fence }));
    let failed = leases.fenced_with(
        &Lease::new("j", "me", fence),
        2.0,
        Finish::Complete(None),
        &mut |tx| {
            tx.execute("UPDATE t SET v = 60", &[])?;
            tx.execute("INSERT INTO t VALUES ('a', 1)", &[]).map(drop)
        },
    );
    assert!(
        matches!(failed, Err(Error::Statement { index: 1, .. })),
        "{failed:?}"
    );
    assert_eq!(value(&store), 3);
    let done = leases
        .fenced_with(
            &Lease::new("j", "me", fence),
            2.0,
            Finish::Complete(None),
            &mut |tx| tx.execute("UPDATE t SET v = 4", &[]).map(drop),
        )
        .unwrap();
    assert!(done.is_granted());
    assert_eq!(value(&store), 4);
    assert!(store.state("j").unwrap().unwrap().done);
}

#[test]
fn a_claim_from_another_connection_waits_for_the_fenced_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (store, fence) = store_with_lease(&dir);
    let path = dir.path().join("q.db");
    let outcome = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            1.0,
            Finish::Complete(Some("r".into())),
            |tx| {
                tx.execute("UPDATE t SET v = 1", [])?;
                // Another process's claim, with the lease long expired on its clock: it must wait for
                // this transaction's write lock, then see the job done.
                let other = std::thread::spawn(move || {
                    let store = LeaseStore::open(path).unwrap();
                    let answer = store.claim("j", "other", 1000.0, 10.0).unwrap();
                    (answer, Instant::now())
                });
                std::thread::sleep(Duration::from_millis(300));
                // The commit comes after this instant: a claim that did not wait for it
                // would have answered before it (and been granted, the lease being expired).
                Ok((other, Instant::now()))
            },
        )
        .unwrap();
    let Outcome::Granted((other, statements_ended)) = outcome else {
        panic!("the fenced write was refused");
    };
    let (answer, answered_at) = other.join().unwrap();
    assert_eq!(answer.reason(), Some(&Reason::Done));
    assert!(
        answered_at >= statements_ended,
        "the other claim answered {:?} before the fenced transaction could commit",
        statements_ended - answered_at
    );
    assert_eq!(value(&store), 1);
}

#[test]
fn the_guard_accepts_equal_and_higher_fences_and_refuses_lower_ones() {
    let dir = tempfile::tempdir().unwrap();
    let g = SqliteGuard::open(dir.path().join("other.db")).unwrap();
    g.connection().execute("CREATE TABLE sent(n)", []).unwrap();
    let send = |fence: i64| {
        g.write("mail-7", fence, |tx| {
            tx.execute("INSERT INTO sent VALUES (?1)", [fence])
        })
    };
    assert_eq!(send(3).unwrap(), Guarded::Accepted(1));
    assert_eq!(send(3).unwrap(), Guarded::Accepted(1));
    assert_eq!(send(2).unwrap(), Guarded::Refused { current: 3 });
    assert_eq!(send(5).unwrap(), Guarded::Accepted(1));
    assert_eq!(send(4).unwrap(), Guarded::Refused { current: 5 });
    assert_eq!(g.current("mail-7").unwrap(), Some(5));
    assert_eq!(g.current("other").unwrap(), None);
    let n: i64 = g
        .connection()
        .query_row("SELECT count(*) FROM sent", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3);
    // A failing write records nothing.
    assert!(g
        .write("mail-7", 9, |tx| tx
            .execute("INSERT INTO nowhere VALUES (1)", []))
        .is_err());
    assert_eq!(g.current("mail-7").unwrap(), Some(5));
    // Keys are independent.
    assert!(guard::sqlite::accept(g.connection(), "mail-8", 1)
        .unwrap()
        .is_accepted());
}

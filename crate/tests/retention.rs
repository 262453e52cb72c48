#![cfg(not(target_arch = "wasm32"))]
//! Retention and limits on SQLite (docs/contract.md section 13): the fence floor seen to matter
//! (with its trigger dropped, the stale write gets through), prune's bounds and what it keeps,
//! the limits at open, the cap on failure records, and a file from before prune brought up to
//! date. PostgreSQL runs the same floor story in tests/postgres.rs.

mod support;

use leasefence::{Leases, Limits, NewJob, OpenOptions, Prune, MAX_FAILURE_RECORDS};
use support::retention::{pruned_id_enqueued_again, Seen};

fn file_store(dir: &tempfile::TempDir) -> (leasefence::LeaseStore, std::path::PathBuf) {
    let path = dir.path().join("queue.db");
    (OpenOptions::new().open(&path).unwrap(), path)
}

#[test]
fn with_the_floor_a_pruned_id_enqueued_again_refuses_the_old_token_and_the_guard_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = file_store(&dir);
    let seen = pruned_id_enqueued_again(&store, "invoice-7", || {});
    assert_eq!(
        seen,
        Seen {
            stale_completion_accepted: false,
            new_holder_guarded_write_accepted: true,
            new_fence: 4,
        }
    );
    assert_eq!(store.fence_floor().unwrap(), 3);
    // A fenced write's statements may not touch the floor (the library's tables are refused).
    let lease = store
        .claim("invoice-7", "x", 500.0, 10.0)
        .unwrap()
        .lease("invoice-7", "x")
        .unwrap();
    for sql in [
        "DELETE FROM leasefence_floor",
        "UPDATE leasefence_floor SET floor = 0",
    ] {
        let refused = store.fenced(
            &lease,
            501.0,
            &[leasefence::Statement::new(sql, [])],
            leasefence::Finish::KeepLease,
        );
        assert!(
            matches!(refused, Err(leasefence::Error::InvalidArgument { .. })),
            "{sql}: {refused:?}"
        );
    }
    assert_eq!(store.fence_floor().unwrap(), 3);
}

/// The test-only switch: the floor's trigger dropped by another connection after the prune. The
/// story then goes wrong both ways, which is what the floor is for.
#[test]
fn without_the_floor_the_old_token_is_accepted_and_the_guard_refuses_the_new_holder() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = file_store(&dir);
    let seen = pruned_id_enqueued_again(&store, "invoice-7", || {
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch("DROP TRIGGER leasefence_fence_floor")
            .unwrap();
    });
    assert_eq!(
        seen,
        Seen {
            stale_completion_accepted: true,
            new_holder_guarded_write_accepted: false,
            new_fence: 1,
        }
    );
}

/// A program that knows only `jobs` (the seed's module, any SQL) inserts below the floor: the
/// trigger raises it, and reopening the store makes a dropped trigger again.
#[test]
fn a_job_inserted_by_plain_sql_starts_at_the_floor_and_a_dropped_trigger_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = file_store(&dir);
    store.enqueue("a").unwrap();
    let lease = store
        .claim("a", "w", 0.0, 10.0)
        .unwrap()
        .lease("a", "w")
        .unwrap();
    assert!(store.claim("a", "w", 20.0, 10.0).unwrap().is_granted());
    let lease = leasefence::Lease::new("a", "w", lease.fence + 1);
    assert!(store.complete(&lease, 21.0, None).unwrap().is_granted());
    assert_eq!(store.prune(&Prune::finished_before(22.0)).unwrap(), 1);
    let plain = rusqlite::Connection::open(&path).unwrap();
    plain
        .execute("INSERT INTO jobs(id) VALUES (?1)", ["b"])
        .unwrap();
    let fence: i64 = plain
        .query_row("SELECT fence FROM jobs WHERE id = 'b'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fence, 2);
    plain
        .execute_batch("DROP TRIGGER leasefence_fence_floor")
        .unwrap();
    drop(store);
    let store = OpenOptions::new().open(&path).unwrap();
    plain
        .execute("INSERT INTO jobs(id) VALUES (?1)", ["c"])
        .unwrap();
    assert_eq!(store.state("c").unwrap().unwrap().fence, 2);
}

/// Prune deletes in transactions of at most PRUNE_BATCH jobs, the oldest first; a limit stops it
/// part way; open, leased and unfinished jobs stay, with their payloads; the side rows of the
/// pruned go with them.
#[test]
fn prune_works_in_bounded_batches_and_touches_only_finished_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, path) = file_store(&dir);
    let n = leasefence::PRUNE_BATCH * 2 + 500;
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| NewJob::new(format!("j{i:05}")).payload(format!("p{i}")))
        .collect();
    for chunk in jobs.chunks(leasefence::MAX_BATCH) {
        store.enqueue_many(chunk).unwrap();
    }
    for i in 0..n {
        let claimed = store.claim_next("w", i as f64, 1e6).unwrap().unwrap();
        assert!(store
            .complete(&claimed.lease(), 1000.0 + i as f64, Some("r"))
            .unwrap()
            .is_granted());
    }
    store
        .enqueue_job(&NewJob::new("open").payload("keep"))
        .unwrap();
    store.enqueue("leased").unwrap();
    assert!(store.claim("leased", "w", 0.0, 1e9).unwrap().is_granted());
    let counted = |sql: &str| -> i64 {
        rusqlite::Connection::open(&path)
            .unwrap()
            .query_row(sql, [], |r| r.get(0))
            .unwrap()
    };
    // The first 10 finished (at 1000..1009) only.
    assert_eq!(store.prune(&Prune::finished_before(1010.0)).unwrap(), 10);
    assert_eq!(store.state("j00009").unwrap(), None);
    assert!(store.state("j00010").unwrap().is_some());
    // A limit: exactly that many, the oldest.
    let limited = Prune::finished_before(1e9).limit(Some(1500));
    assert_eq!(store.prune(&limited).unwrap(), 1500);
    assert_eq!(store.state("j01509").unwrap(), None);
    assert!(store.state("j01510").unwrap().is_some());
    assert_eq!(
        store.prune(&Prune::finished_before(1e9)).unwrap(),
        n as u64 - 1510
    );
    assert_eq!(counted("SELECT count(*) FROM jobs"), 2);
    assert_eq!(counted("SELECT count(*) FROM leasefence_payloads"), 1);
    assert_eq!(counted("SELECT count(*) FROM leasefence_order"), 2);
    assert_eq!(
        store.inspect("open").unwrap().unwrap().payload.as_deref(),
        Some("keep")
    );
    let integrity: String = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
}

/// Bigger than the limit is invalid_argument naming both sizes, and nothing changes; at the
/// limit is accepted; a limit of 0 is none.
#[test]
fn limits_refuse_what_is_too_big_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("q.db");
    let limits = Limits::default().payload(100).result(50).error(20);
    let store = OpenOptions::new().limits(limits).open(&path).unwrap();
    let big = "x".repeat(101);
    let err = store
        .enqueue_job(&NewJob::new("big").payload(big.clone()))
        .unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert!(
        err.to_string().contains("101 bytes") && err.to_string().contains("100 bytes"),
        "{err}"
    );
    assert_eq!(store.state("big").unwrap(), None);
    let listed = [NewJob::new("ok"), NewJob::new("big").payload(big)];
    assert!(store.enqueue_many(&listed).is_err());
    assert_eq!(
        store.state("ok").unwrap(),
        None,
        "one item too big refuses the list"
    );
    assert!(store
        .enqueue_job(&NewJob::new("fits").payload("x".repeat(100)))
        .unwrap());
    let lease = store
        .claim("fits", "w", 0.0, 30.0)
        .unwrap()
        .lease("fits", "w")
        .unwrap();
    let err = store
        .complete(&lease, 1.0, Some(&"r".repeat(51)))
        .unwrap_err();
    assert!(err.to_string().contains("`result`"), "{err}");
    let err = store
        .fail(&lease, 1.0, None, Some(&"e".repeat(21)))
        .unwrap_err();
    assert!(err.to_string().contains("`error`"), "{err}");
    let row = store.state("fits").unwrap().unwrap();
    assert!(!row.done && row.owner.as_deref() == Some("w"), "{row:?}");
    assert!(store.inspect("fits").unwrap().unwrap().failures.is_empty());
    let done = [leasefence::LeaseCompletion::new(
        lease.clone(),
        Some("r".repeat(51).as_str()),
    )];
    assert!(store.complete_many(&done, 1.0).is_err());
    assert!(!store.state("fits").unwrap().unwrap().done);
    assert!(store
        .complete(&lease, 1.0, Some(&"r".repeat(50)))
        .unwrap()
        .is_granted());
    // The defaults: 1 MiB of payload.
    let default = OpenOptions::new().open(dir.path().join("d.db")).unwrap();
    let err = default
        .enqueue_job(&NewJob::new("m").payload("x".repeat((1 << 20) + 1)))
        .unwrap_err();
    assert!(err.to_string().contains("1048577 bytes"), "{err}");
    let none = OpenOptions::new()
        .limits(Limits::none())
        .open(dir.path().join("n.db"))
        .unwrap();
    assert!(none
        .enqueue_job(&NewJob::new("m").payload("x".repeat((1 << 20) + 1)))
        .unwrap());
}

/// A job failed more times than the cap keeps its latest records; `attempts` counts them all.
#[test]
fn a_job_keeps_its_latest_failure_records_only() {
    let store = leasefence::LeaseStore::open_in_memory().unwrap();
    store.enqueue("flaky").unwrap();
    let total = MAX_FAILURE_RECORDS + 50;
    for i in 0..total {
        let now = i as f64 * 10.0;
        let lease = store
            .claim("flaky", "w", now, 5.0)
            .unwrap()
            .lease("flaky", "w")
            .unwrap();
        let error = format!("failure {i}");
        assert!(store
            .fail(&lease, now + 1.0, Some(now + 2.0), Some(&error))
            .unwrap()
            .is_granted());
    }
    let report = store.inspect("flaky").unwrap().unwrap();
    assert_eq!(report.attempts, total as i64);
    assert_eq!(report.failures.len(), MAX_FAILURE_RECORDS);
    assert_eq!(report.failures[0].error.as_deref(), Some("failure 50"));
    assert_eq!(
        report.failures.last().unwrap().error.as_deref(),
        Some(format!("failure {}", total - 1).as_str())
    );
}

/// A file made before prune existed: its finished jobs count as finished at the upgrade (the
/// closest known), its open ones are left alone, and its triggers gain the stamp.
#[test]
fn a_file_from_before_prune_is_brought_up_to_date_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let store = OpenOptions::new().open(&path).unwrap();
        store.enqueue("done").unwrap();
        store.enqueue("open").unwrap();
        let lease = store
            .claim("done", "w", 0.0, 10.0)
            .unwrap()
            .lease("done", "w")
            .unwrap();
        assert!(store.complete(&lease, 1.0, None).unwrap().is_granted());
    }
    // Back to the shape of the release before: no finished column, no floor, old triggers.
    let old = rusqlite::Connection::open(&path).unwrap();
    old.execute_batch(
        "DROP TRIGGER leasefence_fence_floor; DROP TABLE leasefence_floor; \
         DROP INDEX leasefence_finished; DROP TRIGGER leasefence_order_update; \
         DROP TRIGGER leasefence_order_rename; DROP TRIGGER leasefence_order_insert; \
         ALTER TABLE leasefence_order DROP COLUMN finished; \
         ALTER TABLE leasefence_order DROP COLUMN base; \
         CREATE TRIGGER leasefence_order_insert AFTER INSERT ON jobs WHEN NEW.id IS NOT NULL \
         BEGIN INSERT OR REPLACE INTO leasefence_order(job, until, open, enqueued) \
         VALUES (NEW.id, NEW.until, NEW.done = 0, 0); END; \
         CREATE TRIGGER leasefence_order_update AFTER UPDATE OF id, until, done, fence ON jobs \
         BEGIN UPDATE leasefence_order SET job = NEW.id, until = NEW.until, \
         open = (NEW.done = 0) WHERE job = OLD.id; END;",
    )
    .unwrap();
    drop(old);
    let store = OpenOptions::new().open(&path).unwrap();
    let upgraded_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert_eq!(
        store
            .prune(&Prune::finished_before(upgraded_at - 60.0))
            .unwrap(),
        0
    );
    assert_eq!(
        store
            .prune(&Prune::finished_before(upgraded_at + 60.0))
            .unwrap(),
        1
    );
    assert!(store.state("open").unwrap().is_some());
    assert_eq!(store.fence_floor().unwrap(), 1);
    assert!(store.enqueue("done").unwrap());
    assert_eq!(store.state("done").unwrap().unwrap().fence, 1);
}

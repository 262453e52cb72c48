#![cfg(not(target_arch = "wasm32"))]
//! The Rust worker runtime (`leasefence::worker`, docs/contract.md section 9) on real SQLite
//! files, with real threads and real time where the runtime's timers are the subject: the
//! heartbeat across several ttls, a hung handler losing its lease and hearing it at once
//! (`LEASEFENCE_WORKER_ROUNDS` rounds, default 12), a refused renew, a busy database waited out
//! within the lease, retries with backoff, dead jobs, claims past the maximum, revive, panics,
//! and both ways of stopping; completions that commit the handler's own statements with them
//! (`run_fenced`). The PostgreSQL variants are `#[ignore]`d; `scripts/postgres.sh`
//! runs them.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use leasefence::worker::{
    wall_clock, Backoff, CancelReason, Completion, Liveness, Worker, WorkerOptions,
};
use leasefence::{Lease, Leases, OpenOptions, Reason, Statement};
#[cfg(feature = "postgres")]
use support::pg_schema::PgSchema;

mod support;

fn worker(db: &std::path::Path, options: WorkerOptions) -> Worker {
    Worker::open(db, &OpenOptions::new(), options).unwrap()
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

#[test]
fn the_heartbeat_keeps_a_lease_alive_across_a_handler_running_several_ttls() {
    let dir = tempfile::tempdir().unwrap();
    heartbeat_across_ttls(&dir.path().join("q.db"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_the_heartbeat_keeps_a_lease_alive_across_several_ttls() {
    let schema = PgSchema::new("worker_heartbeat");
    heartbeat_across_ttls(Path::new(&schema.url));
}

fn heartbeat_across_ttls(db: &Path) {
    let store = leasefence::open(db).unwrap();
    store.enqueue("long").unwrap();
    let ttl = 0.4;
    let options = WorkerOptions::new("w").ttl(ttl).until_empty(true);
    let mut worker = worker(db, options);
    let rival = leasefence::open(db).unwrap();
    let rival_wins = Arc::new(Mutex::new(Vec::new()));
    let wins = Arc::clone(&rival_wins);
    let counts = worker
        .run(move |job| {
            // Runs 5 ttls, showing progress; a rival tries to take the job all along.
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs_f64(5.0 * ttl) {
                job.token.checkpoint()?;
                let taken = rival.claim(&job.id, "rival", wall_clock(), 10.0).unwrap();
                if taken.is_granted() {
                    wins.lock().unwrap().push(start.elapsed());
                }
                job.token.wait_timeout(Duration::from_millis(30));
            }
            Ok(Some("finished".into()))
        })
        .unwrap();
    assert!(
        rival_wins.lock().unwrap().is_empty(),
        "the rival took the live job: {rival_wins:?}"
    );
    assert_eq!((counts.completed, counts.leases_lost), (1, 0), "{counts:?}");
    // Every ttl/3 over 5 ttls: about 15 renewals.
    assert!(counts.renewals >= 10, "{counts:?}");
    let row = store.state("long").unwrap().unwrap();
    assert_eq!((row.fence, row.result.as_deref()), (1, Some("finished")));
}

#[test]
fn a_handler_that_shows_no_progress_loses_its_lease_is_told_at_once_and_its_result_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    hung_handler_told_at_once(&dir.path().join("q.db"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_a_hung_handler_loses_its_lease_and_is_told_at_once() {
    let schema = PgSchema::new("worker_hung");
    hung_handler_told_at_once(Path::new(&schema.url));
}

fn hung_handler_told_at_once(db: &Path) {
    let store = leasefence::open(db).unwrap();
    // LEASEFENCE_WORKER_ROUNDS for a longer measurement.
    let rounds: u64 = std::env::var("LEASEFENCE_WORKER_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    for round in 0..rounds {
        store.enqueue(&format!("hung-{round}")).unwrap();
    }
    let ttl = 0.25;
    // Never claimed again within the test: the backoff is not involved (nothing fails).
    let options = WorkerOptions::new("w").ttl(ttl).until_empty(true);
    let mut worker = worker(db, options);
    let lateness = Arc::new(Mutex::new(Vec::new()));
    let late = Arc::clone(&lateness);
    // The reasons are checked after the run: an assert inside the handler would only be caught
    // as a handler panic, and this attempt's outcome is discarded anyway (its lease is lost).
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&reasons);
    let counts = worker
        .run(move |job| {
            if job.attempt() > 1 {
                return Ok(Some("second attempt".into()));
            }
            // Hung: waits without a checkpoint, so the heartbeat stops renewing.
            let reason = job.token.wait();
            late.lock()
                .unwrap()
                .push(wall_clock() - job.token.deadline());
            seen.lock().unwrap().push(reason);
            Ok(Some("too late".into()))
        })
        .unwrap();
    let reasons = reasons.lock().unwrap().clone();
    assert_eq!(reasons.len() as u64, rounds, "{reasons:?}");
    // Stalled when the liveness rule stopped the renewals first; Lost(Expired) when the lease ran
    // out before that rule fired (a renew slowed by the machine or the server's round trip): both
    // tell the hung handler its lease is gone. Any other reason (a refused renew, a stop) is wrong.
    assert!(
        reasons.iter().all(|r| matches!(
            r,
            CancelReason::Stalled(_) | CancelReason::Lost(Reason::Expired { .. })
        )),
        "every hung handler is told its lease stalled or ran out: {reasons:?}"
    );
    // Each job: its first lease lost (its result dropped unwritten: no stale write was even
    // tried), the second attempt completed.
    assert_eq!(
        (
            counts.leases_lost,
            counts.stale_writes_refused,
            counts.completed
        ),
        (rounds, 0, rounds),
        "{counts:?}"
    );
    for round in 0..rounds {
        let row = store.state(&format!("hung-{round}")).unwrap().unwrap();
        assert_eq!(
            (row.fence, row.result.as_deref()),
            (2, Some("second attempt"))
        );
    }
    let mut late = lateness.lock().unwrap().clone();
    let worst = late.iter().cloned().fold(0.0, f64::max);
    let median = median(&mut late);
    eprintln!(
        "lost lease signalled after it ended: median {:.2} ms, worst {:.2} ms over {rounds} rounds",
        median * 1e3,
        worst * 1e3
    );
    assert!(
        late.iter().all(|&l| l >= 0.0),
        "signalled before the end: {late:?}"
    );
    // "At once": well within one renew interval.
    assert!(worst < ttl / 3.0, "worst {worst} s");
}

#[test]
fn a_refused_renew_cancels_the_handler_and_the_newer_holders_result_stays() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("job").unwrap();
    // The worker's clock runs 100 s behind the rival's: by the rival's clock the worker's lease
    // is over, so the rival claims (fence 2) and the worker's next renew is refused.
    let options = WorkerOptions::new("behind")
        .ttl(1.0)
        .until_empty(true)
        .clock(|| wall_clock() - 100.0);
    let mut worker = worker(&db, options);
    let rival = leasefence::open(&db).unwrap();
    let seen = Arc::new(Mutex::new(None));
    let seen_in = Arc::clone(&seen);
    let counts = worker
        .run(move |job| {
            let fence = rival
                .claim(&job.id, "rival", wall_clock(), 30.0)
                .unwrap()
                .granted()
                .unwrap();
            assert!(rival
                .complete(
                    &Lease::new(&job.id, "rival", fence),
                    wall_clock(),
                    Some("rival's")
                )
                .unwrap()
                .is_granted());
            let reason = job.token.wait();
            *seen_in.lock().unwrap() = Some(reason);
            Ok(Some("stale".into()))
        })
        .unwrap();
    let reason = seen.lock().unwrap().clone().unwrap();
    assert_eq!(reason, CancelReason::Lost(Reason::Done), "{reason:?}");
    assert_eq!((counts.completed, counts.leases_lost), (0, 1), "{counts:?}");
    let row = store.state("job").unwrap().unwrap();
    assert_eq!((row.fence, row.result.as_deref()), (2, Some("rival's")));
}

#[test]
fn a_busy_database_is_waited_out_within_the_lease_and_reported_when_it_outlasts_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("short-lock").unwrap();
    store.enqueue("long-lock").unwrap();
    let ttl = 0.6;
    let options = WorkerOptions::new("w")
        .ttl(ttl)
        .until_empty(true)
        .liveness(Liveness::Unbounded);
    let mut worker = Worker::open(
        &db,
        &OpenOptions::new().busy_timeout(Duration::from_secs(5)),
        options,
    )
    .unwrap();
    let path = db.clone();
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let reasons_in = Arc::clone(&reasons);
    let counts = worker
        .run(move |job| {
            if job.attempt() > 1 {
                return Ok(Some("second attempt".into()));
            }
            // Another connection holds the write lock: for half the lease, or past its end.
            let hold = if job.id == "short-lock" {
                ttl * 0.5
            } else {
                ttl * 2.0
            };
            let locker = rusqlite::Connection::open(&path).unwrap();
            locker.execute_batch("BEGIN IMMEDIATE").unwrap();
            let cancelled = job.token.wait_timeout(Duration::from_secs_f64(hold));
            locker.execute_batch("COMMIT").unwrap();
            // Then run two more ttls, cancelled or not: a renewal sent just before the lease
            // ended, held back by the lock, may still extend it once the lock goes (its `now` is
            // from before the end), so the second attempt's claim waits for that extension to
            // run out. (Returning at once, as a cancelled token's wait did, raced that claim
            // against the renewal; the write gate, which serves the renewal first, lost it.)
            std::thread::sleep(Duration::from_secs_f64(2.0 * ttl));
            let cancelled = cancelled || job.token.is_cancelled();
            reasons_in
                .lock()
                .unwrap()
                .push((job.id.clone(), cancelled, job.token.reason()));
            Ok(Some("done".into()))
        })
        .unwrap();
    let reasons = reasons.lock().unwrap().clone();
    assert_eq!(reasons[0].0, "short-lock");
    assert!(!reasons[0].1, "the short lock cost the lease: {reasons:?}");
    assert_eq!(reasons[1].0, "long-lock");
    assert!(
        matches!(&reasons[1].2, Some(CancelReason::CouldNotRenew(error)) if error.contains("lock")),
        "{reasons:?}"
    );
    assert_eq!((counts.completed, counts.leases_lost), (2, 1), "{counts:?}");
    let short = store.state("short-lock").unwrap().unwrap();
    assert_eq!((short.fence, short.result.as_deref()), (1, Some("done")));
    let long = store.state("long-lock").unwrap().unwrap();
    assert_eq!(
        (long.fence, long.result.as_deref()),
        (2, Some("second attempt"))
    );
}

#[test]
fn a_failing_handler_is_retried_after_its_backoff_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("flaky").unwrap();
    let backoff = 0.3;
    let options = WorkerOptions::new("w")
        .ttl(5.0)
        .max_attempts(5)
        .backoff(
            Backoff::exponential(Duration::from_secs_f64(backoff), Duration::from_secs(10))
                .jitter(0.0),
        )
        .idle_poll(Duration::from_millis(20));
    let mut worker = worker(&db, options);
    let stop = worker.stop_handle();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let starts_in = Arc::clone(&starts);
    let counts = worker
        .run(move |job| {
            starts_in.lock().unwrap().push(wall_clock());
            if job.attempt() <= 2 {
                return Err(format!("attempt {} failed", job.attempt()).into());
            }
            stop.stop();
            Ok(Some(format!("ok on attempt {}", job.attempt())))
        })
        .unwrap();
    assert_eq!(
        (counts.claimed, counts.failed, counts.completed),
        (3, 2, 1),
        "{counts:?}"
    );
    let starts = starts.lock().unwrap().clone();
    // Exponential: 0.3 s after the first failure, 0.6 s after the second.
    for (gap, wanted) in starts
        .windows(2)
        .map(|w| w[1] - w[0])
        .zip([backoff, 2.0 * backoff])
    {
        assert!(
            gap >= wanted && gap < wanted + 0.3,
            "gap {gap} s, backoff {wanted} s: {starts:?}"
        );
    }
    let report = store.inspect("flaky").unwrap().unwrap();
    assert_eq!(report.state.result.as_deref(), Some("ok on attempt 3"));
    let errors: Vec<_> = report
        .failures
        .iter()
        .map(|f| (f.fence, f.error.clone().unwrap()))
        .collect();
    assert_eq!(
        errors,
        [
            (1, "attempt 1 failed".to_string()),
            (2, "attempt 2 failed".to_string())
        ]
    );
}

#[test]
fn the_last_failed_attempt_makes_the_job_dead_and_a_panic_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("always-fails").unwrap();
    store.enqueue("panics").unwrap();
    let options = WorkerOptions::new("w")
        .max_attempts(3)
        .backoff(Backoff::Fixed(Duration::ZERO))
        .until_empty(true);
    let counts = worker(&db, options)
        .run(|job| {
            if job.id == "panics" {
                panic!("boom on {}", job.attempt());
            }
            Err("nope".into())
        })
        .unwrap();
    assert_eq!(
        (counts.claimed, counts.failed, counts.dead),
        (6, 4, 2),
        "{counts:?}"
    );
    for job in ["always-fails", "panics"] {
        let report = store.inspect(job).unwrap().unwrap();
        assert!(report.dead, "{report:?}");
        assert_eq!(report.attempts, 3);
        assert_eq!(report.failures.len(), 3);
    }
    let panic = store.inspect("panics").unwrap().unwrap();
    assert_eq!(
        panic.failures[2].error.as_deref(),
        Some("the handler panicked: boom on 3")
    );
}

#[test]
fn a_claim_past_the_maximum_after_lost_leases_is_dead_at_once_and_revive_gives_one_more_attempt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("poison").unwrap();
    // Three holders that crashed: each claim ran out with nothing recorded.
    let now = wall_clock();
    for (i, start) in [now - 300.0, now - 200.0, now - 100.0]
        .into_iter()
        .enumerate()
    {
        let fence = store
            .claim("poison", &format!("crashed-{i}"), start, 1.0)
            .unwrap();
        assert_eq!(fence.granted(), Some(i as i64 + 1));
    }
    let ran = Arc::new(Mutex::new(Vec::new()));
    let ran_in = Arc::clone(&ran);
    let options = WorkerOptions::new("w").max_attempts(3).until_empty(true);
    let mut w = worker(&db, options.clone());
    let counts = w
        .run(move |job| {
            ran_in.lock().unwrap().push(job.attempt());
            Ok(None)
        })
        .unwrap();
    assert!(
        ran.lock().unwrap().is_empty(),
        "the handler ran on attempt {:?}",
        ran.lock().unwrap()
    );
    assert_eq!((counts.claimed, counts.dead), (1, 1), "{counts:?}");
    let report = store.inspect("poison").unwrap().unwrap();
    assert!(report.dead);
    let error = report.failures[0].error.clone().unwrap();
    assert!(
        error.starts_with("attempt 4 of at most 3: earlier holders lost their leases"),
        "{error}"
    );

    // Nothing claims a dead job.
    let again = worker(&db, options.clone()).run(|_| Ok(None)).unwrap();
    assert_eq!(again.claimed, 0);

    // Revived: the fence is kept; attempt 5 runs (attempt 4 recorded why it died) and completes.
    assert!(store.revive("poison", wall_clock()).unwrap().is_granted());
    let row = store.state("poison").unwrap().unwrap();
    assert_eq!((row.fence, row.done), (4, false));
    let counts = worker(&db, options)
        .run(|job| Ok(Some(format!("fixed on {}", job.attempt()))))
        .unwrap();
    assert_eq!(counts.completed, 1, "{counts:?}");
    let row = store.state("poison").unwrap().unwrap();
    assert_eq!((row.fence, row.result.as_deref()), (5, Some("fixed on 5")));
}

#[test]
fn interrupt_cancels_the_handler_and_releases_its_lease_while_stop_lets_it_finish() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    store.enqueue("a").unwrap();
    store.enqueue("b").unwrap();
    let options = WorkerOptions::new("w").ttl(30.0);

    let mut w = worker(&db, options.clone());
    let stop = w.stop_handle();
    let seen = Arc::new(Mutex::new(None));
    let seen_in = Arc::clone(&seen);
    let counts = w
        .run(move |job| {
            let stop = stop.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(100));
                stop.interrupt();
            });
            *seen_in.lock().unwrap() = Some(job.token.wait());
            Ok(Some("interrupted work".into()))
        })
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), Some(CancelReason::Stopping));
    assert_eq!(
        (counts.claimed, counts.completed, counts.leases_lost),
        (1, 0, 0),
        "{counts:?}"
    );
    let row = store.state("a").unwrap().unwrap();
    // Released: no owner, claimable at once, the fence kept.
    assert_eq!(
        (row.owner, row.until, row.fence, row.done),
        (None, 0.0, 1, false)
    );

    let mut w = worker(&db, options);
    let stop = w.stop_handle();
    let counts = w
        .run(move |job| {
            stop.stop();
            assert!(!job.token.wait_timeout(Duration::from_millis(100)));
            Ok(Some(format!("finished {}", job.id)))
        })
        .unwrap();
    assert_eq!((counts.claimed, counts.completed), (1, 1), "{counts:?}");
    assert_eq!(
        store.state("a").unwrap().unwrap().result.as_deref(),
        Some("finished a")
    );
    assert!(!store.state("b").unwrap().unwrap().done);
}

#[test]
fn invalid_options_are_refused_before_anything_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("never.db");
    for (options, argument) in [
        (WorkerOptions::new(""), "owner"),
        (WorkerOptions::new("w").ttl(f64::NAN), "ttl"),
        (WorkerOptions::new("w").ttl(-1.0), "ttl"),
        (
            WorkerOptions::new("w").ttl(3.0).renew_every(3.0),
            "renew_every",
        ),
        (WorkerOptions::new("w").max_attempts(0), "max_attempts"),
        (
            WorkerOptions::new("w").idle_poll(Duration::ZERO),
            "idle_poll",
        ),
    ] {
        match Worker::open(&db, &OpenOptions::new(), options) {
            Err(leasefence::Error::InvalidArgument { argument: got, .. }) => {
                assert_eq!(got, argument)
            }
            other => panic!("{argument}: {other:?}"),
        }
    }
    assert!(!db.exists(), "an invalid worker created the file");
}

#[test]
fn the_store_handed_to_new_can_be_any_leases_with_its_own_heartbeat_opener() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store: Box<dyn Leases> = Box::new(leasefence::LeaseStore::open(&db).unwrap());
    store.enqueue_with("job", None, Some("payload")).unwrap();
    let path = db.clone();
    let opener = Box::new(move || leasefence::open(&path));
    let mut w = Worker::new(store, opener, WorkerOptions::new("w").until_empty(true)).unwrap();
    let counts = w.run(|job| Ok(job.payload.clone())).unwrap();
    assert_eq!(counts.completed, 1);
    assert_eq!(
        w.store().state("job").unwrap().unwrap().result.as_deref(),
        Some("payload")
    );
}

/// The caller's own tables next to the store, on the same SQLite file or PostgreSQL schema,
/// through a connection of the test's own.
enum CallerTables {
    Sqlite(rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(postgres::Client),
}

impl CallerTables {
    fn open(db: &Path) -> CallerTables {
        let target = db.to_str().unwrap();
        if leasefence::is_postgres_url(target) {
            #[cfg(feature = "postgres")]
            return CallerTables::Postgres(
                postgres::Client::connect(target, postgres::NoTls).unwrap(),
            );
        }
        CallerTables::Sqlite(rusqlite::Connection::open(db).unwrap())
    }

    fn execute(&mut self, sql: &str) {
        match self {
            CallerTables::Sqlite(c) => c.execute_batch(sql).unwrap(),
            #[cfg(feature = "postgres")]
            CallerTables::Postgres(c) => c.batch_execute(sql).unwrap(),
        }
    }

    /// The reports table's rows, ordered.
    fn reports(&mut self) -> Vec<(String, String)> {
        let sql = "SELECT job, body FROM reports ORDER BY job, body";
        match self {
            CallerTables::Sqlite(c) => {
                let mut statement = c.prepare(sql).unwrap();
                let rows = statement
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                    .unwrap();
                rows.map(Result::unwrap).collect()
            }
            #[cfg(feature = "postgres")]
            CallerTables::Postgres(c) => c
                .query(sql, &[])
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect(),
        }
    }
}

fn report_row(job: &str, body: &str) -> Statement {
    Statement::new(
        "INSERT INTO reports (job, body) VALUES ($1, $2)",
        [job.into(), body.into()],
    )
}

#[test]
fn a_stale_workers_fenced_completion_is_refused_and_its_rows_never_land() {
    let dir = tempfile::tempdir().unwrap();
    stale_fenced_completion_refused(&dir.path().join("q.db"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_a_stale_workers_fenced_completion_is_refused_and_its_rows_never_land() {
    let schema = PgSchema::new("worker_fenced_stale");
    stale_fenced_completion_refused(Path::new(&schema.url));
}

fn stale_fenced_completion_refused(db: &Path) {
    let store = leasefence::open(db).unwrap();
    let mut tables = CallerTables::open(db);
    tables.execute("CREATE TABLE reports (job TEXT NOT NULL, body TEXT NOT NULL)");
    store.enqueue("skewed").unwrap();
    let rival = leasefence::open(db).unwrap();
    let rival_takes_over = move |job: &str, at: f64| {
        let fence = rival
            .claim(job, "rival", at, 30.0)
            .unwrap()
            .granted()
            .unwrap();
        assert!(rival
            .complete(&Lease::new(job, "rival", fence), at, Some("rival's"))
            .unwrap()
            .is_granted());
    };

    // The worker paused past its lease, and its clock does not show it (a VM resumed with its
    // clock behind): by the rival's clock the lease is over, so the rival claims and completes;
    // the worker's own check passes, and the store refuses the fenced write.
    let behind = 100.0;
    let options = WorkerOptions::new("behind")
        .ttl(30.0)
        .until_empty(true)
        .clock(move || wall_clock() - behind);
    let mut late = worker(db, options);
    let counts = late
        .run_fenced(|job| {
            rival_takes_over(&job.id, wall_clock());
            Ok(Completion::new(Some("stale".into())).statement(report_row(&job.id, "stale")))
        })
        .unwrap();
    assert_eq!(
        (
            counts.completed,
            counts.stale_writes_refused,
            counts.leases_lost
        ),
        (0, 1, 1),
        "{counts:?}"
    );
    // The worker registry shows the refusal as the runtime counted it (its last beat, at its
    // stop), with this process; by the store's clock the skewed worker was never seen alive.
    let registry = store.list_workers(wall_clock()).unwrap();
    let row = registry.iter().find(|w| w.owner == "behind").unwrap();
    assert_eq!(row.counters, counts, "{row:?}");
    assert_eq!((row.pid, row.alive), (std::process::id(), false));

    // The same pause seen by the worker's clock: the runtime's own look at the lease's end stops
    // it before it writes anything.
    let clock = Arc::new(Mutex::new(wall_clock()));
    let read = Arc::clone(&clock);
    let options = WorkerOptions::new("paused")
        .ttl(30.0)
        .until_empty(true)
        .clock(move || *read.lock().unwrap());
    store.enqueue("paused").unwrap();
    let counts = worker(db, options)
        .run_fenced(|job| {
            let resumed = *clock.lock().unwrap() + 100.0;
            *clock.lock().unwrap() = resumed;
            rival_takes_over(&job.id, resumed);
            Ok(Completion::new(Some("stale".into())).statement(report_row(&job.id, "stale")))
        })
        .unwrap();
    assert_eq!(
        (
            counts.claimed,
            counts.completed,
            counts.stale_writes_refused,
            counts.leases_lost
        ),
        (1, 0, 0, 1),
        "{counts:?}"
    );
    let registry = store.list_workers(wall_clock()).unwrap();
    let row = registry.iter().find(|w| w.owner == "paused").unwrap();
    assert_eq!(
        (row.counters.leases_lost, row.counters.stale_writes_refused),
        (1, 0)
    );

    assert_eq!(tables.reports(), [], "a stale worker's row landed");
    for job in ["skewed", "paused"] {
        let row = store.state(job).unwrap().unwrap();
        assert_eq!(
            (row.fence, row.result.as_deref()),
            (2, Some("rival's")),
            "{job}"
        );
    }
}

#[test]
fn failing_completion_statements_fail_the_job_with_nothing_applied_and_the_retry_commits_row_and_result(
) {
    let dir = tempfile::tempdir().unwrap();
    failing_statements_fail_the_job(&dir.path().join("q.db"));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_failing_completion_statements_fail_the_job_and_the_retry_commits_row_and_result() {
    let schema = PgSchema::new("worker_fenced_fail");
    failing_statements_fail_the_job(Path::new(&schema.url));
}

fn failing_statements_fail_the_job(db: &Path) {
    let store = leasefence::open(db).unwrap();
    let mut tables = CallerTables::open(db);
    tables.execute("CREATE TABLE reports (job TEXT NOT NULL, body TEXT NOT NULL)");
    store.enqueue("report").unwrap();
    let options = WorkerOptions::new("w")
        .max_attempts(4)
        .backoff(Backoff::Fixed(Duration::ZERO))
        .until_empty(true);
    let mut w = worker(db, options);
    let seen_before = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&seen_before);
    let counts = w
        .run_fenced(move |job| {
            // What the earlier attempts left: no row, the job not done.
            seen.lock().unwrap().push((job.attempt(), tables.reports()));
            let draft = report_row(&job.id, &format!("attempt {}", job.attempt()));
            let extra = match job.attempt() {
                // The second statement breaks a constraint: the first must not stay.
                1 => Statement::new(
                    "INSERT INTO reports (job, body) VALUES ($1, NULL)",
                    [job.id.as_str().into()],
                ),
                // A write to the library's own table: refused before the lease is looked at.
                2 => Statement::new("UPDATE jobs SET result = 'forged'", []),
                // A statement with no SQL: a bad list.
                3 => Statement::new("  ", []),
                _ => report_row(&job.id, "appendix"),
            };
            Ok(Completion::fenced(
                [draft, extra],
                Some(format!("done on {}", job.attempt())),
            ))
        })
        .unwrap();
    assert_eq!(
        (counts.claimed, counts.failed, counts.completed, counts.dead),
        (4, 3, 1, 0),
        "{counts:?}"
    );
    let seen = seen_before.lock().unwrap().clone();
    assert_eq!(
        seen,
        [(1, vec![]), (2, vec![]), (3, vec![]), (4, vec![])],
        "an earlier attempt's statements were applied"
    );
    let report = store.inspect("report").unwrap().unwrap();
    assert_eq!(report.state.result.as_deref(), Some("done on 4"));
    let errors: Vec<_> = report
        .failures
        .iter()
        .map(|f| (f.fence, f.error.clone().unwrap()))
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].1.contains("constraint") && errors[0].0 == 1,
        "{errors:?}"
    );
    assert!(
        errors[1].1.contains("refused") && errors[1].1.contains("jobs"),
        "{errors:?}"
    );
    assert!(errors[2].1.contains("no SQL text"), "{errors:?}");
    let mut tables = CallerTables::open(db);
    assert_eq!(
        tables.reports(),
        [
            ("report".to_string(), "appendix".to_string()),
            ("report".to_string(), "attempt 4".to_string())
        ]
    );
}

#[test]
fn the_last_attempts_failing_statements_make_the_job_dead_and_plain_results_still_complete() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    let mut tables = CallerTables::open(&db);
    tables.execute("CREATE TABLE reports (job TEXT PRIMARY KEY, body TEXT NOT NULL)");
    store.enqueue("twice").unwrap();
    store.enqueue("plain").unwrap();
    let options = WorkerOptions::new("w").max_attempts(1).until_empty(true);
    let counts = worker(&db, options)
        .run_fenced(|job| {
            if job.id == "plain" {
                return Ok(Completion::from(Some("no statements".to_string())));
            }
            // The same key twice: the primary key refuses the second row.
            Ok(Completion::new(None)
                .statement(report_row(&job.id, "one"))
                .statement(report_row(&job.id, "two")))
        })
        .unwrap();
    assert_eq!((counts.completed, counts.dead), (1, 1), "{counts:?}");
    let twice = store.inspect("twice").unwrap().unwrap();
    assert!(twice.dead, "{twice:?}");
    assert!(
        twice.failures[0]
            .error
            .as_deref()
            .unwrap()
            .contains("UNIQUE constraint failed: reports.job"),
        "{twice:?}"
    );
    assert_eq!(
        store.state("plain").unwrap().unwrap().result.as_deref(),
        Some("no statements")
    );
    assert_eq!(tables.reports(), []);
}

#[test]
fn a_fenced_completion_on_a_busy_database_is_retried_within_the_lease_and_dropped_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    CallerTables::open(&db).execute("CREATE TABLE reports (job TEXT NOT NULL, body TEXT NOT NULL)");
    store.enqueue("short-lock").unwrap();
    store.enqueue("long-lock").unwrap();
    let ttl = 0.6;
    // A short busy timeout, so that the runtime's own retries (not SQLite's wait) meet the lock.
    let options = WorkerOptions::new("w")
        .ttl(ttl)
        .until_empty(true)
        .liveness(Liveness::Unbounded);
    let mut w = Worker::open(
        &db,
        &OpenOptions::new().busy_timeout(Duration::from_millis(20)),
        options,
    )
    .unwrap();
    let path = db.clone();
    let lockers = Arc::new(Mutex::new(Vec::new()));
    let lockers_in = Arc::clone(&lockers);
    let counts = w
        .run_fenced(move |job| {
            if job.attempt() > 1 {
                return Ok(Completion::new(Some("second attempt".into()))
                    .statement(report_row(&job.id, "second")));
            }
            // Another connection takes the write lock as the handler returns and keeps it for
            // a third of the lease, or past its end.
            let hold = if job.id == "short-lock" {
                ttl / 3.0
            } else {
                ttl * 2.0
            };
            let (locked, is_locked) = std::sync::mpsc::channel();
            let path = path.clone();
            lockers_in.lock().unwrap().push(thread::spawn(move || {
                let locker = rusqlite::Connection::open(&path).unwrap();
                locker.execute_batch("BEGIN IMMEDIATE").unwrap();
                locked.send(()).unwrap();
                thread::sleep(Duration::from_secs_f64(hold));
                locker.execute_batch("COMMIT").unwrap();
            }));
            is_locked.recv().unwrap();
            Ok(Completion::new(Some("first attempt".into()))
                .statement(report_row(&job.id, "first")))
        })
        .unwrap();
    for locker in lockers.lock().unwrap().drain(..) {
        locker.join().unwrap();
    }
    // short-lock: waited out, committed with its row. long-lock: the lease ran out first, so
    // nothing was written; the second attempt committed.
    assert_eq!(
        (counts.completed, counts.leases_lost, counts.failed),
        (2, 1, 0),
        "{counts:?}"
    );
    let short = store.state("short-lock").unwrap().unwrap();
    assert_eq!(
        (short.fence, short.result.as_deref()),
        (1, Some("first attempt"))
    );
    let long = store.state("long-lock").unwrap().unwrap();
    assert_eq!(
        (long.fence, long.result.as_deref()),
        (2, Some("second attempt"))
    );
    assert_eq!(
        CallerTables::open(&db).reports(),
        [
            ("long-lock".to_string(), "second".to_string()),
            ("short-lock".to_string(), "first".to_string())
        ]
    );
}

/// docs/contract.md section 13 in the worker runtime: a handler's result over the store's limit
/// fails that attempt (the error names the sizes) and the worker goes on with the next job, one
/// at a time and with many in flight (where one big result would otherwise refuse the group's
/// complete_many); an error text over the limit is cut to its end, not refused.
#[test]
fn a_result_over_the_limit_fails_its_attempt_and_the_worker_goes_on() {
    for concurrency in [1, 8] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        let open = OpenOptions::new().limits(leasefence::Limits::default().result(16).error(256));
        let store = open.open(&db).unwrap();
        for job in ["big", "small", "loud", "also-small"] {
            store.enqueue(job).unwrap();
        }
        let options = WorkerOptions::new("w")
            .until_empty(true)
            .max_attempts(1)
            .concurrency(concurrency);
        let mut worker = Worker::open(&db, &open, options).unwrap();
        let handler = |job: &leasefence::worker::Job| match job.id.as_str() {
            "big" => Ok(Some("r".repeat(17))),
            "loud" => Err(format!("{}the real cause", "x".repeat(500)).into()),
            _ => Ok(Some("ok".into())),
        };
        let counts = if concurrency == 1 {
            worker.run(handler).unwrap()
        } else {
            worker.run_concurrent(handler).unwrap()
        };
        assert_eq!((counts.completed, counts.dead), (2, 2), "{counts:?}");
        let big = store.inspect("big").unwrap().unwrap();
        let error = big.failures[0].error.as_deref().unwrap();
        assert!(
            error.contains("17 bytes") && error.contains("16 bytes"),
            "{error}"
        );
        let loud = store.inspect("loud").unwrap().unwrap();
        let error = loud.failures[0].error.as_deref().unwrap();
        assert!(
            error.len() <= 256 && error.ends_with("the real cause"),
            "{error}"
        );
        assert_eq!(
            store.state("small").unwrap().unwrap().result.as_deref(),
            Some("ok")
        );
    }
}

/// The worker runtime's retention (docs/contract.md section 13): off unless asked for; with it,
/// completed jobs older than `done` are pruned between claims, a backlog one bounded batch per
/// tick, dead jobs kept until their own age (`dead`), open and newer jobs never.
#[test]
fn retention_prunes_between_claims_and_keeps_what_it_should() {
    use leasefence::worker::Retention;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = leasefence::open(&db).unwrap();
    let now = wall_clock();
    let hour = 3600.0;
    let old: Vec<leasefence::NewJob> = (0..2500)
        .map(|i| leasefence::NewJob::new(format!("old-{i}")))
        .collect();
    for chunk in old.chunks(leasefence::MAX_BATCH) {
        store.enqueue_many(chunk).unwrap();
    }
    for _ in 0..2500 {
        let c = store
            .claim_next("past", now - 3.0 * hour, 2.0 * hour)
            .unwrap()
            .unwrap();
        assert!(store
            .complete(&c.lease(), now - 2.0 * hour, None)
            .unwrap()
            .is_granted());
    }
    store.enqueue("dead").unwrap();
    let c = store
        .claim_next("past", now - 3.0 * hour, 2.0 * hour)
        .unwrap()
        .unwrap();
    assert!(store
        .fail(&c.lease(), now - 2.0 * hour, None, Some("x"))
        .unwrap()
        .is_granted());
    store.enqueue("recent").unwrap();
    let c = store.claim_next("past", now - 60.0, 60.0).unwrap().unwrap();
    assert!(store
        .complete(&c.lease(), now - 30.0, None)
        .unwrap()
        .is_granted());
    for job in ["new-1", "new-2", "new-3"] {
        store.enqueue(job).unwrap();
    }
    let remaining = |store: &dyn Leases| store.stats(wall_clock()).unwrap();
    // Without retention nothing is pruned.
    let mut plain = worker(&db, WorkerOptions::new("w").until_empty(true));
    plain.run(|_| Ok(None)).unwrap();
    assert_eq!(remaining(&*store).done, 2500 + 1 + 3);
    for job in ["new-4", "new-5", "new-6"] {
        store.enqueue(job).unwrap();
    }
    let keep = Retention::done(std::time::Duration::from_secs(3600));
    let options = WorkerOptions::new("w").until_empty(true).retention(keep);
    worker(&db, options).run(|_| Ok(None)).unwrap();
    assert_eq!(store.state("old-0").unwrap(), None);
    assert_eq!(store.state("old-2499").unwrap(), None);
    assert!(
        store.inspect("dead").unwrap().unwrap().dead,
        "dead jobs kept"
    );
    assert!(store.state("recent").unwrap().is_some());
    assert!(store.state("new-1").unwrap().is_some());
    // Dead jobs past their own age go too.
    store.enqueue("new-7").unwrap();
    let both = keep.dead(Some(std::time::Duration::from_secs(3600)));
    let options = WorkerOptions::new("w").until_empty(true).retention(both);
    worker(&db, options).run(|_| Ok(None)).unwrap();
    assert_eq!(store.state("dead").unwrap(), None);
    assert!(store.state("recent").unwrap().is_some());
    assert_eq!(store.fence_floor().unwrap(), 1);
}

/// After a prune the fence floor starts every new job above 0; its attempts still count from 1
/// (from the fence it started at), so a worker's max_attempts is not used up before it runs.
/// Without `base` the first claim of every new job would look like attempt 6 of 5 and the job
/// would be made dead as poison.
#[test]
fn after_a_prune_new_jobs_start_at_attempt_one() {
    for concurrency in [1, 4] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        let store = leasefence::open(&db).unwrap();
        store.enqueue("poison").unwrap();
        for round in 0..5 {
            let now = round as f64 * 10.0;
            let lease = store
                .claim("poison", "w", now, 5.0)
                .unwrap()
                .lease("poison", "w")
                .unwrap();
            let retry = (round < 4).then_some(now + 1.0);
            assert!(store
                .fail(&lease, now, retry, Some("boom"))
                .unwrap()
                .is_granted());
        }
        assert_eq!(
            store
                .prune(&leasefence::Prune::finished_before(1e9))
                .unwrap(),
            1
        );
        assert_eq!(store.fence_floor().unwrap(), 5);
        for job in ["fresh-1", "fresh-2", "fresh-3"] {
            store.enqueue(job).unwrap();
        }
        let attempts = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&attempts);
        let options = WorkerOptions::new("w")
            .until_empty(true)
            .max_attempts(5)
            .concurrency(concurrency);
        let mut worker = worker(&db, options);
        let handler = move |job: &leasefence::worker::Job| {
            seen.lock().unwrap().push((job.fence, job.attempt()));
            Ok(Some("ok".into()))
        };
        let counts = if concurrency == 1 {
            worker.run(handler).unwrap()
        } else {
            worker.run_concurrent(handler).unwrap()
        };
        assert_eq!((counts.completed, counts.dead), (3, 0), "{counts:?}");
        assert_eq!(*attempts.lock().unwrap(), vec![(6, 1); 3]);
        assert_eq!(store.inspect("fresh-1").unwrap().unwrap().attempts, 1);
    }
}

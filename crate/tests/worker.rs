#![cfg(not(target_arch = "wasm32"))]
//! The Rust worker runtime (`leasefence::worker`, docs/contract.md section 9) on real SQLite
//! files, with real threads and real time where the runtime's timers are the subject: the
//! heartbeat across several ttls, a hung handler losing its lease and hearing it at once
//! (`LEASEFENCE_WORKER_ROUNDS` rounds, default 12), a refused renew, a busy database waited out
//! within the lease, retries with backoff, dead jobs, claims past the maximum, revive, panics,
//! and both ways of stopping. The PostgreSQL variants are `#[ignore]`d; `scripts/postgres.sh`
//! runs them.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use leasefence::worker::{wall_clock, Backoff, CancelReason, Liveness, Worker, WorkerOptions};
use leasefence::{Leases, OpenOptions, Reason};
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
            assert!(matches!(reason, CancelReason::Stalled(_)), "{reason:?}");
            Ok(Some("too late".into()))
        })
        .unwrap();
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
                .complete(&job.id, "rival", fence, wall_clock(), Some("rival's"))
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
            // Then run two more ttls.
            let cancelled = cancelled || job.token.wait_timeout(Duration::from_secs_f64(2.0 * ttl));
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
        error.contains("attempt 4 is past the maximum of 3"),
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

#![cfg(all(feature = "postgres", not(target_arch = "wasm32")))]
//! The Rust worker on a PostgreSQL server with many handlers at once. `#[ignore]`d: `bash
//! scripts/postgres.sh` runs it with a server in `LEASEFENCE_PG_URL`.
//!
//! A drain at concurrency 64 must end by itself (`until_empty`) with every job completed once.
//! After the queues change, such a drain kept claiming for minutes while its last jobs sat leased
//! by it and unwritten: each claim took 50-80 ms of JIT compilation (now off, session.rs), longer
//! than the idle poll, and the coordinator claimed again at once without writing what had
//! finished (now settled first, worker/concurrent.rs).

mod support;

use std::time::{Duration, Instant};

use leasefence::worker::{Worker, WorkerOptions};
use leasefence::{NewJob, OpenOptions};
use support::pg_schema::PgSchema;

/// Far above what the drain takes on a loaded two-core machine (a few seconds), far below the
/// minutes the broken drain ran.
const DRAIN_LIMIT: Duration = Duration::from_secs(120);

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_drain_at_concurrency_64_ends_with_every_job_completed_once() {
    let schema = PgSchema::new("worker_drain64");
    let jobs = 2000;
    let store = leasefence::open(&schema.url).unwrap();
    let new: Vec<NewJob> = (0..jobs).map(|i| NewJob::new(format!("job-{i}"))).collect();
    for chunk in new.chunks(leasefence::MAX_BATCH) {
        store.enqueue_many(chunk).unwrap();
    }

    let options = WorkerOptions::new("drainer")
        .ttl(30.0)
        .idle_poll(Duration::from_millis(10))
        .concurrency(64)
        .until_empty(true);
    let mut worker = Worker::open(&schema.url, &OpenOptions::new(), options).unwrap();
    let stop = worker.stop_handle();
    let started = Instant::now();
    let watchdog = std::thread::spawn(move || {
        while started.elapsed() < DRAIN_LIMIT {
            if stop.is_stopping() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        stop.stop();
        true
    });
    let counts = worker
        .run_concurrent(|_job| {
            std::thread::sleep(Duration::from_millis(5));
            Ok(Some("ok".into()))
        })
        .unwrap();
    worker.stop_handle().stop();
    let timed_out = watchdog.join().unwrap();
    let left: Vec<_> = store
        .jobs()
        .unwrap()
        .into_iter()
        .filter(|job| !job.done)
        .map(|job| format!("{} fence {} owner {:?}", job.id, job.fence, job.owner))
        .collect();
    let mut admin = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    let open: Vec<String> = admin
        .query(
            "SELECT id, until, until, done, fence FROM jobs \
             WHERE done = 0 AND fence < 9223372036854775807",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {} {} {}",
                r.get::<_, String>(0),
                r.get::<_, f64>(1),
                r.get::<_, f64>(2),
                r.get::<_, i32>(3),
                r.get::<_, i64>(4)
            )
        })
        .collect();
    assert!(
        !timed_out,
        "the drain did not end within {DRAIN_LIMIT:?}: {counts:?}; not done: {left:?}; open in \
         the table: {open:?}"
    );
    assert!(left.is_empty(), "not done: {left:?} ({counts:?})");
    assert_eq!(counts.completed, jobs as u64, "{counts:?}");
}

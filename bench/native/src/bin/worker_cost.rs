//! What the worker runtime's heartbeat costs per job: jobs/s of `leasefence::worker::Worker`
//! (heartbeat thread on its own connection) against a plain `claim_next` + `complete` loop on one
//! connection, on the same kind of real SQLite file (WAL, `synchronous = FULL`), in the same run,
//! interleaved, median of the repeats. Two handlers: an empty one (the runtime's fixed cost per
//! job: handing the lease to the heartbeat thread and back, the token, the extra checks) and one
//! that works 20 ms under a 60 ms lease (a renew every 20 ms, so about one per job, on the second
//! connection, competing for the write lock).
//!
//! ```text
//! cargo run --release -p leasefence-bench --bin leasefence-worker-cost -- [--jobs 2000] [--repeats 3] [--dir D]
//! ```
//!
//! On a disk, each job's two fsynced commits dominate and the disk's noise hides the difference;
//! `--dir /dev/shm` (tmpfs, where fsync costs nothing) shows the runtime's own cost.
//!
//! One JSON object per measurement on standard output, one human line each on standard error.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use leasefence::worker::{wall_clock, Liveness, Worker, WorkerOptions};
use leasefence::{Leases, OpenOptions};
use serde_json::json;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn fill(db: &Path, jobs: usize) -> Box<dyn Leases> {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let store = leasefence::open(db).expect("open the bench file");
    for i in 0..jobs {
        store.enqueue(&format!("job-{i}")).expect("enqueue");
    }
    store
}

/// The plain loop: what a user writes without the runtime; with `second`, a second connection
/// stays open beside it, idle (what the heartbeat's connection is between renews).
fn plain(db: &Path, jobs: usize, work: Duration, second: bool) -> f64 {
    // Reopened, as the runtime does: the filling connection's close checkpoints its WAL, so both
    // sides start from the same file state.
    drop(fill(db, jobs));
    let store = leasefence::open(db).expect("reopen the bench file");
    let _idle = second.then(|| leasefence::open(db).expect("a second connection"));
    let start = Instant::now();
    while let Some(job) = store
        .claim_next("plain", wall_clock(), 30.0)
        .expect("claim_next")
    {
        if !work.is_zero() {
            std::thread::sleep(work);
        }
        let done = store
            .complete(&job.lease(), wall_clock(), Some("ok"))
            .expect("complete");
        assert!(done.is_granted());
    }
    jobs as f64 / start.elapsed().as_secs_f64()
}

/// The runtime, heartbeat on; returns jobs/s and renewals.
fn runtime(db: &Path, jobs: usize, work: Duration, ttl: f64) -> (f64, u64) {
    drop(fill(db, jobs));
    let options = WorkerOptions::new("runtime")
        .ttl(ttl)
        .until_empty(true)
        .liveness(Liveness::Unbounded);
    let mut worker = Worker::open(db, &OpenOptions::new(), options).expect("worker");
    let start = Instant::now();
    let counts = worker
        .run(|_job| {
            if !work.is_zero() {
                std::thread::sleep(work);
            }
            Ok(Some("ok".into()))
        })
        .expect("run");
    let rate = jobs as f64 / start.elapsed().as_secs_f64();
    assert_eq!(counts.completed, jobs as u64, "{counts:?}");
    (rate, counts.renewals)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    values[values.len() / 2]
}

fn main() {
    let jobs: usize = arg("--jobs", "2000").parse().expect("--jobs N");
    let repeats: usize = arg("--repeats", "3").parse().expect("--repeats N");
    let dir = match std::env::args().any(|a| a == "--dir") {
        true => PathBuf::from(arg("--dir", ".")),
        false => std::env::temp_dir(),
    };
    let db = dir.join(format!("worker-cost-{}.db", std::process::id()));
    for (case, work, ttl, case_jobs) in [
        ("empty handler", Duration::ZERO, 30.0, jobs),
        (
            "20 ms handler, 60 ms lease",
            Duration::from_millis(20),
            0.06,
            (jobs / 20).max(20),
        ),
    ] {
        let (mut plain_rates, mut runtime_rates, mut renewals) = (Vec::new(), Vec::new(), 0);
        let mut second_rates = Vec::new();
        for _ in 0..repeats {
            plain_rates.push(plain(&db, case_jobs, work, false));
            second_rates.push(plain(&db, case_jobs, work, true));
            let (rate, renewed) = runtime(&db, case_jobs, work, ttl);
            runtime_rates.push(rate);
            renewals += renewed;
        }
        let (plain_rate, runtime_rate) = (median(plain_rates), median(runtime_rates));
        let second_rate = median(second_rates);
        let per_job_us = (1.0 / runtime_rate - 1.0 / plain_rate) * 1e6;
        let renewals_per_job = renewals as f64 / (repeats * case_jobs) as f64;
        eprintln!(
            "{case}: plain loop {plain_rate:.0} jobs/s (with an idle second connection open: \
             {second_rate:.0}), runtime with heartbeat {runtime_rate:.0} jobs/s ({:.2}x), \
             {per_job_us:+.0} us per job, {renewals_per_job:.2} renewals per job ({case_jobs} \
             jobs, median of {repeats})",
            runtime_rate / plain_rate
        );
        println!(
            "{}",
            json!({
                "suite": "worker_cost", "case": case, "jobs": case_jobs, "repeats": repeats,
                "plain_jobs_per_s": plain_rate, "plain_second_connection_jobs_per_s": second_rate,
                "runtime_jobs_per_s": runtime_rate,
                "ratio": runtime_rate / plain_rate, "extra_us_per_job": per_job_us,
                "renewals_per_job": renewals_per_job,
            })
        );
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
}

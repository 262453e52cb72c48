//! One leasefence worker process for bench/peers (the peer-queue comparison), on the native
//! library through `leasefence::open`: an SQLite file (WAL, `synchronous = FULL`) or a
//! `postgres://` URL. bench/peers/bench.mjs starts W of these per run.
//!
//!   leasefence-peer-worker enqueue --db TARGET --jobs N      N jobs, one durable commit each
//!   leasefence-peer-worker work --db TARGET --owner NAME     prints `ready`, waits for a line on
//!       stdin, then claim_next + complete until nothing is claimable; prints one JSON line
//!       {"jobs", "errors", "start_ms", "end_ms", "latencies_ms", "ids", "durability"} (wall-clock ms)
//!   leasefence-peer-worker stale --db TARGET                 the stale-worker story, both orders,
//!       on the real clock with a 0.5 s lease; prints one JSON line per order
use std::io::BufRead;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasefence::{Lease, Leases, Outcome};

const TTL: f64 = 30.0;

fn now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs_f64()
}

fn arg(args: &[String], name: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| panic!("leasefence-peer-worker: {name} is required"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let db = arg(&args, "--db");
    let store = leasefence::open(&db).unwrap_or_else(|e| panic!("open {db}: {e}"));
    match args.get(1).map(String::as_str) {
        Some("enqueue") => {
            store.init().expect("init");
            let jobs: usize = arg(&args, "--jobs").parse().expect("--jobs is a number");
            for i in 0..jobs {
                store.enqueue(&format!("job-{i:07}")).expect("enqueue");
            }
        }
        Some("work") => work(store.as_ref(), &arg(&args, "--owner"), durability(&db)),
        Some("stale") => stale(store.as_ref()),
        _ => panic!("leasefence-peer-worker: enqueue, work or stale"),
    }
}

fn work(store: &dyn Leases, owner: &str, durability: &str) {
    println!("ready");
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).expect("stdin");
    let start_ms = now() * 1e3;
    let mut latencies = Vec::new();
    let mut ids = Vec::new();
    let mut errors = 0u64;
    loop {
        let began = Instant::now();
        // A storage error (busy past the timeout, a dropped connection) decides nothing: retry.
        let claimed = match store.claim_next(owner, now(), TTL) {
            Ok(Some(claimed)) => claimed,
            Ok(None) => break,
            Err(_) => {
                errors += 1;
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        loop {
            match store.complete(&claimed.lease(), now(), Some("ok")) {
                Ok(Outcome::Granted(())) => break,
                Ok(Outcome::Rejected(reason)) => {
                    panic!("complete of {} refused: {reason}", claimed.job)
                }
                Err(_) => {
                    errors += 1;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
        latencies.push(began.elapsed().as_secs_f64() * 1e3);
        ids.push(claimed.job);
    }
    let end_ms = now() * 1e3;
    println!(
        "{}",
        serde_json::json!({"jobs": latencies.len(), "errors": errors, "start_ms": start_ms,
            "end_ms": end_ms, "latencies_ms": latencies, "ids": ids,
            "durability": durability})
    );
}

/// What this store promises per commit, as the worker reports it next to its numbers.
fn durability(target: &str) -> &'static str {
    if target.starts_with("postgres://") || target.starts_with("postgresql://") {
        "PostgreSQL synchronous_commit=on (the server's setting, shown below)"
    } else {
        "journal_mode=WAL, synchronous=FULL (set by the library)"
    }
}

/// Worker A claims, stalls past its 0.5 s lease; B claims and (order "after") completes; then A
/// completes with its old fence. Order "during": A completes while B still holds the lease.
fn stale(store: &dyn Leases) {
    store.init().expect("init");
    for order in ["after", "during"] {
        let job = format!("stale-{order}-{}", std::process::id());
        store.enqueue(&job).expect("enqueue");
        let a = match store.claim(&job, "worker-a", now(), 0.5).expect("claim A") {
            Outcome::Granted(fence) => Lease::new(job.as_str(), "worker-a", fence),
            Outcome::Rejected(reason) => panic!("A's claim refused: {reason}"),
        };
        std::thread::sleep(Duration::from_millis(700)); // A stalls past its lease
        let b = match store.claim(&job, "worker-b", now(), 30.0).expect("claim B") {
            Outcome::Granted(fence) => Lease::new(job.as_str(), "worker-b", fence),
            Outcome::Rejected(reason) => panic!("B's claim refused: {reason}"),
        };
        let mut b_done = None;
        if order == "after" {
            b_done = Some(store.complete(&b, now(), Some("B")).expect("complete B"));
        }
        let a_late = store.complete(&a, now(), Some("A")).expect("complete A");
        if order == "during" {
            b_done = Some(store.complete(&b, now(), Some("B")).expect("complete B"));
        }
        let row = store.state(&job).expect("state").expect("the job exists");
        let refusal = match &a_late {
            Outcome::Granted(()) => None,
            Outcome::Rejected(reason) => Some(format!("{} ({reason})", reason.code())),
        };
        println!(
            "{}",
            serde_json::json!({"order": order, "a_fence": a.fence, "b_fence": b.fence,
                "b_completed": matches!(b_done, Some(Outcome::Granted(()))),
                "a_refused": refusal.is_some(), "a_told": refusal,
                "final_result": row.result, "final_done": row.done})
        );
    }
}

//! One leasefence worker process for bench/peers (the peer-queue comparison), on the native
//! library through `leasefence::open`: an SQLite file (WAL, `synchronous = FULL`) or a
//! `postgres://` URL. bench/peers/bench.mjs starts W of these per run.
//!
//!   leasefence-peer-worker enqueue --db TARGET --jobs N      N jobs, one durable commit each
//!   leasefence-peer-worker work --db TARGET --owner NAME     prints `ready`, waits for a line on
//!       stdin, then claim_next + complete until nothing is claimable; prints one JSON line
//!       {"jobs", "errors", "start_ms", "end_ms", "latencies_ms", "ids", "durability"} (wall-clock ms)
//!   leasefence-peer-worker best --db TARGET --owner NAME --concurrency C --hold-ms H
//!       one `Worker` with `WorkerOptions::concurrency(C)` and `run_concurrent`, each handler
//!       holding its job H ms; prints `ready`, waits for a line on stdin, drains until nothing is
//!       claimable, prints the same JSON line as `work` (latency: from the `claim_next_many` call
//!       that claimed the job to the return of the `complete_many` that committed it)
//!   leasefence-peer-worker stale --db TARGET                 the stale-worker story, both orders,
//!       on the real clock with a 0.5 s lease; prints one JSON line per order
use std::collections::HashMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use leasefence::worker::{Worker, WorkerOptions};
use leasefence::{Call, FencedHandle, Finish, Lease, Leases, OpenOptions, Outcome, Reply};

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
        Some("best") => {
            let concurrency: usize = arg(&args, "--concurrency")
                .parse()
                .expect("--concurrency is a number");
            let hold_ms: u64 = arg(&args, "--hold-ms")
                .parse()
                .expect("--hold-ms is a number");
            best(store, &db, &arg(&args, "--owner"), concurrency, hold_ms);
        }
        Some("stale") => stale(store.as_ref()),
        _ => panic!("leasefence-peer-worker: enqueue, work, best or stale"),
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

/// When each job was asked for and when its completion committed, as the `Timed` store saw them.
#[derive(Debug, Default)]
struct Timing {
    /// Job id -> wall ms when the `claim_next_many` that claimed it was called.
    asked: HashMap<String, f64>,
    latencies: Vec<f64>,
    ids: Vec<String>,
    refused: u64,
    /// Completions of jobs whose claim the wrapper did not see.
    unseen: u64,
}

/// The worker's store with a stopwatch: every call goes to `inner`; `claim_next_many_in` and
/// `complete_many` also note the time per job (a map insert: nothing the store waits on).
#[derive(Debug)]
struct Timed {
    inner: Box<dyn Leases>,
    timing: Arc<Mutex<Timing>>,
}

impl Leases for Timed {
    fn execute(&self, call: Call<'_>) -> leasefence::Result<Reply> {
        // The jobs the call completes, read before it moves: a round's completions committed
        // with its claim, which was asked for when the round was.
        let completing: Vec<String> = match &call {
            Call::Complete { lease, .. } => vec![lease.job.clone()],
            Call::CompleteMany { completions, .. }
            | Call::CompleteThenClaim { completions, .. } => {
                completions.iter().map(|c| c.lease.job.clone()).collect()
            }
            _ => Vec::new(),
        };
        let asked = wall_ms();
        let reply = self.inner.execute(call)?;
        let (completed, claimed) = match &reply {
            Reply::Outcome(outcome) => (std::slice::from_ref(outcome), None),
            Reply::Outcomes(outcomes) => (&outcomes[..], None),
            Reply::Round(answer) => (&answer.completed[..], answer.claimed.as_ref().ok()),
            Reply::ClaimedMany(claimed) => (&[][..], Some(claimed)),
            _ => (&[][..], None),
        };
        if !completing.is_empty() {
            let done: Vec<_> = completing
                .iter()
                .zip(completed)
                .map(|(job, outcome)| (job, outcome.is_granted()))
                .collect();
            self.note_done(&done);
        }
        if let Some(claimed) = claimed {
            let mut timing = self.timing.lock().expect("timing lock");
            for job in claimed {
                timing.asked.insert(job.job.clone(), asked);
            }
        }
        Ok(reply)
    }
    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> leasefence::Result<()>,
    ) -> leasefence::Result<Outcome<()>> {
        self.inner.fenced_with(lease, now, finish, work)
    }
}

impl Timed {
    /// Notes the completions just acknowledged: (job, granted) each.
    fn note_done(&self, done: &[(&String, bool)]) {
        let at = wall_ms();
        let mut timing = self.timing.lock().expect("timing lock");
        for &(job, granted) in done {
            if !granted {
                timing.refused += 1;
                continue;
            }
            let Some(asked) = timing.asked.get(job).copied() else {
                timing.unseen += 1; // reported at the end: the bench's timing missed a claim path
                continue;
            };
            timing.latencies.push(at - asked);
            timing.ids.push(job.clone());
        }
    }
}

fn wall_ms() -> f64 {
    now() * 1e3
}

/// One process at its best settings for throughput: a `Worker` running `concurrency` handlers at
/// once (`run_concurrent`: `claim_next_many` fills the free slots, a quarter of them at a time at
/// most; the completions that finish together share one `complete_many`), each handler holding
/// its job `hold_ms` ms.
fn best(store: Box<dyn Leases>, db: &str, owner: &str, concurrency: usize, hold_ms: u64) {
    let timing = Arc::new(Mutex::new(Timing::default()));
    let timed = Box::new(Timed {
        inner: store,
        timing: Arc::clone(&timing),
    });
    let target = db.to_string();
    // The heartbeat's own connection, as `Worker::open` makes it (its busy timeout within the
    // lease), opened before the clock starts, as every peer connects before it (graphile-worker's
    // pool answers a `select 1` first): on PostgreSQL a connection is set up and its statements
    // prepared in about 20 ms, a fifth of a 300-job run at 64 in flight.
    let open_heartbeat = move || {
        leasefence::open_with(
            &target,
            &OpenOptions::new().busy_timeout(Duration::from_secs(5)),
        )
    };
    let opened = Mutex::new(Some(open_heartbeat().expect("the heartbeat's connection")));
    let heartbeat = Box::new(move || match opened.lock().expect("opened lock").take() {
        Some(store) => Ok(store),
        None => open_heartbeat(),
    });
    let options = WorkerOptions::new(owner)
        .ttl(TTL)
        .idle_poll(Duration::from_millis(10))
        .concurrency(concurrency)
        .until_empty(true);
    let mut worker = Worker::new(timed, heartbeat, options).expect("worker options");
    let hold = Duration::from_millis(hold_ms);
    println!("ready");
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).expect("stdin");
    let start_ms = wall_ms();
    let counts = worker
        .run_concurrent(|_job| {
            std::thread::sleep(hold);
            Ok(Some("ok".into()))
        })
        .unwrap_or_else(|e| panic!("run_concurrent: {e}"));
    let end_ms = wall_ms();
    drop(worker);
    let timing = timing.lock().expect("timing lock");
    if timing.refused > 0 || timing.unseen > 0 {
        panic!(
            "{} completions refused, {} of jobs claimed unseen",
            timing.refused, timing.unseen
        );
    }
    println!(
        "{}",
        serde_json::json!({"jobs": timing.latencies.len(), "errors": 0, "start_ms": start_ms,
            "end_ms": end_ms, "latencies_ms": timing.latencies, "ids": timing.ids,
            "claimed": counts.claimed, "completed": counts.completed,
            "durability": durability(db),
            "setting": format!("Worker::run_concurrent, WorkerOptions::concurrency({concurrency})")})
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

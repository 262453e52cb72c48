#![cfg(not(target_arch = "wasm32"))]
//! Concurrency across real OS processes on one real SQLite file, through the CLI.
//!
//! - Several `leasefence batch --db FILE` processes, each driven over stdin/stdout JSON lines by
//!   its own thread, run a mixed workload of claims, `claim_next`, renewals, releases and
//!   completes on a shared logical clock with short leases, where some workers deliberately stall
//!   past their lease. Checked: no fence is handed out twice, fences grow in real-time order, at
//!   most one complete per job succeeds, a stale complete is always refused and never changes the
//!   stored result, the final rows match what the successful operations did, and the file passes
//!   `PRAGMA integrity_check`.
//! - Many one-shot `leasefence claim` processes started at once on one fresh job: exactly one
//!   gets fence 1, every other one exits 1 with reason `held` naming the winner.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use leasefence::{ClaimedJob, Fence, JobState, LeaseStore, Outcome, Reason};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_leasefence");

/// One `leasefence batch` process, spoken to one request line at a time.
struct Batch {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    requests: usize,
}

impl Batch {
    fn spawn(db: &Path) -> Batch {
        let mut child = Command::new(BIN)
            .arg("--db")
            .arg(db)
            .arg("batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn leasefence batch");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Batch {
            child,
            stdin,
            stdout,
            requests: 0,
        }
    }

    /// Sends one request and reads its one response line; an `error` response fails the test.
    fn call(&mut self, request: Value) -> (Value, Option<Reason>) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "leasefence batch closed its output after {request}");
        self.requests += 1;
        let response: Value = serde_json::from_str(&line).unwrap();
        assert!(
            response.get("error").is_none(),
            "{request} -> {}",
            line.trim_end()
        );
        let object = response.as_object().unwrap();
        let value = object.get("value").cloned().expect("a value");
        let reason = object.get("reason").map(parse_reason);
        match &value {
            Value::Null | Value::Bool(false) => {}
            _ => assert!(reason.is_none(), "a reason on a granted answer: {line}"),
        }
        (value, reason)
    }

    fn outcome_unit(&mut self, request: Value) -> Outcome<()> {
        match self.call(request) {
            (Value::Bool(true), None) => Outcome::Granted(()),
            (Value::Bool(false), Some(reason)) => Outcome::Rejected(reason),
            other => panic!("expected true, or false with a reason; got {other:?}"),
        }
    }

    fn claim(&mut self, job: &str, owner: &str, now: f64, ttl: f64) -> Outcome<Fence> {
        let request = json!({"op": "claim", "job": job, "owner": owner, "now": now, "ttl": ttl});
        match self.call(request) {
            (Value::Number(fence), None) => Outcome::Granted(fence.as_i64().unwrap()),
            (Value::Null, Some(reason)) => Outcome::Rejected(reason),
            other => panic!("claim: expected a fence or null with a reason; got {other:?}"),
        }
    }

    fn claim_next(&mut self, owner: &str, now: f64, ttl: f64) -> Option<ClaimedJob> {
        let request = json!({"op": "claim_next", "owner": owner, "now": now, "ttl": ttl});
        match self.call(request) {
            (Value::Null, None) => None,
            (Value::Object(claimed), None) => {
                assert_eq!(claimed.len(), 2, "{claimed:?}");
                Some(ClaimedJob {
                    job: claimed["job"].as_str().unwrap().to_string(),
                    fence: claimed["fence"].as_i64().unwrap(),
                })
            }
            other => panic!("claim_next: expected {{job, fence}} or null; got {other:?}"),
        }
    }

    fn renew(&mut self, job: &str, owner: &str, fence: Fence, now: f64, ttl: f64) -> Outcome<()> {
        self.outcome_unit(
            json!({"op": "renew", "job": job, "owner": owner, "fence": fence,
                                 "now": now, "ttl": ttl}),
        )
    }

    fn complete(
        &mut self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Outcome<()> {
        self.outcome_unit(
            json!({"op": "complete", "job": job, "owner": owner, "fence": fence,
                                 "now": now, "result": result}),
        )
    }

    fn release(&mut self, job: &str, owner: &str, fence: Fence) -> Outcome<()> {
        self.outcome_unit(json!({"op": "release", "job": job, "owner": owner, "fence": fence}))
    }

    fn state(&mut self, job: &str) -> Option<JobState> {
        match self.call(json!({"op": "state", "job": job})) {
            (Value::Null, None) => None,
            (Value::Object(row), None) => {
                assert_eq!(row.len(), 6, "{row:?}");
                Some(JobState {
                    id: row["id"].as_str().unwrap().to_string(),
                    owner: row["owner"].as_str().map(str::to_string),
                    until: row["until"].as_f64().unwrap(),
                    fence: row["fence"].as_i64().unwrap(),
                    result: row["result"].as_str().map(str::to_string),
                    done: row["done"].as_bool().expect("done is a boolean"),
                })
            }
            other => panic!("state: expected a row or null; got {other:?}"),
        }
    }

    /// Closes stdin; the process must then exit 0.
    fn finish(mut self) {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert_eq!(rest, "", "output after the last response");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "leasefence batch exited with {status}");
    }
}

/// A reason object of the protocol, back to the typed [`Reason`].
fn parse_reason(value: &Value) -> Reason {
    let code = value["code"].as_str().expect("a reason code");
    let reason = match code {
        "not_found" => Reason::NotFound,
        "done" => Reason::Done,
        "held" => Reason::Held {
            owner: value["owner"].as_str().map(str::to_string),
            until: value["until"].as_f64().unwrap(),
        },
        "stale_fence" => Reason::StaleFence {
            current: value["fence"].as_i64().unwrap(),
        },
        "not_owner" => Reason::NotOwner,
        "expired" => Reason::Expired {
            until: value["until"].as_f64().unwrap(),
        },
        other => panic!("unknown reason code {other:?} in {value}"),
    };
    assert_eq!(reason.code(), code);
    reason
}

/// A tiny deterministic PRNG (splitmix64), so runs differ per thread but need no dependency.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Job `i` of one run of the mixed workload.
fn job_name(epoch: usize, i: usize) -> String {
    format!("e{epoch:02}-job-{i:03}")
}

/// One granted claim, as seen by the worker that got it.
#[derive(Debug, Clone)]
struct Grant {
    job: String,
    fence: Fence,
    owner: String,
}

/// One complete attempt and how the store answered it.
#[derive(Debug, Clone)]
struct CompleteAttempt {
    job: String,
    owner: String,
    fence: Fence,
    result: String,
    granted: bool,
    /// Whether the worker knew that its lease could not be current any more.
    stale: Stale,
    reason: Option<Reason>,
}

/// Why a complete attempt is known to be stale before it is made.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stale {
    /// Not known: the lease may still be current (or may have run out meanwhile).
    No,
    /// The worker pushed the clock past its lease's end and "slept" a while.
    Stalled,
    /// The worker released the lease first.
    Released,
}

#[derive(Debug, Default)]
struct WorkerLog {
    grants: Vec<Grant>,
    completes: Vec<CompleteAttempt>,
    ops: usize,
    renews_granted: usize,
    renews_rejected: usize,
    releases: usize,
    claims_rejected: usize,
    claim_next_empty: usize,
    /// Request lines answered by this worker's batch process.
    requests: usize,
}

/// How many times the mixed workload runs, each time on fresh jobs of the same file.
const EPOCHS: usize = 10;
/// How many `leasefence batch` processes (one driving thread each) share the file.
const THREADS: usize = 5;
const JOBS: usize = 50;
const TTL: f64 = 6.0;
const OP_CAP: usize = 4_000;
/// How many leases one worker holds at most at a time.
const MAX_HELD: usize = 3;

struct Shared {
    epoch: usize,
    /// The logical clock in seconds; only ever grows.
    clock: AtomicU64,
    /// Per job, the highest fence any worker has already recorded as granted. A claim that starts
    /// after a grant was recorded must return a higher fence (real-time order).
    recorded_max: Vec<AtomicI64>,
    done_jobs: AtomicUsize,
}

impl Shared {
    fn latest(&self, job: &str) -> Fence {
        self.recorded_max[job_index(job)].load(Ordering::SeqCst)
    }
}

fn job_index(job: &str) -> usize {
    job.rsplit('-').next().unwrap().parse().unwrap()
}

/// The worker's view of its current lease.
struct Held {
    job: String,
    fence: Fence,
    until: f64,
}

fn worker(db: &Path, index: usize, shared: &Shared) -> WorkerLog {
    let mut batch = Batch::spawn(db);
    let store = &mut batch;
    let owner = format!("w{index}");
    let mut rng = Rng::new(index as u64 + 1);
    // Half of the workers stall often; the others rarely.
    let stall_percent = if index.is_multiple_of(2) { 50 } else { 10 };
    let mut log = WorkerLog::default();
    // Leases this worker believes it holds, and leases it "slept through" (with the op count at
    // which it wakes up and tries to complete anyway).
    let mut active: Vec<Held> = Vec::new();
    let mut stalled: Vec<(Held, usize)> = Vec::new();
    let mut last_now = 0.0_f64;
    let mut attempt = 0usize;

    // Each read of the clock is checked to be non-decreasing for this caller.
    let now = |last_now: &mut f64| {
        let t = shared.clock.load(Ordering::SeqCst) as f64;
        assert!(t >= *last_now);
        *last_now = t;
        t
    };

    while shared.done_jobs.load(Ordering::SeqCst) < JOBS && log.ops < OP_CAP {
        log.ops += 1;
        if rng.chance(25) {
            shared.clock.fetch_add(1, Ordering::SeqCst);
        }
        // A stalled worker wakes up and completes as if nothing happened: always refused.
        // It wakes after a while, or as soon as someone else has taken the job over.
        let stolen = |lease: &Held| shared.latest(&lease.job) > lease.fence;
        if let Some(i) = stalled
            .iter()
            .position(|(lease, wake)| *wake <= log.ops || stolen(lease))
        {
            let (lease, _) = stalled.swap_remove(i);
            attempt += 1;
            let t = now(&mut last_now);
            log.completes.push(try_complete(
                store,
                shared,
                &owner,
                &lease,
                t,
                attempt,
                Stale::Stalled,
            ));
            continue;
        }
        if active.is_empty() || (active.len() < MAX_HELD && rng.chance(35)) {
            if let Some(lease) = claim_one(
                store,
                &owner,
                &mut rng,
                shared,
                &mut log,
                now(&mut last_now),
            ) {
                active.push(lease);
            }
            continue;
        }
        let mut lease = active.swap_remove(rng.below(active.len() as u64) as usize);
        let roll = rng.below(100);
        if roll < 25 {
            // Renew: granted only while the lease is current and live.
            let t = now(&mut last_now);
            match store.renew(&lease.job, &owner, lease.fence, t, TTL) {
                Outcome::Granted(()) => {
                    assert!(lease.until > t, "renewed an expired lease");
                    log.renews_granted += 1;
                    lease.until = t + TTL;
                    active.push(lease);
                }
                Outcome::Rejected(reason) => {
                    log.renews_rejected += 1;
                    check_lost_lease(&reason, &lease, t);
                }
            }
        } else if roll < 30 {
            // Release, and sometimes try to complete afterwards: always refused.
            match store.release(&lease.job, &owner, lease.fence) {
                Outcome::Granted(()) => log.releases += 1,
                Outcome::Rejected(reason) => assert!(
                    matches!(reason, Reason::StaleFence { current } if current > lease.fence)
                        || reason == Reason::Done,
                    "release of {}: {reason:?}",
                    lease.job
                ),
            }
            if rng.chance(50) {
                attempt += 1;
                let t = now(&mut last_now);
                log.completes.push(try_complete(
                    store,
                    shared,
                    &owner,
                    &lease,
                    t,
                    attempt,
                    Stale::Released,
                ));
            }
        } else if roll < 75 {
            // Keep working on the job; the lease may run out meanwhile.
            active.push(lease);
        } else if rng.chance(stall_percent) {
            // Sleep through the lease: push the clock past its end; others may steal the job
            // before this worker wakes up a few operations later.
            let past = lease.until as u64 + rng.below(3);
            shared.clock.fetch_max(past, Ordering::SeqCst);
            let wake = log.ops + 1 + rng.below(40) as usize;
            stalled.push((lease, wake));
        } else {
            attempt += 1;
            let t = now(&mut last_now);
            let entry = try_complete(store, shared, &owner, &lease, t, attempt, Stale::No);
            if entry.granted {
                shared.done_jobs.fetch_add(1, Ordering::SeqCst);
            }
            log.completes.push(entry);
        }
    }
    // Everyone else may be finished; the sleepers still wake up and try.
    for (lease, _) in stalled {
        attempt += 1;
        let t = now(&mut last_now);
        log.completes.push(try_complete(
            store,
            shared,
            &owner,
            &lease,
            t,
            attempt,
            Stale::Stalled,
        ));
    }
    log.requests = batch.requests;
    batch.finish();
    log
}

/// One `claim` on a random job or one `claim_next`; checks the fence against every grant that
/// was recorded before the call started.
fn claim_one(
    store: &mut Batch,
    owner: &str,
    rng: &mut Rng,
    shared: &Shared,
    log: &mut WorkerLog,
    t: f64,
) -> Option<Held> {
    let floors: Vec<Fence> = shared
        .recorded_max
        .iter()
        .map(|m| m.load(Ordering::SeqCst))
        .collect();
    let (job, fence) = if rng.chance(50) {
        match store.claim_next(owner, t, TTL) {
            Some(claimed) => (claimed.job, claimed.fence),
            None => {
                log.claim_next_empty += 1;
                return None;
            }
        }
    } else {
        let job = job_name(shared.epoch, rng.below(JOBS as u64) as usize);
        match store.claim(&job, owner, t, TTL) {
            Outcome::Granted(fence) => (job, fence),
            Outcome::Rejected(reason) => {
                log.claims_rejected += 1;
                match reason {
                    Reason::Done => {}
                    Reason::Held { ref owner, until } => {
                        assert!(until > t && owner.is_some(), "{reason:?} at {t}")
                    }
                    other => panic!("claim of {job} at {t}: unexpected {other:?}"),
                }
                return None;
            }
        }
    };
    let j = job_index(&job);
    assert!(
        fence > floors[j],
        "{owner} got fence {fence} for {job}, but {} was granted before the claim began",
        floors[j]
    );
    shared.recorded_max[j].fetch_max(fence, Ordering::SeqCst);
    log.grants.push(Grant {
        job: job.clone(),
        fence,
        owner: owner.to_string(),
    });
    Some(Held {
        job,
        fence,
        until: t + TTL,
    })
}

/// A renew or complete of `lease` was refused: the reason must say why the lease is lost.
fn check_lost_lease(reason: &Reason, lease: &Held, now: f64) {
    match reason {
        Reason::Done => {}
        Reason::StaleFence { current } => assert!(*current > lease.fence, "{reason:?}"),
        Reason::Expired { until } => {
            assert!(*until <= now, "{reason:?} at {now}");
            assert_eq!(*until, lease.until, "{reason:?}: the lease ended elsewhere");
        }
        other => panic!("{} fence {}: unexpected {other:?}", lease.job, lease.fence),
    }
}

fn try_complete(
    store: &mut Batch,
    shared: &Shared,
    owner: &str,
    lease: &Held,
    now: f64,
    attempt: usize,
    stale: Stale,
) -> CompleteAttempt {
    let result = format!("{owner}/fence{}/attempt{attempt}", lease.fence);
    // A fence recorded before the call: when it is newer than ours, the job was taken over.
    let floor = shared.latest(&lease.job);
    let outcome = store.complete(&lease.job, owner, lease.fence, now, Some(&result));
    let row = store.state(&lease.job).unwrap();
    let (granted, reason) = match outcome {
        Outcome::Granted(()) => {
            assert_eq!(
                stale,
                Stale::No,
                "{owner}: a stale complete of {} succeeded",
                lease.job
            );
            assert!(lease.until > now, "completed an expired lease");
            assert_eq!(floor, lease.fence, "completed a lease that was taken over");
            // A done row never changes again, so this read must show exactly our write.
            assert!(row.done);
            assert_eq!(row.result.as_deref(), Some(result.as_str()));
            assert_eq!(row.fence, lease.fence);
            assert_eq!(row.owner.as_deref(), Some(owner));
            (true, None)
        }
        Outcome::Rejected(reason) => {
            if stale == Stale::Released && reason == Reason::NotOwner {
                // Only after our own release: the fence is still current, the owner is gone.
            } else {
                check_lost_lease(&reason, lease, now);
            }
            if floor > lease.fence {
                assert!(
                    matches!(reason, Reason::StaleFence { current } if current >= floor)
                        || reason == Reason::Done,
                    "{} taken over (fence {floor}) but complete with fence {} said {reason:?}",
                    lease.job,
                    lease.fence
                );
            }
            // Whatever is stored, it is not what this refused call tried to write.
            assert_ne!(row.result.as_deref(), Some(result.as_str()));
            if reason == Reason::Done {
                assert!(row.done);
            }
            (false, Some(reason))
        }
    };
    CompleteAttempt {
        job: lease.job.clone(),
        owner: owner.to_string(),
        fence: lease.fence,
        result,
        granted,
        stale,
        reason,
    }
}

/// What one run of the mixed workload did, for the summary.
#[derive(Debug, Default)]
struct Tally {
    ops: usize,
    grants: usize,
    completes: usize,
    refused_completes: usize,
    stale_attempts: usize,
    reasons: BTreeMap<&'static str, usize>,
    renews: usize,
    renews_refused: usize,
    releases: usize,
    claims_refused: usize,
    claim_next_empty: usize,
    requests: usize,
}

/// One run: THREADS batch processes on JOBS fresh jobs of `db` until every job is done, then every
/// invariant checked against the final rows.
fn run_epoch(db: &Path, epoch: usize, tally: &mut Tally) {
    {
        let store = LeaseStore::open(db).unwrap();
        for j in 0..JOBS {
            assert!(store.enqueue(&job_name(epoch, j)).unwrap());
        }
    }
    let shared = Shared {
        epoch,
        clock: AtomicU64::new(0),
        recorded_max: (0..JOBS).map(|_| AtomicI64::new(0)).collect(),
        done_jobs: AtomicUsize::new(0),
    };
    let logs: Vec<WorkerLog> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..THREADS)
            .map(|i| {
                let shared = &shared;
                scope.spawn(move || worker(db, epoch * 1000 + i, shared))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let grants: Vec<&Grant> = logs.iter().flat_map(|l| &l.grants).collect();
    let completes: Vec<&CompleteAttempt> = logs.iter().flat_map(|l| &l.completes).collect();

    // No (job, fence) granted twice, and per job the fences are exactly 1..=max.
    let mut fences: BTreeMap<&str, BTreeSet<Fence>> = BTreeMap::new();
    let mut holder: HashMap<(&str, Fence), &str> = HashMap::new();
    for g in &grants {
        assert!(
            fences.entry(&g.job).or_default().insert(g.fence),
            "{} fence {} granted twice",
            g.job,
            g.fence
        );
        holder.insert((&g.job, g.fence), &g.owner);
    }
    for (job, set) in &fences {
        let max = *set.iter().next_back().unwrap();
        assert_eq!(
            set.iter().copied().collect::<Vec<_>>(),
            (1..=max).collect::<Vec<_>>(),
            "{job}: fences are not exactly 1..={max}"
        );
    }

    // At most one successful complete per job, each by the holder of that (job, fence).
    let mut winner: HashMap<&str, &CompleteAttempt> = HashMap::new();
    for c in completes.iter().filter(|c| c.granted) {
        assert_eq!(
            holder.get(&(c.job.as_str(), c.fence)),
            Some(&c.owner.as_str())
        );
        if let Some(first) = winner.insert(&c.job, c) {
            panic!("{} completed twice: {first:?} and {c:?}", c.job);
        }
    }

    // The final rows are exactly what the successful operations did.
    let store = LeaseStore::open(db).unwrap();
    for j in 0..JOBS {
        let job = job_name(epoch, j);
        let row = store.state(&job).unwrap().unwrap();
        let max = fences
            .get(job.as_str())
            .map_or(0, |s| *s.iter().next_back().unwrap());
        assert_eq!(row.fence, max, "{job}: stored fence is not the max granted");
        match winner.get(job.as_str()) {
            Some(c) => {
                assert!(row.done, "{job}");
                assert_eq!(row.result.as_deref(), Some(c.result.as_str()), "{job}");
                assert_eq!(row.owner.as_deref(), Some(c.owner.as_str()), "{job}");
                assert_eq!(
                    c.fence, max,
                    "{job}: completed with a fence that is not the last"
                );
            }
            None => {
                assert!(!row.done, "{job} is done without a successful complete");
                assert_eq!(row.result, None, "{job}");
            }
        }
    }
    // A refused complete never wrote its result anywhere.
    let stored: BTreeSet<String> = store
        .jobs()
        .unwrap()
        .into_iter()
        .filter_map(|row| row.result)
        .collect();
    for c in completes.iter().filter(|c| !c.granted) {
        assert!(!stored.contains(&c.result), "refused {c:?} left its result");
    }
    assert_eq!(
        winner.len(),
        JOBS,
        "epoch {epoch}: not every job was completed"
    );

    tally.ops += logs.iter().map(|l| l.ops).sum::<usize>();
    tally.grants += grants.len();
    tally.completes += winner.len();
    for c in &completes {
        tally.stale_attempts += usize::from(c.stale != Stale::No);
        if let Some(reason) = &c.reason {
            tally.refused_completes += 1;
            *tally.reasons.entry(reason.code()).or_default() += 1;
        }
    }
    for l in &logs {
        tally.renews += l.renews_granted + l.renews_rejected;
        tally.renews_refused += l.renews_rejected;
        tally.releases += l.releases;
        tally.claims_refused += l.claims_rejected;
        tally.claim_next_empty += l.claim_next_empty;
        tally.requests += l.requests;
    }
}

#[test]
fn batch_processes_with_stalls_never_break_fencing() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("processes.db");
    let mut tally = Tally::default();
    for epoch in 0..EPOCHS {
        run_epoch(&db, epoch, &mut tally);
    }
    eprintln!(
        "processes: {EPOCHS} runs x {THREADS} batch processes x {JOBS} jobs in {:?}: {tally:?}",
        started.elapsed()
    );
    // The runs must actually have exercised what they claim to test.
    assert!(
        tally.grants > tally.completes,
        "no lease was ever taken over"
    );
    assert!(tally.stale_attempts >= 30, "too few stale completes");
    for code in ["stale_fence", "expired", "not_owner"] {
        assert!(
            tally.reasons.contains_key(code),
            "no complete refused as {code}"
        );
    }

    let conn = leasefence::rusqlite::Connection::open(&db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let (rows, done): (i64, i64) = conn
        .query_row("SELECT count(*), sum(done) FROM jobs", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (rows, done),
        ((EPOCHS * JOBS) as i64, (EPOCHS * JOBS) as i64)
    );
}

/// Runs `leasefence --db DB ARGS...` once per argument list, all started before any is waited
/// for, and returns each one's exit code and parsed output line.
fn run_at_once(db: &Path, runs: &[Vec<String>]) -> Vec<(i32, Value)> {
    let children: Vec<Child> = runs
        .iter()
        .map(|args| {
            Command::new(BIN)
                .arg("--db")
                .arg(db)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn leasefence")
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8(out.stdout).unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stdout.lines().count(),
                1,
                "stdout {stdout:?}, stderr {stderr:?}"
            );
            let value: Value = serde_json::from_str(&stdout)
                .unwrap_or_else(|err| panic!("{err}: {stdout:?}, stderr {stderr:?}"));
            (out.status.code().expect("exited normally"), value)
        })
        .collect()
}

#[test]
fn one_shot_claims_at_once_have_exactly_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("oneshot.db");
    let store = LeaseStore::open(&db).unwrap();
    for round in 0..4 {
        let job = format!("race-{round}");
        assert!(store.enqueue(&job).unwrap());
        let runs: Vec<Vec<String>> = (0..8)
            .map(|k| {
                [
                    "claim",
                    &job,
                    "--owner",
                    &format!("p{k}"),
                    "--ttl",
                    "60",
                    "--now",
                    "0",
                ]
                .map(String::from)
                .to_vec()
            })
            .collect();
        let results = run_at_once(&db, &runs);
        let winners: Vec<usize> = (0..results.len()).filter(|&k| results[k].0 == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let winner = format!("p{}", winners[0]);
        for (k, (code, value)) in results.iter().enumerate() {
            if k == winners[0] {
                assert_eq!(value, &json!({"value": 1}), "round {round}");
            } else {
                assert_eq!(*code, 1, "round {round}, p{k}: {value}");
                assert_eq!(
                    value,
                    &json!({"value": null, "reason": {"code": "held", "owner": winner, "until": 60.0}}),
                    "round {round}, p{k}"
                );
            }
        }
        let row = store.state(&job).unwrap().unwrap();
        assert_eq!(
            (row.owner.as_deref(), row.fence, row.until),
            (Some(winner.as_str()), 1, 60.0)
        );
    }
}

/// Every process finds no database and sets it up at the same time; the job is inserted once and
/// no process fails.
///
/// Regression: switching a new file to WAL gets `SQLITE_BUSY` at once, without the busy handler,
/// when another connection converts it too; the open must wait (up to the busy timeout) instead
/// of failing with "database is locked".
#[test]
fn one_shot_enqueues_on_a_new_file_create_it_once() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("fresh.db");
        let runs: Vec<Vec<String>> = (0..8)
            .map(|_| vec!["enqueue".to_string(), "only-job".to_string()])
            .collect();
        let results = run_at_once(&db, &runs);
        let inserted = results.iter().filter(|(code, _)| *code == 0).count();
        assert_eq!(inserted, 1, "round {round}: {results:?}");
        for (code, value) in &results {
            let expected = if *code == 0 {
                json!({"value": true})
            } else {
                json!({"value": false})
            };
            assert!(*code <= 1, "round {round}: {results:?}");
            assert_eq!(value, &expected, "round {round}");
        }
        let rows = LeaseStore::open(&db).unwrap().jobs().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].id.as_str(), rows[0].fence, rows[0].done),
            ("only-job", 0, false)
        );
    }
}

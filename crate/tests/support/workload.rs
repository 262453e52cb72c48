//! The stall-heavy mixed workload shared by `threads.rs` (direct `LeaseStore` calls),
//! `processes.rs` (`leasefence batch` processes over JSON lines) and `postgres.rs` (both, on a
//! PostgreSQL server).
//!
//! Several workers, each with its own [`Client`], run claims, `claim_next`, renewals, releases and
//! completes on fresh jobs of one real database (an SQLite file or a PostgreSQL schema), on a shared logical clock with short leases,
//! where some workers deliberately stall past their lease. Checked: no fence is handed out twice,
//! fences grow in real-time order, at most one complete per job succeeds, a stale complete is
//! always refused and never changes the stored result, and the final rows match exactly what the
//! successful operations did.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use leasefence::{ClaimedJob, Fence, JobState, Lease, Leases, Outcome, Reason};

/// How many times the mixed workload runs, each time on fresh jobs of the same file.
pub const EPOCHS: usize = 10;
pub const JOBS: usize = 50;
const TTL: f64 = 6.0;
const OP_CAP: usize = 4_000;
/// How many leases one worker holds at most at a time.
const MAX_HELD: usize = 3;

/// One worker's connection to the store: the operations of the contract as typed answers. A
/// transport failure (an I/O error, an `error` response) fails the test inside the client.
pub trait Client {
    fn claim(&mut self, job: &str, owner: &str, now: f64, ttl: f64) -> Outcome<Fence>;
    fn claim_next(&mut self, owner: &str, now: f64, ttl: f64) -> Option<ClaimedJob>;
    fn renew(&mut self, lease: &Lease, now: f64, ttl: f64) -> Outcome<()>;
    fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Outcome<()>;
    fn release(&mut self, lease: &Lease) -> Outcome<()>;
    fn state(&mut self, job: &str) -> Option<JobState>;

    /// Called once after the worker's last operation: a transport checks that it shuts down
    /// cleanly. Returns how many requests went over the transport (0 for direct calls).
    fn finish(self) -> usize
    where
        Self: Sized,
    {
        0
    }
}

/// Every store of the crate is a client: the calls go straight to its [`Leases`] methods (a
/// SQLite `LeaseStore`, a PostgreSQL `PgStore`, each on its own connection).
impl<L: Leases> Client for L {
    fn claim(&mut self, job: &str, owner: &str, now: f64, ttl: f64) -> Outcome<Fence> {
        Leases::claim(self, job, owner, now, ttl).unwrap()
    }

    fn claim_next(&mut self, owner: &str, now: f64, ttl: f64) -> Option<ClaimedJob> {
        Leases::claim_next(self, owner, now, ttl).unwrap()
    }

    fn renew(&mut self, lease: &Lease, now: f64, ttl: f64) -> Outcome<()> {
        Leases::renew(self, lease, now, ttl).unwrap()
    }

    fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Outcome<()> {
        Leases::complete(self, lease, now, result).unwrap()
    }

    fn release(&mut self, lease: &Lease) -> Outcome<()> {
        Leases::release(self, lease).unwrap()
    }

    fn state(&mut self, job: &str) -> Option<JobState> {
        Leases::state(self, job).unwrap()
    }
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
    /// Requests answered over this worker's transport (0 for direct calls).
    requests: usize,
}

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

fn worker<C: Client>(mut client: C, index: usize, shared: &Shared) -> WorkerLog {
    let store = &mut client;
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
            match store.renew(&Lease::new(&lease.job, &owner, lease.fence), t, TTL) {
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
            match store.release(&Lease::new(&lease.job, &owner, lease.fence)) {
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
    log.requests = client.finish();
    log
}

/// One `claim` on a random job or one `claim_next`; checks the fence against every grant that
/// was recorded before the call started.
fn claim_one<C: Client>(
    store: &mut C,
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

fn try_complete<C: Client>(
    store: &mut C,
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
    let outcome = store.complete(
        &Lease::new(&lease.job, owner, lease.fence),
        now,
        Some(&result),
    );
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

/// What the runs of the mixed workload did, for the summary.
#[derive(Debug, Default)]
pub struct Tally {
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
    /// Requests answered over the workers' transports (0 for direct calls).
    requests: usize,
}

impl Tally {
    /// The runs must actually have exercised what they claim to test: some lease was taken
    /// over, at least `min_stale` completes were known stale, and some complete was refused with
    /// each of the reason `codes`.
    pub fn assert_exercised(&self, min_stale: usize, codes: &[&str]) {
        assert!(self.grants > self.completes, "no lease was ever taken over");
        assert!(self.stale_attempts >= min_stale, "too few stale completes");
        for code in codes {
            assert!(
                self.reasons.contains_key(code),
                "no complete refused as {code}"
            );
        }
    }
}

/// The whole mixed workload on `db`: [`EPOCHS`] runs of `workers` workers on [`JOBS`] fresh jobs
/// each, every worker on its own client made by `connect` (in the worker's thread). `db` is what
/// [`leasefence::open`] takes: an SQLite file, or a `postgres://` URL.
pub fn run<C, F>(db: &Path, workers: usize, connect: F) -> Tally
where
    C: Client,
    F: Fn(&Path) -> C + Sync,
{
    let mut tally = Tally::default();
    for epoch in 0..EPOCHS {
        run_epoch(db, epoch, workers, &connect, &mut tally);
    }
    tally
}

/// One run: `workers` workers on JOBS fresh jobs of `db` until every job is done, then every
/// invariant checked against the final rows.
fn run_epoch<C, F>(db: &Path, epoch: usize, workers: usize, connect: &F, tally: &mut Tally)
where
    C: Client,
    F: Fn(&Path) -> C + Sync,
{
    {
        let store = leasefence::open(db).unwrap();
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
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let shared = &shared;
                scope.spawn(move || worker(connect(db), epoch * 1000 + i, shared))
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
    let store = leasefence::open(db).unwrap();
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

/// The file passes `PRAGMA integrity_check`; returns the connection for further checks.
pub fn assert_integrity(db: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    conn
}

#![cfg(not(target_arch = "wasm32"))]
//! The Rust worker with several handlers at once (`WorkerOptions::concurrency`, docs/contract.md
//! section 10) on real SQLite files and real threads: eight handlers drain 200 jobs, each done
//! once, never more than eight at once, with batched claims and completions; the leases of
//! jobs running together are renewed together; a lost lease cancels its own job alone; a fenced
//! completion whose statement fails fails its own job alone; interrupt stops every handler.
//! The store calls are counted by a `Leases` wrapper around a real `LeaseStore`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

mod support;

use support::commits::{store_counting_commits, syncs};
use support::fault_vfs;
use support::wrapped::{Intercept, Wrapped};

use leasefence::worker::{
    wall_clock, CancelReason, Completion, Liveness, Opener, Worker, WorkerOptions,
};
use leasefence::{
    Call, Error, JobState, Lease, LeaseStore, Leases, NewJob, Outcome, Reason, Reply, Result,
    Statement,
};

/// How many times each store operation was called, and on how many items.
#[derive(Debug, Default)]
struct Calls(Mutex<HashMap<&'static str, (usize, usize)>>);

impl Calls {
    fn add(&self, operation: &'static str, items: usize) {
        let mut calls = self.0.lock().unwrap();
        let entry = calls.entry(operation).or_default();
        entry.0 += 1;
        entry.1 += items;
    }

    /// (calls, items) of `operation`.
    fn of(&self, operation: &str) -> (usize, usize) {
        self.0
            .lock()
            .unwrap()
            .get(operation)
            .copied()
            .unwrap_or_default()
    }
}

/// Counts the calls of a real `LeaseStore`.
#[derive(Debug)]
struct Counted {
    calls: Arc<Calls>,
    /// How long each `claim_next_many` takes at least (a slow server, a busy file).
    claim_delay: Duration,
    /// A worker's round goes to the store's `complete_then_claim` (one transaction), counted;
    /// otherwise it is the trait's two calls, each counted.
    rounds: bool,
}

/// `store` with its calls counted in `calls`.
fn counted(
    store: LeaseStore,
    calls: &Arc<Calls>,
    claim_delay: Duration,
    rounds: bool,
) -> Wrapped<Counted> {
    let calls = Arc::clone(calls);
    let intercept = Counted {
        calls,
        claim_delay,
        rounds,
    };
    Wrapped { store, intercept }
}

impl Intercept for Counted {
    fn execute(&self, wrapped: &dyn Leases, store: &LeaseStore, call: Call<'_>) -> Result<Reply> {
        match &call {
            Call::ClaimNextMany { .. } => {
                std::thread::sleep(self.claim_delay);
                let reply = store.execute(call)?;
                if let Reply::ClaimedMany(claimed) = &reply {
                    self.calls.add("claim_next_many", claimed.len());
                }
                return Ok(reply);
            }
            Call::CompleteThenClaim { completions, .. } if self.rounds => {
                self.calls.add("complete_then_claim", completions.len())
            }
            // The trait's two calls, each counted.
            Call::CompleteThenClaim { .. } => return call.answer_by_default(wrapped),
            Call::RenewMany { leases, .. } | Call::Heartbeat { leases, .. } => {
                self.calls.add(call.name(), leases.len())
            }
            Call::CompleteMany { completions, .. } => {
                self.calls.add("complete_many", completions.len())
            }
            Call::Claim { .. }
            | Call::ClaimNext { .. }
            | Call::Renew { .. }
            | Call::Complete { .. }
            | Call::Release { .. }
            | Call::Fail { .. }
            | Call::Fenced { .. } => self.calls.add(call.name(), 1),
            _ => {}
        }
        store.execute(call)
    }

    fn fenced_with(&self) {
        self.calls.add("fenced", 1);
    }
}

/// A worker on `db` whose runner and heartbeat calls are counted in `runner` and `heartbeat`.
fn counted_worker(
    db: &Path,
    options: WorkerOptions,
    runner: &Arc<Calls>,
    heartbeat: &Arc<Calls>,
) -> Worker {
    slow_claiming_worker(db, options, runner, heartbeat, Duration::ZERO)
}

/// [`counted_worker`] whose every claim takes at least `claim_delay`.
fn slow_claiming_worker(
    db: &Path,
    options: WorkerOptions,
    runner: &Arc<Calls>,
    heartbeat: &Arc<Calls>,
    claim_delay: Duration,
) -> Worker {
    let store = counted(LeaseStore::open(db).unwrap(), runner, claim_delay, false);
    let (path, calls) = (db.to_path_buf(), Arc::clone(heartbeat));
    let opener: Opener = Box::new(move || {
        let store = LeaseStore::open(&path)?;
        Ok(Box::new(counted(store, &calls, claim_delay, false)) as Box<dyn Leases>)
    });
    Worker::new(Box::new(store), opener, options).unwrap()
}

fn enqueue(db: &Path, jobs: usize) -> Vec<String> {
    let ids: Vec<String> = (0..jobs).map(|i| format!("job-{i:03}")).collect();
    let store = LeaseStore::open(db).unwrap();
    let new: Vec<NewJob> = ids
        .iter()
        .map(|id| NewJob::new(id.clone()).payload(id.clone()))
        .collect();
    for chunk in new.chunks(leasefence::MAX_BATCH) {
        assert!(store
            .enqueue_many(chunk)
            .unwrap()
            .iter()
            .all(|&added| added));
    }
    ids
}

/// Counts the handlers running at once, and the most ever seen.
#[derive(Default)]
struct InFlight {
    now: AtomicUsize,
    most: AtomicUsize,
}

impl InFlight {
    fn enter(&self) {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
    }
    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A barrier of `size` handlers that gives up after 10 s: the handlers of one round finish
/// together, as a batch of equal jobs does, whatever the machine's load (with sleeps, finishing
/// times drift apart and each freed slot is claimed alone).
struct Rounds {
    size: usize,
    state: Mutex<(usize, u64)>, // (arrived in this round, round number)
    turned: Condvar,
}

impl Rounds {
    fn new(size: usize) -> Self {
        Rounds {
            size,
            state: Mutex::new((0, 0)),
            turned: Condvar::new(),
        }
    }

    fn wait(&self) {
        let mut state = self.state.lock().unwrap();
        let round = state.1;
        state.0 += 1;
        if state.0 == self.size {
            *state = (0, round + 1);
            self.turned.notify_all();
            return;
        }
        let (state, timeout) = self
            .turned
            .wait_timeout_while(state, Duration::from_secs(10), |s| s.1 == round)
            .unwrap();
        assert!(!timeout.timed_out(), "a round never filled: {:?}", *state);
    }
}

#[test]
fn eight_handlers_drain_two_hundred_jobs_each_once_never_more_than_eight_at_once_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 200);
    let (runner, heartbeat) = (Arc::default(), Arc::default());
    let options = WorkerOptions::new("w").concurrency(8).until_empty(true);
    let mut worker = counted_worker(&db, options, &runner, &heartbeat);
    let in_flight = InFlight::default();
    let handled = Mutex::new(Vec::new());
    // 200 jobs are 25 full rounds of 8.
    let rounds = Rounds::new(8);
    let counts = worker
        .run_concurrent(|job| {
            in_flight.enter();
            handled.lock().unwrap().push(job.id.clone());
            rounds.wait();
            in_flight.leave();
            Ok(Some(format!("done {}", job.payload.as_deref().unwrap())))
        })
        .unwrap();
    assert_eq!((counts.claimed, counts.completed), (200, 200), "{counts:?}");
    assert_eq!(counts.leases_lost + counts.failed + counts.dead, 0);
    let mut handled = handled.into_inner().unwrap();
    handled.sort();
    assert_eq!(handled, ids, "every job handled exactly once");
    let store = LeaseStore::open(&db).unwrap();
    for id in &ids {
        let state = store.state(id).unwrap().unwrap();
        assert!(state.done, "{id}");
        assert_eq!(state.result, Some(format!("done {id}")));
    }
    let most = in_flight.most.load(Ordering::SeqCst);
    assert!(
        most <= 8,
        "{most} handlers ran at once, above the concurrency"
    );
    assert_eq!(most, 8, "every round runs eight handlers at once");
    // Claims and completions went in batches: far fewer transactions than jobs.
    let (claims, claimed) = runner.of("claim_next_many");
    assert_eq!(claimed, 200);
    assert_eq!(runner.of("claim_next").0, 0);
    assert!(claims <= 100, "{claims} claim transactions for 200 jobs");
    let (groups, grouped) = runner.of("complete_many");
    let singles = runner.of("complete").0;
    assert_eq!(grouped + singles, 200);
    assert!(
        groups + singles <= 150,
        "{groups} complete_many and {singles} complete for 200 jobs"
    );
    eprintln!(
        "200 jobs: {claims} claim_next_many, {groups} complete_many + {singles} complete, \
         at most {most} at once"
    );
}

#[test]
fn the_leases_of_jobs_running_together_are_renewed_together() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    enqueue(&db, 8);
    let (runner, heartbeat) = (Arc::default(), Arc::default());
    let options = WorkerOptions::new("w")
        .concurrency(8)
        .ttl(0.9)
        .renew_every(0.15)
        .liveness(Liveness::Unbounded)
        .until_empty(true);
    let mut worker = counted_worker(&db, options, &runner, &heartbeat);
    let counts = worker
        .run_concurrent(|job| {
            // Longer than several ttls: only the renews keep the leases.
            assert!(!job.token.wait_timeout(Duration::from_millis(2000)));
            Ok(None)
        })
        .unwrap();
    assert_eq!((counts.completed, counts.leases_lost), (8, 0), "{counts:?}");
    // The worker's beat rides with its renewals (`heartbeat`, one transaction); a renewal goes
    // without it only when a list is longer than MAX_BATCH.
    let (beats, beat_renewed) = heartbeat.of("heartbeat");
    let (batches, renewed) = heartbeat.of("renew_many");
    let singles = heartbeat.of("renew").0;
    assert_eq!(
        (batches, singles),
        (0, 0),
        "renewals without the worker's beat"
    );
    let (batches, renewed) = (beats + batches, beat_renewed + renewed);
    assert_eq!(counts.renewals as usize, renewed + singles);
    // Its last beat (at the end of the run) carries the counters the run returned.
    let store = leasefence::LeaseStore::open(&db).unwrap();
    let row = &store.list_workers(1e12).unwrap()[0];
    assert_eq!((row.owner.as_str(), row.alive), ("w", false));
    assert_eq!(row.counters, counts);
    assert_eq!(row.pid, std::process::id());
    // Eight leases for 2 s, renewed every 0.15 s: about a hundred renews.
    assert!(
        renewed >= 8 * 8,
        "{renewed} leases renewed through renew_many"
    );
    assert!(
        batches * 4 <= renewed,
        "{batches} renew_many calls for {renewed} leases: not batched"
    );
    assert!(
        singles <= batches,
        "{singles} single renews beside {batches} batches"
    );
    eprintln!("{renewed} leases renewed in {batches} renew_many calls, {singles} alone");
}

#[test]
fn a_lost_lease_cancels_its_own_jobs_token_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 4);
    let victim = ids[2].clone();
    let options = WorkerOptions::new("w")
        .concurrency(4)
        .ttl(1.2)
        .renew_every(0.1)
        .liveness(Liveness::Unbounded)
        .until_empty(true);
    let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
    let started = AtomicUsize::new(0);
    let cancelled = Mutex::new(Vec::new());
    let counts = thread::scope(|scope| {
        scope.spawn(|| {
            let thief = LeaseStore::open(&db).unwrap();
            let start = Instant::now();
            while started.load(Ordering::SeqCst) < 4 {
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "handlers never started"
                );
                thread::sleep(Duration::from_millis(2));
            }
            // Another owner takes the victim's job over: w's lease is released under it (as an
            // operator would), then claimed anew, so w's next renew is refused.
            let released = thief.release(&Lease::new(victim.as_str(), "w", 1)).unwrap();
            assert!(released.is_granted());
            let taken = thief.claim(&victim, "thief", wall_clock(), 30.0).unwrap();
            assert_eq!(taken, Outcome::Granted(2));
        });
        worker
            .run_concurrent(|job| {
                started.fetch_add(1, Ordering::SeqCst);
                if job.token.wait_timeout(Duration::from_millis(1500)) {
                    cancelled
                        .lock()
                        .unwrap()
                        .push((job.id.clone(), job.token.reason().unwrap()));
                }
                Ok(Some("finished".into()))
            })
            .unwrap()
    });
    let cancelled = cancelled.into_inner().unwrap();
    assert_eq!(cancelled.len(), 1, "{cancelled:?}");
    assert_eq!(cancelled[0].0, victim);
    assert_eq!(
        cancelled[0].1,
        CancelReason::Lost(Reason::StaleFence { current: 2 })
    );
    assert_eq!(
        (counts.claimed, counts.completed, counts.leases_lost),
        (4, 3, 1),
        "{counts:?}"
    );
    let store = LeaseStore::open(&db).unwrap();
    for id in &ids {
        let state = store.state(id).unwrap().unwrap();
        if *id == victim {
            assert!(!state.done);
            assert_eq!((state.owner.as_deref(), state.fence), (Some("thief"), 2));
        } else {
            assert!(state.done, "{id}");
        }
    }
}

#[test]
fn a_fenced_completion_whose_statement_fails_fails_its_own_job_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 24);
    let tables = rusqlite::Connection::open(&db).unwrap();
    tables
        .execute_batch(
            "CREATE TABLE reports(job TEXT PRIMARY KEY, body TEXT NOT NULL);
             INSERT INTO reports VALUES ('taken', 'before the run');",
        )
        .unwrap();
    let failing = ids[13].clone();
    let (runner, heartbeat) = (Arc::default(), Arc::default());
    let options = WorkerOptions::new("w")
        .concurrency(8)
        .max_attempts(1)
        .until_empty(true);
    let mut worker = counted_worker(&db, options, &runner, &heartbeat);
    let counts = worker
        .run_fenced_concurrent(|job| {
            thread::sleep(Duration::from_millis(3));
            // The failing job writes a row that breaks the primary key.
            let row = if job.id == failing { "taken" } else { &job.id };
            Ok(
                Completion::new(Some("reported".into())).statement(Statement::new(
                    "INSERT INTO reports (job, body) VALUES ($1, $2)",
                    [row.into(), "report".into()],
                )),
            )
        })
        .unwrap();
    assert_eq!(
        (counts.claimed, counts.completed, counts.dead, counts.failed),
        (24, 23, 1, 0),
        "{counts:?}"
    );
    assert_eq!(runner.of("fenced").0, 24, "each fenced completion alone");
    let store = LeaseStore::open(&db).unwrap();
    let report = store.inspect(&failing).unwrap().unwrap();
    assert!(report.dead);
    let error = report.failures[0].error.clone().unwrap_or_default();
    assert!(error.contains("UNIQUE"), "{error}");
    let rows: Vec<String> = tables
        .prepare("SELECT job FROM reports ORDER BY job")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let mut want: Vec<String> = ids.iter().filter(|id| **id != failing).cloned().collect();
    want.push("taken".into());
    assert_eq!(rows, want);
    for id in ids.iter().filter(|id| **id != failing) {
        assert_eq!(
            store.state(id).unwrap().unwrap().result.as_deref(),
            Some("reported")
        );
    }
}

/// Waits (at most 10 s) until `n` handlers have counted themselves in `started`.
fn when_started(started: &AtomicUsize, n: usize) {
    let start = Instant::now();
    while started.load(Ordering::SeqCst) < n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "handlers never started"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn interrupt_cancels_every_running_handler_and_releases_their_leases() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 10);
    let options = WorkerOptions::new("w").concurrency(6);
    let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
    let stop = worker.stop_handle();
    let started = AtomicUsize::new(0);
    let counts = thread::scope(|scope| {
        scope.spawn(|| {
            when_started(&started, 6);
            stop.interrupt();
        });
        worker
            .run_concurrent(|job| {
                started.fetch_add(1, Ordering::SeqCst);
                assert!(job.token.wait_timeout(Duration::from_secs(20)));
                assert_eq!(job.token.reason(), Some(CancelReason::Stopping));
                Ok(None)
            })
            .unwrap()
    });
    assert_eq!((counts.claimed, counts.completed), (6, 0), "{counts:?}");
    let store = LeaseStore::open(&db).unwrap();
    let states: Vec<JobState> = ids
        .iter()
        .map(|id| store.state(id).unwrap().unwrap())
        .collect();
    assert!(
        states.iter().all(|s| !s.done && s.owner.is_none()),
        "{states:?}"
    );
    assert_eq!(states.iter().filter(|s| s.fence == 1).count(), 6);
}

#[test]
fn a_graceful_stop_lets_every_running_handler_finish_and_writes_their_results() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 8);
    let options = WorkerOptions::new("w").concurrency(4);
    let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
    let stop = worker.stop_handle();
    let started = AtomicUsize::new(0);
    let counts = thread::scope(|scope| {
        scope.spawn(|| {
            when_started(&started, 4);
            stop.stop();
        });
        worker
            .run_concurrent(|job| {
                started.fetch_add(1, Ordering::SeqCst);
                // Still running when the stop is asked for.
                assert!(!job.token.wait_timeout(Duration::from_millis(300)));
                Ok(Some("finished".into()))
            })
            .unwrap()
    });
    assert_eq!((counts.claimed, counts.completed), (4, 4), "{counts:?}");
    let store = LeaseStore::open(&db).unwrap();
    let done = ids
        .iter()
        .filter(|id| store.state(id).unwrap().unwrap().done)
        .count();
    let untouched = ids
        .iter()
        .filter(|id| store.state(id).unwrap().unwrap().fence == 0)
        .count();
    assert_eq!((done, untouched), (4, 4));
}

#[test]
fn a_concurrency_out_of_range_or_given_to_a_single_thread_handler_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    enqueue(&db, 1);
    for bad in [0, leasefence::worker::MAX_CONCURRENCY + 1] {
        let options = WorkerOptions::new("w").concurrency(bad);
        let err = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidArgument { .. })
                && err.to_string().contains("concurrency"),
            "{err}"
        );
    }
    let options = WorkerOptions::new("w").concurrency(2).until_empty(true);
    let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
    let err = worker.run(|_| Ok(None)).unwrap_err();
    assert!(err.to_string().contains("run_concurrent"), "{err}");
    let state = worker.store().state("job-000").unwrap().unwrap();
    assert_eq!((state.fence, state.done), (0, false), "nothing was claimed");
}

/// A claim slower than the idle poll (a loaded server: 50-80 ms each on PostgreSQL when it
/// compiled the claim) must not starve the handlers that finished meanwhile: their completions
/// are written between claims, and the drain ends. Before, the next claim was due at once after
/// each slow one, the loop claimed an empty queue without end, and the last jobs stayed leased
/// and unwritten.
#[test]
fn claims_slower_than_the_idle_poll_still_let_finished_jobs_complete_and_the_drain_end() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue(&db, 40);
    let (runner, heartbeat) = (Arc::default(), Arc::default());
    let options = WorkerOptions::new("w")
        .concurrency(8)
        .idle_poll(Duration::from_millis(5))
        .until_empty(true);
    let mut worker =
        slow_claiming_worker(&db, options, &runner, &heartbeat, Duration::from_millis(30));
    let stop = worker.stop_handle();
    let (ended, ended_rx) = std::sync::mpsc::channel::<()>();
    // A drain that does not end by itself is stopped, so the test fails rather than hangs.
    let watchdog = std::thread::spawn(move || {
        let hung = ended_rx.recv_timeout(Duration::from_secs(60)).is_err();
        if hung {
            stop.stop();
        }
        hung
    });
    let counts = worker
        .run_concurrent(|_job| {
            std::thread::sleep(Duration::from_millis(2));
            Ok(Some("ok".into()))
        })
        .unwrap();
    let _ = ended.send(());
    assert!(
        !watchdog.join().unwrap(),
        "the drain did not end: {counts:?}"
    );
    assert_eq!(counts.completed, ids.len() as u64, "{counts:?}");
    let store = LeaseStore::open(&db).unwrap();
    assert!(ids.iter().all(|id| store.state(id).unwrap().unwrap().done));
}

/// Not a test: jobs per second drained by one worker with a trivial handler at concurrency 1, 8
/// and 64 (`LEASEFENCE_MEASURE_JOBS` jobs, default 2000). Run on a quiet machine:
/// `cargo test --release -p leasefence --test worker_concurrency -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement: run it by hand on a quiet machine"]
fn measure_jobs_per_second_by_concurrency() {
    let jobs: usize = std::env::var("LEASEFENCE_MEASURE_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    for concurrency in [1, 8, 64] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        enqueue(&db, jobs);
        let (runner, heartbeat) = (Arc::default(), Arc::default());
        let options = WorkerOptions::new("w")
            .concurrency(concurrency)
            .until_empty(true);
        let mut worker = counted_worker(&db, options, &runner, &heartbeat);
        let start = Instant::now();
        let counts = worker
            .run_concurrent(|job| Ok(job.payload.clone()))
            .unwrap();
        let took = start.elapsed().as_secs_f64();
        assert_eq!(counts.completed as usize, jobs);
        let claims = runner.of("claim_next_many").0 + runner.of("claim_next").0;
        let writes = runner.of("complete_many").0 + runner.of("complete").0;
        eprintln!(
            "concurrency {concurrency:>2}: {jobs} jobs in {took:.2} s = {:.0} jobs/s \
             ({claims} claim and {writes} complete transactions)",
            jobs as f64 / took
        );
    }
}

#[test]
fn a_round_writes_the_finished_jobs_and_the_refill_claim_in_one_commit() {
    // Eight handlers finish together each round (the barrier); the worker writes their
    // completions and claims eight more, one `complete_then_claim`. Every write of the run is
    // counted (both the worker's stores are wrapped), and every commit that writes is one sync
    // (support/commits.rs): when a round is one transaction, the syncs are at most the counted
    // writes; were it two, each round would add one.
    let dir = tempfile::tempdir().unwrap();
    fault_vfs::register(dir.path());
    let drain = |name: &str, rounds: bool| -> (u64, leasefence::worker::Counters, Arc<Calls>) {
        let db = dir.path().join(name);
        let calls: Arc<Calls> = Arc::default();
        let store = counted(store_counting_commits(&db), &calls, Duration::ZERO, rounds);
        let jobs: Vec<NewJob> = (0..64)
            .map(|i| NewJob::new(format!("job-{i:02}")))
            .collect();
        store.store.enqueue_many(&jobs).unwrap();
        let (path, opener_calls) = (db.clone(), Arc::clone(&calls));
        let opener: Opener = Box::new(move || {
            let store = store_counting_commits(&path);
            let store = counted(store, &opener_calls, Duration::ZERO, rounds);
            Ok(Box::new(store) as Box<dyn Leases>)
        });
        let options = WorkerOptions::new("w").concurrency(8).until_empty(true);
        let mut worker = Worker::new(Box::new(store), opener, options).unwrap();
        let barrier = Rounds::new(8);
        let before = syncs();
        let counts = worker
            .run_concurrent(|_job| {
                barrier.wait();
                Ok(None)
            })
            .unwrap();
        (syncs() - before, counts, calls)
    };
    let writes = |calls: &Calls| -> u64 {
        [
            "complete_then_claim",
            "claim_next_many",
            "claim_next",
            "claim",
            "complete_many",
            "complete",
            "heartbeat",
            "renew_many",
            "renew",
            "fail",
            "release",
            "fenced",
        ]
        .iter()
        .map(|op| calls.of(op).0 as u64)
        .sum()
    };
    let (one, counts, one_calls) = drain("one.db", true);
    assert_eq!((counts.claimed, counts.completed), (64, 64), "{counts:?}");
    let rounds = one_calls.of("complete_then_claim").0;
    assert!(rounds >= 4, "the worker wrote in rounds: {rounds}");
    assert!(
        one <= writes(&one_calls),
        "{one} syncs for {} writes, {rounds} of them rounds: a round is one commit",
        writes(&one_calls)
    );
    let (two, counts, calls) = drain("two.db", false);
    assert_eq!((counts.claimed, counts.completed), (64, 64), "{counts:?}");
    assert_eq!(calls.of("complete_then_claim").0, 0);
    eprintln!(
        "64 jobs in rounds of 8: {one} syncs for {} writes with {rounds} rounds in one transaction each, \
         {two} with each round two ({} writes)",
        writes(&one_calls),
        writes(&calls)
    );
}

//! A worker running up to `concurrency` handlers at once (docs/contract.md section 10): one
//! coordinating thread (the caller's) does every store call of the run but the renews, the
//! heartbeat renews, and a pool of handler threads only runs handlers.
//!
//! The coordinator claims with `claim_next_many` as slots free up (from 16 slots, a quarter of
//! them at a time at most: `rules::worker::claim_batch`), hands each job to a handler thread, and
//! writes the outcomes of the handlers that finished since its last look together: the plain
//! completions with the claim for the slots they freed, one `complete_then_claim` (one
//! transaction on SQLite and PostgreSQL), or with one `complete_many` when there is nothing to claim; a
//! completion with statements as its own fenced transaction (its failing statement fails that job
//! alone); a failure with `fail`, one by one (docs/decisions/worker-concurrency.md says why). A
//! job is counted done only once the transaction that wrote it committed.
//!
//! Every store call goes through the `Leases` the worker was built with (and the heartbeat's,
//! from its opener): a store shared by several workers plugs in through [`Worker::new`].

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

use super::attempt::{panic_message, Failing};
use super::clock::real_wait;
use super::heartbeat::Heartbeat;
use super::{
    CancelReason, CancelToken, Completion, CompletionResult, Counters, HandlerResult, Job, Worker,
};
use crate::batch::{LeaseCompletion, WorkerRound};
use crate::error::{Error, Result};
use crate::outcome::{ClaimedJob, Outcome};
use crate::rules::worker as rules;

/// A job handed to a handler thread; `key` is its heartbeat key.
struct Assigned {
    key: u64,
    job: Job,
}

/// A handler's answer, back from its thread.
struct Finished {
    key: u64,
    outcome: std::thread::Result<CompletionResult>,
}

/// A job whose handler runs, as the coordinator keeps it.
struct Running {
    claimed: ClaimedJob,
    token: CancelToken,
    /// Its key in the stop handle.
    tracked: u64,
}

/// The coordinator's side of a run: the running jobs, and the two channels to the pool.
struct Pool<'h> {
    heartbeat: &'h Heartbeat,
    running: HashMap<u64, Running>,
    assign: Sender<Assigned>,
    finished: Receiver<Finished>,
}

impl Worker {
    /// [`run`](Self::run) with up to [`concurrency`](super::WorkerOptions::concurrency) handlers
    /// at once, each on a thread of its own (so the handler is `Fn + Sync`). With concurrency 1
    /// it is `run`, exactly.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use leasefence::worker::{Worker, WorkerOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// let store = leasefence::open(&db)?;
    /// let jobs: Vec<_> = (0..20).map(|i| leasefence::NewJob::new(format!("job-{i}"))).collect();
    /// store.enqueue_many(&jobs)?;
    ///
    /// let options = WorkerOptions::new("w").concurrency(4).until_empty(true);
    /// let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options)?;
    /// let handled = AtomicUsize::new(0);
    /// let counts = worker.run_concurrent(|job| {
    ///     handled.fetch_add(1, Ordering::Relaxed);
    ///     Ok(Some(format!("{} done", job.id)))
    /// })?;
    /// assert_eq!((counts.claimed, counts.completed, handled.into_inner()), (20, 20, 20));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn run_concurrent<H>(&mut self, handler: H) -> Result<Counters>
    where
        H: Fn(&Job) -> HandlerResult + Sync,
    {
        self.run_fenced_concurrent(move |job| handler(job).map(Completion::from))
    }

    /// [`run_fenced`](Self::run_fenced) with up to
    /// [`concurrency`](super::WorkerOptions::concurrency) handlers at once. Each completion with
    /// statements commits in a transaction of its own (its failing statement fails that job
    /// alone); the plain ones finished together share one `complete_many`.
    ///
    /// ```
    /// use leasefence::{worker::{Completion, Worker, WorkerOptions}, LeaseStore, Statement};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// let store = LeaseStore::open(&db)?;
    /// store.connection().execute("CREATE TABLE sent(job TEXT PRIMARY KEY)", []).unwrap();
    /// for i in 0..6 { store.enqueue(&format!("mail-{i}"))?; }
    ///
    /// let options = WorkerOptions::new("w").concurrency(3).until_empty(true);
    /// let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options)?;
    /// let counts = worker.run_fenced_concurrent(|job| {
    ///     Ok(Completion::new(None)
    ///         .statement(Statement::new("INSERT INTO sent VALUES ($1)", [job.id.as_str().into()])))
    /// })?;
    /// assert_eq!(counts.completed, 6);
    /// let sent: i64 = store.connection().query_row("SELECT count(*) FROM sent", [], |r| r.get(0)).unwrap();
    /// assert_eq!(sent, 6);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn run_fenced_concurrent<H>(&mut self, handler: H) -> Result<Counters>
    where
        H: Fn(&Job) -> CompletionResult + Sync,
    {
        if self.options.concurrency == 1 {
            return self.run_fenced(handler);
        }
        let heartbeat = self.start_heartbeat()?;
        let _watch = self.start_watch();
        let (assign, assigned) = mpsc::channel::<Assigned>();
        let assigned = Mutex::new(assigned);
        let (report, finished) = mpsc::channel::<Finished>();
        let handler = &handler;
        let answer = std::thread::scope(|scope| {
            let mut pool = Pool {
                heartbeat: &heartbeat,
                running: HashMap::new(),
                assign,
                finished,
            };
            for n in 0..self.options.concurrency {
                let (assigned, report) = (&assigned, report.clone());
                std::thread::Builder::new()
                    .name(format!("leasefence-handler-{n}"))
                    .spawn_scoped(scope, move || run_handlers(handler, assigned, report))
                    .map_err(|err| Error::Internal {
                        message: format!("cannot start a handler thread: {err}"),
                    })?;
            }
            drop(report);
            let answer = self.coordinate(&mut pool);
            if answer.is_err() {
                // The run ends on an error: the handlers still running are told to stop; their
                // leases run out (nothing more is written on a store that failed).
                for running in pool.running.values() {
                    running.token.cancel(CancelReason::Stopping);
                }
            }
            answer
        });
        drop(heartbeat);
        answer.map(|()| self.counters())
    }

    fn coordinate(&self, pool: &mut Pool<'_>) -> Result<()> {
        let slots = self.options.concurrency;
        let idle_poll = self.options.idle_poll.as_secs_f64();
        // When to claim again: at once, or (after a claim found fewer jobs than free slots) when
        // a handler finishes or the idle poll has passed.
        let mut claim_at = f64::NEG_INFINITY;
        // The last claim found nothing: with `until_empty`, the run ends once nothing runs.
        let mut found_nothing = false;
        // When the last claim looked.
        let mut looked_at = f64::NEG_INFINITY;
        // Plain completions settled but not written yet: they go with the next claim, in one
        // round (one transaction on SQLite), or alone before the coordinator waits.
        let mut unwritten: Vec<(Running, Option<String>)> = Vec::new();
        loop {
            // Handlers that finished meanwhile are written first: when claims are slow (a loaded
            // server) and come back to back, their jobs would otherwise sit leased and unwritten.
            // A finished handler frees a slot: claim again at once, as after `wait_finished`.
            let finished: Vec<Finished> = pool.finished.try_iter().collect();
            if !finished.is_empty() {
                unwritten.extend(self.settle(pool, finished)?);
                claim_at = f64::NEG_INFINITY;
            }
            let stopping = self.stop.is_stopping();
            // The due schedule slots first: the claim's clock is read after their transaction.
            if !stopping {
                if let Err(err) = self.enqueue_due(self.now()) {
                    // The run ends on this error; what finished is still written if it can be
                    // (a failure there is the same store's trouble: the first error is reported).
                    let _ = self.complete_together(std::mem::take(&mut unwritten));
                    return Err(err);
                }
            }
            let now = self.now();
            let free = slots - pool.running.len();
            if !stopping && free > 0 && now >= claim_at {
                let queues = self.options.queue_names();
                self.stop.take_wake();
                looked_at = now;
                let wanted = rules::claim_batch(free, slots);
                let written = std::mem::take(&mut unwritten);
                match self.complete_then_claim(written, queues.as_deref(), wanted, now)? {
                    Ok(batch) => {
                        found_nothing = batch.is_empty();
                        let short = batch.len() < wanted;
                        for claimed in batch {
                            self.counters.add(&self.counters.claimed);
                            self.start(pool, claimed, now)?;
                        }
                        // A short batch whose jobs all ended at once (poison jobs made dead)
                        // leaves nothing to wait for: claim again at once.
                        // The poll counts from the claim's end: one slower than the poll
                        // would otherwise be due again at once, and the loop would only claim.
                        if short && (found_nothing || !pool.running.is_empty()) {
                            claim_at = self.now() + idle_poll;
                        }
                    }
                    Err(err) if err.is_retryable() => {
                        found_nothing = false;
                        claim_at = self.now() + idle_poll;
                    }
                    Err(err) => return Err(err),
                }
                continue;
            }
            // No claim now: the completions are written before anything waits.
            self.complete_together(std::mem::take(&mut unwritten))?;
            if pool.running.is_empty() {
                if stopping || (found_nothing && self.options.until_empty) {
                    return Ok(());
                }
                if found_nothing {
                    // Until the next job falls due, a wake-up, the poll or a stop.
                    self.rest(looked_at);
                } else {
                    self.idle();
                }
                claim_at = f64::NEG_INFINITY;
                continue;
            }
            let until = if !stopping && free > 0 {
                claim_at
            } else {
                f64::INFINITY
            };
            let finished = self.wait_finished(pool, until)?;
            if !finished.is_empty() {
                unwritten.extend(self.settle(pool, finished)?);
                claim_at = f64::NEG_INFINITY;
            }
        }
    }

    /// Hands a claimed job to the pool; a poison job is made dead here instead.
    fn start(&self, pool: &mut Pool<'_>, claimed: ClaimedJob, claimed_at: f64) -> Result<()> {
        let Some(job) = self.admit(&claimed, claimed_at)? else {
            return Ok(());
        };
        let token = job.token.clone();
        let tracked = self.stop.track(&token);
        let key = pool.heartbeat.begin(
            &job.id,
            job.fence,
            &token,
            claimed_at,
            claimed_at + self.options.renew_interval(),
        );
        pool.running.insert(
            key,
            Running {
                claimed,
                token,
                tracked,
            },
        );
        pool.assign
            .send(Assigned { key, job })
            .map_err(|_| Error::Internal {
                message: "every handler thread of the worker has ended".into(),
            })
    }

    /// Waits for a handler to finish (until `until` on the worker's clock, or a stop, when that
    /// is finite) and answers every one that has finished by then.
    fn wait_finished(&self, pool: &Pool<'_>, until: f64) -> Result<Vec<Finished>> {
        let gone = || Error::Internal {
            message: "every handler thread of the worker has ended".into(),
        };
        let first = loop {
            if until.is_infinite() {
                break pool.finished.recv().map_err(|_| gone())?;
            }
            let left = until - self.now();
            if left <= 0.0 || self.stop.is_stopping() {
                return Ok(Vec::new());
            }
            match pool
                .finished
                .recv_timeout(real_wait(left, self.options.recheck))
            {
                Ok(finished) => break finished,
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return Err(gone()),
            }
        };
        let mut all = vec![first];
        all.extend(pool.finished.try_iter());
        Ok(all)
    }

    /// Writes the outcomes of the handlers that finished, one by one, but the plain completions,
    /// which it answers: the coordinator writes those together, with its next claim or before it
    /// waits. Each is counted once its transaction committed.
    fn settle(
        &self,
        pool: &mut Pool<'_>,
        finished: Vec<Finished>,
    ) -> Result<Vec<(Running, Option<String>)>> {
        let mut plain: Vec<(Running, Option<String>)> = Vec::new();
        for Finished { key, outcome } in finished {
            let Some(running) = pool.running.remove(&key) else {
                return Err(Error::Internal {
                    message: format!("a handler answered for job key {key}, which is not running"),
                });
            };
            pool.heartbeat.end(key);
            self.stop.untrack(running.tracked);
            let (claimed, token) = (&running.claimed, &running.token);
            if let Some(reason) = token.reason() {
                // The result is thrown away: the lease is gone, or the worker is interrupted.
                if reason == CancelReason::Stopping {
                    self.write(token, |store| store.release(&claimed.lease()))?;
                } else {
                    self.counters.add(&self.counters.leases_lost);
                }
                continue;
            }
            match outcome {
                Ok(Ok(completion)) if completion.statements.is_empty() => {
                    // One result over the limit would refuse the whole group's complete_many:
                    // its attempt fails alone instead.
                    match self
                        .store
                        .limits()
                        .check_result(completion.result.as_deref())
                    {
                        Ok(()) => plain.push((running, completion.result)),
                        Err(err) => {
                            self.fail(claimed, token, Failing::Attempt, &err.to_string())?
                        }
                    }
                }
                Ok(Ok(completion)) => self.complete(claimed, token, completion)?,
                Ok(Err(error)) => {
                    self.fail(claimed, token, Failing::Attempt, &error.to_string())?
                }
                Err(panic) => {
                    let message = format!("the handler panicked: {}", panic_message(&*panic));
                    self.fail(claimed, token, Failing::Attempt, &message)?
                }
            }
        }
        Ok(plain)
    }

    /// Writes `unwritten` and claims up to `wanted` jobs in one round
    /// ([`Leases::complete_then_claim`]: one transaction on SQLite and PostgreSQL); the claim's
    /// own answer.
    /// With nothing to write it is the claim alone. When the round cannot run (a busy database)
    /// the completions are written as [`complete_together`](Self::complete_together) writes them,
    /// and the claim answers the round's error (tried again at the poll).
    fn complete_then_claim(
        &self,
        unwritten: Vec<(Running, Option<String>)>,
        queues: Option<&[&str]>,
        wanted: usize,
        now: f64,
    ) -> Result<Result<Vec<ClaimedJob>>> {
        let owner = &self.options.owner;
        let ttl = self.options.ttl;
        if unwritten.is_empty() {
            return Ok(self
                .store
                .claim_next_many_in(queues, owner, wanted, now, ttl));
        }
        let completions = completions_of(&unwritten);
        let round = WorkerRound {
            completions: &completions,
            queues,
            owner,
            claim: wanted,
            now,
            ttl,
        };
        match self.store.complete_then_claim(&round) {
            Ok(answer) => {
                self.count_completions(answer.completed);
                Ok(answer.claimed)
            }
            Err(err) if err.is_retryable() => {
                self.complete_together(unwritten)?;
                Ok(Err(err))
            }
            Err(err) => Err(err),
        }
    }

    /// Counts the answers of written completions: completed, or refused (a stale write).
    fn count_completions(&self, answers: Vec<Outcome<()>>) {
        for answer in answers {
            match answer {
                Outcome::Granted(()) => self.counters.add(&self.counters.completed),
                Outcome::Rejected(_) => self.refused(),
            }
        }
    }

    /// Completes jobs in one transaction (`complete` for one, `complete_many` for several),
    /// trying again while the database is busy; a lease that runs out meanwhile is dropped from
    /// the list (lost, nothing written for it).
    fn complete_together(&self, mut pending: Vec<(Running, Option<String>)>) -> Result<()> {
        let mut failed_tries = 0;
        while !pending.is_empty() {
            let now = self.now();
            let written = if let [(running, result)] = pending.as_slice() {
                self.store
                    .complete(&running.claimed.lease(), now, result.as_deref())
                    .map(|answer| vec![answer])
            } else {
                self.store.complete_many(&completions_of(&pending), now)
            };
            match written {
                Ok(answers) => {
                    self.count_completions(answers);
                    return Ok(());
                }
                Err(err) if err.is_retryable() => {
                    let now = self.now();
                    pending.retain(|(running, _)| {
                        let lasts = now < running.token.deadline();
                        if !lasts {
                            self.counters.add(&self.counters.leases_lost);
                        }
                        lasts
                    });
                    failed_tries += 1;
                    std::thread::sleep(Duration::from_secs_f64(rules::write_retry_delay(
                        failed_tries,
                    )));
                }
                Err(err) => return Err(err),
            }
        }
        Ok(())
    }
}

/// The completions of `unwritten`, as the store takes them.
fn completions_of(unwritten: &[(Running, Option<String>)]) -> Vec<LeaseCompletion> {
    unwritten
        .iter()
        .map(|(running, result)| LeaseCompletion::new(running.claimed.lease(), result.as_deref()))
        .collect()
}

/// A handler thread: runs the handler on each job it is handed, until the coordinator hangs up.
fn run_handlers<H>(handler: &H, assigned: &Mutex<Receiver<Assigned>>, report: Sender<Finished>)
where
    H: Fn(&Job) -> CompletionResult + Sync,
{
    loop {
        let next = assigned
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .recv();
        let Ok(Assigned { key, job }) = next else {
            return;
        };
        let outcome = catch_unwind(AssertUnwindSafe(|| handler(&job)));
        if report.send(Finished { key, outcome }).is_err() {
            return;
        }
    }
}

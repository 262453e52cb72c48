//! The [`Worker`]: its construction and its claim loop.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::clock::real_wait;
use super::counters::SharedCounters;
use super::heartbeat::{Heartbeat, Registration, Settings};
use super::{
    Completion, CompletionResult, Counters, HandlerResult, Job, StopHandle, WorkerOptions,
};
use crate::error::{Error, Result};
use crate::leases::Leases;
use crate::options::OpenOptions;

/// Opens the heartbeat's own connection (the runner's is busy while the handler runs).
///
/// ```
/// let db = std::path::PathBuf::from("queue.db");
/// let opener: leasefence::worker::Opener = Box::new(move || leasefence::open(&db));
/// # let _ = opener;
/// ```
pub type Opener = Box<dyn Fn() -> Result<Box<dyn Leases>> + Send>;

/// A worker: claims jobs and runs a handler on each, one at a time or (with
/// [`WorkerOptions::concurrency`](super::WorkerOptions::concurrency)) several at once (see the
/// [module docs](super)).
pub struct Worker {
    pub(super) store: Box<dyn Leases>,
    opener: Opener,
    pub(super) options: WorkerOptions,
    pub(super) counters: Arc<SharedCounters>,
    pub(super) stop: StopHandle,
    /// When (the worker's clock, as f64 bits) it last called `enqueue_due`; -inf before the first.
    due_at: AtomicU64,
    /// When (the worker's clock, as f64 bits) its retention prunes next; -inf: at once.
    prune_at: AtomicU64,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("store", &self.store)
            .field("options", &self.options)
            .field("counters", &self.counters())
            .finish()
    }
}

impl Worker {
    /// A worker on `store`, whose heartbeat opens its own connection with `heartbeat` (called
    /// once per [`run`](Self::run)). Invalid options are an [`Error::InvalidArgument`].
    ///
    /// ```
    /// use leasefence::worker::{Worker, WorkerOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// let store = leasefence::open(&db)?;
    /// let worker = Worker::new(store, Box::new(move || leasefence::open(&db)), WorkerOptions::new("w"))?;
    /// assert!(Worker::new(leasefence::open(dir.path().join("r.db"))?, Box::new(|| unreachable!()),
    ///                     WorkerOptions::new("w").ttl(0.0)).is_err());
    /// # let _ = worker;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn new(store: Box<dyn Leases>, heartbeat: Opener, options: WorkerOptions) -> Result<Self> {
        options.check()?;
        Ok(Worker {
            store,
            opener: heartbeat,
            options,
            counters: Arc::default(),
            stop: StopHandle::default(),
            due_at: AtomicU64::new(f64::NEG_INFINITY.to_bits()),
            prune_at: AtomicU64::new(f64::NEG_INFINITY.to_bits()),
        })
    }

    /// A worker on `target` (an SQLite file or a `postgres://` URL, as [`open_with`](crate::open_with)),
    /// its heartbeat on a second connection to the same target. The heartbeat's busy timeout is
    /// cut to half the renew interval, so that a locked database makes it try again within the
    /// lease rather than wait past its end (on PostgreSQL that is its `lock_timeout` and connect
    /// timeout; a short ttl on a distant server may want [`Worker::new`] with an opener of its
    /// own).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let worker = leasefence::worker::Worker::open(dir.path().join("q.db"),
    ///     &leasefence::OpenOptions::new(), leasefence::worker::WorkerOptions::new("w"))?;
    /// # let _ = worker;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(
        target: impl AsRef<Path>,
        open: &OpenOptions,
        options: WorkerOptions,
    ) -> Result<Self> {
        options.check()?;
        let target = target.as_ref().to_path_buf();
        let store = crate::open::open_with(&target, open)?;
        let half_interval = Duration::from_secs_f64(options.renew_interval() / 2.0);
        let heartbeat_options = open.clone().busy_timeout(
            open.busy_timeout
                .min(half_interval)
                .max(Duration::from_millis(10)),
        );
        let opener: Opener = Box::new(move || crate::open::open_with(&target, &heartbeat_options));
        Worker::new(store, opener, options)
    }

    /// A handle to stop [`run`](Self::run) from elsewhere (another thread, a signal watcher).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = leasefence::worker::WorkerOptions::new("w");
    /// let worker = leasefence::worker::Worker::open(dir.path().join("q.db"), &leasefence::OpenOptions::new(), options)?;
    /// let stop = worker.stop_handle();
    /// assert!(!stop.is_stopping());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// What the worker did so far, across its runs (`run` answers the same at its end).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = leasefence::worker::WorkerOptions::new("w");
    /// let worker = leasefence::worker::Worker::open(dir.path().join("q.db"), &leasefence::OpenOptions::new(), options)?;
    /// assert_eq!(worker.counters(), leasefence::worker::Counters::default());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn counters(&self) -> Counters {
        self.counters.snapshot()
    }

    /// The worker's store (the runner's connection), e.g. to enqueue or inspect between runs.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = leasefence::worker::WorkerOptions::new("w");
    /// let worker = leasefence::worker::Worker::open(dir.path().join("q.db"), &leasefence::OpenOptions::new(), options)?;
    /// assert!(worker.store().enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn store(&self) -> &dyn Leases {
        &*self.store
    }

    /// Claims and runs jobs until stopped (or, with `until_empty`, until nothing is claimable),
    /// and answers the counts of everything it did (across runs). A storage error that retrying
    /// cannot cure (not busy, not a lost connection) ends the run with that error; a busy
    /// database is waited out. One handler at a time: with a
    /// [`concurrency`](super::WorkerOptions::concurrency) above 1 it answers
    /// [`Error::InvalidArgument`] and claims nothing; use [`run_concurrent`](Self::run_concurrent).
    ///
    /// ```
    /// use leasefence::worker::{Worker, WorkerOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = WorkerOptions::new("w").max_attempts(1).until_empty(true);
    /// let mut worker = Worker::open(dir.path().join("q.db"), &leasefence::OpenOptions::new(), options)?;
    /// worker.store().enqueue("bad")?;
    /// let counts = worker.run(|_job| Err("cannot parse the payload".into()))?;
    /// assert_eq!(counts.dead, 1);
    /// assert_eq!(worker.store().inspect("bad")?.unwrap().failures[0].error.as_deref(),
    ///            Some("cannot parse the payload"));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn run<H>(&mut self, mut handler: H) -> Result<Counters>
    where
        H: FnMut(&Job) -> HandlerResult,
    {
        self.run_fenced(move |job| handler(job).map(Completion::from))
    }

    /// [`run`](Self::run) for a handler that also writes your own tables: the statements of the
    /// [`Completion`] it returns run in the transaction that completes the job (a fenced write),
    /// so they commit with the completion or not at all. A lease no longer current refuses
    /// both (counted as a stale write refused and a lost lease); a statement the store refuses
    /// (a write to `jobs`) or one that fails (a constraint) fails the job with that error, as a
    /// handler's error would (retry after the backoff, dead after the last attempt), and
    /// nothing of it is applied.
    ///
    /// ```
    /// use leasefence::{worker::{Completion, Worker, WorkerOptions}, LeaseStore, Statement};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// let store = LeaseStore::open(&db)?;
    /// store.connection().execute("CREATE TABLE sent(job TEXT PRIMARY KEY, body TEXT)", []).unwrap();
    /// store.enqueue_with("mail-7", None, Some("hello"))?;
    ///
    /// let options = WorkerOptions::new("w").until_empty(true);
    /// let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options)?;
    /// let counts = worker.run_fenced(|job| {
    ///     let body = job.payload.clone().unwrap_or_default();
    ///     Ok(Completion::new(Some("sent".into()))
    ///         .statement(Statement::new("INSERT INTO sent VALUES ($1, $2)", [job.id.as_str().into(), body.into()])))
    /// })?;
    /// assert_eq!(counts.completed, 1);
    /// let body: String = store.connection()
    ///     .query_row("SELECT body FROM sent WHERE job = 'mail-7'", [], |r| r.get(0)).unwrap();
    /// assert_eq!((body.as_str(), store.state("mail-7")?.unwrap().result.as_deref()), ("hello", Some("sent")));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn run_fenced<H>(&mut self, mut handler: H) -> Result<Counters>
    where
        H: FnMut(&Job) -> CompletionResult,
    {
        self.refuse_concurrency()?;
        let heartbeat = self.start_heartbeat()?;
        let _watch = self.start_watch();
        while !self.stop.is_stopping() {
            // What a wake-up announced so far, this claim sees.
            self.stop.take_wake();
            // The due schedule slots first: the claim's clock is read after their transaction,
            // so the lease (and its first renew) is reckoned from the claim itself.
            self.enqueue_due(self.now())?;
            let now = self.now();
            let queues = self.options.queue_names();
            let claimed = match self.store.claim_next_in(
                queues.as_deref(),
                &self.options.owner,
                now,
                self.options.ttl,
            ) {
                Ok(claimed) => claimed,
                Err(err) if err.is_retryable() => {
                    self.idle();
                    continue;
                }
                Err(err) => return Err(err),
            };
            let Some(claimed) = claimed else {
                if self.options.until_empty {
                    break;
                }
                self.rest(now);
                continue;
            };
            self.counters.add(&self.counters.claimed);
            self.process(claimed, now, &heartbeat, &mut handler)?;
        }
        drop(heartbeat);
        Ok(self.counters())
    }

    /// The heartbeat thread of one run, on a connection of its own.
    pub(super) fn start_heartbeat(&self) -> Result<Heartbeat> {
        let heartbeat_store = (self.opener)()?;
        Heartbeat::start(
            heartbeat_store,
            Settings {
                owner: self.options.owner.clone(),
                ttl: self.options.ttl,
                every: self.options.renew_interval(),
                liveness: self.options.liveness,
                clock: Arc::clone(&self.options.clock),
                counters: Arc::clone(&self.counters),
                recheck: self.options.recheck,
                registry: self.options.register.then(|| Registration {
                    host: host_name(),
                    pid: std::process::id(),
                    started: (self.options.clock)(),
                }),
            },
        )
        .map_err(|err| Error::Internal {
            message: format!("cannot start the heartbeat thread: {err}"),
        })
    }

    /// `run` and `run_fenced` call their handler from one thread: a concurrency above 1 needs a
    /// handler that may be called from several at once.
    fn refuse_concurrency(&self) -> Result<()> {
        if self.options.concurrency == 1 {
            return Ok(());
        }
        Err(Error::invalid(
            "concurrency",
            format!(
                "this worker runs {} handlers at once, so its handler is called from several \
                 threads: give it to Worker::run_concurrent or Worker::run_fenced_concurrent (a \
                 handler that is Fn + Sync), or set concurrency(1)",
                self.options.concurrency
            ),
        ))
    }

    /// Recurring jobs (docs/contract.md section 11): enqueues the store's due slots as the worker
    /// ticks, at its first claim and then at most once a second of its clock (and again at once
    /// if the clock went back), so any running worker keeps the schedules. Racing workers are
    /// harmless: each slot's job is enqueued once. A busy store is retried at the next tick;
    /// another error ends the run, as a claim's would.
    pub(super) fn enqueue_due(&self, now: f64) -> Result<()> {
        self.prune_due(now)?;
        let last = f64::from_bits(self.due_at.load(Ordering::Relaxed));
        if now >= last && now - last < 1.0 {
            return Ok(());
        }
        self.due_at.store(now.to_bits(), Ordering::Relaxed);
        match self.store.enqueue_due(now) {
            Ok(_) => Ok(()),
            Err(err) if err.is_retryable() => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Retention (docs/contract.md section 13), ticking with the schedules: when due, one
    /// bounded transaction of completed jobs past `done` and one of dead jobs past `dead`; again
    /// at the next tick while a batch came back full (a backlog), else a minute later. A busy
    /// store is retried at the next tick; another error ends the run, as a claim's would.
    fn prune_due(&self, now: f64) -> Result<()> {
        let Some(retention) = self.options.retention else {
            return Ok(());
        };
        if now < f64::from_bits(self.prune_at.load(Ordering::Relaxed)) {
            return Ok(());
        }
        let batch = Some(crate::PRUNE_BATCH as u64);
        let mut prunes = vec![
            crate::Prune::finished_before(now - retention.done.as_secs_f64())
                .keep_dead(true)
                .limit(batch),
        ];
        if let Some(dead) = retention.dead {
            prunes.push(
                crate::Prune::finished_before(now - dead.as_secs_f64())
                    .only_dead(true)
                    .limit(batch),
            );
        }
        let mut backlog = false;
        for prune in &prunes {
            match self.store.prune(prune) {
                Ok(deleted) => backlog |= deleted == crate::PRUNE_BATCH as u64,
                Err(err) if err.is_retryable() => backlog = true,
                Err(err) => return Err(err),
            }
        }
        let next = if backlog { now } else { now + 60.0 };
        self.prune_at.store(next.to_bits(), Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn now(&self) -> f64 {
        (self.options.clock)()
    }

    /// Waits the idle interval on the worker's clock, or until a stop is asked for (after a
    /// busy or unreachable store: no wake-up shortens it).
    pub(super) fn idle(&self) {
        self.sleep_until(self.now() + self.options.idle_poll.as_secs_f64(), false);
    }

    /// Nothing was claimable at `now`: sleeps until the next job of the worker's queues falls
    /// due (`next_due_in`), the poll interval has passed, the store's watch reports new work,
    /// or a stop is asked for, whichever comes first (docs/contract.md section 11, waking).
    pub(super) fn rest(&self, now: f64) {
        let poll = now + self.options.idle_poll.as_secs_f64();
        if !self.options.waking {
            return self.sleep_until(poll, false);
        }
        let queues = self.options.queue_names();
        // The next `until` is a hint: a store that cannot tell (an error, a job due already that
        // the claim did not take) leaves the poll interval in force. The worker enqueues the
        // schedules' slots as it ticks (every schedule, whatever its queue): it also wakes at
        // the next slot, so a slot's job starts at the slot rather than at the next poll. The
        // tick's once-a-second limit counts from the last tick, so that wake-up is kept at least
        // a second after it.
        let wake_at = match crate::wake::next_due(&*self.store, now, queues.as_deref()) {
            Ok(next) => {
                let last_tick = f64::from_bits(self.due_at.load(Ordering::Relaxed));
                let job = next.job.filter(|due| *due > now).unwrap_or(poll);
                let slot = next.slot.map_or(poll, |slot| slot.max(last_tick + 1.0));
                job.min(slot).min(poll)
            }
            Err(_) => poll,
        };
        self.sleep_until(wake_at, true);
    }

    /// Waits until `until` on the worker's clock, a stop, or (when `wakeable`) a wake-up.
    fn sleep_until(&self, until: f64, wakeable: bool) {
        loop {
            let left = until - self.now();
            if left <= 0.0 || self.stop.is_stopping() || (wakeable && self.stop.is_woken()) {
                return;
            }
            self.stop
                .idle(real_wait(left, self.options.recheck), wakeable);
        }
    }

    /// The store's watch for the length of a run, when waking is on and the store can watch;
    /// without one the worker polls.
    pub(super) fn start_watch(&self) -> Option<crate::wake::Watch> {
        if !self.options.waking || self.options.until_empty {
            return None;
        }
        let stop = self.stop.clone();
        let queues = self.options.queue_names();
        self.store
            .watch(queues.as_deref(), Arc::new(move || stop.wake()))
            .ok()
            .flatten()
    }
}

/// This machine's name, as the registry shows it (`gethostname`), or `unknown`.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that many bytes.
    let ok = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } == 0;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match std::str::from_utf8(&buf[..end]) {
        Ok(name) if ok && !name.is_empty() => name.to_owned(),
        _ => "unknown".to_owned(),
    }
}

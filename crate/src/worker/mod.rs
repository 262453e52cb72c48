//! The worker runtime (docs/contract.md section 9): a loop over `claim_next` that runs a handler
//! on each job, renews the lease while it runs, tells the handler the moment the lease is lost,
//! completes or fails the job, and counts what happened. Native only; on any [`Leases`] (an
//! SQLite file or a PostgreSQL server).
//!
//! ```
//! use leasefence::worker::{Worker, WorkerOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = dir.path().join("queue.db");
//! let store = leasefence::open(&db)?;
//! store.enqueue_with("resize-7", None, Some("photo-7.jpg"))?;
//!
//! let options = WorkerOptions::new("worker-1").ttl(30.0).until_empty(true);
//! let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options)?;
//! let counts = worker.run(|job| {
//!     job.token.checkpoint()?; // "still alive", and "stop if the lease is gone"
//!     Ok(Some(format!("thumbnail of {}", job.payload.as_deref().unwrap_or("?"))))
//! })?;
//! assert_eq!((counts.claimed, counts.completed), (1, 1));
//! assert_eq!(store.state("resize-7")?.unwrap().result.as_deref(), Some("thumbnail of photo-7.jpg"));
//! # Ok::<(), leasefence::Error>(())
//! ```
//!
//! A handler that also writes tables of your own in the same database hands them back with its
//! result through [`Worker::run_fenced`] and a [`Completion`]: they commit in the transaction that
//! completes the job, or not at all.
//!
//! # Who keeps the lease alive: the heartbeat trade-off
//!
//! Renewing from the handler's own thread means a hung handler loses its lease (good: the job
//! goes to another worker) but so does a busy one that cannot get to the renew in time (a
//! CPU-bound step, a long blocking call). Renewing from a separate thread keeps a busy handler's
//! lease, but also a hung one's, forever: the job is then blocked and nobody is told. With
//! fencing, losing a lease costs duplicate work but never corrupts (the late worker's writes are
//! refused); keeping a lease for a dead handler costs the job. So the safe side is "a handler
//! that shows no life loses its lease", and the runtime splits the two concerns:
//!
//! - The renews, their retries on a busy database and the watch on the lease's end run on a
//!   heartbeat thread with its own connection, so they never wait on the handler and a slow
//!   handler never makes a renew late.
//! - Whether to renew is decided by a [`Liveness`] rule. The default, [`Liveness::Progress`],
//!   renews only while the handler has shown progress ([`CancelToken::checkpoint`], or its start)
//!   within the last `ttl`: a handler that stops calling it keeps its lease for one to two
//!   `ttl`s, then loses it, is told, and the job is retried elsewhere. A handler that cannot
//!   checkpoint picks [`Liveness::MaxRunTime`] (renew until a bound) or
//!   [`Liveness::Unbounded`] (renew while it runs: a busy handler keeps its lease, a hung one
//!   too).
//!
//! The token needs no thread to notice the end of a lease: it compares the lease's end with the
//! clock on every look, so a worker that was suspended (SIGSTOP, a VM pause) sees it cancelled
//! on its first look after waking, before anything it would write.
//!
//! # Attempts
//!
//! A job's attempt is its fence (every claim is one). A handler's error on attempt `n` fails the
//! job with `retry_at = now + backoff(n)`, or makes it dead when `n >= max_attempts`. A job
//! claimed at an attempt past `max_attempts` whose previous attempt recorded no failure (its
//! holders lost their leases or crashed: a poison job that kills its worker) is made dead at
//! once, without running the handler, with the cause recorded. A job brought back with
//! `revive` keeps its fence; its previous attempt has the failure that made it dead recorded, so
//! it gets one more attempt.

mod backoff;
mod clock;
mod heartbeat;
mod token;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;

pub use backoff::Backoff;
pub use clock::wall_clock;
pub use token::{CancelReason, CancelToken, Cancelled};

use crate::error::{Error, Result};
use crate::leases::Leases;
use crate::options::OpenOptions;
use crate::outcome::{ClaimedJob, Fence, Outcome};
use crate::rules::fenced::{Finish, Statement};
use clock::Clock;
use heartbeat::{Heartbeat, Settings};

/// What a handler returns: `Ok(result)` completes the job with `result` (text or none); an
/// error fails it, with the error's text recorded.
///
/// ```
/// fn handle(job: &leasefence::worker::Job) -> leasefence::worker::HandlerResult {
///     let n: u32 = job.payload.as_deref().unwrap_or("0").parse()?; // a parse error fails the job
///     Ok(Some((n * 2).to_string()))
/// }
/// # let _ = handle;
/// ```
pub type HandlerResult =
    std::result::Result<Option<String>, Box<dyn std::error::Error + Send + Sync>>;

/// A handler's success for [`Worker::run_fenced`]: the job's result, and statements on your own
/// tables that commit in the same transaction as the completion, or not at all (a fenced write,
/// docs/contract.md section 8). With no statements it is a plain completion.
///
/// ```
/// use leasefence::worker::Completion;
/// use leasefence::Statement;
/// let done = Completion::new(Some("sent".into()))
///     .statement(Statement::new("INSERT INTO outbox(job) VALUES ($1)", ["mail-7".into()]));
/// assert_eq!(done.statements.len(), 1);
/// let same = Completion::fenced(done.statements.clone(), Some("sent".into()));
/// assert_eq!(same, done);
/// assert_eq!(Completion::from(None), Completion::new(None));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The job's result (text or none), stored by the completion.
    pub result: Option<String>,
    /// Your statements, run in order before the lease check; `jobs` and the `leasefence_*`
    /// tables are refused.
    pub statements: Vec<Statement>,
}

impl Completion {
    /// A completion with `result` and no statements.
    ///
    /// ```
    /// let done = leasefence::worker::Completion::new(Some("42".into()));
    /// assert!(done.statements.is_empty());
    /// ```
    pub fn new(result: Option<String>) -> Self {
        Completion {
            result,
            statements: Vec::new(),
        }
    }

    /// A completion with `result` whose `statements` commit with it (the JavaScript runtime's
    /// `fencedResult(statements, result)`).
    ///
    /// ```
    /// use leasefence::{worker::Completion, Statement};
    /// let done = Completion::fenced([Statement::new("DELETE FROM pending WHERE id = $1", [7.into()])], None);
    /// assert_eq!(done.statements.len(), 1);
    /// ```
    pub fn fenced(statements: impl IntoIterator<Item = Statement>, result: Option<String>) -> Self {
        Completion {
            result,
            statements: statements.into_iter().collect(),
        }
    }

    /// Adds one statement, run after those added before it.
    ///
    /// ```
    /// use leasefence::{worker::Completion, Statement};
    /// let done = Completion::new(None)
    ///     .statement(Statement::new("UPDATE totals SET n = n + 1", []))
    ///     .statement(Statement::new("INSERT INTO log(line) VALUES ($1)", ["counted".into()]));
    /// assert_eq!(done.statements[1].params.len(), 1);
    /// ```
    pub fn statement(mut self, statement: Statement) -> Self {
        self.statements.push(statement);
        self
    }
}

impl From<Option<String>> for Completion {
    fn from(result: Option<String>) -> Self {
        Completion::new(result)
    }
}

/// What a handler given to [`Worker::run_fenced`] returns: `Ok(completion)` completes the job,
/// with the completion's statements in the same commit; an error fails it, as in
/// [`HandlerResult`].
///
/// ```
/// use leasefence::{worker::{Completion, CompletionResult, Job}, Statement};
/// fn handle(job: &Job) -> CompletionResult {
///     let n: i64 = job.payload.as_deref().unwrap_or("0").parse()?;
///     Ok(Completion::new(Some((n * 2).to_string()))
///         .statement(Statement::new("INSERT INTO doubled(n) VALUES ($1)", [(n * 2).into()])))
/// }
/// # let _ = handle;
/// ```
pub type CompletionResult =
    std::result::Result<Completion, Box<dyn std::error::Error + Send + Sync>>;

/// Opens the heartbeat's own connection (the runner's is busy while the handler runs).
///
/// ```
/// let db = std::path::PathBuf::from("queue.db");
/// let opener: leasefence::worker::Opener = Box::new(move || leasefence::open(&db));
/// # let _ = opener;
/// ```
pub type Opener = Box<dyn Fn() -> Result<Box<dyn Leases>> + Send>;

/// When the heartbeat renews a running job's lease (the trade-off is in the [module
/// docs](self)).
///
/// ```
/// use std::time::Duration;
/// use leasefence::worker::{Liveness, WorkerOptions};
/// let options = WorkerOptions::new("w").liveness(Liveness::MaxRunTime(Duration::from_secs(600)));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Liveness {
    /// The default: renew only while the handler's latest sign of life (its start, or its
    /// latest [`CancelToken::checkpoint`]) is younger than this (`None`: the lease's `ttl`). A
    /// hung handler loses its lease within about two `ttl`s.
    Progress(Option<Duration>),
    /// Renew whatever the handler does, until this long after the claim.
    MaxRunTime(Duration),
    /// Renew as long as the handler runs. A busy handler keeps its lease; so does a hung one,
    /// forever.
    Unbounded,
}

/// How a [`Worker`] runs. Only the owner is required.
///
/// ```
/// use std::time::Duration;
/// use leasefence::worker::{Backoff, WorkerOptions};
/// let options = WorkerOptions::new("worker-1")
///     .ttl(60.0)
///     .max_attempts(3)
///     .backoff(Backoff::Fixed(Duration::from_secs(10)))
///     .idle_poll(Duration::from_millis(200));
/// assert_eq!(options.renew_interval(), 20.0);
/// ```
#[derive(Clone)]
pub struct WorkerOptions {
    owner: String,
    ttl: f64,
    renew_every: Option<f64>,
    max_attempts: Fence,
    backoff: Backoff,
    liveness: Liveness,
    idle_poll: Duration,
    until_empty: bool,
    clock: Clock,
}

impl std::fmt::Debug for WorkerOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerOptions")
            .field("owner", &self.owner)
            .field("ttl", &self.ttl)
            .field("renew_every", &self.renew_interval())
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("liveness", &self.liveness)
            .field("idle_poll", &self.idle_poll)
            .field("until_empty", &self.until_empty)
            .finish()
    }
}

impl WorkerOptions {
    /// Defaults for a worker named `owner`: ttl 30 s renewed every ttl/3, 5 attempts, the
    /// default [`Backoff`], [`Liveness::Progress`] over one ttl, polling every second when
    /// nothing is claimable, the wall clock.
    ///
    /// ```
    /// let options = leasefence::worker::WorkerOptions::new("w");
    /// assert_eq!(options.renew_interval(), 10.0);
    /// ```
    pub fn new(owner: impl Into<String>) -> Self {
        WorkerOptions {
            owner: owner.into(),
            ttl: 30.0,
            renew_every: None,
            max_attempts: 5,
            backoff: Backoff::default(),
            liveness: Liveness::Progress(None),
            idle_poll: Duration::from_secs(1),
            until_empty: false,
            clock: Arc::new(wall_clock),
        }
    }

    /// Lease length in seconds (> 0).
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").ttl(90.0);
    /// assert_eq!(o.renew_interval(), 30.0);
    /// ```
    pub fn ttl(mut self, seconds: f64) -> Self {
        self.ttl = seconds;
        self
    }

    /// Renew every this many seconds (0 < it < ttl); default ttl/3.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").ttl(30.0).renew_every(5.0);
    /// assert_eq!(o.renew_interval(), 5.0);
    /// ```
    pub fn renew_every(mut self, seconds: f64) -> Self {
        self.renew_every = Some(seconds);
        self
    }

    /// The renew interval in force.
    ///
    /// ```
    /// assert_eq!(leasefence::worker::WorkerOptions::new("w").ttl(3.0).renew_interval(), 1.0);
    /// ```
    pub fn renew_interval(&self) -> f64 {
        self.renew_every.unwrap_or(self.ttl / 3.0)
    }

    /// How many attempts a job gets (>= 1); the failure of the last makes it dead.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").max_attempts(1); // no retries
    /// # let _ = o;
    /// ```
    pub fn max_attempts(mut self, attempts: Fence) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The wait before a failed job's next attempt.
    ///
    /// ```
    /// use std::time::Duration;
    /// let o = leasefence::worker::WorkerOptions::new("w")
    ///     .backoff(leasefence::worker::Backoff::Fixed(Duration::from_secs(30)));
    /// # let _ = o;
    /// ```
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// When the heartbeat renews ([`Liveness`]).
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w")
    ///     .liveness(leasefence::worker::Liveness::Unbounded);
    /// # let _ = o;
    /// ```
    pub fn liveness(mut self, liveness: Liveness) -> Self {
        self.liveness = liveness;
        self
    }

    /// How long to wait before looking again when nothing is claimable (> 0).
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w")
    ///     .idle_poll(std::time::Duration::from_millis(100));
    /// # let _ = o;
    /// ```
    pub fn idle_poll(mut self, wait: Duration) -> Self {
        self.idle_poll = wait;
        self
    }

    /// Stop (instead of polling) when nothing is claimable.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").until_empty(true);
    /// # let _ = o;
    /// ```
    pub fn until_empty(mut self, yes: bool) -> Self {
        self.until_empty = yes;
        self
    }

    /// The clock giving `now` in seconds (default [`wall_clock`]); every worker sharing a store
    /// must agree on it.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").clock(|| 1_000.0); // a test's fixed time
    /// # let _ = o;
    /// ```
    pub fn clock(mut self, clock: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    fn check(&self) -> Result<()> {
        let invalid = |argument, message: String| Err(Error::invalid(argument, message));
        if self.owner.is_empty() {
            return invalid(
                "owner",
                "the worker's owner name is empty; name the worker".into(),
            );
        }
        if !(self.ttl.is_finite() && self.ttl > 0.0) {
            return invalid(
                "ttl",
                format!(
                    "ttl must be a finite number of seconds > 0, got {}",
                    self.ttl
                ),
            );
        }
        let every = self.renew_interval();
        if !(every.is_finite() && every > 0.0 && every < self.ttl) {
            return invalid(
                "renew_every",
                format!(
                    "the renew interval must be > 0 and below the ttl ({}), got {every}",
                    self.ttl
                ),
            );
        }
        if self.max_attempts < 1 {
            return invalid(
                "max_attempts",
                format!("max_attempts must be >= 1, got {}", self.max_attempts),
            );
        }
        if self.idle_poll.is_zero() {
            return invalid("idle_poll", "the idle polling interval must be > 0".into());
        }
        Ok(())
    }
}

/// What a worker did (docs/contract.md section 9). Serialized as one JSON object with these
/// field names (`leasefence work` prints it at exit).
///
/// ```
/// let counts = leasefence::worker::Counters::default();
/// assert_eq!(serde_json::to_string(&counts).unwrap(),
///   r#"{"claimed":0,"completed":0,"failed":0,"dead":0,"leases_lost":0,"stale_writes_refused":0,"renewals":0}"#);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Jobs claimed.
    pub claimed: u64,
    /// Jobs completed with the handler's result.
    pub completed: u64,
    /// Failures recorded with a retry time.
    pub failed: u64,
    /// Jobs made dead: the last attempt failed, or claimed past the maximum.
    pub dead: u64,
    /// Leases lost while the handler ran (its result discarded), or found lost at the write.
    pub leases_lost: u64,
    /// Writes (complete, fail) the store refused because the lease was no longer current.
    pub stale_writes_refused: u64,
    /// Renews granted.
    pub renewals: u64,
}

#[derive(Default)]
pub(crate) struct SharedCounters {
    claimed: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    dead: AtomicU64,
    leases_lost: AtomicU64,
    stale_writes_refused: AtomicU64,
    renewals: AtomicU64,
}

impl SharedCounters {
    pub(crate) fn add(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Counters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            claimed: get(&self.claimed),
            completed: get(&self.completed),
            failed: get(&self.failed),
            dead: get(&self.dead),
            leases_lost: get(&self.leases_lost),
            stale_writes_refused: get(&self.stale_writes_refused),
            renewals: get(&self.renewals),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum StopMode {
    /// No new claims; the running handler finishes and its outcome is written.
    AfterCurrent,
    /// The running handler is cancelled (`Stopping`), its result discarded, its lease released.
    Interrupt,
}

#[derive(Default)]
struct StopState {
    mode: Option<StopMode>,
    running: Option<CancelToken>,
}

/// Stops a running [`Worker`] from another thread (or a signal-watching one). Clones share it.
///
/// ```
/// use leasefence::worker::{Worker, WorkerOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), WorkerOptions::new("w"))?;
/// let stop = worker.stop_handle();
/// std::thread::spawn(move || stop.stop());
/// let counts = worker.run(|_| Ok(None))?; // nothing to do; returns once stopped
/// assert_eq!(counts.claimed, 0);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct StopHandle {
    inner: Arc<(Mutex<StopState>, Condvar)>,
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle")
            .field("mode", &self.lock().mode)
            .finish()
    }
}

impl StopHandle {
    fn lock(&self) -> MutexGuard<'_, StopState> {
        self.inner
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Graceful stop: claim nothing more; the running handler finishes and its outcome is
    /// written; then `run` returns.
    ///
    /// ```
    /// let stop = leasefence::worker::StopHandle::default();
    /// stop.stop();
    /// assert!(stop.is_stopping());
    /// ```
    pub fn stop(&self) {
        let mut state = self.lock();
        state.mode.get_or_insert(StopMode::AfterCurrent);
        drop(state);
        self.inner.1.notify_all();
    }

    /// Stop now: the running handler's token is cancelled ([`CancelReason::Stopping`]), its
    /// result discarded and its lease released (the job is claimable again at once); then `run`
    /// returns.
    ///
    /// ```
    /// let stop = leasefence::worker::StopHandle::default();
    /// stop.interrupt();
    /// assert!(stop.is_stopping());
    /// ```
    pub fn interrupt(&self) {
        let mut state = self.lock();
        state.mode = Some(StopMode::Interrupt);
        if let Some(token) = &state.running {
            token.cancel(CancelReason::Stopping);
        }
        drop(state);
        self.inner.1.notify_all();
    }

    /// Whether a stop was asked for.
    ///
    /// ```
    /// assert!(!leasefence::worker::StopHandle::default().is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.lock().mode.is_some()
    }

    fn set_running(&self, token: Option<&CancelToken>) {
        let mut state = self.lock();
        state.running = token.cloned();
        if let (Some(token), Some(StopMode::Interrupt)) = (token, state.mode) {
            token.cancel(CancelReason::Stopping);
        }
    }

    /// Waits `wait` or until a stop is asked for.
    fn idle(&self, wait: Duration) {
        let state = self.lock();
        if state.mode.is_none() {
            let _ = self.inner.1.wait_timeout(state, wait);
        }
    }
}

/// One claimed job, as the handler sees it.
///
/// ```
/// use leasefence::worker::{CancelToken, Job};
/// let job = Job { id: "j".into(), fence: 2, payload: None, token: CancelToken::for_lease(|| 0.0, 30.0) };
/// assert_eq!(job.attempt(), 2);
/// ```
#[derive(Debug, Clone)]
pub struct Job {
    /// The job id.
    pub id: String,
    /// The lease's fence: also the attempt number, from 1.
    pub fence: Fence,
    /// The payload given at `enqueue_with`.
    pub payload: Option<String>,
    /// Cancelled the moment the lease is lost or the worker is interrupted.
    pub token: CancelToken,
}

impl Job {
    /// The attempt number (the fence): 1 on the first claim.
    ///
    /// ```
    /// # use leasefence::worker::{CancelToken, Job};
    /// let job = Job { id: "j".into(), fence: 1, payload: None, token: CancelToken::for_lease(|| 0.0, 30.0) };
    /// assert_eq!(job.attempt(), 1);
    /// ```
    pub fn attempt(&self) -> Fence {
        self.fence
    }
}

/// A worker: claims jobs one at a time and runs a handler on each (see the [module docs](self)).
pub struct Worker {
    store: Box<dyn Leases>,
    opener: Opener,
    options: WorkerOptions,
    counters: Arc<SharedCounters>,
    stop: StopHandle,
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
    /// database is waited out.
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
        let heartbeat_store = (self.opener)()?;
        let heartbeat = Heartbeat::start(
            heartbeat_store,
            Settings {
                owner: self.options.owner.clone(),
                ttl: self.options.ttl,
                every: self.options.renew_interval(),
                liveness: self.options.liveness,
                clock: Arc::clone(&self.options.clock),
                counters: Arc::clone(&self.counters),
            },
        )
        .map_err(|err| Error::Internal {
            message: format!("cannot start the heartbeat thread: {err}"),
        })?;
        while !self.stop.is_stopping() {
            let now = self.now();
            let claimed = match self
                .store
                .claim_next(&self.options.owner, now, self.options.ttl)
            {
                Ok(claimed) => claimed,
                Err(err) if err.is_retryable() => {
                    self.stop.idle(self.options.idle_poll);
                    continue;
                }
                Err(err) => return Err(err),
            };
            let Some(claimed) = claimed else {
                if self.options.until_empty {
                    break;
                }
                // The store has no cheap "when is the next job due"; the poll interval bounds
                // how late a scheduled job starts.
                self.stop.idle(self.options.idle_poll);
                continue;
            };
            self.counters.add(&self.counters.claimed);
            self.process(claimed, now, &heartbeat, &mut handler)?;
        }
        drop(heartbeat);
        Ok(self.counters())
    }

    fn now(&self) -> f64 {
        (self.options.clock)()
    }

    fn process<H>(
        &self,
        claimed: ClaimedJob,
        claimed_at: f64,
        heartbeat: &Heartbeat,
        handler: &mut H,
    ) -> Result<()>
    where
        H: FnMut(&Job) -> CompletionResult,
    {
        let attempt = claimed.fence;
        let token = CancelToken::with_clock(
            Arc::clone(&self.options.clock),
            claimed_at + self.options.ttl,
        );
        if attempt > self.options.max_attempts && !self.previous_attempt_failed(&claimed, &token)? {
            let error = format!(
                "attempt {attempt} is past the maximum of {}: attempt {} recorded no outcome (its \
                 holder lost the lease or crashed); made dead without running",
                self.options.max_attempts,
                attempt - 1
            );
            return self.fail(&claimed, &token, None, &error);
        }
        let job = Job {
            id: claimed.job.clone(),
            fence: claimed.fence,
            payload: claimed.payload.clone(),
            token: token.clone(),
        };
        self.stop.set_running(Some(&token));
        heartbeat.begin(
            &job.id,
            job.fence,
            &token,
            claimed_at,
            claimed_at + self.options.renew_interval(),
        );
        let outcome = catch_unwind(AssertUnwindSafe(|| handler(&job)));
        heartbeat.end();
        self.stop.set_running(None);
        if let Some(reason) = token.reason() {
            // The result is thrown away: the lease is gone, or the worker is being interrupted.
            if reason == CancelReason::Stopping {
                self.write(&token, |store| store.release(&claimed.lease()))?;
            } else {
                self.counters.add(&self.counters.leases_lost);
            }
            return Ok(());
        }
        match outcome {
            Ok(Ok(completion)) => self.complete(&claimed, &token, completion),
            Ok(Err(error)) => {
                let error = error.to_string();
                let retry = self.retry_at(attempt);
                self.fail(&claimed, &token, retry, &error)
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".into());
                let retry = self.retry_at(attempt);
                self.fail(
                    &claimed,
                    &token,
                    retry,
                    &format!("the handler panicked: {message}"),
                )
            }
        }
    }

    /// Completes the job; with statements, as one fenced write. A store error that retrying
    /// cannot cure ends the run; an error of the statements themselves fails the job, by its
    /// kind: [`Error::Statement`] (a broken constraint, a missing table) or
    /// [`Error::InvalidArgument`] (a refused table, a bad parameter). Nothing was applied.
    fn complete(
        &self,
        claimed: &ClaimedJob,
        token: &CancelToken,
        completion: Completion,
    ) -> Result<()> {
        let Completion { result, statements } = completion;
        let lease = claimed.lease();
        let written = if statements.is_empty() {
            self.write(token, |store| {
                store.complete(&lease, self.now(), result.as_deref())
            })
        } else {
            self.write(token, |store| {
                store.fenced(
                    &lease,
                    self.now(),
                    &statements,
                    Finish::Complete(result.clone()),
                )
            })
        };
        match written {
            Ok(Some(Outcome::Granted(()))) => self.counters.add(&self.counters.completed),
            Ok(Some(Outcome::Rejected(_))) => self.refused(),
            Ok(None) => self.counters.add(&self.counters.leases_lost),
            Err(err @ (Error::Statement { .. } | Error::InvalidArgument { .. }))
                if !statements.is_empty() =>
            {
                let retry = self.retry_at(claimed.fence);
                return self.fail(claimed, token, retry, &err.to_string());
            }
            Err(err) => return Err(err),
        }
        Ok(())
    }

    /// When a failed attempt is tried again: after the backoff, or never (dead) at the last.
    fn retry_at(&self, attempt: Fence) -> Option<f64> {
        (attempt < self.options.max_attempts)
            .then(|| self.now() + self.options.backoff.delay(attempt).as_secs_f64())
    }

    fn refused(&self) {
        self.counters.add(&self.counters.stale_writes_refused);
        self.counters.add(&self.counters.leases_lost);
    }

    fn fail(
        &self,
        claimed: &ClaimedJob,
        token: &CancelToken,
        retry_at: Option<f64>,
        error: &str,
    ) -> Result<()> {
        let now = self.now();
        let lease = claimed.lease();
        let answer = self.write(token, |store| {
            store.fail(&lease, now, retry_at, Some(error))
        })?;
        match answer {
            Some(Outcome::Granted(())) if retry_at.is_some() => {
                self.counters.add(&self.counters.failed)
            }
            Some(Outcome::Granted(())) => self.counters.add(&self.counters.dead),
            Some(Outcome::Rejected(_)) => self.refused(),
            None => self.counters.add(&self.counters.leases_lost),
        }
        Ok(())
    }

    /// Whether attempt `fence - 1` recorded a failure (a revived job's has the one that made it
    /// dead); read only for claims past the maximum.
    fn previous_attempt_failed(&self, claimed: &ClaimedJob, token: &CancelToken) -> Result<bool> {
        let found = self.write(token, |store| {
            Ok(Outcome::Granted(store.inspect(&claimed.job)?))
        })?;
        Ok(match found {
            Some(Outcome::Granted(Some(report))) => {
                report.failures.iter().any(|f| f.fence == claimed.fence - 1)
            }
            _ => false,
        })
    }

    /// Runs a write, trying again while the database is busy and the lease lasts; `None` when the
    /// lease ran out first (the job is then claimable by others; nothing was written).
    fn write<T>(
        &self,
        token: &CancelToken,
        op: impl Fn(&dyn Leases) -> Result<Outcome<T>>,
    ) -> Result<Option<Outcome<T>>> {
        let mut wait = Duration::from_millis(10);
        loop {
            match op(&*self.store) {
                Ok(answer) => return Ok(Some(answer)),
                Err(err) if err.is_retryable() => {
                    if self.now() >= token.deadline() {
                        return Ok(None);
                    }
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(Duration::from_millis(500));
                }
                Err(err) => return Err(err),
            }
        }
    }
}

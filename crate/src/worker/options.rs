//! How a worker runs: [`WorkerOptions`] and the [`Liveness`] rule.

use std::sync::Arc;
use std::time::Duration;

use super::clock::{wall_clock, Clock};
use super::{Backoff, ManualClock};
use crate::error::{Error, Result};
use crate::outcome::Fence;

/// The most handlers one worker runs at once ([`WorkerOptions::concurrency`]): a batch
/// operation's largest list ([`MAX_BATCH`](crate::MAX_BATCH)), so that one `claim_next_many`,
/// `renew_many` or `complete_many` always covers every slot.
///
/// ```
/// assert_eq!(leasefence::worker::MAX_CONCURRENCY, leasefence::MAX_BATCH);
/// ```
pub const MAX_CONCURRENCY: usize = crate::MAX_BATCH;

/// When the heartbeat renews a running job's lease (the trade-off is in the [module
/// docs](super)).
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
    /// latest [`CancelToken::checkpoint`](super::CancelToken::checkpoint)) is younger than this (`None`: the lease's `ttl`). A
    /// hung handler loses its lease within about two `ttl`s.
    Progress(Option<Duration>),
    /// Renew whatever the handler does, until this long after the claim.
    MaxRunTime(Duration),
    /// Renew as long as the handler runs. A busy handler keeps its lease; so does a hung one,
    /// forever.
    Unbounded,
}

/// How a [`Worker`](super::Worker) runs. Only the owner is required.
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
    pub(super) owner: String,
    pub(super) ttl: f64,
    pub(super) renew_every: Option<f64>,
    pub(super) max_attempts: Fence,
    pub(super) backoff: Backoff,
    pub(super) liveness: Liveness,
    pub(super) idle_poll: Duration,
    /// Whether an idle worker watches the store for new work (section 11, waking).
    pub(super) waking: bool,
    /// Whether the worker records itself in the store's worker registry.
    pub(super) register: bool,
    pub(super) until_empty: bool,
    pub(super) concurrency: usize,
    /// The queues served (section 11); `None`: every queue.
    pub(super) queues: Option<Vec<String>>,
    pub(super) clock: Clock,
    /// The longest real-time wait before the clock is read again: `None` for a clock that
    /// follows real time, a millisecond for a [`ManualClock`].
    pub(super) recheck: Option<Duration>,
    /// How long finished jobs are kept before the worker prunes them; `None`: never.
    pub(super) retention: Option<Retention>,
}

/// How long a worker keeps finished jobs (docs/contract.md section 13): completed jobs for
/// `done`, dead jobs for `dead` (`None`: for ever, to inspect or revive). The worker prunes at
/// most once a minute, one bounded transaction per tick while there is a backlog, between its
/// claims; many workers with the same retention share the work harmlessly.
///
/// ```
/// use std::time::Duration;
/// use leasefence::worker::{Retention, WorkerOptions};
/// let day = Duration::from_secs(86_400);
/// let options = WorkerOptions::new("w").retention(Retention::done(day).dead(Some(30 * day)));
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Retention {
    pub(super) done: Duration,
    pub(super) dead: Option<Duration>,
}

impl Retention {
    /// Completed jobs are kept for `age` after they finished; dead jobs for ever.
    ///
    /// ```
    /// let r = leasefence::worker::Retention::done(std::time::Duration::from_secs(3600));
    /// # let _ = r;
    /// ```
    pub fn done(age: Duration) -> Self {
        Retention {
            done: age,
            dead: None,
        }
    }

    /// Dead jobs are kept for `age` after they died (`None`: for ever).
    ///
    /// ```
    /// let r = leasefence::worker::Retention::done(std::time::Duration::from_secs(3600))
    ///     .dead(Some(std::time::Duration::from_secs(7 * 86_400)));
    /// # let _ = r;
    /// ```
    pub fn dead(mut self, age: Option<Duration>) -> Self {
        self.dead = age;
        self
    }
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
            .field("waking", &self.waking)
            .field("register", &self.register)
            .field("until_empty", &self.until_empty)
            .field("concurrency", &self.concurrency)
            .field("queues", &self.queues)
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
            waking: true,
            register: true,
            until_empty: false,
            concurrency: 1,
            queues: None,
            clock: Arc::new(wall_clock),
            recheck: None,
            retention: None,
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

    /// How long to wait before looking again when nothing is claimable (> 0): with
    /// [`waking`](Self::waking) (the default) the longest an idle worker sleeps when no
    /// notification wakes it and no job falls due sooner.
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

    /// Whether an idle worker is woken by new work (default `true`; docs/contract.md section
    /// 11, waking). When nothing is claimable the worker sleeps until the earliest `until` of
    /// an open job of its queues (the store's `next_due_in`), at most [`idle_poll`](Self::idle_poll),
    /// and wakes at once when the store's [`watch`](crate::Leases::watch) reports a change: an
    /// SQLite file written by any process (Linux inotify), a PostgreSQL enqueue (`LISTEN`).
    /// `false` keeps the plain poll every `idle_poll`.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w")
    ///     .idle_poll(std::time::Duration::from_secs(30)) // only a fallback now
    ///     .waking(true);
    /// # let _ = o;
    /// ```
    pub fn waking(mut self, yes: bool) -> Self {
        self.waking = yes;
        self
    }

    /// Whether the worker records itself in the store's worker registry (default `true`): its
    /// owner, host, process id, start and counters, sent with its renewals in their transaction
    /// (and alone once a renew interval when it renews nothing), and a last beat when it stops.
    /// [`Leases::list_workers`](crate::Leases::list_workers) and `leasefence ui` read them.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").register(false);
    /// # let _ = o;
    /// ```
    pub fn register(mut self, yes: bool) -> Self {
        self.register = yes;
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

    /// Prune finished jobs as the worker runs (off by default): see [`Retention`].
    ///
    /// ```
    /// use leasefence::worker::{Retention, WorkerOptions};
    /// let o = WorkerOptions::new("w").retention(Retention::done(std::time::Duration::from_secs(86_400)));
    /// # let _ = o;
    /// ```
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = Some(retention);
        self
    }

    /// How many handlers run at once (1 to [`MAX_CONCURRENCY`]; default 1, one job after the
    /// other). Above 1 the worker runs its handlers on that many threads, claims with one
    /// `claim_next_many` as slots free up, renews the leases due together with one `renew_many`,
    /// and completes the plain results finished together with one `complete_many`; the handler
    /// goes to [`Worker::run_concurrent`](super::Worker::run_concurrent) (or
    /// [`run_fenced_concurrent`](super::Worker::run_fenced_concurrent)), since it is called from
    /// several threads at once.
    ///
    /// ```
    /// let o = leasefence::worker::WorkerOptions::new("w").concurrency(8);
    /// # let _ = o;
    /// ```
    pub fn concurrency(mut self, handlers: usize) -> Self {
        self.concurrency = handlers;
        self
    }

    /// The queues this worker serves (docs/contract.md section 11; default: every queue): it
    /// claims only their jobs, highest priority first. 1 to [`MAX_QUEUES`](crate::MAX_QUEUES)
    /// non-empty names.
    ///
    /// ```
    /// use leasefence::worker::{Worker, WorkerOptions};
    /// use leasefence::NewJob;
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = WorkerOptions::new("biller").queues(["billing"]).until_empty(true);
    /// let mut worker = Worker::open(dir.path().join("q.db"), &leasefence::OpenOptions::new(), options)?;
    /// worker.store().enqueue_job(&NewJob::new("invoice").queue("billing"))?;
    /// worker.store().enqueue_job(&NewJob::new("newsletter").queue("mail"))?;
    /// let counters = worker.run(|_job| Ok(None))?;
    /// assert_eq!(counters.completed, 1);
    /// assert!(!worker.store().state("newsletter")?.unwrap().done);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn queues<I, S>(mut self, queues: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.queues = Some(queues.into_iter().map(Into::into).collect());
        self
    }

    /// The queues served, as the store's claims take them.
    pub(super) fn queue_names(&self) -> Option<Vec<&str>> {
        self.queues
            .as_ref()
            .map(|queues| queues.iter().map(String::as_str).collect())
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
        self.recheck = None;
        self
    }

    /// Runs the worker on a clock moved by hand: it reads `now` from `clock`, and its waits (the
    /// next renew, the idle poll) end when the clock is moved past their end, not when real time
    /// passes (it looks at the clock every millisecond). For deterministic tests of handlers and
    /// for simulations; every worker and store call sharing the store must use the same clock.
    ///
    /// ```
    /// use leasefence::worker::{ManualClock, WorkerOptions};
    /// let clock = ManualClock::new(0.0);
    /// let options = WorkerOptions::new("w").ttl(30.0).manual_clock(&clock);
    /// clock.advance(10.0); // the first renew of a job claimed at 0 is now due
    /// # let _ = options;
    /// ```
    pub fn manual_clock(mut self, clock: &ManualClock) -> Self {
        let clock = clock.clone();
        self.clock = Arc::new(move || clock.now());
        self.recheck = Some(Duration::from_millis(1));
        self
    }

    pub(super) fn check(&self) -> Result<()> {
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
        if !(1..=MAX_CONCURRENCY).contains(&self.concurrency) {
            return invalid(
                "concurrency",
                format!(
                    "concurrency is how many handlers run at once, from 1 to {MAX_CONCURRENCY}, \
                     got {}",
                    self.concurrency
                ),
            );
        }
        if self.idle_poll.is_zero() {
            return invalid("idle_poll", "the idle polling interval must be > 0".into());
        }
        crate::rules::queues::check_queues(self.queues.as_deref())
    }
}

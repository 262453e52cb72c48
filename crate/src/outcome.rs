//! What operations return: granted values, typed rejection reasons, and job rows.

use std::fmt;

use serde::Serialize;

/// A fencing token: the generation of a job's lease. It grows by one on every successful claim
/// and is never reset, so a token, once handed out, is never handed out again for that job.
pub type Fence = i64;

/// Why the store said no (docs/contract.md section 3). Ordered: when several apply, the first
/// variant in this declaration order is the one reported.
///
/// ```
/// use leasefence::{LeaseStore, Reason};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("job")?;
/// store.claim("job", "a", 0.0, 10.0)?;
/// let held = store.claim("job", "b", 5.0, 10.0)?;
/// assert_eq!(held.reason(), Some(&Reason::Held { owner: Some("a".into()), until: 10.0 }));
/// # Ok::<(), leasefence::Error>(())
/// ```
///
/// Serialized (serde) as the protocol writes it: `{"code": ...}` plus its details, the current
/// fence of `stale_fence` named `fence`:
///
/// ```
/// let r = leasefence::Reason::StaleFence { current: 2 };
/// assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"code":"stale_fence","fence":2}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum Reason {
    /// No job with that id was ever enqueued.
    NotFound,
    /// The job is completed; nothing can change it any more.
    Done,
    /// `claim` only: a live lease (`until > now`) is held.
    Held {
        /// The current lease holder.
        owner: Option<String>,
        /// When the current lease ends.
        until: f64,
    },
    /// `claim` only: nobody holds the job, but it may not run before `until` (enqueued with a
    /// `run_at`, or backing off after a `fail`).
    Scheduled {
        /// When the job becomes claimable.
        until: f64,
    },
    /// The caller's fence is not the job's current one: someone claimed the job after the caller.
    StaleFence {
        /// The job's current fence.
        #[serde(rename = "fence")]
        current: Fence,
    },
    /// The fence is current but the owner differs, or the lease was released.
    NotOwner,
    /// The caller's lease ended (`until <= now`); an expired lease is never revived.
    Expired {
        /// When the lease ended.
        until: f64,
    },
    /// `revive` only: the job exists but is not dead (it is queued, leased or completed).
    NotDead,
}

impl Reason {
    /// The stable code of this reason: `not_found`, `done`, `held`, `scheduled`, `stale_fence`,
    /// `not_owner`, `expired`, `not_dead`.
    ///
    /// ```
    /// assert_eq!(leasefence::Reason::StaleFence { current: 2 }.code(), "stale_fence");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Reason::NotFound => "not_found",
            Reason::Done => "done",
            Reason::Held { .. } => "held",
            Reason::Scheduled { .. } => "scheduled",
            Reason::StaleFence { .. } => "stale_fence",
            Reason::NotOwner => "not_owner",
            Reason::Expired { .. } => "expired",
            Reason::NotDead => "not_dead",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotFound => write!(f, "no such job"),
            Reason::Done => write!(f, "job is already done"),
            Reason::Held { owner, until } => match owner {
                Some(owner) => write!(f, "held by {owner:?} until t={until}"),
                None => write!(f, "held until t={until}"),
            },
            Reason::StaleFence { current } => write!(f, "stale fence, current is {current}"),
            Reason::NotOwner => write!(f, "not the lease owner"),
            Reason::Expired { until } => write!(f, "lease expired at t={until}"),
            Reason::Scheduled { until } => write!(f, "not claimable before t={until}"),
            Reason::NotDead => write!(f, "job is not dead"),
        }
    }
}

/// The answer to an operation that the store may refuse: either granted with a value, or rejected
/// with the [`Reason`].
///
/// ```
/// use leasefence::{LeaseStore, Outcome, Reason};
/// let store = LeaseStore::open_in_memory()?;
/// assert_eq!(store.claim("ghost", "a", 0.0, 10.0)?, Outcome::Rejected(Reason::NotFound));
/// store.enqueue("job")?;
/// let fence = store.claim("job", "a", 0.0, 10.0)?.granted();
/// assert_eq!(fence, Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
///
/// Serialized (serde) as `{"granted": value}` or `{"rejected": {"code": ...}}`; the protocol's
/// answers (`{"value", "reason"}`) are built from it in [`crate::protocol`].
///
/// ```
/// let o: leasefence::Outcome<i64> = leasefence::Outcome::Rejected(leasefence::Reason::Done);
/// assert_eq!(serde_json::to_string(&o).unwrap(), r#"{"rejected":{"code":"done"}}"#);
/// ```
#[must_use = "a rejected operation changed nothing; check the outcome"]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome<T> {
    /// The store accepted the operation and changed the job.
    Granted(T),
    /// The store refused; nothing changed.
    Rejected(Reason),
}

impl<T> Outcome<T> {
    /// True when the operation was granted.
    ///
    /// ```
    /// let o: leasefence::Outcome<()> = leasefence::Outcome::Granted(());
    /// assert!(o.is_granted());
    /// ```
    pub fn is_granted(&self) -> bool {
        matches!(self, Outcome::Granted(_))
    }

    /// The granted value, or `None` when rejected (the seed's answer).
    ///
    /// ```
    /// let o: leasefence::Outcome<i64> = leasefence::Outcome::Rejected(leasefence::Reason::Done);
    /// assert_eq!(o.granted(), None);
    /// ```
    pub fn granted(self) -> Option<T> {
        match self {
            Outcome::Granted(value) => Some(value),
            Outcome::Rejected(_) => None,
        }
    }

    /// The reason when rejected.
    ///
    /// ```
    /// let o: leasefence::Outcome<i64> = leasefence::Outcome::Rejected(leasefence::Reason::Done);
    /// assert_eq!(o.reason().map(|r| r.code()), Some("done"));
    /// ```
    pub fn reason(&self) -> Option<&Reason> {
        match self {
            Outcome::Granted(_) => None,
            Outcome::Rejected(reason) => Some(reason),
        }
    }

    /// Converts into a `Result`, for `?` in worker code.
    ///
    /// ```
    /// let o: leasefence::Outcome<i64> = leasefence::Outcome::Granted(3);
    /// assert_eq!(o.into_result(), Ok(3));
    /// ```
    pub fn into_result(self) -> Result<T, Reason> {
        match self {
            Outcome::Granted(value) => Ok(value),
            Outcome::Rejected(reason) => Err(reason),
        }
    }
}

/// One row of the `jobs` table, as stored.
///
/// ```
/// let store = leasefence::LeaseStore::open_in_memory()?;
/// store.enqueue("job")?;
/// let row = store.state("job")?.unwrap();
/// assert_eq!((row.owner, row.until, row.fence, row.done), (None, 0.0, 0, false));
/// # Ok::<(), leasefence::Error>(())
/// ```
///
/// Serialized (serde) as `{id, owner, until, fence, result, done}`, `done` a boolean.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobState {
    /// The job id.
    pub id: String,
    /// The lease holder of the latest claim; `None` when never claimed or released.
    pub owner: Option<String>,
    /// When the latest lease ends, in the caller's seconds; `0` when never claimed or released.
    pub until: f64,
    /// The latest fence handed out; `0` when never claimed.
    pub fence: Fence,
    /// The result stored by the successful `complete`, if any.
    pub result: Option<String>,
    /// Whether the job was completed.
    pub done: bool,
}

/// The job picked and claimed by [`LeaseStore::claim_next`](crate::LeaseStore::claim_next).
///
/// ```
/// let store = leasefence::LeaseStore::open_in_memory()?;
/// store.enqueue("job")?;
/// let next = store.claim_next("worker", 0.0, 30.0)?.unwrap();
/// assert_eq!((next.job.as_str(), next.owner.as_str(), next.fence, next.payload), ("job", "worker", 1, None));
/// # Ok::<(), leasefence::Error>(())
/// ```
///
/// Serialized (serde) as `{job, fence, payload}`, `payload` null when the job has none, with
/// `base` when it is not 0; the owner is the caller's own and is left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaimedJob {
    /// The claimed job's id.
    pub job: String,
    /// The owner that claimed it (the `owner` given to `claim_next`).
    #[serde(skip)]
    pub owner: String,
    /// The fence of the new lease.
    pub fence: Fence,
    /// The text given to `enqueue_with`, handed to whoever claims the job.
    pub payload: Option<String>,
    /// The fence the job started at: the store's fence floor when it was enqueued (0 in a store
    /// that never pruned, docs/contract.md section 13). Its attempts count from there:
    /// [`attempt`](ClaimedJob::attempt) is `fence - base`. Serialized only when not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub base: Fence,
}

fn is_zero(base: &Fence) -> bool {
    *base == 0
}

impl ClaimedJob {
    /// The attempt this claim is, from 1: every claim of the job is one attempt, counted from
    /// the fence it started at ([`base`](ClaimedJob::base)).
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// assert_eq!(store.claim_next("w", 0.0, 30.0)?.unwrap().attempt(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn attempt(&self) -> Fence {
        crate::rules::attempts(self.fence, self.base)
    }
}

/// One recorded failure of a job (docs/contract.md section 7): the attempt (fence) that failed,
/// when, and the error the worker gave.
///
/// ```
/// let store = leasefence::LeaseStore::open_in_memory()?;
/// store.enqueue("job")?;
/// let lease = store.claim("job", "w", 0.0, 30.0)?.lease("job", "w").unwrap();
/// assert!(store.fail(&lease, 1.0, Some(10.0), Some("timeout"))?.is_granted());
/// let failure = &store.inspect("job")?.unwrap().failures[0];
/// assert_eq!((failure.fence, failure.at, failure.error.as_deref()), (1, 1.0, Some("timeout")));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// The fence (attempt) that failed.
    pub fence: Fence,
    /// The caller's `now` of the `fail`.
    pub at: f64,
    /// The error text, if the worker gave one.
    pub error: Option<String>,
}

/// Everything the store knows about one job ([`LeaseStore::inspect`](crate::LeaseStore::inspect)):
/// its row, its attempts, whether it is dead, its payload and its failures, oldest first.
///
/// ```
/// let store = leasefence::LeaseStore::open_in_memory()?;
/// store.enqueue_with("job", Some(5.0), Some("{\"n\":1}"))?;
/// let report = store.inspect("job")?.unwrap();
/// assert_eq!((report.attempts, report.dead, report.payload.as_deref()), (0, false, Some("{\"n\":1}")));
/// assert_eq!(report.state.until, 5.0);
/// assert_eq!((report.queue.as_str(), report.priority), ("default", 0));
/// # Ok::<(), leasefence::Error>(())
/// ```
///
/// Serialized (serde) as `{state, attempts, dead, payload, failures, queue, priority}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inspection {
    /// The stored row, as [`state`](crate::LeaseStore::state) reads it.
    pub state: JobState,
    /// How often the job was claimed: its fence.
    pub attempts: Fence,
    /// Whether a `fail` without a retry time (or the worker runtime at its maximum attempts)
    /// made it dead; `revive` clears this.
    pub dead: bool,
    /// The payload given at `enqueue_with`.
    pub payload: Option<String>,
    /// Every `fail`, oldest first (kept across `revive`).
    pub failures: Vec<Failure>,
    /// The job's queue (section 11); [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE) for a job enqueued
    /// without one, or by a program that knows only `jobs`.
    pub queue: String,
    /// The job's priority (section 11); 0 unless enqueued with one.
    pub priority: i64,
}

/// How many jobs are in each state at a time `now` ([`LeaseStore::stats`](crate::LeaseStore::stats)).
/// Every job is in exactly one: `leased` (an owner and `until > now`), `scheduled` (no owner,
/// `until > now`), `queued` (claimable now), `done` (completed) or `dead`.
///
/// ```
/// let store = leasefence::LeaseStore::open_in_memory()?;
/// store.enqueue("a")?;
/// store.enqueue_with("b", Some(100.0), None)?;
/// let counts = store.stats(0.0)?;
/// assert_eq!((counts.queued, counts.scheduled, counts.leased), (1, 1, 0));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct JobCounts {
    /// Claimable now: not done, `until <= now` (never claimed, released, or an expired lease).
    pub queued: u64,
    /// Not claimable yet and held by nobody: delayed, or backing off after a failure.
    pub scheduled: u64,
    /// Held by a live lease.
    pub leased: u64,
    /// Completed with a result (or null).
    pub done: u64,
    /// Failed for good; `revive` brings one back.
    pub dead: u64,
}

//! The items of the batch operations (docs/contract.md section 10): many jobs per transaction,
//! answered item by item. The operations are [`Leases`](crate::Leases)' `*_many` methods; the
//! checks every backend makes first are in `rules/batch.rs`.

use crate::lease::Lease;

/// The most items one batch operation takes (and the largest `n` of `claim_next_many`). A longer
/// list is an [`Error::InvalidArgument`](crate::Error::InvalidArgument) and changes nothing:
/// split it. The bound keeps one transaction's write lock short for every other worker.
///
/// ```
/// assert_eq!(leasefence::MAX_BATCH, 1024);
/// ```
pub const MAX_BATCH: usize = 1024;

/// One job of [`Leases::enqueue_many`](crate::Leases::enqueue_many) (and of
/// [`Leases::enqueue_job`](crate::Leases::enqueue_job)): its id, and optionally when it may first
/// run and its payload (`enqueue`'s options, section 7), its queue and its priority (section 11).
///
/// ```
/// use leasefence::{LeaseStore, NewJob};
/// let store = LeaseStore::open_in_memory()?;
/// let jobs = [NewJob::new("a"), NewJob::new("b").run_at(60.0).payload(r#"{"n":1}"#), NewJob::new("a")];
/// assert_eq!(store.enqueue_many(&jobs)?, [true, true, false]);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct NewJob {
    /// The job's id.
    pub job: String,
    /// Not claimable before this time (seconds); `None` is claimable at once.
    pub run_at: Option<f64>,
    /// Handed to the worker that claims the job.
    pub payload: Option<String>,
    /// The queue it joins; `None` is [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    pub queue: Option<String>,
    /// Higher is claimed first; `None` is 0.
    pub priority: Option<i64>,
}

impl NewJob {
    /// A job with no run time and no payload.
    ///
    /// ```
    /// assert_eq!(leasefence::NewJob::new("a").job, "a");
    /// ```
    pub fn new(job: impl Into<String>) -> Self {
        NewJob {
            job: job.into(),
            run_at: None,
            payload: None,
            queue: None,
            priority: None,
        }
    }

    /// In queue `queue` (section 11) instead of [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    ///
    /// ```
    /// assert_eq!(leasefence::NewJob::new("a").queue("mail").queue.as_deref(), Some("mail"));
    /// ```
    pub fn queue(mut self, queue: impl Into<String>) -> Self {
        self.queue = Some(queue.into());
        self
    }

    /// With `priority` (section 11): among claimable jobs, a higher priority is claimed first.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_many(&[NewJob::new("low"), NewJob::new("high").priority(5)])?;
    /// assert_eq!(store.claim_next("me", 0.0, 30.0)?.unwrap().job, "high");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn priority(mut self, priority: i64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// The queue it joins: [`NewJob::queue`], or [`DEFAULT_QUEUE`](crate::DEFAULT_QUEUE).
    pub(crate) fn queue_name(&self) -> &str {
        self.queue.as_deref().unwrap_or(crate::DEFAULT_QUEUE)
    }

    /// Not claimable before `run_at`.
    ///
    /// ```
    /// assert_eq!(leasefence::NewJob::new("a").run_at(5.0).run_at, Some(5.0));
    /// ```
    pub fn run_at(mut self, run_at: f64) -> Self {
        self.run_at = Some(run_at);
        self
    }

    /// Carrying `payload`.
    ///
    /// ```
    /// assert_eq!(leasefence::NewJob::new("a").payload("x").payload.as_deref(), Some("x"));
    /// ```
    pub fn payload(mut self, payload: impl Into<String>) -> Self {
        self.payload = Some(payload.into());
        self
    }
}

/// A worker's round for [`Leases::complete_then_claim`](crate::Leases::complete_then_claim): the
/// completions of the jobs that finished, then a claim of up to `claim` jobs from `queues`
/// (`None`: every queue) for `owner`, leased for `ttl` seconds, all at `now`.
///
/// ```
/// use leasefence::{LeaseCompletion, Leases, LeaseStore, NewJob, WorkerRound};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue_many(&[NewJob::new("a"), NewJob::new("b")])?;
/// let lease = store.claim_next("me", 0.0, 30.0)?.unwrap().lease();
/// let done = [LeaseCompletion::new(lease, Some("ok"))];
/// let round = WorkerRound { completions: &done, queues: None, owner: "me", claim: 8, now: 1.0, ttl: 30.0 };
/// let answer = store.complete_then_claim(&round)?;
/// assert!(answer.completed[0].is_granted());
/// assert_eq!(answer.claimed?.len(), 1);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WorkerRound<'a> {
    /// The leases to complete, with their results, as [`Leases::complete_many`](crate::Leases::complete_many) takes them.
    pub completions: &'a [LeaseCompletion],
    /// The queues to claim from; `None`: every queue.
    pub queues: Option<&'a [&'a str]>,
    /// Who claims.
    pub owner: &'a str,
    /// How many jobs to claim at most (1 to [`MAX_BATCH`]).
    pub claim: usize,
    /// The time of the round, in seconds.
    pub now: f64,
    /// How long the new leases last, in seconds.
    pub ttl: f64,
}

/// What a [`WorkerRound`] did: each completion's outcome, in order, and the claim's jobs, or the
/// claim's own error (the completions stand all the same).
///
/// ```
/// use leasefence::{LeaseCompletion, Lease, Leases, LeaseStore, WorkerRound};
/// let store = LeaseStore::open_in_memory()?;
/// let late = [LeaseCompletion::new(Lease::new("none", "me", 1), None)];
/// let round = WorkerRound { completions: &late, queues: None, owner: "me", claim: 0, now: 1.0, ttl: 30.0 };
/// let answer = store.complete_then_claim(&round)?;
/// assert!(!answer.completed[0].is_granted());
/// assert!(answer.claimed.is_err(), "a claim of 0 jobs is refused, after the completions");
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug)]
pub struct RoundAnswer {
    /// Each completion's outcome, as [`Leases::complete_many`](crate::Leases::complete_many) answers.
    pub completed: Vec<crate::Outcome<()>>,
    /// The jobs claimed, or why the claim failed.
    pub claimed: crate::Result<Vec<crate::ClaimedJob>>,
}

/// One completion of [`Leases::complete_many`](crate::Leases::complete_many): the lease and the
/// result to store.
///
/// ```
/// use leasefence::{LeaseCompletion, LeaseStore};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("a")?;
/// let lease = store.claim_next("me", 0.0, 30.0)?.unwrap().lease();
/// let done = store.complete_many(&[LeaseCompletion::new(lease, Some("ok"))], 1.0)?;
/// assert!(done[0].is_granted());
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseCompletion {
    /// The lease being completed.
    pub lease: Lease,
    /// The result stored with the job.
    pub result: Option<String>,
}

impl LeaseCompletion {
    /// `lease` completed with `result`.
    ///
    /// ```
    /// let c = leasefence::LeaseCompletion::new(leasefence::Lease::new("a", "me", 1), None);
    /// assert_eq!(c.lease.fence, 1);
    /// ```
    pub fn new(lease: Lease, result: Option<&str>) -> Self {
        LeaseCompletion {
            lease,
            result: result.map(str::to_owned),
        }
    }
}

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

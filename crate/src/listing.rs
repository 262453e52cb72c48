//! Listing jobs a page at a time, and the counts of every queue at once: what a dashboard reads
//! ([`Leases::list_jobs`](crate::Leases::list_jobs), [`Leases::queue_stats`](crate::Leases::queue_stats)).
//! Each page is read through an index, so a page costs about the same at a thousand jobs and at a
//! million; the order and the cursor are the same on every backend.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::outcome::{JobCounts, JobState};

/// The most jobs one page holds.
pub const MAX_PAGE: usize = 1000;

/// The state a job is in at a time `now`: the five that [`JobCounts`] counts, one per job.
///
/// ```
/// use leasefence::JobStatus;
/// assert_eq!("leased".parse::<JobStatus>()?, JobStatus::Leased);
/// assert_eq!(JobStatus::Dead.as_str(), "dead");
/// assert!("lost".parse::<JobStatus>().is_err());
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    /// Claimable now: not done, `until <= now`.
    Queued,
    /// Not claimable yet and held by nobody (delayed, or backing off after a failure).
    Scheduled,
    /// Held by a live lease.
    Leased,
    /// Completed.
    Done,
    /// Failed for good.
    Dead,
}

impl JobStatus {
    /// Every state, in the order [`JobCounts`] lists them.
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Queued,
        JobStatus::Scheduled,
        JobStatus::Leased,
        JobStatus::Done,
        JobStatus::Dead,
    ];

    /// The state's name, as `stats` and the JSON answers spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Scheduled => "scheduled",
            JobStatus::Leased => "leased",
            JobStatus::Done => "done",
            JobStatus::Dead => "dead",
        }
    }

    /// The state of a row at `now`, given whether it carries the dead mark (which counts only
    /// on a done row).
    ///
    /// ```
    /// use leasefence::{JobStatus, Leases, LeaseStore};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue("a")?;
    /// store.claim("a", "w", 0.0, 10.0)?;
    /// let report = store.inspect("a")?.unwrap();
    /// assert_eq!(JobStatus::at(&report.state, report.dead, 5.0), JobStatus::Leased);
    /// assert_eq!(JobStatus::at(&report.state, report.dead, 10.0), JobStatus::Queued);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn at(state: &JobState, dead: bool, now: f64) -> JobStatus {
        if state.done && dead {
            JobStatus::Dead
        } else if state.done {
            JobStatus::Done
        } else if state.until <= now {
            JobStatus::Queued
        } else if state.owner.is_some() {
            JobStatus::Leased
        } else {
            JobStatus::Scheduled
        }
    }

    /// Whether a page of this state is read in `until` order (the open states) rather than
    /// newest first.
    pub(crate) fn by_until(self) -> bool {
        matches!(
            self,
            JobStatus::Queued | JobStatus::Scheduled | JobStatus::Leased
        )
    }
}

impl std::str::FromStr for JobStatus {
    type Err = Error;

    fn from_str(text: &str) -> Result<JobStatus> {
        JobStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| {
                Error::invalid(
                    "status",
                    format!(
                        "is {text:?}, not a job state: use queued, scheduled, leased, done or dead"
                    ),
                )
            })
    }
}

/// Which jobs [`Leases::list_jobs`](crate::Leases::list_jobs) reads, and from where.
///
/// The order depends on the state asked for, and is the same on every backend:
/// - no state, `done` or `dead`: newest enqueued first;
/// - `queued`: longest due first (`until`, then oldest enqueued), about the order workers take them;
/// - `scheduled`: the next to become due first; `leased`: the next to expire first.
///
/// ```
/// use leasefence::{JobQuery, JobStatus};
/// let query = JobQuery::new().status(JobStatus::Leased).queue("mail").limit(20);
/// assert_eq!(query.limit, 20);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct JobQuery {
    /// Only jobs in this state at `now`; `None`: every job.
    pub status: Option<JobStatus>,
    /// Only jobs of this queue; `None`: every queue.
    pub queue: Option<String>,
    /// The `next` of the previous page; `None`: the first page.
    pub after: Option<String>,
    /// At most this many jobs (1 to [`MAX_PAGE`]).
    pub limit: usize,
}

impl Default for JobQuery {
    fn default() -> Self {
        JobQuery::new()
    }
}

impl JobQuery {
    /// The first page of 50 jobs of every state and queue.
    pub fn new() -> JobQuery {
        JobQuery {
            status: None,
            queue: None,
            after: None,
            limit: 50,
        }
    }

    /// Only jobs in `status`.
    pub fn status(mut self, status: JobStatus) -> JobQuery {
        self.status = Some(status);
        self
    }

    /// Only jobs of `queue`.
    pub fn queue(mut self, queue: impl Into<String>) -> JobQuery {
        self.queue = Some(queue.into());
        self
    }

    /// The page after the one whose `next` this is.
    pub fn after(mut self, cursor: impl Into<String>) -> JobQuery {
        self.after = Some(cursor.into());
        self
    }

    /// At most `limit` jobs a page.
    pub fn limit(mut self, limit: usize) -> JobQuery {
        self.limit = limit;
        self
    }
}

/// One job of a page: its row, its state at `now`, its queue, priority and failure count.
///
/// Serialized as `{id, owner, until, fence, result, done, status, queue, priority, failures}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSummary {
    /// The stored row.
    #[serde(flatten)]
    pub state: JobState,
    /// Its state at the `now` of the listing.
    pub status: JobStatus,
    /// Its queue.
    pub queue: String,
    /// Its priority.
    pub priority: i64,
    /// How many failures it has recorded (the failures are in [`inspect`](crate::Leases::inspect)).
    pub failures: u64,
}

/// A page of jobs, and the cursor of the next one.
///
/// ```
/// use leasefence::{JobQuery, Leases, LeaseStore};
/// let store = LeaseStore::open_in_memory()?;
/// for job in ["a", "b", "c"] {
///     store.enqueue(job)?;
/// }
/// let first = store.list_jobs(&JobQuery::new().limit(2), 0.0)?;
/// let ids: Vec<_> = first.jobs.iter().map(|j| j.state.id.as_str()).collect();
/// assert_eq!(ids, ["c", "b"]); // newest first
/// let rest = store.list_jobs(&JobQuery::new().limit(2).after(first.next.unwrap()), 0.0)?;
/// assert_eq!(rest.jobs[0].state.id, "a");
/// assert_eq!(rest.next, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobPage {
    /// The jobs, in the query's order.
    pub jobs: Vec<JobSummary>,
    /// The `after` of the following page; `None` on the last one.
    pub next: Option<String>,
}

/// Since when the longest-waiting claimable job of a queue has waited
/// ([`Leases::oldest_waiting`](crate::Leases::oldest_waiting)): the later of its `until` (a run
/// time, a retry time, the end of a lapsed lease) and its enqueue time by the store's clock. The
/// age is `now - since`.
///
/// ```
/// let waiting = leasefence::QueueWaiting { queue: "mail".into(), since: 10.0 };
/// assert_eq!(25.0 - waiting.since, 15.0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueueWaiting {
    /// The queue.
    pub queue: String,
    /// Since when (Unix seconds) its oldest claimable job has waited.
    pub since: f64,
}

/// The counts of one queue ([`Leases::queue_stats`](crate::Leases::queue_stats)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    /// The queue.
    pub queue: String,
    /// Its jobs in each state.
    pub counts: JobCounts,
}

//! [`Lease`]: the job, owner and fence a claim grants, taken as one value by every operation
//! that acts on a held lease (`renew`, `complete`, `release`, `fail`, fenced writes).

use std::fmt;

use crate::outcome::{ClaimedJob, Fence, Outcome};

/// A lease a worker holds: the job, the owner that claimed it, and the fence of that claim.
/// [`renew`](crate::Leases::renew), [`complete`](crate::Leases::complete),
/// [`release`](crate::Leases::release), [`fail`](crate::Leases::fail) and the fenced writes take
/// it by reference; the store checks it against the job's row in the transaction that writes, so
/// holding a `Lease` proves nothing by itself.
///
/// Get one from [`ClaimedJob::lease`] after `claim_next`, from [`Outcome::lease`] after `claim`,
/// or build one with [`Lease::new`] from values kept elsewhere.
///
/// ```
/// use leasefence::{Lease, LeaseStore, Reason};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("job")?;
/// let lease = store.claim("job", "a", 0.0, 10.0)?.lease("job", "a").unwrap();
/// assert_eq!(lease, Lease::new("job", "a", 1));
/// assert!(store.renew(&lease, 5.0, 10.0)?.is_granted());
/// assert!(store.complete(&lease, 6.0, Some("ok"))?.is_granted());
/// assert_eq!(store.release(&lease)?.reason(), Some(&Reason::Done));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Lease {
    /// The job's id.
    pub job: String,
    /// The owner that claimed the job.
    pub owner: String,
    /// The fence the claim handed out.
    pub fence: Fence,
}

impl Lease {
    /// A lease from its parts.
    ///
    /// ```
    /// let lease = leasefence::Lease::new("job", "worker-1", 3);
    /// assert_eq!((lease.job.as_str(), lease.owner.as_str(), lease.fence), ("job", "worker-1", 3));
    /// ```
    pub fn new(job: impl Into<String>, owner: impl Into<String>, fence: Fence) -> Self {
        Lease {
            job: job.into(),
            owner: owner.into(),
            fence,
        }
    }
}

/// `job` held by `owner` with fence `fence`, as the CLI and the error messages show it.
///
/// ```
/// assert_eq!(leasefence::Lease::new("j", "w", 2).to_string(), "\"j\" held by \"w\" with fence 2");
/// ```
impl fmt::Display for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} held by {:?} with fence {}",
            self.job, self.owner, self.fence
        )
    }
}

impl ClaimedJob {
    /// The lease this claim granted, for `renew`, `complete`, `fail` and the fenced writes.
    ///
    /// ```
    /// use leasefence::LeaseStore;
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let next = store.claim_next("w", 0.0, 30.0)?.unwrap();
    /// assert!(store.complete(&next.lease(), 1.0, None)?.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn lease(&self) -> Lease {
        Lease::new(self.job.as_str(), self.owner.as_str(), self.fence)
    }
}

impl Outcome<Fence> {
    /// The answer of `claim(job, owner, ...)` as the lease it granted: `None` when refused (see
    /// [`Outcome::reason`]).
    ///
    /// ```
    /// use leasefence::{Lease, LeaseStore};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let lease = store.claim("job", "w", 0.0, 30.0)?.lease("job", "w");
    /// assert_eq!(lease, Some(Lease::new("job", "w", 1)));
    /// assert_eq!(store.claim("job", "x", 1.0, 30.0)?.lease("job", "x"), None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn lease(&self, job: &str, owner: &str) -> Option<Lease> {
        match self {
            Outcome::Granted(fence) => Some(Lease::new(job, owner, *fence)),
            Outcome::Rejected(_) => None,
        }
    }
}

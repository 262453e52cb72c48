//! The seed's module, function for function: each call opens its own connection on `path`, does
//! one operation and closes it. Answers are the seed's plain values; use [`LeaseStore`] for the
//! reasons.
//!
//! ```
//! use leasefence::seed;
//! let dir = tempfile::tempdir().unwrap();
//! let db = dir.path().join("seed.db");
//! seed::init_db(&db)?;
//! assert!(seed::enqueue(&db, "job")?);
//! let fence = seed::claim(&db, "job", "a", 0.0, 10.0)?.unwrap();
//! assert!(seed::complete(&db, "job", "a", fence, 1.0, Some("ok"))?);
//! assert!(seed::state(&db, "job")?.unwrap().done);
//! # Ok::<(), leasefence::Error>(())
//! ```
//!
//! This file is the facade alone (native only): each function checks its arguments before it
//! opens anything, then runs [`LeaseStore`]'s operation.

use std::path::Path;

use crate::error::Result;
use crate::lease::Lease;
use crate::options::OpenOptions;
use crate::outcome::{Fence, JobState, Outcome};
use crate::rules::{check_now, LeaseWindow};
use crate::sqlite::{claim_many_on, LeaseStore};

/// Creates the table if missing; never touches existing rows.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// leasefence::seed::init_db(dir.path().join("q.db"))?;
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn init_db(path: impl AsRef<Path>) -> Result<()> {
    LeaseStore::open(path)?.init()
}

/// Inserts a missing job; `false` when it exists (nothing changes).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// assert!(leasefence::seed::enqueue(dir.path().join("q.db"), "job")?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn enqueue(path: impl AsRef<Path>, job: &str) -> Result<bool> {
    LeaseStore::open(path)?.enqueue(job)
}

/// The stored row, read through a fresh connection; `None` when missing.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// assert_eq!(leasefence::seed::state(dir.path().join("q.db"), "job")?, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn state(path: impl AsRef<Path>, job: &str) -> Result<Option<JobState>> {
    LeaseStore::open(path)?.state(job)
}

/// The new fence, or `None` when the job is missing, done or held.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// leasefence::seed::enqueue(&db, "job")?;
/// assert_eq!(leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?, Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn claim(
    path: impl AsRef<Path>,
    job: &str,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<Option<Fence>> {
    let window = LeaseWindow::new(now, ttl)?;
    Ok(LeaseStore::open(path)?
        .claim_within(job, owner, window)?
        .granted())
}

/// Extends a live lease; `false` otherwise.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// leasefence::seed::enqueue(&db, "job")?;
/// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
/// assert!(leasefence::seed::renew(&db, "job", "a", f, 1.0, 5.0)?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn renew(
    path: impl AsRef<Path>,
    job: &str,
    owner: &str,
    fence: Fence,
    now: f64,
    ttl: f64,
) -> Result<bool> {
    let window = LeaseWindow::new(now, ttl)?;
    Ok(LeaseStore::open(path)?
        .renew_within(&Lease::new(job, owner, fence), window)?
        .is_granted())
}

/// Stores the result for the current live lease; `false` otherwise.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// leasefence::seed::enqueue(&db, "job")?;
/// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
/// assert!(leasefence::seed::complete(&db, "job", "a", f, 1.0, None)?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn complete(
    path: impl AsRef<Path>,
    job: &str,
    owner: &str,
    fence: Fence,
    now: f64,
    result: Option<&str>,
) -> Result<bool> {
    check_now(now)?;
    Ok(LeaseStore::open(path)?
        .complete_checked(&Lease::new(job, owner, fence), now, result)?
        .is_granted())
}

/// Gives the lease up, keeping the fence; `false` when owner or fence do not match.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// leasefence::seed::enqueue(&db, "job")?;
/// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
/// assert!(leasefence::seed::release(&db, "job", "a", f)?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn release(path: impl AsRef<Path>, job: &str, owner: &str, fence: Fence) -> Result<bool> {
    Ok(LeaseStore::open(path)?
        .release(&Lease::new(job, owner, fence))?
        .is_granted())
}

/// `claim` for every owner at once, each on its own OS thread and connection; results in
/// input order, exactly one fence on a claimable job.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// leasefence::seed::enqueue(&db, "job")?;
/// let got = leasefence::seed::claim_many(&db, "job", &["a", "b"], 0.0, 5.0)?;
/// assert_eq!(got.iter().flatten().count(), 1);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn claim_many(
    path: impl AsRef<Path>,
    job: &str,
    owners: &[&str],
    now: f64,
    ttl: f64,
) -> Result<Vec<Option<Fence>>> {
    let window = crate::rules::claim_many_window(owners.len(), now, ttl)?;
    let outcomes = claim_many_on(&OpenOptions::new(), path.as_ref(), job, owners, window)?;
    Ok(outcomes.into_iter().map(Outcome::granted).collect())
}

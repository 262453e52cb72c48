//! The order of a fenced transaction (docs/contract.md section 8), once for every backend: the
//! caller's work, the refusal of work that went on after a failed statement, the check that
//! nothing touched the library's tables, the lease check with `renew`'s checks and reasons (or
//! `complete`), then commit or roll back. What each step does on a backend is its
//! [`FencedSteps`]; how the library's tables are kept unwritten differs most (SQLite's authorizer
//! refuses while the statements compile, PostgreSQL compares what the server counted).
//!
//! An error on any step returns at once; the backend's transaction rolls back when its steps are
//! dropped, so nothing is committed on that path either.

use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{Outcome, Reason};
use crate::rules::fenced::Finish;
use crate::rules::reasons::{unexplained, why_write_refused, LeaseRow};

/// One begun fenced transaction on a backend: the steps [`run`] takes in its order. A value of it
/// holds the open transaction, and dropping it without [`commit`](Self::commit) rolls back.
pub(crate) trait FencedSteps: Sized {
    /// The refusal of a call whose work went on after one of its statements failed.
    const WENT_ON: &'static str;

    /// What [`unexplained`] is told when `complete` matched no row and the row read afterwards
    /// explains no refusal: how often the backend tried.
    const TRIES: Option<usize>;

    /// Whether any of the caller's statements failed (or was refused), whatever the work did with
    /// the error.
    fn statements_failed(&self) -> bool;

    /// Refuses the transaction when the caller's statements wrote one of the library's tables,
    /// or left the connection changed; runs before any of the library's own statements.
    async fn check_library_tables(&mut self) -> Result<()>;

    /// The job's row, read in the transaction so that it cannot change before the commit.
    async fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>>;

    /// `complete`'s conditional `UPDATE` for `lease` at `now`; whether it matched the row.
    async fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool>;

    /// Commits the transaction.
    async fn commit(self) -> Result<()>;

    /// Rolls the transaction back (the lease was refused).
    async fn rollback(self) -> Result<()>;
}

/// Runs the fenced transaction `steps` began: `work` (the caller's statements, on the handle the
/// backend gives it), then the checks, then the commit while `lease` is current at `now`, with
/// `finish` done in the same commit. An error from `work` or any step is returned as is.
pub(crate) async fn run<S: FencedSteps, T>(
    mut steps: S,
    lease: &Lease,
    now: f64,
    finish: &Finish,
    work: impl AsyncFnOnce(&mut S) -> Result<T>,
) -> Result<Outcome<T>> {
    let value = checked_work(&mut steps, work).await?;
    match refusal(&mut steps, lease, now, finish).await? {
        None => {
            steps.commit().await?;
            Ok(Outcome::Granted(value))
        }
        Some(reason) => {
            steps.rollback().await?;
            Ok(Outcome::Rejected(reason))
        }
    }
}

/// The same transaction without a lease (docs/contract.md section 11, enqueue in your own
/// transaction): `work` (the caller's statements), the same checks that nothing failed and that
/// the library's tables are unwritten, then `then` (the library's own writes, such as enqueueing
/// the jobs), then the commit. An error anywhere rolls everything back and is returned.
pub(crate) async fn run_unleased<S: FencedSteps, T>(
    mut steps: S,
    work: impl AsyncFnOnce(&mut S) -> Result<()>,
    then: impl AsyncFnOnce(&mut S) -> Result<T>,
) -> Result<T> {
    checked_work(&mut steps, work).await?;
    let value = then(&mut steps).await?;
    steps.commit().await?;
    Ok(value)
}

/// `work`, then the refusal of work that went on after a failed statement, then the check that
/// nothing touched the library's tables: the part of a fenced transaction before the library's
/// own statements.
async fn checked_work<S: FencedSteps, T>(
    steps: &mut S,
    work: impl AsyncFnOnce(&mut S) -> Result<T>,
) -> Result<T> {
    let value = work(steps).await?;
    if steps.statements_failed() {
        return Err(Error::invalid("statements", S::WENT_ON));
    }
    steps.check_library_tables().await?;
    Ok(value)
}

/// Why the lease refuses the write, or `None` when it is current (and, with
/// [`Finish::Complete`], the job completed).
async fn refusal<S: FencedSteps>(
    steps: &mut S,
    lease: &Lease,
    now: f64,
    finish: &Finish,
) -> Result<Option<Reason>> {
    let result = match finish {
        Finish::KeepLease => {
            return Ok(why_write_refused(
                steps.read_lease(&lease.job).await?,
                lease,
                Some(now),
            ))
        }
        Finish::Complete(result) => result.as_deref(),
    };
    if steps.complete(lease, now, result).await? {
        return Ok(None);
    }
    match why_write_refused(steps.read_lease(&lease.job).await?, lease, Some(now)) {
        Some(reason) => Ok(Some(reason)),
        None => Err(unexplained("fenced", &lease.job, S::TRIES)),
    }
}

//! The owner-count rule of `claim_many`: one thread and connection per owner (or per lane on
//! PostgreSQL), so the number of owners raced at once is bounded, on every backend alike.

use super::window::LeaseWindow;
use crate::error::{Error, Result};

/// The most owners one `claim_many` runs at once (one OS thread and connection each); more is
/// an invalid argument.
///
/// ```
/// let owners: Vec<String> = (0..=leasefence::MAX_CLAIM_MANY_OWNERS).map(|i| i.to_string()).collect();
/// let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
/// let dir = tempfile::tempdir().unwrap();
/// let err = leasefence::seed::claim_many(dir.path().join("q.db"), "job", &owners, 0.0, 5.0).unwrap_err();
/// assert_eq!(err.code(), "invalid_argument");
/// ```
pub const MAX_CLAIM_MANY_OWNERS: usize = 1024;

/// Rejects more than [`MAX_CLAIM_MANY_OWNERS`] owners.
pub(crate) fn check_owner_count(owners: usize) -> Result<()> {
    if owners > MAX_CLAIM_MANY_OWNERS {
        return Err(Error::invalid(
            "owners",
            format!("{owners} owners given; at most {MAX_CLAIM_MANY_OWNERS} run at once"),
        ));
    }
    Ok(())
}

/// `claim_many`'s checks, once for every backend that races its owners: the lease window, then
/// at most [`MAX_CLAIM_MANY_OWNERS`] owners.
pub(crate) fn claim_many_window(owners: usize, now: f64, ttl: f64) -> Result<LeaseWindow> {
    let window = LeaseWindow::new(now, ttl)?;
    check_owner_count(owners)?;
    Ok(window)
}

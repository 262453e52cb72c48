//! The reason order of docs/contract.md section 3: which [`Reason`] a refused operation gets,
//! decided from the row it read in (or right after) the refusing transaction. Every backend
//! reads a [`LeaseRow`] its own way and asks these functions, so the answers cannot drift apart.

use crate::error::Error;
use crate::lease::Lease;
use crate::outcome::{Fence, Reason};

/// The columns the rejection reasons are computed from, read in the refusing transaction.
pub(crate) struct LeaseRow {
    pub(crate) owner: Option<String>,
    pub(crate) until: f64,
    pub(crate) fence: Fence,
    pub(crate) done: bool,
}

/// What the row of a refused claim shows.
pub(crate) enum ClaimRefusal {
    Rejected(Reason),
    /// The fence reached `i64::MAX`: no further claim can be fenced.
    Exhausted,
    /// The row is claimable after all: it changed after the `UPDATE` looked.
    Claimable,
}

/// The order of docs/contract.md section 3 for a refused claim: not_found, done, then held (a
/// live lease) or scheduled (nobody holds it, but it may not run before `until`: delayed, or
/// backing off after a failure, section 7).
pub(crate) fn why_claim_refused(lease: Option<LeaseRow>, now: f64) -> ClaimRefusal {
    match lease {
        None => ClaimRefusal::Rejected(Reason::NotFound),
        Some(lease) if lease.done => ClaimRefusal::Rejected(Reason::Done),
        Some(lease) if lease.until > now => ClaimRefusal::Rejected(match lease.owner {
            Some(owner) => Reason::Held {
                owner: Some(owner),
                until: lease.until,
            },
            None => Reason::Scheduled { until: lease.until },
        }),
        Some(lease) if lease.fence == Fence::MAX => ClaimRefusal::Exhausted,
        Some(_) => ClaimRefusal::Claimable,
    }
}

/// The order of docs/contract.md section 3 for a refused fenced write of the `held` lease, by
/// the job's stored `row`: not_found, done,
/// stale_fence, not_owner, then expired for the writes that need a live lease
/// (`live_at = Some(now)`: renew and complete; release passes `None`). `None` when the lease
/// matches after all (the row changed after the `UPDATE` looked).
pub(crate) fn why_write_refused(
    row: Option<LeaseRow>,
    held: &Lease,
    live_at: Option<f64>,
) -> Option<Reason> {
    match row {
        None => Some(Reason::NotFound),
        Some(lease) if lease.done => Some(Reason::Done),
        Some(lease) if lease.fence != held.fence => Some(Reason::StaleFence {
            current: lease.fence,
        }),
        Some(lease) if lease.owner.as_deref() != Some(held.owner.as_str()) => {
            Some(Reason::NotOwner)
        }
        Some(lease) if live_at.is_some_and(|now| lease.until <= now) => {
            Some(Reason::Expired { until: lease.until })
        }
        Some(_) => None,
    }
}

/// Why `revive` refused (docs/contract.md section 7): the job is missing, or it is not dead.
/// `exists` is whether the row was found in the refusing transaction.
pub(crate) fn why_revive_refused(exists: bool) -> Reason {
    if exists {
        Reason::NotDead
    } else {
        Reason::NotFound
    }
}

/// An invariant broke: the row a refused operation read explains no refusal. `tries` is how
/// often a backend that re-runs its `UPDATE` when the row changed in between (PostgreSQL) tried;
/// `None` for a backend whose refusal and read share one transaction (SQLite), where a row that
/// explains nothing is impossible.
pub(crate) fn unexplained(operation: &str, job: &str, tries: Option<usize>) -> Error {
    let message = match tries {
        None => format!("{operation} of job {job:?} was refused, but its row explains no refusal"),
        Some(tries) => format!(
            "{operation} of job {job:?} was refused {tries} times by a row that then did \
             not explain the refusal (a row written outside the contract, e.g. a NaN until?); \
             nothing was changed, retrying is safe"
        ),
    };
    Error::Internal { message }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(owner: Option<&str>, until: f64) -> Option<LeaseRow> {
        Some(LeaseRow {
            owner: owner.map(String::from),
            until,
            fence: 1,
            done: false,
        })
    }

    fn refused(lease: Option<LeaseRow>, now: f64) -> Option<Reason> {
        match why_claim_refused(lease, now) {
            ClaimRefusal::Rejected(reason) => Some(reason),
            _ => None,
        }
    }

    #[test]
    fn a_claim_waits_for_a_holder_or_for_a_time() {
        assert_eq!(
            refused(lease(Some("a"), 10.0), 5.0),
            Some(Reason::Held {
                owner: Some("a".into()),
                until: 10.0
            })
        );
        assert_eq!(
            refused(lease(None, 10.0), 5.0),
            Some(Reason::Scheduled { until: 10.0 })
        );
        assert_eq!(refused(lease(None, 10.0), 10.0), None);
    }
}

//! The batch operations on PostgreSQL (docs/contract.md section 10). Not written yet: each
//! answers a clear error until its statements land.

use super::store::PgStore;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Outcome};

fn not_yet(operation: &str) -> Error {
    Error::Internal {
        message: format!(
            "{operation} is not implemented on PostgreSQL yet; use the single operation in a loop"
        ),
    }
}

impl PgStore {
    pub(super) fn enqueue_many_on(&self, _jobs: &[NewJob]) -> Result<Vec<bool>> {
        Err(not_yet("enqueue_many"))
    }

    pub(super) fn claim_next_many_on(
        &self,
        _owner: &str,
        _n: usize,
        _now: f64,
        _ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        Err(not_yet("claim_next_many"))
    }

    pub(super) fn renew_many_on(
        &self,
        _leases: &[Lease],
        _now: f64,
        _ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        Err(not_yet("renew_many"))
    }

    pub(super) fn complete_many_on(
        &self,
        _completions: &[LeaseCompletion],
        _now: f64,
    ) -> Result<Vec<Outcome<()>>> {
        Err(not_yet("complete_many"))
    }
}

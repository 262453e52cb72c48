//! `claim_many` on an SQLite file: one OS thread and connection per owner, through the shared
//! race harness ([`crate::race`]).

use std::path::Path;

use crate::error::{Error, Result};
use crate::options::OpenOptions;
use crate::outcome::{Fence, Outcome};
use crate::rules::{claim_many_window, LeaseWindow};
use crate::sqlite::LeaseStore;

impl LeaseStore {
    /// Claims `job` for every owner at the same moment, each on its own OS thread with its own
    /// connection, and returns the outcomes in input order. On a claimable job exactly one owner
    /// wins. Needs a file database (an in-memory one is private to its connection).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = leasefence::LeaseStore::open(dir.path().join("q.db"))?;
    /// store.enqueue("job")?;
    /// let outcomes = store.claim_many("job", &["a", "b", "c"], 0.0, 10.0)?;
    /// assert_eq!(outcomes.iter().filter(|o| o.is_granted()).count(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        let path = self.path.as_deref().ok_or_else(|| {
            Error::invalid(
                "store",
                "claim_many needs a file database: threads cannot share an in-memory one",
            )
        })?;
        let window = claim_many_window(owners.len(), now, ttl)?;
        claim_many_on(&self.options, path, job, owners, window)
    }
}

/// One claim per owner on its own thread and connection, on arguments checked once
/// ([`claim_many_window`]), all released at once by a barrier so they really race.
pub(crate) fn claim_many_on(
    options: &OpenOptions,
    path: &Path,
    job: &str,
    owners: &[&str],
    window: LeaseWindow,
) -> Result<Vec<Outcome<Fence>>> {
    crate::race::claim_race(
        owners,
        owners.len(),
        || options.open(path),
        |store, owner| store.claim_within(job, owner, window),
    )
}

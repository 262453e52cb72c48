//! Retention (docs/contract.md section 13): which finished jobs [`Leases::prune`] deletes, and
//! the size of its transactions. The fence floor that keeps a pruned id's fences from being
//! handed out again lives in each backend's schema (a trigger), so that no writer can skip it.
//!
//! [`Leases::prune`]: crate::Leases::prune

use crate::error::{Error, Result};

/// Prune deletes at most this many jobs per transaction, so that it never holds the write lock
/// for long: a worker fleet keeps claiming and completing between its transactions.
pub const PRUNE_BATCH: usize = 1000;

/// What [`Leases::prune`](crate::Leases::prune) deletes: jobs that finished (completed, or dead
/// unless [`keep_dead`](Prune::keep_dead)) before a time, at most [`limit`](Prune::limit) of
/// them. Open and unfinished jobs are never touched.
///
/// ```
/// use leasefence::{Leases, LeaseStore, Prune};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("old")?;
/// let lease = store.claim("old", "w", 10.0, 30.0)?.lease("old", "w").unwrap();
/// store.complete(&lease, 11.0, Some("ok"))?;
/// assert_eq!(store.prune(&Prune::finished_before(11.0))?, 0); // finished at 11, not before
/// assert_eq!(store.prune(&Prune::finished_before(12.0).keep_dead(true))?, 1);
/// assert_eq!(store.state("old")?, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prune {
    pub(crate) before: f64,
    pub(crate) keep_dead: bool,
    pub(crate) only_dead: bool,
    pub(crate) limit: Option<u64>,
}

impl Prune {
    /// Jobs whose finish time (the `now` of the `complete` or `fail` that finished them) is
    /// earlier than `before`, Unix seconds; dead jobs included, no limit.
    ///
    /// ```
    /// let prune = leasefence::Prune::finished_before(1.7e9);
    /// assert_eq!(prune.before(), 1.7e9);
    /// ```
    pub fn finished_before(before: f64) -> Self {
        Prune {
            before,
            keep_dead: false,
            only_dead: false,
            limit: None,
        }
    }

    /// Keeps dead jobs (failed for good) whatever their age, for someone to look at or revive.
    ///
    /// ```
    /// let prune = leasefence::Prune::finished_before(1.7e9).keep_dead(true);
    /// assert!(prune.keeps_dead());
    /// ```
    pub fn keep_dead(mut self, keep: bool) -> Self {
        self.keep_dead = keep;
        self
    }

    /// Deletes dead jobs only, keeping completed ones whatever their age: dead jobs on a
    /// schedule of their own (a worker's retention keeps them longer, or shorter, than the
    /// completed). With [`keep_dead`](Prune::keep_dead) too, nothing matches.
    ///
    /// ```
    /// let prune = leasefence::Prune::finished_before(1.7e9).only_dead(true);
    /// assert!(prune.dead_only());
    /// ```
    pub fn only_dead(mut self, only: bool) -> Self {
        self.only_dead = only;
        self
    }

    /// Whether only dead jobs are deleted.
    ///
    /// ```
    /// assert!(!leasefence::Prune::finished_before(5.0).dead_only());
    /// ```
    pub fn dead_only(&self) -> bool {
        self.only_dead
    }

    /// Deletes at most `jobs` jobs in this call (`None`: every one that matches).
    ///
    /// ```
    /// let prune = leasefence::Prune::finished_before(1.7e9).limit(Some(10_000));
    /// assert_eq!(prune.max_jobs(), Some(10_000));
    /// ```
    pub fn limit(mut self, jobs: Option<u64>) -> Self {
        self.limit = jobs;
        self
    }

    /// The time finished jobs must be older than.
    ///
    /// ```
    /// assert_eq!(leasefence::Prune::finished_before(5.0).before(), 5.0);
    /// ```
    pub fn before(&self) -> f64 {
        self.before
    }

    /// Whether dead jobs are kept.
    ///
    /// ```
    /// assert!(!leasefence::Prune::finished_before(5.0).keeps_dead());
    /// ```
    pub fn keeps_dead(&self) -> bool {
        self.keep_dead
    }

    /// The most jobs this call deletes (`None`: no limit).
    ///
    /// ```
    /// assert_eq!(leasefence::Prune::finished_before(5.0).max_jobs(), None);
    /// ```
    pub fn max_jobs(&self) -> Option<u64> {
        self.limit
    }

    /// The checks every backend makes first: a finite `before`.
    pub(crate) fn check(&self) -> Result<()> {
        if self.before.is_finite() {
            Ok(())
        } else {
            Err(Error::invalid(
                "before",
                format!("must be a finite number of seconds, got {}", self.before),
            ))
        }
    }

    /// The checked start of a run of bounded transactions, which every backend drives the same
    /// way: `while let Some(n) = run.next_batch() { ...delete at most n...; run.deleted(n, k) }`.
    pub(crate) fn start(&self) -> Result<PruneRun> {
        self.check()?;
        Ok(PruneRun {
            limit: self.limit,
            deleted: 0,
            done: false,
        })
    }
}

/// Where a prune is: how many jobs its transactions deleted so far, and whether it is over (a
/// transaction found fewer jobs than it could take, or the limit is reached).
pub(crate) struct PruneRun {
    limit: Option<u64>,
    deleted: u64,
    done: bool,
}

impl PruneRun {
    /// How many jobs the next transaction may delete; `None` when the run is over.
    pub(crate) fn next_batch(&self) -> Option<usize> {
        let left = self
            .limit
            .map_or(u64::MAX, |limit| limit.saturating_sub(self.deleted));
        let batch = left.min(PRUNE_BATCH as u64) as usize;
        (!self.done && batch > 0).then_some(batch)
    }

    /// Records that the transaction of `batch` deleted `gone` jobs.
    pub(crate) fn deleted(&mut self, batch: usize, gone: u64) {
        self.deleted += gone;
        self.done = gone < batch as u64;
    }

    /// The jobs deleted by the run.
    pub(crate) fn total(&self) -> u64 {
        self.deleted
    }
}

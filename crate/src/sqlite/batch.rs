//! The batch operations on SQLite (docs/contract.md section 10): each is one transaction, a
//! [`Group`] of the single operations in list order, so every item is checked and answered
//! exactly as it would be alone; one commit (one sync) for the whole list.

use super::ops;
use super::write_tx::Group;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::Result;
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Outcome};
use crate::rules::batch::{check_batch, check_claim_count, check_new_jobs};
use crate::rules::queues::check_queues;
use crate::rules::{check_now, LeaseWindow};
use crate::sqlite::LeaseStore;

impl LeaseStore {
    /// Contract `enqueue_many`: every job's `enqueue` in one transaction, answered in order
    /// (`false` for an id that exists, or that an earlier item of the list added). At most
    /// [`MAX_BATCH`](crate::MAX_BATCH) jobs; a bad item refuses the whole list and changes
    /// nothing.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// let jobs: Vec<NewJob> = (0..3).map(|i| NewJob::new(format!("job-{i}"))).collect();
    /// assert_eq!(store.enqueue_many(&jobs)?, [true, true, true]);
    /// assert_eq!(store.jobs()?.len(), 3);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        check_new_jobs(jobs)?;
        self.each_in_one_transaction("enqueue_many", jobs, |job| ops::enqueue(&self.conn, job))
    }

    /// Contract `claim_next_many`: up to `n` successive `claim_next` calls for `owner` in one
    /// transaction; fewer (or none) when fewer jobs are claimable, in `claim_next`'s order.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_many(&[NewJob::new("a"), NewJob::new("b")])?;
    /// let got = store.claim_next_many("me", 5, 0.0, 30.0)?;
    /// assert_eq!(got.iter().map(|c| c.job.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_next_many(
        &self,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<crate::ClaimedJob>> {
        self.claim_next_many_in(None, owner, n, now, ttl)
    }

    /// Contract `claim_next_many` restricted to `queues` (section 11; `None`: every queue): up
    /// to `n` successive [`claim_next_in`](LeaseStore::claim_next_in) calls in one transaction.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_many(&[NewJob::new("a").queue("q"), NewJob::new("b").queue("q").priority(1),
    ///                      NewJob::new("c")])?;
    /// let got = store.claim_next_many_in(Some(&["q"]), "me", 5, 0.0, 30.0)?;
    /// assert_eq!(got.iter().map(|c| c.job.as_str()).collect::<Vec<_>>(), ["b", "a"]);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_next_many_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<crate::ClaimedJob>> {
        check_claim_count(n)?;
        let window = LeaseWindow::new(now, ttl)?;
        check_queues(queues)?;
        let group = Group::begin(&self.conn, "claim_next_many")?;
        let mut claimed: Vec<ClaimedJob> = Vec::new();
        while claimed.len() < n {
            match group.run(|| ops::claim_next(&self.conn, owner, queues, window))?? {
                Some(job) => claimed.push(job),
                None => break,
            }
        }
        group.commit()?;
        Ok(claimed)
    }

    /// Contract `renew_many`: every lease's `renew` to `now + ttl` in one transaction, answered
    /// in order.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_many(&[NewJob::new("a"), NewJob::new("b")])?;
    /// let leases: Vec<_> = store.claim_next_many("me", 2, 0.0, 30.0)?.iter().map(|c| c.lease()).collect();
    /// assert!(store.renew_many(&leases, 10.0, 30.0)?.iter().all(|r| r.is_granted()));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>> {
        check_batch("leases", leases.len())?;
        let window = LeaseWindow::new(now, ttl)?;
        self.each_in_one_transaction("renew_many", leases, |lease| {
            ops::renew(&self.conn, lease, window)
        })
    }

    /// Contract `complete_many`: every lease's `complete` with its result in one transaction,
    /// answered in order.
    ///
    /// ```
    /// use leasefence::{LeaseCompletion, LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_many(&[NewJob::new("a"), NewJob::new("b")])?;
    /// let done: Vec<_> = store.claim_next_many("me", 2, 0.0, 30.0)?.iter()
    ///     .map(|c| LeaseCompletion::new(c.lease(), Some("ok"))).collect();
    /// let answers = store.complete_many(&done, 1.0)?;
    /// assert!(answers.iter().all(|r| r.is_granted()));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn complete_many(
        &self,
        completions: &[LeaseCompletion],
        now: f64,
    ) -> Result<Vec<Outcome<()>>> {
        check_batch("leases", completions.len())?;
        check_now(now)?;
        self.each_in_one_transaction("complete_many", completions, |done| {
            ops::complete(&self.conn, &done.lease, now, done.result.as_deref())
        })
    }

    /// `operation` for every item, in order, in one transaction. An item's error (storage, not a
    /// rejection) fails the whole call: a batch answers item by item with outcomes only, so
    /// nothing of it is applied and the error is returned.
    fn each_in_one_transaction<I, T>(
        &self,
        operation: &'static str,
        items: &[I],
        mut each: impl FnMut(&I) -> Result<T>,
    ) -> Result<Vec<T>> {
        let group = Group::begin(&self.conn, operation)?;
        let answers = items
            .iter()
            .map(|item| group.run(|| each(item))?)
            .collect::<Result<Vec<T>>>()?;
        group.commit()?;
        Ok(answers)
    }
}

//! The batch operations on SQLite (docs/contract.md section 10): each is one transaction, a
//! [`Group`] of the single operations in list order, so every item is checked and answered
//! exactly as it would be alone; one commit (one sync) for the whole list.

use super::ops;
use super::write_tx::Group;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Outcome};
use crate::rules::batch::{check_batch, check_claim_count, check_new_jobs};
use crate::rules::fenced::{check_statements, Statement};
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
        self.options.limits.check_jobs(jobs)?;
        ops::enqueue_each(&self.conn, "enqueue_many", jobs)
    }

    /// Contract `enqueue_many` with the caller's own statements in the same transaction
    /// (docs/contract.md section 11, enqueue in your own transaction): `statements` run first, in
    /// order (placeholders `$1`, `$2`, ...; section 8's restrictions: your own tables only, no
    /// transaction control, no `PRAGMA` or `ATTACH`), then every job's `enqueue`, then one
    /// commit. All or nothing: a refused statement is [`Error::InvalidArgument`], a failing one
    /// [`Error::Statement`] naming it, and then neither the statements' writes nor any job is
    /// kept. No lease is involved. With no statements this is [`enqueue_many`](Self::enqueue_many).
    ///
    /// ```
    /// use leasefence::{Error, LeaseStore, NewJob, Statement};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE orders(id TEXT PRIMARY KEY)", []).unwrap();
    /// let order = [Statement::new("INSERT INTO orders(id) VALUES ($1)", ["o-1".into()])];
    /// assert_eq!(store.enqueue_many_with(&[NewJob::new("ship-o-1")], &order)?, [true]);
    ///
    /// // The same order again fails its statement: no job either.
    /// let again = store.enqueue_many_with(&[NewJob::new("ship-o-1-again")], &order);
    /// assert!(matches!(again, Err(Error::Statement { index: 0, .. })));
    /// assert!(store.state("ship-o-1-again")?.is_none());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    ///
    /// [`Error::InvalidArgument`]: crate::Error::InvalidArgument
    /// [`Error::Statement`]: crate::Error::Statement
    pub fn enqueue_many_with(
        &self,
        jobs: &[NewJob],
        statements: &[Statement],
    ) -> Result<Vec<bool>> {
        check_new_jobs(jobs)?;
        self.options.limits.check_jobs(jobs)?;
        check_statements(statements)?;
        if statements.is_empty() {
            return ops::enqueue_each(&self.conn, "enqueue_many", jobs);
        }
        super::fenced::enqueue_with_statements(&self.conn, jobs, statements)
    }

    /// Contract `enqueue_many` inside the caller's own transaction (docs/contract.md section 11):
    /// the jobs commit when `tx` commits, with the caller's rows, and vanish when it rolls back.
    /// Runs the store's own `enqueue` statements on `tx` (in a savepoint, so an error leaves `tx`
    /// as it was), answering each job as [`enqueue_many`](Self::enqueue_many) does. `tx` may be on
    /// any connection to the file, the caller's own included; the file must already hold the
    /// store's tables (any [`LeaseStore::open`] of it made them), or the call is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) and writes nothing. Your own
    /// statements on `tx` are not restricted here: leave `jobs` and the `leasefence_*` tables to
    /// the library.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let dir = std::env::temp_dir().join(format!("lf-doc-enqueue-in-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("app.db");
    /// let store = LeaseStore::open(&path)?;
    ///
    /// let mut app = rusqlite::Connection::open(&path).unwrap();
    /// app.execute("CREATE TABLE IF NOT EXISTS orders(id TEXT PRIMARY KEY)", []).unwrap();
    /// let tx = app.transaction().unwrap();
    /// tx.execute("INSERT INTO orders(id) VALUES ('o-1')", []).unwrap();
    /// assert_eq!(LeaseStore::enqueue_in(&tx, &[NewJob::new("ship-o-1")])?, [true]);
    /// tx.commit().unwrap();
    /// assert!(store.state("ship-o-1")?.is_some());
    ///
    /// let tx = app.transaction().unwrap();
    /// LeaseStore::enqueue_in(&tx, &[NewJob::new("ship-o-2")])?;
    /// drop(tx); // rolled back: no job
    /// assert!(store.state("ship-o-2")?.is_none());
    /// # drop(store); std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_in(tx: &rusqlite::Transaction<'_>, jobs: &[NewJob]) -> Result<Vec<bool>> {
        check_new_jobs(jobs)?;
        // No store here to hold limits: the caller's transaction gets the defaults.
        crate::Limits::default().check_jobs(jobs)?;
        check_schema_for_enqueue(tx)?;
        ops::enqueue_each(tx, "enqueue_many", jobs)
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
            match group
                .run(|| ops::claim_next(&self.conn, ops::Scope::Batch, owner, queues, window))??
            {
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
            ops::renew(&self.conn, ops::Scope::Batch, lease, window)
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
        self.options.limits.check_completions(completions)?;
        self.each_in_one_transaction("complete_many", completions, |done| {
            ops::complete(
                &self.conn,
                ops::Scope::Batch,
                &done.lease,
                now,
                done.result.as_deref(),
            )
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

/// Refuses a connection whose database lacks what `enqueue` writes: `jobs`, the payload and
/// order side tables, and the trigger that numbers new jobs (without it a job would never be
/// claimed). One fixed query; the store's open creates them all.
fn check_schema_for_enqueue(conn: &rusqlite::Connection) -> Result<()> {
    const NEEDED: &str = "SELECT count(*) FROM sqlite_schema WHERE name IN \
        ('jobs', 'leasefence_payloads', 'leasefence_order', 'leasefence_order_insert')";
    let found: i64 = conn
        .query_row(NEEDED, [], |row| row.get(0))
        .map_err(Error::storage("enqueue_many"))?;
    if found == 4 {
        return Ok(());
    }
    Err(Error::invalid(
        "transaction",
        "its database does not hold leasefence's tables (jobs, leasefence_order, \
         leasefence_payloads and the trigger leasefence_order_insert): open the file once with \
         LeaseStore::open (or any leasefence store), which creates them, then enqueue in your \
         transaction",
    ))
}

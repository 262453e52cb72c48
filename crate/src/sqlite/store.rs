//! [`LeaseStore`]: one SQLite connection, the whole contract, typed answers. Its public
//! methods check their arguments once (a [`LeaseWindow`]) and run [`ops`](super::ops).

use rusqlite::Connection;

use super::{lifecycle, ops, schema};
use crate::batch::NewJob;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::options::OpenOptions;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::batch::check_new_job;
use crate::rules::queues::{check_optional_queue, check_queues};
use crate::rules::{check_now, check_time, LeaseWindow};

/// A lease store on one SQLite connection.
///
/// The store keeps its connection open; every method is one transaction and reads the database
/// afresh, so what it answers is what is stored, never a cache. Fences are checked *by the
/// store*, inside the write transaction: a worker cannot vouch for its own token.
///
/// Times (`now`, `ttl`) are seconds on the caller's clock, passed in explicitly: the store never
/// reads a clock, which keeps it deterministic and testable. Callers that share a database must
/// agree on the clock.
///
/// ```
/// use leasefence::{LeaseStore, Reason};
///
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("invoice-42")?;
///
/// // Worker A claims the job for 10 s, then stalls.
/// let a = store.claim("invoice-42", "A", 0.0, 10.0)?.lease("invoice-42", "A").unwrap();
/// // The lease expires; worker B claims and completes the job.
/// let b = store.claim("invoice-42", "B", 12.0, 10.0)?.lease("invoice-42", "B").unwrap();
/// assert!(store.complete(&b, 13.0, Some("B's result"))?.is_granted());
/// // A wakes up and tries to write: the store refuses.
/// let late = store.complete(&a, 14.0, Some("A's result"))?;
/// assert_eq!(late.reason(), Some(&Reason::Done));
/// assert_eq!(store.state("invoice-42")?.unwrap().result.as_deref(), Some("B's result"));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub struct LeaseStore {
    pub(crate) conn: Connection,
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) path: Option<std::path::PathBuf>,
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) options: OpenOptions,
}

impl LeaseStore {
    /// Wraps a connection that the caller opened (any VFS), after checking that the database is
    /// a leasefence database and creating the table if it is missing.
    ///
    /// The connection gets the same set-up as one [`open`](LeaseStore::open) makes, except the
    /// journal mode, which stays the caller's: the busy handler of the default
    /// [`OpenOptions`] (a 10 s busy timeout) replaces any the caller set, and `synchronous` is
    /// set to `FULL` in WAL mode and `EXTRA` in every other, so that a granted fence survives a
    /// power loss. Other pragmas are left alone.
    ///
    /// One of the two places the API names a rusqlite type (with
    /// [`connection`](LeaseStore::connection)): a connection you configured yourself (a VFS of
    /// your own, flags `open` does not offer) cannot be described by [`OpenOptions`]. Depend on
    /// the rusqlite version this crate does (0.43; cargo links one bundled SQLite per build).
    ///
    /// ```
    /// let conn = rusqlite::Connection::open_in_memory().unwrap();
    /// let store = leasefence::LeaseStore::from_connection(conn, "memory")?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn from_connection(conn: Connection, label: &str) -> Result<Self> {
        Self::adopt(conn, label)
    }

    /// A private database in memory, gone when the store is dropped: for tests and examples.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// assert_eq!(store.state("nothing")?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open_in_memory() -> Result<Self> {
        let conn = Connection::open_in_memory().map_err(Error::storage("open"))?;
        Self::from_connection(conn, ":memory:")
    }

    /// The tables a store keeps in its database, in an order they can be dropped in: `jobs` and
    /// the side tables of docs/contract.md section 7 (payloads, failures, dead jobs). Dropping
    /// them all and calling [`init`](Self::init) leaves an empty store whose fences start over,
    /// which is sound only when every token of the old database is gone with it (a demo's reset,
    /// a test). The fence guard's `leasefence_guard` is not the store's.
    ///
    /// ```
    /// use leasefence::LeaseStore;
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// for table in LeaseStore::TABLES {
    ///     store.connection().execute_batch(&format!("DROP TABLE {table}")).unwrap();
    /// }
    /// store.init()?;
    /// assert_eq!(store.state("job")?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub const TABLES: [&'static str; 8] = [
        "jobs",
        schema::SIDE_TABLES[0],
        schema::SIDE_TABLES[1],
        schema::SIDE_TABLES[2],
        schema::SIDE_TABLES[3],
        schema::SIDE_TABLES[4],
        schema::SIDE_TABLES[5],
        schema::SIDE_TABLES[6],
    ];

    /// Creates the table if it is missing (the seed's `init_db`). Opening already does this, so
    /// this is only needed after someone dropped the table.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.init()?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn init(&self) -> Result<()> {
        schema::create_schema(&self.conn)
    }

    /// Adds a job with no lease. Returns `false`, changing nothing, when the id exists: a
    /// re-enqueue never resets a live lease or a result.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// assert!(store.enqueue("job")?);
    /// assert!(!store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue(&self, job: &str) -> Result<bool> {
        ops::enqueue(&self.conn, &NewJob::new(job))
    }

    /// Adds a job that nobody can claim before `run_at` (`None`: at once), carrying `payload`
    /// (handed to whoever claims it through [`claim_next`](Self::claim_next), and shown by
    /// [`inspect`](Self::inspect)). Like [`enqueue`](Self::enqueue), `false` when the id exists,
    /// and then nothing changes, its payload included. A claim before `run_at` is refused with
    /// [`Reason::Scheduled`](crate::Reason::Scheduled).
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// assert!(store.enqueue_with("report", Some(60.0), Some("{\"day\":\"mon\"}"))?);
    /// assert_eq!(store.claim("report", "w", 0.0, 30.0)?.reason(), Some(&Reason::Scheduled { until: 60.0 }));
    /// assert_eq!(store.claim_next("w", 0.0, 30.0)?, None);
    /// let next = store.claim_next("w", 60.0, 30.0)?.unwrap();
    /// assert_eq!(next.payload.as_deref(), Some("{\"day\":\"mon\"}"));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_with(
        &self,
        job: &str,
        run_at: Option<f64>,
        payload: Option<&str>,
    ) -> Result<bool> {
        check_time("run_at", run_at)?;
        self.options.limits.check_payload(payload)?;
        let mut new = NewJob::new(job);
        new.run_at = run_at;
        new.payload = payload.map(str::to_owned);
        ops::enqueue(&self.conn, &new)
    }

    /// Contract `enqueue` with every option (sections 7 and 11): run time, payload, queue and
    /// priority, as one [`NewJob`]; `false`, changing nothing, when the id exists. An empty queue
    /// name (or one holding U+0000) is [`Error::InvalidArgument`].
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// assert!(store.enqueue_job(&NewJob::new("invoice-7").queue("billing").priority(10))?);
    /// let report = store.inspect("invoice-7")?.unwrap();
    /// assert_eq!((report.queue.as_str(), report.priority), ("billing", 10));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_job(&self, job: &NewJob) -> Result<bool> {
        check_new_job(job)?;
        self.options.limits.check_payload(job.payload.as_deref())?;
        ops::enqueue(&self.conn, job)
    }

    /// The stored row of `job`, or `None` when there is no such job.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// store.claim("job", "a", 100.0, 30.0)?;
    /// let row = store.state("job")?.unwrap();
    /// assert_eq!((row.owner.as_deref(), row.until, row.fence), (Some("a"), 130.0, 1));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn state(&self, job: &str) -> Result<Option<JobState>> {
        ops::state(&self.conn, job)
    }

    /// Every job in insertion order (what `leasefence jobs` prints).
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("b")?;
    /// store.enqueue("a")?;
    /// let ids: Vec<_> = store.jobs()?.into_iter().map(|j| j.id).collect();
    /// assert_eq!(ids, ["b", "a"]);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn jobs(&self) -> Result<Vec<JobState>> {
        ops::all_jobs(&self.conn)
    }

    /// Takes a lease on `job` for `ttl` seconds from `now` and returns its new fence.
    ///
    /// Rejected with [`Reason::NotFound`](crate::Reason::NotFound), `Done`, or `Held` (another
    /// live lease: `until > now`; a lease ending exactly at `now` is claimable). `ttl <= 0` or a
    /// non-finite `now`/`ttl` is [`Error::InvalidArgument`](crate::Error::InvalidArgument).
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// assert_eq!(store.claim("job", "a", 0.0, 10.0)?.granted(), Some(1));
    /// assert_eq!(store.claim("job", "b", 10.0, 10.0)?.granted(), Some(2));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        self.claim_within(job, owner, LeaseWindow::new(now, ttl)?)
    }

    /// Extends the caller's live `lease` to `now + ttl`. An expired lease is never revived.
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let lease = store.claim("job", "a", 0.0, 10.0)?.lease("job", "a").unwrap();
    /// assert!(store.renew(&lease, 5.0, 10.0)?.is_granted());
    /// let late = store.renew(&lease, 15.0, 10.0)?;
    /// assert_eq!(late.reason(), Some(&Reason::Expired { until: 15.0 }));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>> {
        self.renew_within(lease, LeaseWindow::new(now, ttl)?)
    }

    /// Stores `result` and marks the job done, only for the current live lease. When rejected,
    /// the stored result is untouched.
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let old = store.claim("job", "a", 0.0, 10.0)?.lease("job", "a").unwrap();
    /// store.claim("job", "b", 20.0, 10.0)?;
    /// let stale = store.complete(&old, 21.0, Some("late"))?;
    /// assert_eq!(stale.reason(), Some(&Reason::StaleFence { current: 2 }));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>> {
        check_now(now)?;
        self.complete_checked(lease, now, result)
    }

    /// Gives the lease up early (`owner = NULL`, `until = 0`) so that another worker can claim
    /// at once. The fence is kept: the released token stays stale forever.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let lease = store.claim("job", "a", 0.0, 60.0)?.lease("job", "a").unwrap();
    /// assert!(store.release(&lease)?.is_granted());
    /// assert_eq!(store.claim("job", "b", 1.0, 60.0)?.granted(), Some(2));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn release(&self, lease: &Lease) -> Result<Outcome<()>> {
        ops::release(&self.conn, lease)
    }

    /// Claims the next claimable job (not done, `until <= now`): the smallest `until` first,
    /// then the earliest enqueued. `None` when nothing is claimable. Stays logarithmic on
    /// millions of jobs thanks to a partial index.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("first")?;
    /// store.enqueue("second")?;
    /// assert_eq!(store.claim_next("w", 0.0, 30.0)?.unwrap().job, "first");
    /// assert_eq!(store.claim_next("w", 0.0, 30.0)?.unwrap().job, "second");
    /// assert_eq!(store.claim_next("w", 0.0, 30.0)?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>> {
        self.claim_next_in(None, owner, now, ttl)
    }

    /// Contract `claim_next` restricted to `queues` (section 11; `None`: every queue): among their
    /// claimable jobs, the highest priority, then the smallest `until`, then the earliest
    /// enqueued. An empty list, more than [`MAX_QUEUES`](crate::MAX_QUEUES) names, or an empty
    /// name is [`Error::InvalidArgument`].
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_job(&NewJob::new("mail-1").queue("mail"))?;
    /// store.enqueue_job(&NewJob::new("bill-1").queue("billing"))?;
    /// let got = store.claim_next_in(Some(&["billing"]), "w", 0.0, 30.0)?.unwrap();
    /// assert_eq!(got.job, "bill-1");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>> {
        let window = LeaseWindow::new(now, ttl)?;
        check_queues(queues)?;
        ops::claim_next(&self.conn, ops::Scope::Own, owner, queues, window)
    }

    /// Records a failure of the current live lease (the checks and reasons of
    /// [`complete`](Self::complete)). With `retry_at`, the job is released to wait until then
    /// (no owner, `until = retry_at`, the fence kept); with `None`, the job is dead: done with no
    /// result, until [`revive`](Self::revive). Either way `error` is kept with the fence and
    /// `now`, in the list [`inspect`](Self::inspect) shows.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let lease = store.claim("job", "w", 0.0, 30.0)?.lease("job", "w").unwrap();
    /// assert!(store.fail(&lease, 1.0, Some(11.0), Some("502 from upstream"))?.is_granted());
    /// assert_eq!(store.claim_next("w", 5.0, 30.0)?, None);
    /// let retry = store.claim_next("w", 11.0, 30.0)?.unwrap();
    /// assert_eq!(retry.fence, 2);
    /// assert!(store.fail(&retry.lease(), 12.0, None, Some("still 502"))?.is_granted());
    /// assert!(store.inspect("job")?.unwrap().dead);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>> {
        check_now(now)?;
        check_time("retry_at", retry_at)?;
        self.options.limits.check_error(error)?;
        lifecycle::fail(&self.conn, lease, now, retry_at, error)
    }

    /// Brings a dead job back: claimable from `now`, its fence kept (every token handed out
    /// before stays stale), its failures kept. Refused with
    /// [`Reason::NotFound`](crate::Reason::NotFound) or [`Reason::NotDead`](crate::Reason::NotDead).
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// assert_eq!(store.revive("job", 0.0)?.reason(), Some(&Reason::NotDead));
    /// let lease = store.claim("job", "w", 0.0, 30.0)?.lease("job", "w").unwrap();
    /// store.fail(&lease, 1.0, None, Some("bad input"))?;
    /// assert!(store.revive("job", 2.0)?.is_granted());
    /// assert_eq!(store.claim("job", "w", 2.0, 30.0)?.granted(), Some(2));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>> {
        check_now(now)?;
        lifecycle::revive(&self.conn, job, now)
    }

    /// Everything stored about `job` ([`Inspection`]): its row, attempts (its fence), whether it
    /// is dead, its payload and its failures oldest first; `None` when there is no such job.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue_with("job", None, Some("input"))?;
    /// let lease = store.claim("job", "w", 0.0, 30.0)?.lease("job", "w").unwrap();
    /// store.fail(&lease, 1.0, Some(2.0), None)?;
    /// let report = store.inspect("job")?.unwrap();
    /// assert_eq!((report.attempts, report.failures.len()), (1, 1));
    /// assert_eq!(store.inspect("ghost")?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn inspect(&self, job: &str) -> Result<Option<Inspection>> {
        lifecycle::inspect(&self.conn, job)
    }

    /// How many jobs are queued, scheduled, leased, done and dead at `now` ([`JobCounts`]).
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("a")?;
    /// store.claim("a", "w", 0.0, 10.0)?;
    /// assert_eq!(store.stats(5.0)?.leased, 1);
    /// assert_eq!(store.stats(10.0)?.queued, 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn stats(&self, now: f64) -> Result<JobCounts> {
        self.stats_in(None, now)
    }

    /// How many jobs of `queue` (section 11; `None`: every queue) are in each state at `now`.
    ///
    /// ```
    /// use leasefence::{LeaseStore, NewJob};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue_job(&NewJob::new("m").queue("mail"))?;
    /// store.enqueue("d")?;
    /// assert_eq!(store.stats_in(Some("mail"), 0.0)?.queued, 1);
    /// assert_eq!(store.stats_in(None, 0.0)?.queued, 2);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts> {
        check_now(now)?;
        check_optional_queue("queue", queue)?;
        lifecycle::stats(&self.conn, queue, now)
    }

    /// The underlying connection, for reading with your own SQL: the escape hatch for what the
    /// store's methods do not cover (your own queries over the file, your tables' set-up). It is
    /// a `rusqlite::Connection` because that is what such SQL runs on; depend on the rusqlite
    /// version this crate does (0.43) to use it. Writing to `jobs` behind the store's back voids
    /// the contract; write your own tables in the lease's transaction with
    /// [`fenced`](LeaseStore::fenced).
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// let n: i64 = store.connection().query_row("SELECT count(*) FROM jobs", [], |r| r.get(0)).unwrap();
    /// assert_eq!(n, 0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// The operations on arguments already checked (the seed facade and `claim_many` check once).
impl LeaseStore {
    /// Sets what one job may carry after opening (the JavaScript faces open through their own
    /// file layers, then apply `LeaseStore.open`'s `limits`; the addon opens with them).
    #[cfg_attr(not(feature = "node"), allow(dead_code))]
    pub(crate) fn set_limits(&mut self, limits: crate::Limits) {
        self.options.limits = limits;
    }

    pub(crate) fn claim_within(
        &self,
        job: &str,
        owner: &str,
        window: LeaseWindow,
    ) -> Result<Outcome<Fence>> {
        ops::claim(&self.conn, job, owner, window)
    }

    #[cfg_attr(web, allow(dead_code))]
    pub(crate) fn renew_within(&self, lease: &Lease, window: LeaseWindow) -> Result<Outcome<()>> {
        ops::renew(&self.conn, ops::Scope::Own, lease, window)
    }

    /// `complete` with `now` checked by the caller.
    pub(crate) fn complete_checked(
        &self,
        lease: &Lease,
        now: f64,
        result: Option<&str>,
    ) -> Result<Outcome<()>> {
        self.options.limits.check_result(result)?;
        ops::complete(&self.conn, ops::Scope::Own, lease, now, result)
    }
}

impl std::fmt::Debug for LeaseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseStore")
            .field("path", &self.path)
            .finish()
    }
}

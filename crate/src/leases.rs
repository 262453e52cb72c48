//! [`Leases`]: the contract as a small storage trait, so one API runs on an SQLite file or on a
//! PostgreSQL server, chosen when the store is opened ([`open`](crate::open)). The trait alone:
//! its implementations live with their backends (`sqlite/leases.rs`, `postgres/store.rs`).
//!
//! The trait is the whole surface the rest of the crate (the JSON-lines protocol, the CLI) needs,
//! and every backend answers with the same crate types ([`Outcome`], [`Reason`](crate::Reason),
//! [`JobState`], [`ClaimedJob`]), so a caller cannot tell the backends apart by their answers.
//! [`LeaseStore`](crate::LeaseStore) (SQLite) implements it by delegating to its own methods;
//! `PgStore` (feature `postgres`) implements it on a server.
//!
//! A backend implements one method for the operations, [`Leases::execute`], a `match` over
//! [`Call`]s; every typed method builds its call and takes the reply apart, so a store that wraps
//! another forwards one call, not forty methods.

use std::borrow::Cow;

use crate::batch::{LeaseCompletion, NewJob, RoundAnswer, WorkerRound};
use crate::call::{Call, Queues, Reply};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::fenced::{FencedHandle, Finish, Statement};
use crate::rules::LeaseWindow;
use crate::schedule::{Schedule, StoredSchedule};

/// `store`'s reply to `call` when it is a `Reply::$variant`, its value; any other reply is an
/// internal error (a backend's `execute` answering the wrong call), never a panic.
macro_rules! reply {
    ($store:expr, $call:expr, $variant:ident) => {{
        let call = $call;
        let name = call.name();
        match $store.execute(call)? {
            Reply::$variant(value) => Ok(value),
            other => Err(other.unexpected(name)),
        }
    }};
    ($store:expr, $call:expr) => {{
        let call = $call;
        let name = call.name();
        match $store.execute(call)? {
            Reply::Done => Ok(()),
            other => Err(other.unexpected(name)),
        }
    }};
}

/// The lease contract (docs/contract.md sections 2 and 3) on some storage: every operation of
/// [`LeaseStore`](crate::LeaseStore), with the same arguments, checks and answers.
///
/// Invalid arguments are rejected before any storage access on every backend; a rejection is an
/// [`Outcome::Rejected`] with a typed reason, never an error; an [`Error`](crate::Error) means the
/// operation could not be decided and changed nothing (one exception: when a connection to
/// PostgreSQL is lost while the server commits, the commit may have happened; a retry then
/// answers with the reason that shows it).
///
/// ```
/// use leasefence::{Leases, LeaseStore};
///
/// fn first_come(store: &dyn Leases) -> leasefence::Result<bool> {
///     store.enqueue("job")?;
///     let Some(lease) = store.claim("job", "me", 0.0, 30.0)?.lease("job", "me") else {
///         return Ok(false);
///     };
///     Ok(store.complete(&lease, 1.0, Some("done"))?.is_granted())
/// }
/// assert!(first_come(&LeaseStore::open_in_memory()?)?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub trait Leases: std::fmt::Debug + Send {
    /// Runs one operation: the one method a backend implements for all of them. The typed
    /// methods below build the [`Call`] and take the [`Reply`] apart; they are not meant to be
    /// overridden (a backend that did would answer them differently from its `execute`). A call
    /// the backend cannot run itself may go to [`Call::answer_by_default`].
    ///
    /// ```
    /// use leasefence::{Call, FencedHandle, Finish, Lease, Leases, LeaseStore, Outcome, Reply};
    /// /// A store that only reads: every other call gets the default answer (an error naming it).
    /// #[derive(Debug)]
    /// struct ReadOnly(LeaseStore);
    /// impl Leases for ReadOnly {
    ///     fn execute(&self, call: Call<'_>) -> leasefence::Result<Reply> {
    ///         match call {
    ///             Call::State { .. } | Call::Inspect { .. } => self.0.execute(call),
    ///             call => call.answer_by_default(self),
    ///         }
    ///     }
    ///     fn fenced_with(
    ///         &self, _: &Lease, _: f64, _: Finish,
    ///         _: &mut dyn FnMut(&mut dyn FencedHandle) -> leasefence::Result<()>,
    ///     ) -> leasefence::Result<Outcome<()>> {
    ///         Call::FenceFloor.answer_by_default(self).map(|_| Outcome::Granted(()))
    ///     }
    /// }
    /// let store = ReadOnly(LeaseStore::open_in_memory()?);
    /// assert!(store.enqueue("j").unwrap_err().to_string().contains("does not run enqueue"));
    /// assert_eq!(store.state("j")?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn execute(&self, call: Call<'_>) -> Result<Reply>;

    /// Creates the storage (the `jobs` table and what the backend needs beside it) if missing;
    /// never touches existing rows. Opening already does this.
    fn init(&self) -> Result<()> {
        reply!(self, Call::Init)
    }

    /// Adds a job with no lease; `false`, changing nothing, when the id exists.
    fn enqueue(&self, job: &str) -> Result<bool> {
        self.enqueue_with(job, None, None)
    }

    /// Contract `enqueue` with its options (section 7): not claimable before `run_at`, carrying
    /// `payload`; `false`, changing nothing, when the id exists.
    fn enqueue_with(&self, job: &str, run_at: Option<f64>, payload: Option<&str>) -> Result<bool> {
        let mut new = NewJob::new(job);
        new.run_at = run_at;
        new.payload = payload.map(str::to_owned);
        reply!(
            self,
            Call::Enqueue {
                job: Cow::Owned(new)
            },
            Bool
        )
    }

    /// Contract `enqueue` with every option (sections 7 and 11): run time, payload, queue and
    /// priority; `false`, changing nothing, when the id exists.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// assert!(leases.enqueue_job(&NewJob::new("a").queue("mail").priority(3))?);
    /// assert_eq!(leases.inspect("a")?.unwrap().priority, 3);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn enqueue_job(&self, job: &NewJob) -> Result<bool> {
        reply!(
            self,
            Call::Enqueue {
                job: Cow::Borrowed(job)
            },
            Bool
        )
    }

    /// The stored row of `job`, read afresh; `None` when there is no such job.
    fn state(&self, job: &str) -> Result<Option<JobState>> {
        reply!(self, Call::State { job: job.into() }, State)
    }

    /// Every job, in insertion order.
    fn jobs(&self) -> Result<Vec<JobState>> {
        reply!(self, Call::Jobs, Jobs)
    }

    /// Contract `claim`: a new lease for `ttl` seconds from `now`, answered with its fence.
    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        let (job, owner) = (job.into(), owner.into());
        reply!(
            self,
            Call::Claim {
                job,
                owner,
                now,
                ttl
            },
            Fence
        )
    }

    /// Contract `renew`: extends the caller's live `lease` to `now + ttl`.
    fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>> {
        let lease = Cow::Borrowed(lease);
        reply!(self, Call::Renew { lease, now, ttl }, Outcome)
    }

    /// Contract `complete`: stores the result and marks the job done, for the current live lease.
    fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>> {
        let (lease, result) = (Cow::Borrowed(lease), result.map(Cow::Borrowed));
        reply!(self, Call::Complete { lease, now, result }, Outcome)
    }

    /// Contract `release`: gives the lease up early; the fence is kept.
    fn release(&self, lease: &Lease) -> Result<Outcome<()>> {
        reply!(
            self,
            Call::Release {
                lease: Cow::Borrowed(lease)
            },
            Outcome
        )
    }

    /// Contract `claim_next` (docs/contract.md section 3): claims the claimable job with the
    /// smallest `until`, then the earliest enqueued, and hands over its payload.
    fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>> {
        self.claim_next_in(None, owner, now, ttl)
    }

    /// Contract `claim_next` over `queues` (section 11; `None`: every queue): among their
    /// claimable jobs the highest priority, then the smallest `until`, then the earliest
    /// enqueued.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_job(&NewJob::new("m").queue("mail"))?;
    /// assert_eq!(leases.claim_next_in(Some(&["billing"]), "w", 0.0, 9.0)?, None);
    /// assert_eq!(leases.claim_next_in(Some(&["mail"]), "w", 0.0, 9.0)?.unwrap().job, "m");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>> {
        let (queues, owner) = (Queues::of(queues), owner.into());
        reply!(
            self,
            Call::ClaimNext {
                queues,
                owner,
                now,
                ttl
            },
            Claimed
        )
    }

    /// Contract `fail` (section 7): for the current live lease, retry at `retry_at` or (`None`)
    /// make the job dead; the error is recorded.
    fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>> {
        let (lease, error) = (Cow::Borrowed(lease), error.map(Cow::Borrowed));
        let call = Call::Fail {
            lease,
            now,
            retry_at,
            error,
        };
        reply!(self, call, Outcome)
    }

    /// Contract `revive` (section 7): a dead job becomes claimable at `now`, its fence kept.
    fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>> {
        reply!(
            self,
            Call::Revive {
                job: job.into(),
                now
            },
            Outcome
        )
    }

    /// Contract `inspect` (section 7): row, attempts, dead mark, payload and failures.
    fn inspect(&self, job: &str) -> Result<Option<Inspection>> {
        reply!(self, Call::Inspect { job: job.into() }, Inspection)
    }

    /// How many jobs are in each state at `now`.
    fn stats(&self, now: f64) -> Result<JobCounts> {
        self.stats_in(None, now)
    }

    /// How many jobs of `queue` (section 11; `None`: every queue) are in each state at `now`.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_job(&NewJob::new("m").queue("mail"))?;
    /// assert_eq!(leases.stats_in(Some("billing"), 0.0)?.queued, 0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts> {
        let queue = queue.map(Cow::Borrowed);
        reply!(self, Call::Stats { queue, now }, Counts)
    }

    /// One page of jobs (of a state and a queue, if asked) at `now`, read through an index:
    /// what a dashboard lists. Pass the page's `next` as the next query's `after`; the order is
    /// [`JobQuery`](crate::JobQuery)'s.
    ///
    /// ```
    /// use leasefence::{JobQuery, JobStatus, Leases, LeaseStore};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue("a")?;
    /// leases.enqueue("b")?;
    /// leases.claim("b", "w", 0.0, 30.0)?;
    /// let leased = leases.list_jobs(&JobQuery::new().status(JobStatus::Leased), 1.0)?;
    /// assert_eq!(leased.jobs[0].state.owner.as_deref(), Some("w"));
    /// assert_eq!(leased.jobs.len(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage> {
        reply!(
            self,
            Call::ListJobs {
                query: Cow::Borrowed(query),
                now
            },
            Page
        )
    }

    /// Every queue that has a job, by name, with its jobs in each state at `now`: `stats_in` of
    /// each queue, read at once, in one pass over the jobs' queue rows (no per-job read but the
    /// owner of the jobs not due yet). A job whose fence is exhausted (it can never be claimed
    /// again) counts as done here.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_job(&NewJob::new("m").queue("mail"))?;
    /// leases.enqueue("d")?;
    /// let queues = leases.queue_stats(0.0)?;
    /// assert_eq!(queues.iter().map(|q| q.queue.as_str()).collect::<Vec<_>>(), ["default", "mail"]);
    /// assert_eq!(queues[1].counts.queued, 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>> {
        reply!(self, Call::QueueStats { now }, QueueCounts)
    }

    /// Each queue with a job claimable at `now`, by name, with the time since which its
    /// longest-waiting claimable job has waited: the later of the job's `until` (a run time, a
    /// retry time, the end of a lapsed lease) and its enqueue time, which the store stamps by its
    /// own clock (jobs enqueued before a store had the stamp count from its upgrade). What the
    /// dashboard's `leasefence_oldest_waiting_job_age_seconds` shows; one pass over the open
    /// jobs due at `now`.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_job(&NewJob::new("m").queue("mail").run_at(3e9))?;
    /// assert_eq!(leases.oldest_waiting(3e9 - 1.0)?, []); // not due yet
    /// let waiting = leases.oldest_waiting(3e9 + 5.0)?;
    /// assert_eq!((waiting[0].queue.as_str(), waiting[0].since), ("mail", 3e9));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>> {
        reply!(self, Call::OldestWaiting { now }, Waiting)
    }

    /// Contract `prune` (section 13): deletes jobs that finished before `prune.before()` (their
    /// finish time is the `now` of the `complete` or `fail` that finished them), dead ones too
    /// unless kept, with their payloads, failures and marks; at most
    /// [`PRUNE_BATCH`](crate::PRUNE_BATCH) per transaction, so workers go on between them. Open
    /// and unfinished jobs are never touched. Answers how many jobs it deleted. The store's fence
    /// floor rises to the highest fence deleted, so an id enqueued again starts above every
    /// fence it had: an old token stays stale.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Prune};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue("j")?;
    /// let old = leases.claim("j", "w", 0.0, 30.0)?.lease("j", "w").unwrap();
    /// leases.complete(&old, 1.0, None)?;
    /// assert_eq!(leases.prune(&Prune::finished_before(100.0))?, 1);
    /// assert_eq!(leases.fence_floor()?, 1);
    /// leases.enqueue("j")?; // the same id again: its fences start above the old ones
    /// assert_eq!(leases.claim("j", "w", 2.0, 30.0)?.granted(), Some(2));
    /// assert!(!leases.complete(&old, 3.0, None)?.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn prune(&self, prune: &crate::Prune) -> Result<u64> {
        reply!(self, Call::Prune { prune: *prune }, Pruned)
    }

    /// The fence floor (section 13): the highest fence of any job this store ever pruned, where
    /// every job inserted from now on starts; 0 for a store that never pruned.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// assert_eq!(leases.fence_floor()?, 0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn fence_floor(&self) -> Result<i64> {
        reply!(self, Call::FenceFloor, FenceFloor)
    }

    /// What one job may carry in this store (section 13): the largest payload, result and error
    /// text, as it was opened with ([`OpenOptions::limits`](crate::OpenOptions::limits)). The
    /// worker runtimes read it to fail an attempt whose result is too big rather than stop.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Limits};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// assert_eq!(leases.limits(), Limits::default());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn limits(&self) -> crate::Limits {
        crate::Limits::default()
    }

    /// Contract `enqueue_many` (section 10): every job's `enqueue` in one transaction, answered
    /// in order; at most [`MAX_BATCH`](crate::MAX_BATCH) jobs, and a bad item refuses the list.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// assert_eq!(leases.enqueue_many(&[NewJob::new("a"), NewJob::new("a")])?, [true, false]);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        self.enqueue_many_with(jobs, &[])
    }

    /// Contract `enqueue_many` with your own statements in the same transaction
    /// (docs/contract.md section 11, enqueue in your own transaction): the statements run first,
    /// in order, with section 8's restrictions (your own tables only, no transaction or session
    /// control), then every job's `enqueue`, then one commit; no lease is involved. All or
    /// nothing: a refused statement is [`Error::InvalidArgument`](crate::Error::InvalidArgument),
    /// a failing one [`Error::Statement`](crate::Error::Statement) naming it, and then nothing is
    /// kept. With no statements this is [`enqueue_many`](Leases::enqueue_many).
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob, Statement};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE orders(id TEXT)", []).unwrap();
    /// let leases: &dyn Leases = &store;
    /// let order = [Statement::new("INSERT INTO orders VALUES ($1)", ["o-1".into()])];
    /// assert_eq!(leases.enqueue_many_with(&[NewJob::new("ship-o-1")], &order)?, [true]);
    /// let refused = [Statement::new("DELETE FROM jobs", [])];
    /// assert!(leases.enqueue_many_with(&[NewJob::new("x")], &refused).is_err());
    /// assert!(leases.state("x")?.is_none());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn enqueue_many_with(&self, jobs: &[NewJob], statements: &[Statement]) -> Result<Vec<bool>> {
        let (jobs, statements) = (Cow::Borrowed(jobs), Cow::Borrowed(statements));
        reply!(self, Call::EnqueueMany { jobs, statements }, Bools)
    }

    /// Contract `claim_next_many` (section 10): up to `n` (1 to [`MAX_BATCH`](crate::MAX_BATCH))
    /// successive `claim_next` calls in one transaction, in `claim_next`'s order.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_many(&[NewJob::new("a"), NewJob::new("b")])?;
    /// assert_eq!(leases.claim_next_many("me", 8, 0.0, 30.0)?.len(), 2);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn claim_next_many(
        &self,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        self.claim_next_many_in(None, owner, n, now, ttl)
    }

    /// Contract `claim_next_many` over `queues` (section 11; `None`: every queue).
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_many(&[NewJob::new("a").queue("q"), NewJob::new("b")])?;
    /// assert_eq!(leases.claim_next_many_in(Some(&["q"]), "me", 8, 0.0, 30.0)?.len(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn claim_next_many_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        let (queues, owner) = (Queues::of(queues), owner.into());
        let call = Call::ClaimNextMany {
            queues,
            owner,
            n,
            now,
            ttl,
        };
        reply!(self, call, ClaimedMany)
    }

    /// When an idle worker serving `queues` (`None`: every queue) has something to look at
    /// again without being woken (docs/contract.md section 11, waking): the earliest `until` of
    /// an open job of those queues (not done, not dead), due already or not; `None` when there
    /// is none. Index probes only, no scan. [`Call::answer_by_default`] answers `None` (the worker
    /// then polls).
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_job(&NewJob::new("later").queue("mail").run_at(500.0))?;
    /// assert_eq!(leases.next_due_in(Some(&["mail"]))?, Some(500.0));
    /// assert_eq!(leases.next_due_in(Some(&["billing"]))?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn next_due_in(&self, queues: Option<&[&str]>) -> Result<Option<f64>> {
        reply!(
            self,
            Call::NextDue {
                queues: Queues::of(queues)
            },
            NextDue
        )
    }

    /// Starts watching for new work in `queues` (`None`: every queue): `wakeup` is called, from
    /// a thread of the watch, whenever a job may have become claimable (an SQLite file written
    /// by any process, on Linux; a PostgreSQL enqueue, revive or release notified). False
    /// wake-ups happen; missing ones are covered by the worker's poll. `None` when the store
    /// cannot watch (the default; an in-memory database; another OS). Dropping the [`Watch`](crate::Watch)
    /// stops it.
    ///
    /// ```
    /// use std::sync::{mpsc, Arc, Mutex};
    /// use leasefence::{Leases, LeaseStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// let store = LeaseStore::open(&db)?;
    /// let (tx, rx) = mpsc::channel();
    /// let tx = Mutex::new(tx);
    /// let watch = store.watch(None, Arc::new(move || { let _ = tx.lock().unwrap().send(()); }))?;
    /// if watch.is_some() {
    ///     LeaseStore::open(&db)?.enqueue("from-elsewhere")?;
    ///     rx.recv_timeout(std::time::Duration::from_secs(5)).expect("woken");
    /// }
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn watch(
        &self,
        queues: Option<&[&str]>,
        wakeup: crate::wake::Wakeup,
    ) -> Result<Option<crate::wake::Watch>> {
        crate::rules::queues::check_queues(queues)?;
        let _ = wakeup;
        Ok(None)
    }

    /// Contract `renew_many` (section 10): every lease's `renew` in one transaction, answered in
    /// order.
    ///
    /// ```
    /// use leasefence::{Lease, Leases, LeaseStore};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// let answers = leases.renew_many(&[Lease::new("none", "me", 1)], 0.0, 30.0)?;
    /// assert_eq!(answers[0].reason(), Some(&leasefence::Reason::NotFound));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>> {
        let leases = Cow::Borrowed(leases);
        reply!(self, Call::RenewMany { leases, now, ttl }, Outcomes)
    }

    /// Contract `complete_many` (section 10): every lease's `complete` with its result in one
    /// transaction, answered in order.
    ///
    /// ```
    /// use leasefence::{Lease, LeaseCompletion, Leases, LeaseStore};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// let late = LeaseCompletion::new(Lease::new("none", "me", 1), Some("r"));
    /// assert!(!leases.complete_many(&[late], 0.0)?[0].is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn complete_many(&self, completions: &[LeaseCompletion], now: f64) -> Result<Vec<Outcome<()>>> {
        let completions = Cow::Borrowed(completions);
        reply!(self, Call::CompleteMany { completions, now }, Outcomes)
    }

    /// A worker's round (docs/contract.md section 10): [`complete_many`](Self::complete_many) of
    /// the round's completions, then [`claim_next_many_in`](Self::claim_next_many_in) for the
    /// slots they freed. On SQLite and PostgreSQL both are one transaction, so a round pays one
    /// commit, not two; elsewhere ([`Call::answer_by_default`]) they are the two calls. An `Err`
    /// means no
    /// completion was written; a claim that fails once the completions were is the answer's
    /// `claimed`.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob, WorkerRound};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_many(&[NewJob::new("a")])?;
    /// let round = WorkerRound { completions: &[], queues: None, owner: "me", claim: 4, now: 0.0, ttl: 30.0 };
    /// assert_eq!(leases.complete_then_claim(&round)?.claimed?.len(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn complete_then_claim(&self, round: &WorkerRound<'_>) -> Result<RoundAnswer> {
        let call = Call::CompleteThenClaim {
            completions: Cow::Borrowed(round.completions),
            queues: Queues::of(round.queues),
            owner: round.owner.into(),
            claim: round.claim,
            now: round.now,
            ttl: round.ttl,
        };
        reply!(self, call, Round)
    }

    /// The worker registry: records `beat` (its worker alive until `now + ttl`, or gone if it
    /// says it stops) and renews `leases` to `now + ttl`, all in one transaction, the leases
    /// answered in order as [`renew_many`](Self::renew_many) answers them. A worker's renewals
    /// thus carry its beat at no extra sync. The same transaction deletes rows of workers gone
    /// for [`WORKER_PRUNE_AFTER`](crate::WORKER_PRUNE_AFTER) seconds. A beat older than the row's
    /// last (a late retry) leaves the row as it is; the leases are renewed all the same.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, NewJob, WorkerBeat};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.enqueue_many(&[NewJob::new("a")])?;
    /// let held = leases.claim_next("w", 0.0, 30.0)?.unwrap().lease();
    /// let mut beat = WorkerBeat::new("w", "host-a", 4242, 0.0);
    /// beat.counters.claimed = 1;
    /// assert!(leases.heartbeat(&beat, &[held], 10.0, 30.0)?[0].is_granted());
    /// let row = &leases.list_workers(11.0)?[0];
    /// assert_eq!((row.counters.claimed, row.until, row.held), (1, 40.0, 1));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn heartbeat(
        &self,
        beat: &crate::WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        let (beat, leases) = (Cow::Borrowed(beat), Cow::Borrowed(leases));
        reply!(
            self,
            Call::Heartbeat {
                beat,
                leases,
                now,
                ttl
            },
            Outcomes
        )
    }

    /// The worker registry at `now`: every recorded worker (alive first, then the latest seen;
    /// at most 1,000), each with the live leases its owner holds, read in one snapshot.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, WorkerBeat};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// let mut last = WorkerBeat::new("w", "h", 1, 0.0);
    /// last.stopping = true;
    /// leases.heartbeat(&last, &[], 5.0, 30.0)?;
    /// let row = &leases.list_workers(6.0)?[0];
    /// assert_eq!((row.alive, row.stopped), (false, Some(5.0)));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>> {
        reply!(self, Call::ListWorkers { now }, Workers)
    }

    /// Recurring jobs (section 11): stores `schedule`, replacing one of the same name (which
    /// keeps its latest slot enqueued, so scheduling again at every start changes nothing due).
    /// A bad name, cron pattern, time zone or queue is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) and changes nothing.
    ///
    /// [`Call::answer_by_default`] refuses: a store that cannot keep schedules says so. Both of
    /// this crate's backends keep them.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("nightly", "0 2 * * *").tz("America/New_York"))?;
    /// assert!(leases.schedule(&Schedule::new("bad", "0 25 * * *")).is_err());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn schedule(&self, schedule: &Schedule) -> Result<()> {
        reply!(
            self,
            Call::Schedule {
                schedule: Cow::Borrowed(schedule)
            }
        )
    }

    /// Removes the schedule `name`: `true`, or `false` when there was none. Jobs already
    /// enqueued for it stay. [`Call::answer_by_default`] has none to remove.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("tick", "* * * * *"))?;
    /// assert_eq!((leases.unschedule("tick")?, leases.unschedule("tick")?), (true, false));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn unschedule(&self, name: &str) -> Result<bool> {
        reply!(self, Call::Unschedule { name: name.into() }, Bool)
    }

    /// Every stored schedule, by name, with its latest slot enqueued. [`Call::answer_by_default`] has none.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("b", "* * * * *"))?;
    /// leases.schedule(&Schedule::new("a", "0 * * * *"))?;
    /// let names: Vec<String> = leases.schedules()?.into_iter().map(|s| s.schedule.name).collect();
    /// assert_eq!(names, ["a", "b"]);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn schedules(&self) -> Result<Vec<StoredSchedule>> {
        reply!(self, Call::Schedules, Schedules)
    }

    /// Enqueues, in one transaction, every schedule's due slot at `now` (its latest slot at or
    /// before `now`, or with [`Missed::All`](crate::Missed::All) every slot missed since the
    /// last one enqueued) as the job `name@YYYY-MM-DDTHH:MM:SSZ`, and answers the ids it added.
    /// A slot whose job exists already (another worker was first) is not added again and not
    /// answered, so however many callers race, each slot's job is enqueued once. The workers
    /// call this as they tick. [`Call::answer_by_default`] has no schedules, so nothing is
    /// due.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("tick", "*/5 * * * *"))?;
    /// assert_eq!(leases.enqueue_due(601.0)?, ["tick@1970-01-01T00:10:00Z"]);
    /// assert_eq!(leases.enqueue_due(602.0)?, Vec::<String>::new());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn enqueue_due(&self, now: f64) -> Result<Vec<String>> {
        reply!(self, Call::EnqueueDue { now }, Enqueued)
    }

    /// Contract `claim_many`: `claim` for every owner at once, answers in input order.
    ///
    /// [`Call::answer_by_default`] claims one owner after the other on the store's one
    /// connection, which gives the same answers without the concurrency; the native backends run
    /// it with one thread and connection per owner.
    fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        let owners = owners.iter().map(|owner| Cow::Borrowed(*owner)).collect();
        let call = Call::ClaimMany {
            job: job.into(),
            owners,
            now,
            ttl,
        };
        reply!(self, call, Fences)
    }

    /// Fenced writes (docs/contract.md section 8): runs `statements` (your own tables only,
    /// placeholders `$1`, `$2`, ...) in the transaction that checks the lease with `renew`'s
    /// checks and reasons, then `finish`es, and commits only while the lease is current; all or
    /// nothing. A write to `jobs` or a `leasefence_*` table is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument), a failing statement a storage
    /// error; nothing changes either way.
    ///
    /// ```
    /// use leasefence::{Finish, Leases, LeaseStore, Statement};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE out(v)", []).unwrap();
    /// let leases: &dyn Leases = &store;
    /// leases.enqueue("j")?;
    /// let lease = leases.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let write = [Statement::new("INSERT INTO out VALUES ($1)", [1.into()])];
    /// assert!(leases.fenced(&lease, 1.0, &write, Finish::KeepLease)?.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn fenced(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        let (lease, statements) = (Cow::Borrowed(lease), Cow::Borrowed(statements));
        let call = Call::Fenced {
            lease,
            now,
            statements,
            finish,
        };
        reply!(self, call, Outcome)
    }

    /// Fenced writes with a closure (docs/contract.md section 8), on any backend: `work` runs in
    /// the transaction that then checks the lease with `renew`'s checks and reasons (or
    /// completes the job, with [`Finish::Complete`]) and commits only while the lease is current;
    /// all or nothing. It gets the backend-neutral [`FencedHandle`]; an error it returns rolls
    /// back and is returned. Object-safe; [`fenced_value`] passes a value out of the closure.
    ///
    /// ```
    /// use leasefence::{Finish, Leases, LeaseStore};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE out(v)", []).unwrap();
    /// let leases: &dyn Leases = &store;
    /// leases.enqueue("j")?;
    /// let lease = leases.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let wrote = leases.fenced_with(&lease, 1.0, Finish::KeepLease, &mut |tx| {
    ///     tx.execute("INSERT INTO out VALUES ($1)", &[1.into()]).map(drop)
    /// })?;
    /// assert!(wrote.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> Result<()>,
    ) -> Result<Outcome<()>>;
}

/// [`Leases::fenced_with`] with a closure that answers a value: `Outcome::Granted` carries it when
/// the write committed.
///
/// ```
/// use leasefence::{fenced_value, Finish, Leases, LeaseStore, SqlValue};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("j")?;
/// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
/// let read = fenced_value(&store, &lease, 1.0, Finish::KeepLease, |tx| {
///     tx.query("SELECT 7 AS n", &[])
/// })?;
/// assert_eq!(read.granted().unwrap().get(0, "n"), Some(&SqlValue::Integer(7)));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn fenced_value<L: Leases + ?Sized, T>(
    store: &L,
    lease: &Lease,
    now: f64,
    finish: Finish,
    work: impl FnOnce(&mut dyn FencedHandle) -> Result<T>,
) -> Result<Outcome<T>> {
    let mut work = Some(work);
    let mut value = None;
    let outcome = store.fenced_with(lease, now, finish, &mut |tx| {
        let work = work.take().ok_or_else(|| Error::Internal {
            message: "a fenced closure was called twice".into(),
        })?;
        value = Some(work(tx)?);
        Ok(())
    })?;
    Ok(match outcome {
        Outcome::Granted(()) => Outcome::Granted(value.ok_or_else(|| Error::Internal {
            message: "a fenced write committed without running its closure".into(),
        })?),
        Outcome::Rejected(reason) => Outcome::Rejected(reason),
    })
}

/// The answers of a store that cannot run a call itself (the defaults of the trait).
impl Call<'_> {
    /// What a store answers that cannot do this call itself, for the `_` arm of an
    /// [`execute`](Leases::execute): a round is the two calls through `store`, `claim_many` one
    /// owner's claim after the other, a store without schedules keeps none (refuses to store
    /// one, has none due), one that cannot look ahead answers no due time (its workers poll);
    /// any other call is an error that names it.
    ///
    /// ```
    /// use leasefence::{Call, Leases, LeaseStore, Reply};
    /// let store = LeaseStore::open_in_memory()?;
    /// let Reply::Schedules(none) = Call::Schedules.answer_by_default(&store)? else { unreachable!() };
    /// assert!(none.is_empty());
    /// assert!(Call::FenceFloor.answer_by_default(&store).is_err());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn answer_by_default(self, store: &(impl Leases + ?Sized)) -> Result<Reply> {
        Ok(match self {
            Call::CompleteThenClaim {
                completions,
                queues,
                owner,
                claim,
                now,
                ttl,
            } => {
                let completed = store.complete_many(&completions, now)?;
                let names = queues.names();
                let claimed = store.claim_next_many_in(names.as_deref(), &owner, claim, now, ttl);
                Reply::Round(RoundAnswer { completed, claimed })
            }
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => {
                LeaseWindow::new(now, ttl)?;
                Reply::Fences(
                    owners
                        .iter()
                        .map(|owner| store.claim(&job, owner, now, ttl))
                        .collect::<Result<_>>()?,
                )
            }
            Call::Schedule { schedule } => {
                crate::rules::schedule::check(&schedule)?;
                return Err(Error::invalid(
                    "schedule",
                    format!(
                        "this store ({store:?}) keeps no schedules; use an SQLite or \
                         PostgreSQL store"
                    ),
                ));
            }
            Call::Unschedule { .. } => Reply::Bool(false),
            Call::Schedules => Reply::Schedules(Vec::new()),
            Call::EnqueueDue { now } => {
                crate::rules::schedule::now_seconds(now)?;
                Reply::Enqueued(Vec::new())
            }
            Call::NextDue { queues } => {
                crate::rules::queues::check_queues(queues.names().as_deref())?;
                Reply::NextDue(None)
            }
            call => {
                let name = call.name();
                return Err(Error::invalid(
                    name,
                    format!(
                        "this store ({store:?}) does not run {name}; use a store that does (an \
                         SQLite or PostgreSQL store), or run it in the store's Leases::execute"
                    ),
                ));
            }
        })
    }
}

//! [`Leases`]: the contract as a small storage trait, so one API runs on an SQLite file or on a
//! PostgreSQL server, chosen when the store is opened ([`open`](crate::open)). The trait alone:
//! its implementations live with their backends (`sqlite/leases.rs`, `postgres/store.rs`).
//!
//! The trait is the whole surface the rest of the crate (the JSON-lines protocol, the CLI) needs,
//! and every backend answers with the same crate types ([`Outcome`], [`Reason`](crate::Reason),
//! [`JobState`], [`ClaimedJob`]), so a caller cannot tell the backends apart by their answers.
//! [`LeaseStore`](crate::LeaseStore) (SQLite) implements it by delegating to its own methods;
//! `PgStore` (feature `postgres`) implements it on a server.

use crate::batch::{LeaseCompletion, NewJob, RoundAnswer, WorkerRound};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::fenced::{FencedHandle, Finish, Statement};
use crate::rules::LeaseWindow;
use crate::schedule::{Schedule, StoredSchedule};

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
    /// Creates the storage (the `jobs` table and what the backend needs beside it) if missing;
    /// never touches existing rows. Opening already does this.
    fn init(&self) -> Result<()>;

    /// Adds a job with no lease; `false`, changing nothing, when the id exists.
    fn enqueue(&self, job: &str) -> Result<bool> {
        self.enqueue_with(job, None, None)
    }

    /// Contract `enqueue` with its options (section 7): not claimable before `run_at`, carrying
    /// `payload`; `false`, changing nothing, when the id exists.
    fn enqueue_with(&self, job: &str, run_at: Option<f64>, payload: Option<&str>) -> Result<bool>;

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
    fn enqueue_job(&self, job: &NewJob) -> Result<bool>;

    /// The stored row of `job`, read afresh; `None` when there is no such job.
    fn state(&self, job: &str) -> Result<Option<JobState>>;

    /// Every job, in insertion order.
    fn jobs(&self) -> Result<Vec<JobState>>;

    /// Contract `claim`: a new lease for `ttl` seconds from `now`, answered with its fence.
    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>>;

    /// Contract `renew`: extends the caller's live `lease` to `now + ttl`.
    fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>>;

    /// Contract `complete`: stores the result and marks the job done, for the current live lease.
    fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>>;

    /// Contract `release`: gives the lease up early; the fence is kept.
    fn release(&self, lease: &Lease) -> Result<Outcome<()>>;

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
    ) -> Result<Option<ClaimedJob>>;

    /// Contract `fail` (section 7): for the current live lease, retry at `retry_at` or (`None`)
    /// make the job dead; the error is recorded.
    fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>>;

    /// Contract `revive` (section 7): a dead job becomes claimable at `now`, its fence kept.
    fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>>;

    /// Contract `inspect` (section 7): row, attempts, dead mark, payload and failures.
    fn inspect(&self, job: &str) -> Result<Option<Inspection>>;

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
    fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts>;

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
    fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage>;

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
    fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>>;

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
    fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>>;

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
    fn prune(&self, prune: &crate::Prune) -> Result<u64>;

    /// The fence floor (section 13): the highest fence of any job this store ever pruned, where
    /// every job inserted from now on starts; 0 for a store that never pruned.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// assert_eq!(leases.fence_floor()?, 0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn fence_floor(&self) -> Result<i64>;

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
    fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>>;

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
    fn enqueue_many_with(&self, jobs: &[NewJob], statements: &[Statement]) -> Result<Vec<bool>>;

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
    ) -> Result<Vec<ClaimedJob>>;

    /// When an idle worker serving `queues` (`None`: every queue) has something to look at
    /// again without being woken (docs/contract.md section 11, waking): the earliest `until` of
    /// an open job of those queues (not done, not dead), due already or not; `None` when there
    /// is none. Index probes only, no scan. The default answers `None` (the worker then polls).
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
        crate::rules::queues::check_queues(queues)?;
        Ok(None)
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
    fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>>;

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
    fn complete_many(&self, completions: &[LeaseCompletion], now: f64) -> Result<Vec<Outcome<()>>>;

    /// A worker's round (docs/contract.md section 10): [`complete_many`](Self::complete_many) of
    /// the round's completions, then [`claim_next_many_in`](Self::claim_next_many_in) for the
    /// slots they freed. On SQLite and PostgreSQL both are one transaction, so a round pays one
    /// commit, not two; elsewhere (the default) they are the two calls. An `Err` means no
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
        let completed = self.complete_many(round.completions, round.now)?;
        let claimed =
            self.claim_next_many_in(round.queues, round.owner, round.claim, round.now, round.ttl);
        Ok(RoundAnswer { completed, claimed })
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
    ) -> Result<Vec<Outcome<()>>>;

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
    fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>>;

    /// Recurring jobs (section 11): stores `schedule`, replacing one of the same name (which
    /// keeps its latest slot enqueued, so scheduling again at every start changes nothing due).
    /// A bad name, cron pattern, time zone or queue is
    /// [`Error::InvalidArgument`](crate::Error::InvalidArgument) and changes nothing.
    ///
    /// The default refuses: a store that cannot keep schedules says so. Both of this crate's
    /// backends keep them.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("nightly", "0 2 * * *").tz("America/New_York"))?;
    /// assert!(leases.schedule(&Schedule::new("bad", "0 25 * * *")).is_err());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn schedule(&self, schedule: &Schedule) -> Result<()> {
        crate::rules::schedule::check(schedule)?;
        Err(Error::invalid(
            "schedule",
            format!("this store ({self:?}) keeps no schedules; use an SQLite or PostgreSQL store"),
        ))
    }

    /// Removes the schedule `name`: `true`, or `false` when there was none. Jobs already
    /// enqueued for it stay. The default has none to remove.
    ///
    /// ```
    /// use leasefence::{Leases, LeaseStore, Schedule};
    /// let leases: &dyn Leases = &LeaseStore::open_in_memory()?;
    /// leases.schedule(&Schedule::new("tick", "* * * * *"))?;
    /// assert_eq!((leases.unschedule("tick")?, leases.unschedule("tick")?), (true, false));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn unschedule(&self, name: &str) -> Result<bool> {
        let _ = name;
        Ok(false)
    }

    /// Every stored schedule, by name, with its latest slot enqueued. The default has none.
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
        Ok(Vec::new())
    }

    /// Enqueues, in one transaction, every schedule's due slot at `now` (its latest slot at or
    /// before `now`, or with [`Missed::All`](crate::Missed::All) every slot missed since the
    /// last one enqueued) as the job `name@YYYY-MM-DDTHH:MM:SSZ`, and answers the ids it added.
    /// A slot whose job exists already (another worker was first) is not added again and not
    /// answered, so however many callers race, each slot's job is enqueued once. The workers
    /// call this as they tick. The default has no schedules, so nothing is due.
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
        crate::rules::schedule::now_seconds(now)?;
        Ok(Vec::new())
    }

    /// Contract `claim_many`: `claim` for every owner at once, answers in input order.
    ///
    /// This default claims one owner after the other on the store's one connection, which gives
    /// the same answers without the concurrency; the native backends override it with one thread
    /// and connection per owner.
    fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        claim_in_turn(self, job, owners, now, ttl)
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
    ) -> Result<Outcome<()>>;

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

/// `claim_many` on one connection: each owner's claim in turn. Same answers as the concurrent
/// version (exactly one winner on a claimable job), without the concurrency.
fn claim_in_turn<L: Leases + ?Sized>(
    store: &L,
    job: &str,
    owners: &[&str],
    now: f64,
    ttl: f64,
) -> Result<Vec<Outcome<Fence>>> {
    LeaseWindow::new(now, ttl)?;
    owners
        .iter()
        .map(|owner| store.claim(job, owner, now, ttl))
        .collect()
}

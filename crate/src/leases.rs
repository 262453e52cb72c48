//! [`Leases`]: the contract as a small storage trait, so one API runs on an SQLite file or on a
//! PostgreSQL server, chosen when the store is opened ([`open`]).
//!
//! Like redb's storage backends: the trait is the whole surface the rest of the crate (the
//! JSON-lines protocol, the CLI) needs, and every backend answers with the same crate types
//! ([`Outcome`], [`Reason`](crate::Reason), [`JobState`], [`ClaimedJob`]), so a caller cannot
//! tell the backends apart by their answers. [`LeaseStore`] (SQLite) implements it by delegating
//! to its own methods; `PgStore` (feature `postgres`) implements it on a server.

use crate::error::Result;
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome};
use crate::store::LeaseStore;

/// The lease contract (docs/contract.md sections 2 and 3) on some storage: every operation of
/// [`LeaseStore`], with the same arguments, checks and answers.
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
/// fn first_come(store: &dyn Leases) -> leasefence::Result<Option<i64>> {
///     store.enqueue("job")?;
///     Ok(store.claim("job", "me", 0.0, 30.0)?.granted())
/// }
/// assert_eq!(first_come(&LeaseStore::open_in_memory()?)?, Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub trait Leases: std::fmt::Debug + Send {
    /// Creates the storage (the `jobs` table and what the backend needs beside it) if missing;
    /// never touches existing rows. Opening already does this.
    fn init(&self) -> Result<()>;

    /// Adds a job with no lease; `false`, changing nothing, when the id exists.
    fn enqueue(&self, job: &str) -> Result<bool>;

    /// The stored row of `job`, read afresh; `None` when there is no such job.
    fn state(&self, job: &str) -> Result<Option<JobState>>;

    /// Every job, in insertion order.
    fn jobs(&self) -> Result<Vec<JobState>>;

    /// Contract `claim`: a new lease for `ttl` seconds from `now`, answered with its fence.
    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>>;

    /// Contract `renew`: extends the caller's live lease to `now + ttl`.
    fn renew(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> Result<Outcome<()>>;

    /// Contract `complete`: stores the result and marks the job done, for the current live lease.
    fn complete(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Result<Outcome<()>>;

    /// Contract `release`: gives the lease up early; the fence is kept.
    fn release(&self, job: &str, owner: &str, fence: Fence) -> Result<Outcome<()>>;

    /// Contract `claim_next` (docs/contract.md section 3): claims the claimable job with the
    /// smallest `until`, then the earliest enqueued.
    fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>>;

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
    crate::contract::lease_end(now, ttl)?;
    owners
        .iter()
        .map(|owner| store.claim(job, owner, now, ttl))
        .collect()
}

/// SQLite: every method is the store's own method of the same name.
impl Leases for LeaseStore {
    fn init(&self) -> Result<()> {
        LeaseStore::init(self)
    }

    fn enqueue(&self, job: &str) -> Result<bool> {
        LeaseStore::enqueue(self, job)
    }

    fn state(&self, job: &str) -> Result<Option<JobState>> {
        LeaseStore::state(self, job)
    }

    fn jobs(&self) -> Result<Vec<JobState>> {
        LeaseStore::jobs(self)
    }

    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        LeaseStore::claim(self, job, owner, now, ttl)
    }

    fn renew(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> Result<Outcome<()>> {
        LeaseStore::renew(self, job, owner, fence, now, ttl)
    }

    fn complete(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Result<Outcome<()>> {
        LeaseStore::complete(self, job, owner, fence, now, result)
    }

    fn release(&self, job: &str, owner: &str, fence: Fence) -> Result<Outcome<()>> {
        LeaseStore::release(self, job, owner, fence)
    }

    fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>> {
        LeaseStore::claim_next(self, owner, now, ttl)
    }

    /// Natively on a file: one OS thread and connection per owner ([`LeaseStore::claim_many`]).
    /// In memory there is only this connection, so the claims take turns on it.
    #[cfg(not(target_arch = "wasm32"))]
    fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        match self.path() {
            Some(_) => LeaseStore::claim_many(self, job, owners, now, ttl),
            None => claim_in_turn(self, job, owners, now, ttl),
        }
    }
}

/// Whether `target` names a PostgreSQL server (`postgres://...` or `postgresql://...`, scheme
/// case-insensitive) rather than an SQLite file. To use a file whose path starts like that,
/// write it as `./postgres://...`.
///
/// ```
/// assert!(leasefence::is_postgres_url("postgres://app@db.internal/queue"));
/// assert!(leasefence::is_postgres_url("postgresql://localhost"));
/// assert!(!leasefence::is_postgres_url("queue.db"));
/// ```
pub fn is_postgres_url(target: &str) -> bool {
    ["postgres://", "postgresql://"].iter().any(|scheme| {
        target
            .get(..scheme.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(scheme))
    })
}

/// Opens the store named by `target` with the default [`OpenOptions`](crate::OpenOptions): a
/// file path means an SQLite file (created if missing), a `postgres://` or `postgresql://` URL
/// means a PostgreSQL server (feature `postgres`; the `jobs` table and its companions are created
/// in the connection's current schema if missing).
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let store = leasefence::open(dir.path().join("queue.db"))?;
/// assert!(store.enqueue("job")?);
/// assert_eq!(store.claim("job", "me", 0.0, 30.0)?.granted(), Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub fn open(target: impl AsRef<std::path::Path>) -> Result<Box<dyn Leases>> {
    open_with(target, &crate::OpenOptions::new())
}

/// [`open`] with options. For SQLite they are used as by
/// [`OpenOptions::open`](crate::OpenOptions::open); on PostgreSQL the busy timeout becomes the
/// session's `lock_timeout` and the connect timeout (unless the URL sets `connect_timeout`), and
/// the journal and locking options, which are SQLite's, do not apply.
///
/// ```
/// let dir = tempfile::tempdir().unwrap();
/// let options = leasefence::OpenOptions::new().busy_timeout(std::time::Duration::from_secs(2));
/// let store = leasefence::open_with(dir.path().join("queue.db"), &options)?;
/// assert_eq!(store.state("nothing")?, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub fn open_with(
    target: impl AsRef<std::path::Path>,
    options: &crate::OpenOptions,
) -> Result<Box<dyn Leases>> {
    let target = target.as_ref();
    match target.to_str().filter(|t| is_postgres_url(t)) {
        Some(url) => open_postgres(url, options),
        None => Ok(Box::new(options.open(target)?)),
    }
}

#[cfg(all(feature = "postgres", not(target_arch = "wasm32")))]
fn open_postgres(url: &str, options: &crate::OpenOptions) -> Result<Box<dyn Leases>> {
    Ok(Box::new(crate::postgres::PgStore::connect_with(
        url, options,
    )?))
}

#[cfg(all(not(feature = "postgres"), not(target_arch = "wasm32")))]
fn open_postgres(url: &str, _options: &crate::OpenOptions) -> Result<Box<dyn Leases>> {
    Err(crate::Error::Open {
        path: crate::error::redact_url(url),
        problem: "this build of leasefence has no PostgreSQL support; build it with the \
                  `postgres` feature (on by default)"
            .into(),
    })
}

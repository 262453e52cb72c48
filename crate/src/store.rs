//! [`LeaseStore`]: one connection, the whole contract, typed answers.

use rusqlite::Connection;

use crate::contract;
use crate::error::{Error, Result};
use crate::options::{Journal, OpenOptions};
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome};

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
/// let a = store.claim("invoice-42", "A", 0.0, 10.0)?.granted().unwrap();
/// // The lease expires; worker B claims and completes the job.
/// let b = store.claim("invoice-42", "B", 12.0, 10.0)?.granted().unwrap();
/// assert!(store.complete("invoice-42", "B", b, 13.0, Some("B's result"))?.is_granted());
/// // A wakes up and tries to write: the store refuses.
/// let late = store.complete("invoice-42", "A", a, 14.0, Some("A's result"))?;
/// assert_eq!(late.reason(), Some(&Reason::Done));
/// assert_eq!(store.state("invoice-42")?.unwrap().result.as_deref(), Some("B's result"));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub struct LeaseStore {
    pub(crate) conn: Connection,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) path: Option<std::path::PathBuf>,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) options: OpenOptions,
}

impl LeaseStore {
    /// Wraps a connection that the caller opened (any VFS, any pragmas), after checking that the
    /// database is a leasefence database and creating the table if it is missing. This is how the
    /// wasm builds plug in their own VFS.
    ///
    /// ```
    /// let conn = rusqlite::Connection::open_in_memory().unwrap();
    /// let store = leasefence::LeaseStore::from_connection(conn, "memory")?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn from_connection(conn: Connection, label: &str) -> Result<Self> {
        if !contract::check_schema(&conn, label)? {
            contract::create_schema(&conn)?;
        }
        Ok(LeaseStore {
            conn,
            path: None,
            options: OpenOptions::default(),
        })
    }

    /// Finishes opening a connection that a backend just opened on a file: checks the file by
    /// reading only, then (now known to be ours) sets the journal and durability and creates the
    /// schema. Every target's `open` ends here.
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    pub(crate) fn set_up(
        #[cfg_attr(target_arch = "wasm32", allow(unused_mut))] mut conn: Connection,
        label: &str,
        options: &OpenOptions,
    ) -> Result<Self> {
        // One busy handler per connection: natively our patient one, in wasm SQLite's own
        // (no monotonic clock there to bound the wait with).
        #[cfg(not(target_arch = "wasm32"))]
        conn.busy_handler(Some(patient_busy_handler(options.busy_timeout)))
            .map_err(Error::storage("open"))?;
        #[cfg(target_arch = "wasm32")]
        conn.busy_timeout(options.busy_timeout)
            .map_err(Error::storage("open"))?;
        let ready = contract::check_schema(&conn, label)?;
        // Only now, with the file known to be SQLite of the right shape (or empty), write to it.
        let journal = match options.journal {
            Journal::Wal => "WAL",
            Journal::Rollback => "DELETE",
        };
        let current: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(Error::storage("open"))?;
        if !ready || !current.eq_ignore_ascii_case(journal) {
            // First adoption of this file: we are about to write to it, so make sure it is
            // sound first. This full check runs once per file, not on every open.
            refuse_damaged(&conn, label)?;
        }
        let mode = set_journal_mode(&conn, &current, journal, options.busy_timeout)?;
        if !mode.eq_ignore_ascii_case(journal) {
            return Err(Error::Open {
                path: label.to_string(),
                problem: format!(
                    "SQLite refused journal_mode {journal} (the file stays in {mode} mode); \
                     another program may hold it open in that mode"
                ),
            });
        }
        // Every commit is durable before claim() returns its fence; otherwise a power loss could
        // roll back a claim whose fence a worker already holds, and the fence be handed out again.
        // WAL: FULL syncs the WAL at every commit (with NORMAL, commits reach the disk only at
        // checkpoints). Rollback journal: the journal's unlink *is* the commit, and only EXTRA
        // makes SQLite sync the directory after it; under FULL the unlink can be lost, the journal
        // come back, and the next opener roll the acknowledged transaction back.
        let synchronous = match options.journal {
            Journal::Wal => "FULL",
            Journal::Rollback => "EXTRA",
        };
        conn.pragma_update(None, "synchronous", synchronous)
            .map_err(Error::storage("open"))?;
        if !ready {
            contract::create_schema(&conn)?;
        }
        Ok(LeaseStore {
            conn,
            path: None,
            options: options.clone(),
        })
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

    /// Creates the table if it is missing (the seed's `init_db`). Opening already does this, so
    /// this is only needed after someone dropped the table.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.init()?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn init(&self) -> Result<()> {
        contract::create_schema(&self.conn)
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
        contract::enqueue(&self.conn, job)
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
        contract::state(&self.conn, job)
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
        contract::all_jobs(&self.conn)
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
        contract::claim(&self.conn, job, owner, now, ttl)
    }

    /// Extends the caller's live lease to `now + ttl`. An expired lease is never revived.
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let fence = store.claim("job", "a", 0.0, 10.0)?.granted().unwrap();
    /// assert!(store.renew("job", "a", fence, 5.0, 10.0)?.is_granted());
    /// let late = store.renew("job", "a", fence, 15.0, 10.0)?;
    /// assert_eq!(late.reason(), Some(&Reason::Expired { until: 15.0 }));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn renew(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> Result<Outcome<()>> {
        contract::renew(&self.conn, job, owner, fence, now, ttl)
    }

    /// Stores `result` and marks the job done, only for the current live lease. When rejected,
    /// the stored result is untouched.
    ///
    /// ```
    /// use leasefence::Reason;
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let old = store.claim("job", "a", 0.0, 10.0)?.granted().unwrap();
    /// store.claim("job", "b", 20.0, 10.0)?;
    /// let stale = store.complete("job", "a", old, 21.0, Some("late"))?;
    /// assert_eq!(stale.reason(), Some(&Reason::StaleFence { current: 2 }));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn complete(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Result<Outcome<()>> {
        contract::complete(&self.conn, job, owner, fence, now, result)
    }

    /// Gives the lease up early (`owner = NULL`, `until = 0`) so that another worker can claim
    /// at once. The fence is kept: the released token stays stale forever.
    ///
    /// ```
    /// let store = leasefence::LeaseStore::open_in_memory()?;
    /// store.enqueue("job")?;
    /// let fence = store.claim("job", "a", 0.0, 60.0)?.granted().unwrap();
    /// assert!(store.release("job", "a", fence)?.is_granted());
    /// assert_eq!(store.claim("job", "b", 1.0, 60.0)?.granted(), Some(2));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn release(&self, job: &str, owner: &str, fence: Fence) -> Result<Outcome<()>> {
        contract::release(&self.conn, job, owner, fence)
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
        contract::claim_next(&self.conn, owner, now, ttl)
    }

    /// The underlying connection, for reading with your own SQL. Writing to `jobs` behind the
    /// store's back voids the contract.
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

impl std::fmt::Debug for LeaseStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseStore")
            .field("path", &self.path)
            .finish()
    }
}

/// Switches the journal mode from `current` (read by the caller) only if it differs. Switching
/// takes an exclusive lock, and when several processes open a new file at once SQLite answers
/// `busy` to the switch without calling the busy handler (waiting there could deadlock), so the
/// wait is ours, bounded by the timeout.
fn set_journal_mode(
    conn: &Connection,
    current: &str,
    journal: &str,
    timeout: std::time::Duration,
) -> Result<String> {
    let read = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, String>(0));
    if current.eq_ignore_ascii_case(journal) {
        return Ok(current.to_string());
    }
    let mut waited_ms = 0u128;
    let mut pause_ms = 1;
    loop {
        match read(&format!("PRAGMA journal_mode = {journal}")) {
            Ok(mode) => return Ok(mode),
            Err(err) if crate::error::is_busy(&err) && waited_ms < timeout.as_millis() => {
                // SQLite's own sleep: it works on every target, wasm included.
                // SAFETY: sqlite3_sleep takes a plain integer and has no preconditions.
                unsafe { rusqlite::ffi::sqlite3_sleep(pause_ms) };
                waited_ms += pause_ms as u128;
                pause_ms = (pause_ms * 2).min(50);
            }
            Err(err) => return Err(Error::storage("open")(err)),
        }
    }
}

/// Refuses a damaged file (truncated, corrupted pages) before writing to it.
fn refuse_damaged(conn: &Connection, label: &str) -> Result<()> {
    let damaged = |problem: String| Error::NotLeasefenceDatabase {
        path: label.to_string(),
        problem,
    };
    let mut stmt = conn
        .prepare("PRAGMA quick_check(5)")
        .map_err(|e| damaged(format!("SQLite cannot check it: {e}")))?;
    let findings = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| damaged(format!("SQLite finds it damaged: {e}")))?;
    if findings != ["ok"] {
        return Err(damaged(format!(
            "SQLite finds it damaged: {}",
            findings.join("; ")
        )));
    }
    Ok(())
}

/// A busy handler for many workers on one file. SQLite's default sleeps 1, 2, 5, ... 100 ms
/// between tries, so a waiter sleeps through most moments the lock is free, and under contention
/// throughput collapses. This one retries after short, growing, jittered sleeps (50 us up to
/// 2 ms) until `timeout` has passed since the first try of this wait.
#[cfg(not(target_arch = "wasm32"))]
fn patient_busy_handler(timeout: std::time::Duration) -> impl FnMut(i32) -> bool + Send + 'static {
    use std::time::{Duration, Instant};
    let mut started = Instant::now();
    move |count| {
        let now = Instant::now();
        if count == 0 {
            started = now;
        }
        if now.duration_since(started) >= timeout {
            return false;
        }
        let base = (50u64 << count.clamp(0, 6)).min(2_000);
        // Jitter from the clock's low bits keeps waiters from retrying in lockstep.
        let jitter = u64::from(now.duration_since(started).subsec_nanos()) % (base / 2 + 1);
        std::thread::sleep(Duration::from_micros(base + jitter));
        true
    }
}

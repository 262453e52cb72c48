//! Native backend: a file opened with the bundled SQLite, tuned for many workers on one file.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use rusqlite::{Connection, OpenFlags};

use crate::contract;
use crate::error::{Error, Result};
use crate::options::{mark_shared_with_node, Journal, Locking, OpenOptions, SHARED_WITH_NODE};
use crate::outcome::{Fence, Outcome};
use crate::store::LeaseStore;

impl OpenOptions {
    /// Opens (creating if missing) the database file at `path`.
    ///
    /// A file that is not SQLite, or whose `jobs` table has another shape, is refused with
    /// [`Error::NotLeasefenceDatabase`] before anything is written to it.
    ///
    /// ```no_run
    /// let store = leasefence::OpenOptions::new().open("queue.db")?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(&self, path: impl AsRef<Path>) -> Result<LeaseStore> {
        let path = path.as_ref();
        let label = path.display().to_string();
        let open_err = |problem: String| Error::Open {
            path: label.clone(),
            problem,
        };
        if path.as_os_str().is_empty() {
            return Err(Error::invalid(
                "path",
                "is empty; give a file path for the database",
            ));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.is_dir() {
                return Err(open_err(format!(
                    "directory {} does not exist; create it first",
                    dir.display()
                )));
            }
        }
        refuse_foreign_header(path, &label)?;
        // No URI parsing: a path is a path, never `file:...?mode=` options.
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open = |locking: Locking| {
            let conn = match locking {
                Locking::Posix => Connection::open_with_flags(path, flags),
                Locking::Dotfile => {
                    Connection::open_with_flags_and_vfs(path, flags, "unix-dotfile")
                }
            }
            .map_err(|err| open_err(format!("{err}; check the path and its permissions")))?;
            if conn.is_readonly("main").unwrap_or(false) {
                return Err(open_err(
                    "SQLite could only open it read-only; make the file and its directory \
                     writable"
                        .into(),
                ));
            }
            Ok(conn)
        };
        // A file that Node processes share is locked with dot files, which POSIX locks do not
        // see: follow the file's own protocol, read from its header before taking any lock.
        let locking = match self.locking {
            Locking::Posix if shared_with_node(path) => Locking::Dotfile,
            chosen => chosen,
        };
        if locking == Locking::Dotfile {
            // After a power loss a dot-file lock can outlive every process: clear such a one
            // (the rules are in stale_lock.rs), so that native openers come back by themselves.
            crate::stale_lock::clear_lock_from_before_boot(path);
        }
        let conn = open(locking)?;
        let options = match locking {
            Locking::Posix => self.clone(),
            Locking::Dotfile => self.clone().locking(locking).journal(Journal::Rollback),
        };
        let mut store = LeaseStore::set_up(conn, &label, &options)?;
        if locking == Locking::Dotfile {
            mark_shared_with_node(store.connection())?;
        }
        store.path = Some(path.to_path_buf());
        Ok(store)
    }
}
/// Whether the file's header carries the "shared with Node" mark.
///
/// Read through an `immutable` connection: it takes no lock and never looks for a hot journal, so
/// it cannot roll back a transaction that a Node process (invisible to POSIX locks) is writing.
/// Going through SQLite (not `std::fs`) matters too: SQLite defers closing descriptors while this
/// process holds locks on the file, where a plain close would drop those locks.
fn shared_with_node(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    if !path.is_file() {
        return false;
    }
    let mut uri = String::from("file:");
    for c in text.chars() {
        match c {
            '%' => uri.push_str("%25"),
            '?' => uri.push_str("%3F"),
            '#' => uri.push_str("%23"),
            _ => uri.push(c),
        }
    }
    uri.push_str("?immutable=1");
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    Connection::open_with_flags(uri, flags)
        .and_then(|conn| conn.query_row("PRAGMA application_id", [], |row| row.get::<_, i32>(0)))
        .map(|id| id == SHARED_WITH_NODE)
        .unwrap_or(false)
}

/// Refuses a non-empty file too short to be SQLite, before SQLite opens it: SQLite itself treats
/// a 1-byte file as empty and would overwrite it with a new database. Longer foreign files are
/// caught by SQLite's own header check on the first read.
///
/// Only `stat` here, never open+close: closing any descriptor of a file drops every POSIX lock
/// this process holds on it, which would silently unlock other connections to the same database.
fn refuse_foreign_header(path: &Path, label: &str) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(()); // missing: it will be created
    };
    // The smallest SQLite database is one 512-byte page.
    if meta.is_file() && meta.len() > 0 && meta.len() < 512 {
        return Err(Error::NotLeasefenceDatabase {
            path: label.to_string(),
            problem: format!(
                "not an SQLite database: {} bytes, less than one 512-byte page",
                meta.len()
            ),
        });
    }
    Ok(())
}

/// The most owners one `claim_many` runs at once (one OS thread and connection each); more is
/// an invalid argument.
///
/// ```
/// let owners: Vec<String> = (0..=leasefence::MAX_CLAIM_MANY_OWNERS).map(|i| i.to_string()).collect();
/// let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
/// let dir = tempfile::tempdir().unwrap();
/// let err = leasefence::seed::claim_many(dir.path().join("q.db"), "job", &owners, 0.0, 5.0).unwrap_err();
/// assert_eq!(err.code(), "invalid_argument");
/// ```
pub const MAX_CLAIM_MANY_OWNERS: usize = 1024;

impl LeaseStore {
    /// Opens (creating if missing) the database file at `path` with the default
    /// [`OpenOptions`].
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = leasefence::LeaseStore::open(dir.path().join("queue.db"))?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open(path)
    }

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
        claim_many_on(&self.options, path, job, owners, now, ttl)
    }

    /// The file this store was opened on; `None` in memory.
    ///
    /// ```
    /// assert_eq!(leasefence::LeaseStore::open_in_memory()?.path(), None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}

/// Validates, then runs one claim per owner on its own thread and connection, all released at
/// once by a barrier so they really race.
pub(crate) fn claim_many_on(
    options: &OpenOptions,
    path: &Path,
    job: &str,
    owners: &[&str],
    now: f64,
    ttl: f64,
) -> Result<Vec<Outcome<Fence>>> {
    contract::lease_end(now, ttl)?;
    if owners.len() > MAX_CLAIM_MANY_OWNERS {
        return Err(Error::invalid(
            "owners",
            format!(
                "{} owners given; at most {MAX_CLAIM_MANY_OWNERS} run at once",
                owners.len()
            ),
        ));
    }
    let barrier = Arc::new(Barrier::new(owners.len()));
    let path: PathBuf = path.to_path_buf();
    let results: Vec<Result<Outcome<Fence>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = owners
            .iter()
            .map(|owner| {
                let barrier = Arc::clone(&barrier);
                let path = &path;
                scope.spawn(move || {
                    let store = options.open(path);
                    // Wait even when opening failed, so no thread waits forever.
                    barrier.wait();
                    store?.claim(job, owner, now, ttl)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    Err(Error::Internal {
                        message: "a claim_many thread panicked".into(),
                    })
                })
            })
            .collect()
    });
    results.into_iter().collect()
}

/// The seed's module, function for function: each call opens its own connection on `path`, does
/// one operation and closes it. Answers are the seed's plain values; use [`LeaseStore`] for the
/// reasons.
///
/// ```
/// use leasefence::seed;
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("seed.db");
/// seed::init_db(&db)?;
/// assert!(seed::enqueue(&db, "job")?);
/// let fence = seed::claim(&db, "job", "a", 0.0, 10.0)?.unwrap();
/// assert!(seed::complete(&db, "job", "a", fence, 1.0, Some("ok"))?);
/// assert!(seed::state(&db, "job")?.unwrap().done);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub mod seed {
    use super::*;
    use crate::outcome::JobState;

    /// Creates the table if missing; never touches existing rows.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// leasefence::seed::init_db(dir.path().join("q.db"))?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn init_db(path: impl AsRef<Path>) -> Result<()> {
        LeaseStore::open(path)?.init()
    }

    /// Inserts a missing job; `false` when it exists (nothing changes).
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// assert!(leasefence::seed::enqueue(dir.path().join("q.db"), "job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue(path: impl AsRef<Path>, job: &str) -> Result<bool> {
        LeaseStore::open(path)?.enqueue(job)
    }

    /// The stored row, read through a fresh connection; `None` when missing.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// assert_eq!(leasefence::seed::state(dir.path().join("q.db"), "job")?, None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn state(path: impl AsRef<Path>, job: &str) -> Result<Option<JobState>> {
        LeaseStore::open(path)?.state(job)
    }

    /// The new fence, or `None` when the job is missing, done or held.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// leasefence::seed::enqueue(&db, "job")?;
    /// assert_eq!(leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?, Some(1));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim(
        path: impl AsRef<Path>,
        job: &str,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<Fence>> {
        contract::lease_end(now, ttl)?;
        Ok(LeaseStore::open(path)?
            .claim(job, owner, now, ttl)?
            .granted())
    }

    /// Extends a live lease; `false` otherwise.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// leasefence::seed::enqueue(&db, "job")?;
    /// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
    /// assert!(leasefence::seed::renew(&db, "job", "a", f, 1.0, 5.0)?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn renew(
        path: impl AsRef<Path>,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> Result<bool> {
        contract::lease_end(now, ttl)?;
        Ok(LeaseStore::open(path)?
            .renew(job, owner, fence, now, ttl)?
            .is_granted())
    }

    /// Stores the result for the current live lease; `false` otherwise.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// leasefence::seed::enqueue(&db, "job")?;
    /// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
    /// assert!(leasefence::seed::complete(&db, "job", "a", f, 1.0, None)?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn complete(
        path: impl AsRef<Path>,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Result<bool> {
        contract::check_now(now)?;
        Ok(LeaseStore::open(path)?
            .complete(job, owner, fence, now, result)?
            .is_granted())
    }

    /// Gives the lease up, keeping the fence; `false` when owner or fence do not match.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// leasefence::seed::enqueue(&db, "job")?;
    /// let f = leasefence::seed::claim(&db, "job", "a", 0.0, 5.0)?.unwrap();
    /// assert!(leasefence::seed::release(&db, "job", "a", f)?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn release(path: impl AsRef<Path>, job: &str, owner: &str, fence: Fence) -> Result<bool> {
        Ok(LeaseStore::open(path)?
            .release(job, owner, fence)?
            .is_granted())
    }

    /// `claim` for every owner at once, each on its own OS thread and connection; results in
    /// input order, exactly one fence on a claimable job.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let db = dir.path().join("q.db");
    /// leasefence::seed::enqueue(&db, "job")?;
    /// let got = leasefence::seed::claim_many(&db, "job", &["a", "b"], 0.0, 5.0)?;
    /// assert_eq!(got.iter().flatten().count(), 1);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn claim_many(
        path: impl AsRef<Path>,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Option<Fence>>> {
        let outcomes = claim_many_on(&OpenOptions::new(), path.as_ref(), job, owners, now, ttl)?;
        Ok(outcomes.into_iter().map(Outcome::granted).collect())
    }
}

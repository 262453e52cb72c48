//! How a store opens its database: busy timeout and journal mode, on every target.

use std::time::Duration;

/// How SQLite journals writes. Both modes are crash-safe with `synchronous = FULL`.
///
/// ```
/// let opts = leasefence::OpenOptions::new().journal(leasefence::Journal::Rollback);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Journal {
    /// Write-ahead log: readers never block the writer and a commit costs one fsync. Needs a
    /// file system with working shared memory (any local disk; not a network share).
    #[default]
    Wal,
    /// Classic rollback journal (`journal_mode = DELETE`): works everywhere, including where
    /// shared memory does not; a commit costs a few fsyncs.
    Rollback,
}

/// How a [`LeaseStore`](crate::LeaseStore) opens its file.
///
/// ```
/// use std::time::Duration;
/// use leasefence::Leases;
/// let dir = tempfile::tempdir().unwrap();
/// let store = leasefence::OpenOptions::new()
///     .busy_timeout(Duration::from_secs(30))
///     .open(dir.path().join("queue.db"))?;
/// assert!(store.enqueue("job")?);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) journal: Journal,
    pub(crate) locking: Locking,
    pub(crate) write_gate: bool,
    /// Whether a missing file is created (native files only; see [`OpenOptions::create`]).
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) create: bool,
    pub(crate) limits: crate::Limits,
}

/// How processes sharing the file exclude each other.
///
/// ```
/// let opts = leasefence::OpenOptions::new().locking(leasefence::Locking::Dotfile);
/// # let _ = opts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locking {
    /// SQLite's POSIX advisory locks: shared readers, one writer. The native default.
    #[default]
    Posix,
    /// Dot-file locks (`<db>.lock`, holding its owner's record), the protocol the Node package
    /// speaks: one connection at a time, rollback journal; a lock whose process died is broken by
    /// the next opener. Chosen automatically for files that a Node process marked as shared;
    /// choose it yourself to create such a file natively.
    Dotfile,
}

/// `PRAGMA application_id` of a file shared with Node ("LFND"): tells every leasefence opener to
/// use dot-file locking, so native and Node processes exclude each other.
pub(crate) const SHARED_WITH_NODE: i32 = 0x4C46_4E44;

/// Marks the file as shared with Node (idempotent).
#[cfg_attr(not(any(feature = "node", not(web))), allow(dead_code))]
pub(crate) fn mark_shared_with_node(conn: &rusqlite::Connection) -> crate::Result<()> {
    let id: i32 = conn
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(crate::Error::storage("open"))?;
    if id != SHARED_WITH_NODE {
        conn.pragma_update(None, "application_id", SHARED_WITH_NODE)
            .map_err(crate::Error::storage("open"))?;
    }
    Ok(())
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            busy_timeout: Duration::from_secs(10),
            journal: Journal::Wal,
            locking: Locking::Posix,
            write_gate: true,
            create: true,
            limits: crate::Limits::default(),
        }
    }
}

impl OpenOptions {
    /// The defaults: a 10 s busy timeout, the WAL journal, POSIX locking, the write gate.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new();
    /// # let _ = opts;
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// How long an operation waits for another connection's write lock before it fails with a
    /// busy [`Error::Storage`](crate::Error::Storage). Contention waits instead of failing, up to this long.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new().busy_timeout(std::time::Duration::from_secs(1));
    /// # let _ = opts;
    /// ```
    pub fn busy_timeout(mut self, timeout: Duration) -> Self {
        self.busy_timeout = timeout;
        self
    }

    /// The journal mode; see [`Journal`].
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new().journal(leasefence::Journal::Wal);
    /// # let _ = opts;
    /// ```
    pub fn journal(mut self, journal: Journal) -> Self {
        self.journal = journal;
        self
    }

    /// The locking protocol; see [`Locking`]. `Dotfile` implies the rollback journal.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new().locking(leasefence::Locking::Dotfile);
    /// # let _ = opts;
    /// ```
    pub fn locking(mut self, locking: Locking) -> Self {
        self.locking = locking;
        self
    }

    /// Whether writers of a WAL file queue at leasefence's write gate before SQLite's write lock
    /// (on by default; Linux only, and only for [`Journal::Wal`] with [`Locking::Posix`]).
    ///
    /// With the gate, each write transaction first joins a first-come, first-served queue kept
    /// with locks on a side file, `<db>-leasefence-gate`: waiting processes sleep in the kernel
    /// and are woken in turn, instead of each retrying SQLite's lock every few milliseconds, which
    /// collapses with many processes (256 processes on 2 cores: 79-158 jobs/s without the gate,
    /// 885-1,020 with it; on a busier machine 10-22 with busy timeouts); the wait still ends at
    /// the busy timeout. SQLite's own locking stays behind it, so processes without the gate (the
    /// Python seed, older versions, stores with it off) share the file safely. Turn it off for a
    /// file written by a few processes that value raw throughput over fairness: with 8 processes
    /// the hand-over from one sleeping process to the next cost 20-26% of the jobs/s (with a p99
    /// 7-15x lower); docs/decisions/write-gate.md has the measurements.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new().write_gate(false);
    /// # let _ = opts;
    /// ```
    pub fn write_gate(mut self, on: bool) -> Self {
        self.write_gate = on;
        self
    }

    /// Whether [`open`](OpenOptions::open) creates a file that does not exist (on by default).
    /// Off, a missing file is an [`Error::Open`](crate::Error::Open) naming the path and nothing
    /// is made, not even in a race with its deletion (SQLite is asked to open, never to create):
    /// a reader with a mistyped path gets an error, not a new empty database. The CLI's commands
    /// that only read open this way. A PostgreSQL target ignores it.
    ///
    /// ```
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("mistyped.db");
    /// let err = leasefence::OpenOptions::new().create(false).open(&path).unwrap_err();
    /// assert!(err.to_string().contains("does not exist"), "{err}");
    /// assert!(!path.exists());
    /// // An existing database opens as usual.
    /// leasefence::OpenOptions::new().open(&path)?;
    /// leasefence::OpenOptions::new().create(false).open(&path)?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn create(mut self, create: bool) -> Self {
        self.create = create;
        self
    }

    /// The largest payload, result and failure error text the store accepts (docs/contract.md
    /// section 13; defaults 1 MiB, 1 MiB and 64 KiB). A bigger one is `invalid_argument` naming
    /// its size and the limit, and nothing changes. Both backends.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new().limits(leasefence::Limits::default().result(4096));
    /// # let _ = opts;
    /// ```
    pub fn limits(mut self, limits: crate::Limits) -> Self {
        self.limits = limits;
        self
    }
}

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

/// How a [`LeaseStore`] opens its file.
///
/// ```no_run
/// use std::time::Duration;
/// let store = leasefence::OpenOptions::new()
///     .busy_timeout(Duration::from_secs(30))
///     .open("queue.db")?;
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenOptions {
    pub(crate) busy_timeout: Duration,
    pub(crate) journal: Journal,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            busy_timeout: Duration::from_secs(10),
            journal: Journal::Wal,
        }
    }
}

impl OpenOptions {
    /// The defaults: a 10 s busy timeout and the WAL journal.
    ///
    /// ```
    /// let opts = leasefence::OpenOptions::new();
    /// # let _ = opts;
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// How long an operation waits for another connection's write lock before it fails with a
    /// busy [`Error::Storage`]. Contention waits instead of failing, up to this long.
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
}

//! The one error type of the crate.
//!
//! A *rejection* (a claim on a held job, a complete with a stale fence) is not an error: it is an
//! [`Outcome::Rejected`](crate::Outcome) with a [`Reason`](crate::Reason). An [`Error`] means the
//! operation could not be decided at all: the arguments were invalid, or storage failed.

use std::fmt;

/// Why an operation could not be carried out. Nothing was changed in the database.
///
/// Every variant has a stable [`code`](Error::code) (`invalid_argument` or `storage`), the one the
/// JSON-lines protocol and the JavaScript package report. A failing statement of the caller's own
/// in a fenced write is [`Error::Statement`] (code `storage`), never the store's own kinds.
///
/// ```
/// use leasefence::{Error, LeaseStore};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("job-1")?;
/// let err = store.claim("job-1", "worker-a", 0.0, 0.0).unwrap_err();
/// assert!(matches!(err, Error::InvalidArgument { argument: "ttl", .. }));
/// assert_eq!(err.code(), "invalid_argument");
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An argument is out of its domain (`ttl <= 0`, a `now` or `ttl` that is NaN or infinite,
    /// a lease end `now + ttl` that overflows). Checked before any database access.
    InvalidArgument {
        /// The name of the offending argument, as in the contract (`now`, `ttl`, `owners`, ...).
        argument: &'static str,
        /// What is wrong with it and what is accepted instead.
        message: String,
    },
    /// The file exists but is not a leasefence database: not SQLite at all, or a `jobs` table of
    /// another shape. The file was not modified.
    NotLeasefenceDatabase {
        /// The path as given to `open`.
        path: String,
        /// What was found instead.
        problem: String,
    },
    /// The database could not be opened: a missing directory, no permission, a read-only file.
    Open {
        /// The path as given to `open`.
        path: String,
        /// What went wrong and how to fix it.
        problem: String,
    },
    /// The job's fence reached `i64::MAX`; handing out another would wrap around and make old
    /// tokens valid again, so the job can never be claimed again.
    FenceExhausted {
        /// The job whose fence is exhausted.
        job: String,
    },
    /// The operation lost every race it ran against concurrent workers, many times in a row
    /// (`claim_next` on PostgreSQL finding each claimable job taken just before it). Nothing
    /// changed; retry.
    Contended {
        /// The operation that gave up.
        operation: &'static str,
    },
    /// An invariant broke (a worker thread panicked, the database changed under an open
    /// transaction). Nothing was changed; report it as a bug.
    Internal {
        /// What broke.
        message: String,
    },
    /// One of the caller's own statements in a fenced write (or a guarded write) failed in the
    /// database: a syntax error, a broken constraint, a missing table, a lock wait that timed
    /// out. Nothing was committed. Code `storage`; retryable only when `busy`. Told apart from
    /// [`Error::Storage`] and [`Error::Postgres`] (the store's own statements failing) so that a
    /// runtime can classify by kind: a statement's failure is the caller's (the worker fails the
    /// job), a store's failure is not.
    ///
    /// ```
    /// use leasefence::{Error, Finish, LeaseStore, Statement};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.enqueue("j")?;
    /// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let list = [Statement::new("CREATE TABLE mine(x)", []), Statement::new("INSERT INTO nowhere VALUES (1)", [])];
    /// let err = store.fenced(&lease, 1.0, &list, Finish::KeepLease).unwrap_err();
    /// assert!(matches!(err, Error::Statement { index: 1, busy: false, .. }), "{err:?}");
    /// assert_eq!((err.code(), err.is_retryable()), ("storage", false));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    Statement {
        /// Which statement failed: its position, from 0, among the statements the fenced write
        /// ran (its index in a statement list; with a closure, the handle's calls counted from 0).
        index: usize,
        /// The database's message (on PostgreSQL with its severity, SQLSTATE and detail).
        message: String,
        /// Whether it failed waiting for a lock or on a transient conflict (SQLite busy;
        /// PostgreSQL `lock_timeout`, a deadlock, a serialization failure): retrying may succeed.
        busy: bool,
    },
    /// SQLite failed while running an operation (I/O error, full disk, lock wait timed out,
    /// corruption). The message says what to do. One case is not "nothing changed" for certain:
    /// when the disk failed to *sync* (`SQLITE_IOERR_FSYNC`, `SQLITE_IOERR_DIR_FSYNC`), the
    /// operation took effect wholly or not at all, and which one is read back with `state` (in
    /// WAL mode a crash can bring back a commit whose sync failed; on the rollback journal a
    /// failed directory sync after the commit leaves it in effect). Fences stay safe either way:
    /// a claim that may have happened only uses up its fence.
    Storage {
        /// The operation that was running (`claim`, `open`, ...).
        operation: &'static str,
        /// The underlying SQLite error.
        source: SqliteError,
    },
    /// PostgreSQL failed, or could not be reached, while running an operation (feature
    /// `postgres`). When `disconnected`, the store has dropped its connection and opens a new one
    /// on the next call: retry. The one case where something may have changed: a connection
    /// lost while the server committed; the retry's answer shows it (a claim is `held` by the
    /// caller, a complete `done`).
    #[cfg(pg)]
    Postgres {
        /// The operation that was running (`claim`, `connect`, ...).
        operation: &'static str,
        /// The underlying client error.
        source: PostgresError,
        /// Whether the connection was lost (or never made).
        disconnected: bool,
        /// Whether the server refused for a reason that goes away by itself (a deadlock or
        /// serialization failure, a lock wait that ran into `lock_timeout`, a full server):
        /// retrying may succeed. Decided by the backend when it made the error.
        transient: bool,
        /// Whether the server refused the session for a reason that connecting again cannot
        /// change (bad credentials, no `pg_hba.conf` entry, a database that does not exist).
        refused_for_good: bool,
    },
}

/// `Result` with this crate's [`Error`].
///
/// ```
/// fn first_claim(store: &leasefence::LeaseStore) -> leasefence::Result<Option<i64>> {
///     store.enqueue("job")?;
///     Ok(store.claim("job", "me", 0.0, 30.0)?.granted())
/// }
/// # assert_eq!(first_claim(&leasefence::LeaseStore::open_in_memory().unwrap()).unwrap(), Some(1));
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What kind of failure a call met: the stable codes of docs/contract.md section 4, typed, so
/// a program matches on them rather than on text. Nothing changed in every case.
///
/// ```
/// use leasefence::{ErrorCode, Leases, LeaseStore};
/// let store = LeaseStore::open_in_memory()?;
/// let err = store.claim("job", "A", 0.0, -1.0).unwrap_err(); // a ttl must be > 0
/// match err.error_code() {
///     ErrorCode::InvalidArgument => {} // fix the call; retrying cannot help
///     other => panic!("{other}"),
/// }
/// assert_eq!(ErrorCode::parse("storage"), Some(ErrorCode::Storage));
/// assert_eq!(ErrorCode::Storage.as_str(), "storage");
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request line was not one the protocol reads (not JSON, unknown op, a missing or
    /// mistyped field): fix the request.
    BadRequest,
    /// An argument was out of range (a ttl <= 0, a NaN time, a payload over the limit): fix the
    /// call.
    InvalidArgument,
    /// The store could not do it (busy, I/O, not a leasefence file, the server unreachable):
    /// [`Error::is_retryable`] says whether the same call may succeed later.
    Storage,
}

impl ErrorCode {
    /// The code as the protocol, JavaScript and the CLI write it: `bad_request`,
    /// `invalid_argument`, `storage`.
    ///
    /// ```
    /// assert_eq!(leasefence::ErrorCode::BadRequest.as_str(), "bad_request");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::Storage => "storage",
        }
    }

    /// The code a protocol response names, or `None` for a name that is no code.
    ///
    /// ```
    /// use leasefence::ErrorCode;
    /// assert_eq!(ErrorCode::parse("invalid_argument"), Some(ErrorCode::InvalidArgument));
    /// assert_eq!(ErrorCode::parse("busy"), None);
    /// ```
    pub fn parse(code: &str) -> Option<Self> {
        [
            ErrorCode::BadRequest,
            ErrorCode::InvalidArgument,
            ErrorCode::Storage,
        ]
        .into_iter()
        .find(|c| c.as_str() == code)
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The stable, machine-readable code: `invalid_argument` for bad input, `storage` for
    /// everything the database could not do ([`Error::error_code`], as text).
    ///
    /// ```
    /// let err = leasefence::Error::FenceExhausted { job: "j".into() };
    /// assert_eq!(err.code(), "storage");
    /// ```
    pub fn code(&self) -> &'static str {
        self.error_code().as_str()
    }

    /// The typed code: [`ErrorCode::InvalidArgument`] for bad input, [`ErrorCode::Storage`] for
    /// everything the database could not do.
    ///
    /// ```
    /// let err = leasefence::Error::FenceExhausted { job: "j".into() };
    /// assert_eq!(err.error_code(), leasefence::ErrorCode::Storage);
    /// ```
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            _ => ErrorCode::Storage,
        }
    }

    /// Whether the same call may succeed if simply made again: the lock wait timed out (SQLite
    /// busy, PostgreSQL `lock_timeout`), a transient conflict (PostgreSQL deadlock or
    /// serialization failure, [`Error::Contended`]), or the connection to PostgreSQL was lost.
    /// Invalid arguments and foreign databases are never retryable.
    ///
    /// ```
    /// let err = leasefence::Error::FenceExhausted { job: "j".into() };
    /// assert!(!err.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Storage { source, .. } => is_busy(&source.0),
            Error::Contended { .. } => true,
            Error::Statement { busy, .. } => *busy,
            #[cfg(pg)]
            Error::Postgres {
                disconnected,
                transient,
                ..
            } => *disconnected || *transient,
            _ => false,
        }
    }

    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            message: message.into(),
        }
    }

    /// A failure of the caller's statement number `index` (from 0), from SQLite.
    pub(crate) fn statement(index: usize, source: &rusqlite::Error) -> Self {
        Error::Statement {
            index,
            message: source.to_string(),
            busy: is_busy(source),
        }
    }

    pub(crate) fn storage(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Error::Storage {
            operation,
            source: SqliteError(source),
        }
    }
}

/// The SQLite error behind an [`Error::Storage`]: its message ([`Display`](fmt::Display)) and
/// its result code. The `rusqlite::Error` itself is reachable as this error's
/// [`source`](std::error::Error::source), for a caller that depends on rusqlite and wants to
/// downcast; the crate's own signatures do not name it, so a rusqlite upgrade is not a breaking
/// change of this error.
#[derive(Debug)]
pub struct SqliteError(pub(crate) rusqlite::Error);

impl SqliteError {
    /// SQLite's extended result code (5 is `SQLITE_BUSY`, 13 `SQLITE_FULL`, 1034
    /// `SQLITE_IOERR_FSYNC`), when the failure came from SQLite itself rather than from the
    /// binding (a type mismatch reading a row).
    ///
    /// ```
    /// use leasefence::{Error, OpenOptions};
    /// use std::time::Duration;
    /// let dir = tempfile::tempdir().unwrap();
    /// let options = OpenOptions::new().busy_timeout(Duration::from_millis(1));
    /// let a = options.open(dir.path().join("q.db"))?;
    /// let b = options.open(dir.path().join("q.db"))?;
    /// a.connection().execute_batch("BEGIN IMMEDIATE").unwrap(); // a holds the write lock
    /// let Error::Storage { source, .. } = b.enqueue("j").unwrap_err() else { panic!() };
    /// assert_eq!(source.extended_code(), Some(5));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn extended_code(&self) -> Option<i32> {
        match &self.0 {
            rusqlite::Error::SqliteFailure(failure, _) => Some(failure.extended_code),
            _ => None,
        }
    }
}

impl fmt::Display for SqliteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SqliteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The PostgreSQL client's error behind an [`Error::Postgres`]: its message
/// ([`Display`](fmt::Display)) and the server's SQLSTATE. The `postgres::Error` itself is
/// reachable as this error's [`source`](std::error::Error::source), for a caller that depends on
/// the `postgres` crate and wants to downcast; the crate's own signatures do not name it.
#[cfg(pg)]
#[derive(Debug)]
pub struct PostgresError(pub(crate) PgFailure);

/// What is behind a [`PostgresError`].
#[cfg(pg)]
#[derive(Debug)]
pub(crate) enum PgFailure {
    /// The native client's error.
    #[cfg(not(web))]
    Client(postgres::Error),
    /// A failure described in words (and the SQLSTATE when a server answered): an answer this
    /// crate could not read.
    Reported {
        sqlstate: Option<String>,
        message: String,
    },
}

#[cfg(pg)]
impl PostgresError {
    /// The SQLSTATE the server answered with (`40P01` for a deadlock, `28P01` for a wrong
    /// password), or `None` when no server answered (the connection could not be made or
    /// was lost).
    ///
    /// ```
    /// use leasefence::{Error, PgStore};
    /// // Nobody listens on port 1: no server answered, so there is no SQLSTATE.
    /// let Err(Error::Postgres { source, .. }) = PgStore::connect("postgres://nobody@127.0.0.1:1/none") else {
    ///     panic!("expected a refusal");
    /// };
    /// assert_eq!(source.sqlstate(), None);
    /// ```
    pub fn sqlstate(&self) -> Option<&str> {
        match &self.0 {
            #[cfg(not(web))]
            PgFailure::Client(source) => source.code().map(|state| state.code()),
            PgFailure::Reported { sqlstate, .. } => sqlstate.as_deref(),
        }
    }
}

#[cfg(pg)]
impl fmt::Display for PostgresError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            #[cfg(not(web))]
            PgFailure::Client(source) => source.fmt(f),
            PgFailure::Reported { message, .. } => f.write_str(message),
        }
    }
}

#[cfg(pg)]
impl std::error::Error for PostgresError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            #[cfg(not(web))]
            PgFailure::Client(source) => Some(source),
            PgFailure::Reported { .. } => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { argument, message } => {
                write!(f, "invalid argument `{argument}`: {message}")
            }
            Error::NotLeasefenceDatabase { path, problem }
                if crate::rules::target::is_postgres_url(path) =>
            {
                write!(
                    f,
                    "{path} is not a leasefence database ({problem}); nothing was written to it: \
                     use another schema or database, or one created by leasefence"
                )
            }
            Error::NotLeasefenceDatabase { path, problem } => write!(
                f,
                "{path} is not a leasefence database ({problem}); the file was left untouched: \
                 use a new path, or a database created by leasefence"
            ),
            Error::Open { path, problem } => write!(f, "cannot open {path}: {problem}"),
            Error::FenceExhausted { job } => write!(
                f,
                "job {job:?} has used every fence up to i64::MAX and cannot be claimed again; \
                 enqueue the work under a new job id"
            ),
            Error::Contended { operation } => write!(
                f,
                "{operation} lost the race for every claimable job to concurrent workers, many \
                 times in a row; nothing changed: retry"
            ),
            Error::Internal { message } => {
                write!(f, "internal error: {message}; please report this as a bug")
            }
            Error::Statement {
                index,
                message,
                busy,
            } => {
                write!(
                    f,
                    "fenced statement #{index} failed: {message}; nothing was committed"
                )?;
                if *busy {
                    write!(f, " (a lock wait or a transient conflict: retry)")?;
                }
                Ok(())
            }
            Error::Storage { operation, source } => {
                write!(f, "storage failed during {operation}: {source}")?;
                if is_busy(&source.0) {
                    write!(
                        f,
                        " (another connection held the write lock longer than the busy \
                         timeout; retry, or raise the busy timeout. On a WAL file (the native \
                         library, the CLI, Node's native engine) that connection is still \
                         running: a process that dies lets go of its lock at once. Only a file \
                         locked with dot-files (Node's wasm engine, --locking dotfile) has a \
                         <db>.lock: the next opener frees it by itself when its holder died, and \
                         a <db>.lock directory without an owner is SQLite's own, cleared by \
                         `leasefence --db FILE unlock` once no other process uses the file)"
                    )?;
                } else if let Some(advice) = io_advice(&source.0) {
                    write!(f, " ({advice})")?;
                }
                Ok(())
            }
            #[cfg(pg)]
            Error::Postgres {
                operation,
                source,
                disconnected,
                transient,
                refused_for_good,
            } => {
                write!(f, "PostgreSQL failed during {operation}: ")?;
                match &source.0 {
                    PgFailure::Reported { sqlstate, message } => {
                        write!(f, "{message}")?;
                        if let Some(code) = sqlstate {
                            write!(f, " (SQLSTATE {code})")?;
                        }
                    }
                    #[cfg(not(web))]
                    PgFailure::Client(source) => write_client_error(f, source)?,
                }
                if *disconnected {
                    write!(
                        f,
                        "; the connection to the server is lost or could not be made: retry, \
                         the store connects again on the next call (if it was lost while the \
                         server committed, the operation may have taken effect: a retried \
                         claim then answers held, a retried complete done, and `state` shows \
                         what is stored)"
                    )?;
                } else if *refused_for_good {
                    write!(
                        f,
                        "; the server refused this login (check the user, password, database, \
                         pg_hba.conf, or the client certificate in sslcert/sslkey): retrying \
                         will not help"
                    )?;
                } else if *transient {
                    write!(
                        f,
                        " (a transient conflict or lock wait; nothing changed: retry)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Storage { source, .. } => Some(source),
            #[cfg(pg)]
            Error::Postgres { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(
        err.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// What to do about a full disk or an I/O error, for the message. A failed sync is its own case:
/// the commit's bytes may be on the disk already (in WAL mode the next opener after a crash can
/// find the call applied; on the rollback journal a failed directory sync after the journal's
/// deletion leaves it applied at once), so its fate is read back, not assumed.
fn io_advice(err: &rusqlite::Error) -> Option<&'static str> {
    let rusqlite::Error::SqliteFailure(failure, _) = err else {
        return None;
    };
    let sync_failed = [
        rusqlite::ffi::SQLITE_IOERR_FSYNC,
        rusqlite::ffi::SQLITE_IOERR_DIR_FSYNC,
    ]
    .contains(&failure.extended_code);
    Some(match failure.code {
        rusqlite::ErrorCode::DiskFull => {
            "the disk holding the database is full; nothing changed: free space on it (or move \
             the database to a disk with room), then retry"
        }
        rusqlite::ErrorCode::SystemIoFailure if sync_failed => {
            "the disk did not confirm the write, so whether this call took effect is unknown \
             (wholly or not at all, never in part): read the job's state before retrying, after \
             a restart too; check the disk"
        }
        rusqlite::ErrorCode::SystemIoFailure => {
            "the disk or file system failed; nothing changed: check the disk and the system log, \
             then retry"
        }
        _ => return None,
    })
}

/// The native client's error in words: the server's message with its SQLSTATE, or the client's
/// own words and their causes.
#[cfg(all(feature = "postgres", not(web)))]
fn write_client_error(f: &mut fmt::Formatter<'_>, source: &postgres::Error) -> fmt::Result {
    match source.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            write!(f, "{}: {} (SQLSTATE {code})", db.severity(), db.message())?;
            if let Some(detail) = db.detail() {
                write!(f, " ({detail})")?;
            }
        }
        None => {
            // The client's own words, then its causes ("error connecting to
            // server: Connection refused").
            write!(f, "{source}")?;
            let mut cause = std::error::Error::source(source);
            while let Some(inner) = cause {
                write!(f, ": {inner}")?;
                cause = inner.source();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn storage(code: std::ffi::c_int) -> String {
        Error::Storage {
            operation: "claim",
            source: SqliteError(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(code),
                None,
            )),
        }
        .to_string()
    }

    /// A busy file says what to do on either kind of file: a WAL file's lock holder is alive
    /// (nothing to clear), and only a dot-file locked file has a `<db>.lock`.
    #[test]
    fn a_busy_file_names_what_to_do_for_each_kind_of_lock() {
        let busy = storage(rusqlite::ffi::SQLITE_BUSY);
        assert!(busy.contains("retry, or raise the busy timeout"), "{busy}");
        assert!(busy.contains("On a WAL file"), "{busy}");
        assert!(busy.contains("Only a file locked with dot-files"), "{busy}");
        assert!(
            !busy.contains("A file shared with Node is locked by"),
            "{busy}"
        );
    }

    #[test]
    fn a_full_disk_and_io_errors_say_what_to_do() {
        let full = storage(rusqlite::ffi::SQLITE_FULL);
        assert!(full.contains("disk holding the database is full"), "{full}");
        assert!(full.contains("free space"), "{full}");
        let sync = storage(rusqlite::ffi::SQLITE_IOERR_FSYNC);
        assert!(
            sync.contains("unknown") && sync.contains("read the job's state"),
            "{sync}"
        );
        let read = storage(rusqlite::ffi::SQLITE_IOERR_READ);
        assert!(
            read.contains("nothing changed") && read.contains("system log"),
            "{read}"
        );
        let constraint = storage(rusqlite::ffi::SQLITE_CONSTRAINT);
        assert!(!constraint.contains("disk"), "{constraint}");
    }
}

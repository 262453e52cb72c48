//! The one error type of the crate.
//!
//! A *rejection* (a claim on a held job, a complete with a stale fence) is not an error: it is an
//! [`Outcome::Rejected`](crate::Outcome) with a [`Reason`](crate::Reason). An [`Error`] means the
//! operation could not be decided at all: the arguments were invalid, or storage failed.

use std::fmt;

/// Why an operation could not be carried out. Nothing was changed in the database.
///
/// Every variant has a stable [`code`](Error::code) (`invalid_argument` or `storage`), the one the
/// JSON-lines protocol and the JavaScript package report.
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
    /// An invariant broke (a worker thread panicked, the database changed under an open
    /// transaction). Nothing was changed; report it as a bug.
    Internal {
        /// What broke.
        message: String,
    },
    /// SQLite failed while running an operation (I/O error, lock wait timed out, corruption).
    Storage {
        /// The operation that was running (`claim`, `open`, ...).
        operation: &'static str,
        /// The underlying SQLite error.
        source: rusqlite::Error,
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

impl Error {
    /// The stable, machine-readable code: `invalid_argument` for bad input, `storage` for
    /// everything the database could not do.
    ///
    /// ```
    /// let err = leasefence::Error::FenceExhausted { job: "j".into() };
    /// assert_eq!(err.code(), "storage");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidArgument { .. } => "invalid_argument",
            _ => "storage",
        }
    }

    pub(crate) fn invalid(argument: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            argument,
            message: message.into(),
        }
    }

    pub(crate) fn storage(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Error::Storage { operation, source }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidArgument { argument, message } => {
                write!(f, "invalid argument `{argument}`: {message}")
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
            Error::Internal { message } => {
                write!(f, "internal error: {message}; please report this as a bug")
            }
            Error::Storage { operation, source } => {
                write!(f, "storage failed during {operation}: {source}")?;
                if is_busy(source) {
                    write!(
                        f,
                        " (another connection held the write lock longer than the busy \
                         timeout; retry, or raise the busy timeout)"
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

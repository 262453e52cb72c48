//! A PostgreSQL client error as this crate's [`Error::Postgres`], classified once, here, where
//! the error is made: whether the connection is lost, the failure transient (retryable) or a
//! refusal for good. [`crate::error`] only reads the flags.

use postgres::error::SqlState;

use crate::error::Error;

/// A client error as this crate's error; whether the connection was lost is decided by
/// [`PgStore::with_session`], which sees the client.
pub(super) fn pg(operation: &'static str) -> impl Fn(postgres::Error) -> Error {
    move |source| postgres_error(operation, source, false)
}

/// The error, with its classification: `disconnected` as the caller saw it, `transient` and
/// `refused_for_good` from the server's SQLSTATE.
pub(super) fn postgres_error(
    operation: &'static str,
    source: postgres::Error,
    disconnected: bool,
) -> Error {
    Error::Postgres {
        operation,
        transient: is_transient(&source),
        refused_for_good: refused_for_good(&source),
        source: crate::error::PostgresError(crate::error::PgFailure::Client(source)),
        disconnected,
    }
}

/// Whether the error leaves the connection unusable: anything that is not an answer of the
/// server (I/O, protocol, a closed socket), or the server ending the session.
pub(super) fn connection_lost(err: &postgres::Error) -> bool {
    let Some(db) = err.as_db_error() else {
        return true;
    };
    let code = db.code();
    code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
        || matches!(db.severity(), "FATAL" | "PANIC")
}

/// Whether the server refused the session itself for a reason that connecting again cannot
/// change: bad credentials, no `pg_hba.conf` entry, a database that does not exist.
pub(super) fn refused_for_good(err: &postgres::Error) -> bool {
    err.code().is_some_and(|code| {
        code.code().starts_with("28") || *code == SqlState::INVALID_CATALOG_NAME
    })
}

/// Whether the server refused for a reason that goes away by itself: a deadlock or
/// serialization failure, a lock wait that ran into `lock_timeout`, a full server.
pub(super) fn is_transient(err: &postgres::Error) -> bool {
    err.code().is_some_and(|code| {
        [
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
    })
}

/// A failure of the caller's statement number `index` (from 0) in a fenced write: the server's
/// answer as [`Error::Statement`] (`busy` when transient). A lost connection stays
/// [`Error::Postgres`], so that the session is dropped and the call is retryable.
pub(super) fn statement_error(index: usize, source: postgres::Error) -> Error {
    match source.as_db_error() {
        Some(db) if !connection_lost(&source) => {
            let mut message = format!(
                "{}: {} (SQLSTATE {})",
                db.severity(),
                db.message(),
                db.code().code()
            );
            if let Some(detail) = db.detail() {
                message.push_str(&format!(" ({detail})"));
            }
            Error::Statement {
                index,
                message,
                busy: is_transient(&source),
            }
        }
        _ => pg("fenced")(source),
    }
}

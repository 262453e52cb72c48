//! A PostgreSQL client error as this crate's [`Error::Postgres`], classified once, here, where
//! the error is made: whether the connection is lost, the failure transient (retryable) or a
//! refusal for good. [`crate::error`] only reads the flags.

use super::wire::{classify, Classified};

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

/// The shared classification ([`classify`]) of a client error: by the server's SQLSTATE and
/// severity, or lost when no server answered (I/O, protocol, a closed socket).
fn classified(err: &postgres::Error) -> Classified {
    match err.as_db_error() {
        Some(db) => classify(Some(db.code().code()), Some(db.severity())),
        None => classify(None, None),
    }
}

/// Whether the error leaves the connection unusable.
pub(super) fn connection_lost(err: &postgres::Error) -> bool {
    classified(err).lost
}

/// Whether the server refused the session itself for a reason that connecting again cannot
/// change.
pub(super) fn refused_for_good(err: &postgres::Error) -> bool {
    classified(err).refused_for_good
}

/// Whether the server refused for a reason that goes away by itself.
pub(super) fn is_transient(err: &postgres::Error) -> bool {
    classified(err).transient
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

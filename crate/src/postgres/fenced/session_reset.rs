//! Giving the session back after the caller's statements (settings, role, cursors, `LISTEN`s,
//! advisory locks), and the check that the connection's prepared statements are the store's.

use super::readings::{refusal, Reading};
use crate::error::Error;

/// Run after the caller's statements, before anything of the library's, in the transaction: reads
/// `track_counts` as the statements left it (it must have stayed on for the counters to count),
/// then gives the session back its settings as they were at connect (`RESET ALL`; the store's own
/// settings are applied again right after, by [`fingerprint_after`](super::readings::fingerprint_after)), its role, and closes what
/// would outlive the transaction: held cursors, `LISTEN`s, session-level advisory locks (these
/// are not transactional: a rollback keeps them). `DISCARD ALL` would do most of this, but it also
/// drops the store's prepared statements, and cannot run in a transaction. A fixed simple query.
/// Once it ran, the library's reading, lease check and commit see the store's `search_path`,
/// `synchronous_commit`, `lock_timeout` and `session_replication_role`, not the statements'.
/// Last, the connection's prepared statements are read (the `prepared` row), before the store
/// runs one of its own.
pub(super) const GIVE_BACK_SESSION: &str = "SELECT pg_catalog.current_setting('track_counts'); \
    RESET ALL; RESET SESSION AUTHORIZATION; RESET ROLE; CLOSE ALL; UNLISTEN *; \
    SELECT pg_catalog.pg_advisory_unlock_all(); \
    SELECT 'prepared', 'statements', count(*) FILTER (WHERE from_sql)::text, \
           coalesce(string_agg(name, ',') FILTER (WHERE NOT from_sql), ''), NULL, NULL, NULL \
    FROM pg_catalog.pg_prepared_statements";

/// After a transaction that rolled back: the session's settings went back with it, but advisory
/// locks and prepared statements do not; the same columns as the `prepared` reading.
pub(super) const AFTER_ROLLBACK: &str = "SELECT pg_catalog.pg_advisory_unlock_all(); \
    SELECT 'prepared', 'statements', count(*) FILTER (WHERE from_sql)::text, \
           coalesce(string_agg(name, ',') FILTER (WHERE NOT from_sql), ''), NULL, NULL, NULL \
    FROM pg_catalog.pg_prepared_statements";

/// Whether the connection's prepared statements are as the store left them, by the `prepared` row
/// of [`GIVE_BACK_SESSION`] or [`AFTER_ROLLBACK`]: none made by SQL (`PREPARE`, also from a
/// function: the store never makes one, and a session that had one was closed), and at least as
/// many made by the protocol as the store's own (`own`, counted at connect; the caller's open
/// ones add to them), so none of the store's was dropped by a `DEALLOCATE ALL`. A single one of
/// the store's dropped while the caller keeps one of theirs open is not seen here; the store's
/// next use of it fails, and that error closes the session (`Link::with_session`).
pub(super) fn prepared_intact(reading: Option<&Reading>, own: &[String]) -> bool {
    let from_sql = reading
        .and_then(|r| r[2].as_deref())
        .and_then(|v| v.parse::<i64>().ok());
    // By name, not by count: statements the client prepares and closes around the caller's own
    // (a Close is sent lazily) would hide a missing one of the store's from a count.
    let present: Vec<&str> = reading
        .and_then(|r| r[3].as_deref())
        .map_or_else(Vec::new, |names| names.split(',').collect());
    from_sql == Some(0) && own.iter().all(|name| present.contains(&name.as_str()))
}

/// The `prepared` row of a reading.
pub(super) fn prepared_row(readings: &[Reading]) -> Option<&Reading> {
    readings
        .iter()
        .find(|r| r[0].as_deref() == Some("prepared"))
}

/// The refusal of statements that made or dropped prepared statements of the connection.
pub(super) fn refused_prepared() -> Error {
    refusal(
        "fenced statements may not prepare or deallocate statements of the connection (PREPARE, \
         DEALLOCATE, also from a function): the connection is the library's; it is closed, and \
         the next call opens a new one"
            .into(),
    )
}

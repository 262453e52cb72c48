//! The check that a fenced write's statements left the library's tables and the session alone,
//! for every client (see `fenced/` for why it is done this way): the readings taken before and
//! after the caller's statements (write counters, file nodes, catalog row versions) and their
//! comparison, the session given back after them, and the check of the connection's prepared
//! statements. The statements and what their rows mean; the client runs them.
//!
//! What the transaction reads ([`Sql::Fingerprint`](crate::postgres::wire::Sql::Fingerprint), in
//! `sql/fingerprint.sql`), once before the caller's statements and once after, as rows of seven
//! text columns: a kind, a name and up to five values. Prepared once per connection
//! (`Statements::fingerprint`), so that it is planned once; `jobs` is looked up when it runs
//! (`to_regclass`), not when it is planned.
//!
//! - `relation`: each of the library's relations (`jobs` and `leasefence_*` in the schema of the
//!   `jobs` the session resolves, and in the session's temporary schema, indexes and sequences
//!   included): file node, catalog row version, rows inserted, updated, deleted by this
//!   transaction;
//! - `index`: each index on those relations, whatever its name: file node, the versions of its
//!   `pg_index` and `pg_class` rows (`CREATE INDEX`, `DROP INDEX`, `REINDEX`);
//! - `columns`: the versions of the columns' catalog rows of each (`ALTER COLUMN ... SET
//!   STATISTICS`, and every other column change);
//! - `function`: each `leasefence_*` function of the schema and every function a trigger on
//!   those relations calls: the version of its catalog row (`CREATE OR REPLACE`, `ALTER
//!   FUNCTION`);
//! - `catalog`: this transaction's writes to the catalogs of triggers, rules, row security
//!   policies and planner statistics, whatever object they were for: a trigger or a rule made
//!   anywhere can reach the library's tables later, from a write outside any fenced write (looked
//!   up by name when the reading runs, so that a server without one of them still connects).

use crate::error::{Error, Result};
use crate::postgres::wire::Answer;

/// The refusal of a fenced write whose work went on after one of its statements failed.
pub(crate) const WENT_ON: &str = "a statement failed and the callback went on; PostgreSQL refuses \
     the rest of such a transaction, so nothing was committed: return the error instead";

/// One row of a reading: kind, name, values.
pub(crate) type Reading = [Option<String>; 7];

/// The rows of a reading ([`Sql::Fingerprint`](crate::postgres::wire::Sql::Fingerprint) or
/// `FingerprintAfter`) as a client's [`Wire`](crate::postgres::wire::Wire) answers them.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn readings(answer: &Answer) -> Result<Vec<Reading>> {
    answer
        .rows
        .iter()
        .map(|row| {
            let mut reading: Reading = Default::default();
            for (i, value) in reading.iter_mut().enumerate() {
                *value = row.opt_text("fenced", i)?;
            }
            Ok(reading)
        })
        .collect()
}

pub(crate) fn refusal(message: String) -> Error {
    Error::invalid("statements", message)
}

/// What differs between the readings before and after the caller's statements, as the refusal.
/// `track_counts` is the setting the statements left (read before the session was given back).
pub(crate) fn compare(
    before: &[Reading],
    after: &[Reading],
    track_counts: Option<&str>,
) -> Result<()> {
    if track_counts != Some("on") {
        return Err(refusal(
            "fenced writes need the server's track_counts setting on (its default): it counts \
             the writes that tell whether your statements touched the library's tables"
                .into(),
        ));
    }
    // Functions are told apart by oid as well as name; the rest by name.
    let same = |a: &Reading, b: &Reading| {
        let n = if a[0].as_deref() == Some("function") {
            3
        } else {
            2
        };
        a[..n] == b[..n]
    };
    let name = |r: &Reading| r[1].clone().unwrap_or_default();
    let refused = |r: &Reading| -> Error {
        let name = name(r);
        match r[0].as_deref() {
            Some("index") => refusal(format!(
                "fenced statements may not create, drop or rebuild an index of the library's \
                 tables (index {name:?})"
            )),
            Some("columns") => refusal(format!(
                "fenced statements may not alter the columns of {name:?} (statistics targets \
                 included)"
            )),
            Some("function") => refusal(format!(
                "fenced statements may not create, replace or alter the library's functions \
                 ({name:?}, or a function its triggers call)"
            )),
            Some("catalog") => refusal(format!(
                "fenced statements may not create, change or drop triggers, rules (a view is \
                 one), row security policies or planner statistics (ANALYZE, CREATE STATISTICS, \
                 or dropping a table that has statistics): {name} was written"
            )),
            _ => crate::rules::fenced::refused_table(&name),
        }
    };
    // Not a reading: the settings applied by the second one.
    let settings = |r: &&Reading| r[0].as_deref() == Some("settings");
    for row in after.iter().filter(|r| !settings(r)) {
        match before.iter().find(|b| same(b, row)) {
            Some(b) if b == row => {}
            _ => return Err(refused(row)),
        }
    }
    if let Some(gone) = before.iter().find(|b| !after.iter().any(|a| same(a, b))) {
        return Err(refused(gone));
    }
    Ok(())
}

/// Run after the caller's statements, before anything of the library's, in the transaction: reads
/// `track_counts` as the statements left it (it must have stayed on for the counters to count),
/// then gives the session back its settings as they were at connect (`RESET ALL`; the store's own
/// settings are applied again right after, by
/// [`Sql::FingerprintAfter`](crate::postgres::wire::Sql::FingerprintAfter)), its role, and closes
/// what would outlive the transaction: held cursors, `LISTEN`s, session-level advisory locks (these
/// are not transactional: a rollback keeps them). `DISCARD ALL` would do most of this, but it also
/// drops the store's prepared statements, and cannot run in a transaction. A fixed simple query.
/// Once it ran, the library's reading, lease check and commit see the store's `search_path`,
/// `synchronous_commit`, `lock_timeout` and `session_replication_role`, not the statements'. Last,
/// the connection's prepared statements are read (the `prepared` row), before the store runs one of
/// its own.
pub(crate) const GIVE_BACK_SESSION: &str = "SELECT pg_catalog.current_setting('track_counts'); \
    RESET ALL; RESET SESSION AUTHORIZATION; RESET ROLE; CLOSE ALL; UNLISTEN *; \
    SELECT pg_catalog.pg_advisory_unlock_all(); \
    SELECT 'prepared', 'statements', count(*) FILTER (WHERE from_sql)::text, \
           coalesce(string_agg(name, ',') FILTER (WHERE NOT from_sql), ''), NULL, NULL, NULL \
    FROM pg_catalog.pg_prepared_statements";

/// After a transaction that rolled back: the session's settings went back with it, but advisory
/// locks and prepared statements do not; the same columns as the `prepared` reading.
pub(crate) const AFTER_ROLLBACK: &str = "SELECT pg_catalog.pg_advisory_unlock_all(); \
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
pub(crate) fn prepared_intact(reading: Option<&Reading>, own: &[String]) -> bool {
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
pub(crate) fn prepared_row(readings: &[Reading]) -> Option<&Reading> {
    readings
        .iter()
        .find(|r| r[0].as_deref() == Some("prepared"))
}

/// Reads the rows of [`GIVE_BACK_SESSION`]: the `track_counts` setting the caller's statements
/// left, or the refusal when they made or dropped prepared statements of the connection (`own`
/// the store's, see [`prepared_intact`]; the check after the rollback sees the same and closes
/// the connection).
pub(crate) fn given_back(rows: &[Reading], own: &[String]) -> Result<Option<String>> {
    if !prepared_intact(prepared_row(rows), own) {
        return Err(refused_prepared());
    }
    Ok(rows.first().and_then(|r| r[0].clone()))
}

/// The refusal of statements that made or dropped prepared statements of the connection.
pub(crate) fn refused_prepared() -> Error {
    refusal(
        "fenced statements may not prepare or deallocate statements of the connection (PREPARE, \
         DEALLOCATE, also from a function): the connection is the library's; it is closed, and \
         the next call opens a new one"
            .into(),
    )
}

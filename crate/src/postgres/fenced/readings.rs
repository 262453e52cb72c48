//! The readings of the library's tables and schema taken before and after the caller's
//! statements (write counters, file nodes, catalog row versions), and their comparison: what
//! differs is the refusal.

use postgres::types::ToSql;
use postgres::Transaction;

use crate::error::{Error, Result};
use crate::postgres::failure::pg;
use crate::postgres::session::SESSION_SETTINGS;

/// What the transaction reads, once before the caller's statements and once after (see the module
/// notes), as rows of seven text columns: a kind, a name and up to five values. Prepared once per
/// connection (`Statements::fingerprint`), so that it is planned once; `jobs` is looked up when it
/// runs (`to_regclass`), not when it is planned.
///
/// - `relation`: each of the library's relations (`jobs` and `leasefence_*` in the schema of the
///   `jobs` the session resolves, and in the session's temporary schema, indexes and sequences
///   included): file node, catalog row version, rows inserted, updated, deleted by this
///   transaction;
/// - `index`: each index on those relations, whatever its name: file node, the versions of its
///   `pg_index` and `pg_class` rows (`CREATE INDEX`, `DROP INDEX`, `REINDEX`);
/// - `columns`: the versions of the columns' catalog rows of each (`ALTER COLUMN ... SET
///   STATISTICS`, and every other column change);
/// - `function`: each `leasefence_*` function of the schema and every function a trigger on
///   those relations calls: the version of its catalog row (`CREATE OR REPLACE`, `ALTER
///   FUNCTION`);
/// - `catalog`: this transaction's writes to the catalogs of triggers, rules, row security
///   policies and planner statistics, whatever object they were for: a trigger or a rule made
///   anywhere can reach the library's tables later, from a write outside any fenced write (looked
///   up by name when the reading runs, so that a server without one of them still connects).
pub(in crate::postgres) const FINGERPRINT: &str = "\
WITH ns AS (SELECT relnamespace AS oid FROM pg_class WHERE oid = to_regclass('jobs')), \
lib AS (SELECT c.oid, c.relname, c.xmin FROM pg_class c \
  WHERE (c.relnamespace = (SELECT oid FROM ns) OR c.relnamespace = pg_my_temp_schema()) \
    AND (c.relname = 'jobs' OR c.relname LIKE 'leasefence\\_%')) \
SELECT 'relation', relname::text, pg_relation_filenode(oid)::text, xmin::text, \
       pg_stat_get_xact_tuples_inserted(oid)::text, pg_stat_get_xact_tuples_updated(oid)::text, \
       pg_stat_get_xact_tuples_deleted(oid)::text FROM lib \
UNION ALL SELECT 'index', c.relname::text, pg_relation_filenode(c.oid)::text, i.xmin::text, \
       c.xmin::text, i.indrelid::text, NULL \
  FROM lib JOIN pg_index i ON i.indrelid = lib.oid JOIN pg_class c ON c.oid = i.indexrelid \
UNION ALL SELECT 'columns', l.relname::text, \
       string_agg(a.attnum::text || ':' || a.xmin::text, ',' ORDER BY a.attnum), NULL, NULL, NULL, NULL \
  FROM pg_attribute a JOIN lib l ON l.oid = a.attrelid GROUP BY l.relname \
UNION ALL SELECT 'function', p.proname::text, p.oid::text, p.xmin::text, NULL, NULL, NULL \
  FROM pg_proc p WHERE p.oid IN ( \
    SELECT f.oid FROM pg_proc f WHERE f.pronamespace = (SELECT oid FROM ns) \
      AND f.proname LIKE 'leasefence\\_%' \
    UNION SELECT t.tgfoid FROM lib JOIN pg_trigger t ON t.tgrelid = lib.oid) \
UNION ALL SELECT 'catalog', r.c::text, pg_stat_get_xact_tuples_inserted(r.c)::text, \
       pg_stat_get_xact_tuples_updated(r.c)::text, pg_stat_get_xact_tuples_deleted(r.c)::text, \
       NULL, NULL \
  FROM unnest(ARRAY[to_regclass('pg_catalog.pg_trigger'), to_regclass('pg_catalog.pg_rewrite'), \
       to_regclass('pg_catalog.pg_policy'), to_regclass('pg_catalog.pg_statistic'), \
       to_regclass('pg_catalog.pg_statistic_ext'), \
       to_regclass('pg_catalog.pg_statistic_ext_data')]) AS r(c) WHERE r.c IS NOT NULL";

/// The second reading: [`FINGERPRINT`] and, in the same round trip, the store's settings applied
/// again ([`SESSION_SETTINGS`]'s, `$1` the lock timeout), after [`GIVE_BACK_SESSION`](super::session_reset::GIVE_BACK_SESSION) reset them.
/// The settings change nothing this reading reads.
///
/// Not read: the locks the transaction holds. `LOCK` is refused by its first keyword; one taken
/// from a function or a `DO` block lasts until this transaction ends, which the library's commit
/// follows at once, and refusing the call afterwards would not undo the waits it caused meanwhile
/// (no more than a long statement holding the job's row would). Reading `pg_locks` costs more
/// than the rest of the reading together.
pub(in crate::postgres) fn fingerprint_after() -> String {
    let settings = SESSION_SETTINGS
        .strip_prefix("SELECT ")
        .expect("SESSION_SETTINGS is one SELECT");
    format!("{FINGERPRINT} UNION ALL SELECT 'settings', {settings}, NULL, NULL, NULL")
}

/// One row of a reading: kind, name, values.
pub(super) type Reading = [Option<String>; 7];

/// The rows of a simple query, up to seven text columns each (missing ones `None`).
pub(super) fn rows(client: &mut impl postgres::GenericClient, sql: &str) -> Result<Vec<Reading>> {
    let messages = client.simple_query(sql).map_err(pg("fenced"))?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => Some(std::array::from_fn(|i| {
                row.try_get(i).ok().flatten().map(String::from)
            })),
            _ => None,
        })
        .collect())
}

pub(super) fn fingerprint(
    tx: &mut Transaction<'_>,
    stmt: &postgres::Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Reading>> {
    let rows = tx.query(stmt, params).map_err(pg("fenced"))?;
    rows.iter()
        .map(|row| {
            let mut reading: Reading = Default::default();
            for (i, value) in reading.iter_mut().enumerate() {
                *value = row.try_get(i).map_err(pg("fenced"))?;
            }
            Ok(reading)
        })
        .collect()
}

pub(super) fn refusal(message: String) -> Error {
    Error::invalid("statements", message)
}

/// What differs between the readings before and after the caller's statements, as the refusal.
/// `track_counts` is the setting the statements left (read before the session was given back).
pub(super) fn compare(
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

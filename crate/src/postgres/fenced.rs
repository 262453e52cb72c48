//! Fenced writes on PostgreSQL (docs/contract.md section 8): the caller's statements, then the
//! lease check under the job's row lock, then the commit, all in one transaction.
//!
//! # How writes to the library's tables are refused
//!
//! PostgreSQL has no statement authorizer, and the usual substitutes can be undone from inside
//! the transaction by the very statements they are meant to restrain: a trigger that refuses
//! writes unless a transaction-local setting says "the library's own" is switched off again by
//! `SELECT set_config(...)`, and `SET LOCAL ROLE` by `RESET ROLE` (or `set_config('role', ...)`),
//! both reachable from any function call, so no textual check can rule them out. What the
//! statements cannot undo is what the server counts: `pg_stat_get_xact_tuples_inserted`,
//! `_updated` and `_deleted` count every row this transaction wrote to a table, through any path
//! (triggers, functions, `DO` blocks, disabled triggers, rolled-back subtransactions included), and
//! nothing resets them before the transaction ends. So the transaction reads, for `jobs` and every
//! `leasefence_*` relation (in the store's schema and the session's temporary schema), those
//! counters, the relation's file node (which `TRUNCATE` changes) and its catalog row version
//! (which `ALTER TABLE` changes), once before the caller's statements and once after; any
//! difference, a relation that appeared or vanished, or `track_counts` switched off, refuses the
//! whole transaction (`invalid_argument`) and rolls it back. The library's own write (`complete`)
//! comes after the second reading. `track_counts` can only be changed by a superuser, and one
//! that switches it off around a write and on again leaves nothing counted: the checks here are
//! against statements of an ordinary role.
//!
//! The same readings cover the library's schema, which the statements may not change either: its
//! indexes (whatever their names), the columns' catalog rows (statistics targets), the
//! `leasefence_*` functions and the functions its triggers call; and this transaction's writes
//! to the catalogs of triggers, rules, row security policies and planner statistics, whatever
//! object they were for, since a trigger or a rule planted on the caller's own table reaches
//! `jobs` later from a write that is not fenced at all. These are catalog comparisons, not an
//! event trigger: an event trigger would see every DDL command however it is reached, but it
//! needs a superuser to create, and the store must work as an ordinary role owning its schema.
//!
//! Statements that would end the transaction early, change the session for later callers, or
//! act on whole tables (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `SET`, `RESET`, `DISCARD`,
//! `PREPARE`, `DEALLOCATE`, `LISTEN`, `LOAD`, `COPY`, `LOCK`, `ANALYZE`, `VACUUM`, ...) are
//! refused by their first keyword before they are sent; inside `DO` or a procedure PostgreSQL
//! itself refuses to commit a transaction block, and `COPY` to the client.
//!
//! # The session is the library's
//!
//! Settings can also be changed by function calls (`set_config`), which no first keyword shows.
//! So once the statements ran, and before any of the library's own reading, checking or
//! committing, the transaction gives the session back (`RESET ALL`, the role, held cursors,
//! `LISTEN`s, session-level advisory locks) and applies the store's settings again
//! (`lock_timeout`, `synchronous_commit`): the second reading resolves `jobs` with the store's
//! `search_path`, the commit is durable, and nothing the statements set outlives the call. A
//! transaction that rolls back takes its settings with it, but not advisory locks, which are
//! released after it. Prepared statements are not transactional either: statements that made
//! one by SQL or dropped one of the store's are refused, and the connection is closed (the next
//! call connects again).

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Row, Transaction};

use super::failure::{pg, statement_error};
use super::session::{Session, Statements, SESSION_SETTINGS};
use super::store::{check_lease, check_text, lease_of, PgStore};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::rules::fenced::{check_statement_kind, FencedHandle, Finish, Rows, SqlValue, Statement};
use crate::rules::fenced_tx::{self, FencedSteps};
use crate::rules::{check_now, LeaseRow};

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
pub(super) const FINGERPRINT: &str = "\
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
/// again ([`SESSION_SETTINGS`]'s, `$1` the lock timeout), after [`GIVE_BACK_SESSION`] reset them.
/// The settings change nothing this reading reads.
///
/// Not read: the locks the transaction holds. `LOCK` is refused by its first keyword; one taken
/// from a function or a `DO` block lasts until this transaction ends, which the library's commit
/// follows at once, and refusing the call afterwards would not undo the waits it caused meanwhile
/// (no more than a long statement holding the job's row would). Reading `pg_locks` costs more
/// than the rest of the reading together.
pub(super) fn fingerprint_after() -> String {
    let settings = SESSION_SETTINGS
        .strip_prefix("SELECT ")
        .expect("SESSION_SETTINGS is one SELECT");
    format!("{FINGERPRINT} UNION ALL SELECT 'settings', {settings}, NULL, NULL, NULL, NULL")
}

/// Run after the caller's statements, before anything of the library's, in the transaction: reads
/// `track_counts` as the statements left it (it must have stayed on for the counters to count),
/// then gives the session back its settings as they were at connect (`RESET ALL`; the store's own
/// settings are applied again right after, by [`fingerprint_after`]), its role, and closes what
/// would outlive the transaction: held cursors, `LISTEN`s, session-level advisory locks (these
/// are not transactional: a rollback keeps them). `DISCARD ALL` would do most of this, but it also
/// drops the store's prepared statements, and cannot run in a transaction. A fixed simple query.
/// Once it ran, the library's reading, lease check and commit see the store's `search_path`,
/// `synchronous_commit`, `lock_timeout` and `session_replication_role`, not the statements'.
/// Last, the connection's prepared statements are read (the `prepared` row), before the store
/// runs one of its own.
const GIVE_BACK_SESSION: &str = "SELECT pg_catalog.current_setting('track_counts'); \
    RESET ALL; RESET SESSION AUTHORIZATION; RESET ROLE; CLOSE ALL; UNLISTEN *; \
    SELECT pg_catalog.pg_advisory_unlock_all(); \
    SELECT 'prepared', 'statements', count(*) FILTER (WHERE from_sql)::text, \
           coalesce(string_agg(name, ',') FILTER (WHERE NOT from_sql), ''), NULL, NULL, NULL \
    FROM pg_catalog.pg_prepared_statements";

/// After a transaction that rolled back: the session's settings went back with it, but advisory
/// locks and prepared statements do not; the same columns as the `prepared` reading.
const AFTER_ROLLBACK: &str = "SELECT pg_catalog.pg_advisory_unlock_all(); \
    SELECT 'prepared', 'statements', count(*) FILTER (WHERE from_sql)::text, \
           coalesce(string_agg(name, ',') FILTER (WHERE NOT from_sql), ''), NULL, NULL, NULL \
    FROM pg_catalog.pg_prepared_statements";

/// One row of a reading: kind, name, values.
type Reading = [Option<String>; 7];

/// The rows of a simple query, up to seven text columns each (missing ones `None`).
fn rows(client: &mut impl postgres::GenericClient, sql: &str) -> Result<Vec<Reading>> {
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

fn fingerprint(
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

/// Whether the connection's prepared statements are as the store left them, by the `prepared` row
/// of [`GIVE_BACK_SESSION`] or [`AFTER_ROLLBACK`]: none made by SQL (`PREPARE`, also from a
/// function: the store never makes one, and a session that had one was closed), and at least as
/// many made by the protocol as the store's own (`own`, counted at connect; the caller's open
/// ones add to them), so none of the store's was dropped by a `DEALLOCATE ALL`. A single one of
/// the store's dropped while the caller keeps one of theirs open is not seen here; the store's
/// next use of it fails, and that error closes the session (`Link::with_session`).
fn prepared_intact(reading: Option<&Reading>, own: &[String]) -> bool {
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
fn prepared_row(readings: &[Reading]) -> Option<&Reading> {
    readings
        .iter()
        .find(|r| r[0].as_deref() == Some("prepared"))
}

fn refusal(message: String) -> Error {
    Error::invalid("statements", message)
}

/// What differs between the readings before and after the caller's statements, as the refusal.
/// `track_counts` is the setting the statements left (read before the session was given back).
fn compare(before: &[Reading], after: &[Reading], track_counts: Option<&str>) -> Result<()> {
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

/// The refusal of statements that made or dropped prepared statements of the connection.
fn refused_prepared() -> Error {
    refusal(
        "fenced statements may not prepare or deallocate statements of the connection (PREPARE, \
         DEALLOCATE, also from a function): the connection is the library's; it is closed, and \
         the next call opens a new one"
            .into(),
    )
}

/// A parameter bound to the type PostgreSQL inferred for it, checked before it is sent.
#[derive(Debug)]
struct Bound<'a>(&'a SqlValue);

const TEXT_TYPES: [Type; 5] = [
    Type::TEXT,
    Type::VARCHAR,
    Type::BPCHAR,
    Type::NAME,
    Type::UNKNOWN,
];

fn fits(value: &SqlValue, ty: &Type) -> bool {
    let int = matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8);
    let float = matches!(*ty, Type::FLOAT4 | Type::FLOAT8);
    let text = TEXT_TYPES.contains(ty);
    let json = matches!(*ty, Type::JSON | Type::JSONB);
    match value {
        SqlValue::Null => true,
        SqlValue::Bool(_) => *ty == Type::BOOL || int,
        SqlValue::Integer(n) => match *ty {
            Type::INT2 => i16::try_from(*n).is_ok(),
            Type::INT4 => i32::try_from(*n).is_ok(),
            _ => int || float || text,
        },
        SqlValue::Real(f) => float || text || (int && f.fract() == 0.0 && f.abs() < 9.2e18),
        SqlValue::Text(_) => text || json,
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match (self.0, ty) {
            (SqlValue::Null, _) => Ok(IsNull::Yes),
            (SqlValue::Bool(b), &Type::BOOL) => b.to_sql(ty, out),
            (SqlValue::Bool(b), _) => Bound(&SqlValue::Integer(i64::from(*b))).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT2) => (*n as i16).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT4) => (*n as i32).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::INT8) => n.to_sql(ty, out),
            (SqlValue::Integer(n), &Type::FLOAT4) => (*n as f32).to_sql(ty, out),
            (SqlValue::Integer(n), &Type::FLOAT8) => (*n as f64).to_sql(ty, out),
            (SqlValue::Integer(n), _) => n.to_string().as_str().to_sql(&Type::TEXT, out),
            (SqlValue::Real(f), &Type::FLOAT4) => (*f as f32).to_sql(ty, out),
            (SqlValue::Real(f), &Type::FLOAT8) => f.to_sql(ty, out),
            (SqlValue::Real(f), &Type::INT2 | &Type::INT4 | &Type::INT8) => {
                Bound(&SqlValue::Integer(*f as i64)).to_sql(ty, out)
            }
            (SqlValue::Real(f), _) => f.to_string().as_str().to_sql(&Type::TEXT, out),
            (SqlValue::Text(t), &Type::JSONB) => {
                out.extend_from_slice(&[1]);
                out.extend_from_slice(t.as_bytes());
                Ok(IsNull::No)
            }
            (SqlValue::Text(t), _) => t.as_str().to_sql(&Type::TEXT, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    postgres::types::to_sql_checked!();
}

/// The caller's handle on a fenced transaction on PostgreSQL: statements on the caller's own
/// tables, inside the transaction that checks the lease. See
/// [`PgStore::fenced_with`](crate::PgStore::fenced_with).
pub struct PgFencedTx<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    failed: bool,
    /// How many statements were started: the next one's index.
    started: usize,
}

impl std::fmt::Debug for PgFencedTx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgFencedTx").finish_non_exhaustive()
    }
}

impl PgFencedTx<'_, '_> {
    fn checked<T>(&mut self, result: Result<T>) -> Result<T> {
        self.failed |= result.is_err();
        result
    }

    /// Counts the statement, checks it, and prepares it; the server's refusal of it is
    /// [`Error::Statement`].
    fn prepare(&mut self, sql: &str, params: &[SqlValue]) -> Result<postgres::Statement> {
        self.started += 1;
        check_statement_kind(sql)?;
        check_text("statements", sql)?;
        for value in params {
            if let SqlValue::Text(t) = value {
                check_text("params", t)?;
            }
        }
        let stmt = self.tx.prepare(sql).map_err(|e| self.statement_failed(e))?;
        let types = stmt.params();
        if types.len() != params.len() {
            return Err(Error::invalid(
                "statements",
                format!(
                    "the statement uses {} parameters, but {} were given",
                    types.len(),
                    params.len()
                ),
            ));
        }
        for (n, (value, ty)) in params.iter().zip(types).enumerate() {
            if !fits(value, ty) {
                return Err(Error::invalid(
                    "statements",
                    format!(
                        "parameter ${} is {value:?}, which does not fit the type PostgreSQL \
                         expects there ({ty}); cast it in the SQL (${}::{ty}) or pass another value",
                        n + 1,
                        n + 1
                    ),
                ));
            }
        }
        Ok(stmt)
    }

    /// Runs one statement with [`SqlValue`] parameters (`$1`, `$2`, ...), each bound to the type
    /// PostgreSQL infers for it; the number of rows it changed.
    ///
    /// ```no_run
    /// # use leasefence::{Finish, Leases, PgStore};
    /// let store = PgStore::connect("postgres://localhost/queue")?;
    /// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// store.fenced_with(&lease, 1.0, Finish::KeepLease, |tx| {
    ///     tx.execute_values("UPDATE counters SET n = $1 WHERE id = $2", &[5.into(), "c".into()])
    /// })?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn execute_values(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        let result = self.execute_unchecked(sql, params);
        self.checked(result)
    }

    fn execute_unchecked(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        let stmt = self.prepare(sql, params)?;
        let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        let index = self.started - 1;
        self.tx
            .execute(&stmt, &refs)
            .map_err(|e| statement_error(index, e))
    }

    fn statement_failed(&self, err: postgres::Error) -> Error {
        statement_error(self.started.saturating_sub(1), err)
    }

    /// Reads the rows of one query with [`SqlValue`] parameters, as the client's [`Row`]s.
    ///
    /// ```no_run
    /// # use leasefence::{Finish, Leases, PgStore};
    /// let store = PgStore::connect("postgres://localhost/queue")?;
    /// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// store.fenced_with(&lease, 1.0, Finish::KeepLease, |tx| {
    ///     let rows = tx.query_values("SELECT n FROM counters WHERE id = $1", &["c".into()])?;
    ///     let n: i64 = rows[0].get(0);
    ///     tx.execute_values("UPDATE counters SET n = $1 WHERE id = $2", &[(n + 1).into(), "c".into()])
    /// })?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn query_values(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>> {
        let result = (|| {
            let stmt = self.prepare(sql, params)?;
            let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            let index = self.started - 1;
            self.tx
                .query(&stmt, &refs)
                .map_err(|e| statement_error(index, e))
        })();
        self.checked(result)
    }
}

/// One value of a fenced query's row as a [`SqlValue`], by the column's type; a type with no such
/// value (numeric, a date, JSON, ...) is refused with the hint to cast it.
fn neutral_value(row: &Row, i: usize) -> Result<SqlValue> {
    let column = &row.columns()[i];
    let got = |e: postgres::Error| Error::Internal {
        message: format!("reading column {:?} of a fenced query: {e}", column.name()),
    };
    let ty = column.type_();
    Ok(match *ty {
        Type::BOOL => row.try_get::<_, Option<bool>>(i).map_err(got)?.into(),
        Type::INT2 => row
            .try_get::<_, Option<i16>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(i)
            .map_err(got)?
            .map(i64::from)
            .into(),
        Type::INT8 => row.try_get::<_, Option<i64>>(i).map_err(got)?.into(),
        Type::FLOAT4 => row
            .try_get::<_, Option<f32>>(i)
            .map_err(got)?
            .map(f64::from)
            .into(),
        Type::FLOAT8 => row.try_get::<_, Option<f64>>(i).map_err(got)?.into(),
        _ if TEXT_TYPES.contains(ty) => row.try_get::<_, Option<String>>(i).map_err(got)?.into(),
        _ => {
            return Err(Error::invalid(
                "statements",
                format!(
                    "column {:?} is of type {ty}, which has no SqlValue: cast it in the SQL \
                     ({0}::text, or ::bigint, ::float8)",
                    column.name()
                ),
            ))
        }
    })
}

/// The backend-neutral handle (what [`Leases::fenced_with`](crate::Leases::fenced_with) hands
/// out on PostgreSQL): [`PgFencedTx::execute_values`], and the rows of
/// [`PgFencedTx::query_values`] as [`SqlValue`]s.
///
/// ```no_run
/// use leasefence::{fenced_value, Finish, Leases, PgStore};
/// let store = PgStore::connect("postgres://localhost/queue")?;
/// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
/// let read = fenced_value(&store, &lease, 1.0, Finish::KeepLease, |tx| {
///     tx.query("SELECT n FROM counters WHERE id = $1", &["c".into()])
/// })?;
/// # Ok::<(), leasefence::Error>(())
/// ```
impl FencedHandle for PgFencedTx<'_, '_> {
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        self.execute_values(sql, params)
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Rows> {
        let result = (|| {
            let stmt = self.prepare(sql, params)?;
            let columns = stmt
                .columns()
                .iter()
                .map(|c| c.name().to_string())
                .collect();
            let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            let index = self.started - 1;
            let read = self
                .tx
                .query(&stmt, &refs)
                .map_err(|e| statement_error(index, e))?;
            let rows = read
                .iter()
                .map(|row| (0..row.len()).map(|i| neutral_value(row, i)).collect())
                .collect::<Result<_>>()?;
            Ok(Rows { columns, rows })
        })();
        self.checked(result)
    }
}

/// Fenced writes (docs/contract.md section 8) on PostgreSQL.
impl PgStore {
    /// Runs `work` inside the transaction that checks the lease, and commits its writes only
    /// while `lease` is current at `now`: all or nothing. With
    /// [`Finish::Complete`] the job completes in the same commit.
    ///
    /// `work` runs first; then the library's tables are checked to be unwritten (see the module
    /// notes), the job's row is locked and the lease checked with `renew`'s checks and reasons
    /// (or `complete` runs), and the transaction commits. A refused lease rolls back and answers
    /// [`Outcome::Rejected`]; an error from `work` rolls back and is returned. Once a statement
    /// failed, PostgreSQL refuses the rest of the transaction, so the whole call fails even if
    /// `work` ignored that error.
    ///
    /// ```no_run
    /// use leasefence::{Finish, Leases, PgStore};
    /// let store = PgStore::connect("postgres://localhost/queue")?;
    /// store.enqueue("invoice-42")?;
    /// let lease = store.claim("invoice-42", "A", 0.0, 30.0)?.lease("invoice-42", "A").unwrap();
    /// let done = store.fenced_with(&lease, 1.0, Finish::Complete(None), |tx| {
    ///     tx.execute_values("INSERT INTO invoices(id) VALUES ($1)", &["invoice-42".into()])
    /// })?;
    /// assert!(done.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn fenced_with<T>(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: impl FnOnce(&mut PgFencedTx<'_, '_>) -> Result<T>,
    ) -> Result<Outcome<T>> {
        check_now(now)?;
        check_lease(lease)?;
        if let Finish::Complete(Some(result)) = &finish {
            check_text("result", result)?;
        }
        self.link.with_session("fenced", |session| {
            let result = fenced_in(session, lease, now, &finish, work);
            if result.is_err() {
                // Rolled back: the settings went back with the transaction, advisory locks and
                // prepared statements did not. A session that cannot be checked, or whose
                // statements changed, is closed (the next call connects again).
                let own = session.own_statements.clone();
                let intact = rows(&mut session.client, AFTER_ROLLBACK)
                    .map(|after| prepared_intact(prepared_row(&after), &own));
                if !matches!(intact, Ok(true)) {
                    session.tainted = true;
                }
            }
            result
        })
    }

    /// The statement-list form of [`fenced_with`](Self::fenced_with), as [`Leases::fenced`]
    /// (crate::Leases::fenced) runs it.
    pub(super) fn fenced_statements(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        crate::rules::fenced::check_statements(statements)?;
        self.fenced_with(lease, now, finish, |tx| {
            for statement in statements {
                tx.execute_values(&statement.sql, &statement.params)?;
            }
            Ok(())
        })
    }
}

/// A fenced transaction on a session: begun, the first reading of the library's tables taken
/// (`before`), and whether one of the caller's statements failed.
struct PgSteps<'s, 'c> {
    tx: Transaction<'c>,
    failed: bool,
    stmts: &'s Statements,
    own_statements: &'s [String],
    lock_timeout: &'s String,
    before: Vec<Reading>,
}

impl FencedSteps for PgSteps<'_, '_> {
    const WENT_ON: &'static str =
        "a statement failed and the callback went on; PostgreSQL refuses \
         the rest of such a transaction, so nothing was committed: return the error instead";
    const TRIES: Option<usize> = Some(1);

    fn statements_failed(&self) -> bool {
        self.failed
    }

    /// Gives the session back, checks its prepared statements, takes the second reading (which
    /// applies the store's settings again) and compares it with the first (see the module notes).
    fn check_library_tables(&mut self) -> Result<()> {
        let given_back = rows(&mut self.tx, GIVE_BACK_SESSION)?;
        let track_counts = given_back.first().and_then(|r| r[0].clone());
        if !prepared_intact(prepared_row(&given_back), self.own_statements) {
            // The check after the rollback sees the same and closes the session.
            return Err(refused_prepared());
        }
        let after = fingerprint(
            &mut self.tx,
            &self.stmts.fingerprint_after,
            &[self.lock_timeout],
        )?;
        compare(&self.before, &after, track_counts.as_deref())
    }

    /// Reads the row locked (`FOR SHARE`): under READ COMMITTED it could change otherwise before
    /// this transaction ends.
    fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>> {
        let row = self
            .tx
            .query_opt(&self.stmts.read_lease_for_share, &[&job])
            .map_err(pg("fenced"))?;
        lease_of(row, "fenced")
    }

    fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool> {
        let changed = self
            .tx
            .execute(
                &self.stmts.complete,
                &[&lease.job, &lease.owner, &lease.fence, &now, &result],
            )
            .map_err(pg("fenced"))?;
        Ok(changed == 1)
    }

    fn commit(self) -> Result<()> {
        self.tx.commit().map_err(pg("fenced"))
    }

    fn rollback(self) -> Result<()> {
        self.tx.rollback().map_err(pg("fenced"))
    }
}

/// The fenced transaction on `session` ([`fenced_tx::run`]): see [`PgStore::fenced_with`].
fn fenced_in<T>(
    session: &mut Session,
    lease: &Lease,
    now: f64,
    finish: &Finish,
    work: impl FnOnce(&mut PgFencedTx<'_, '_>) -> Result<T>,
) -> Result<Outcome<T>> {
    let Session {
        client,
        stmts,
        own_statements,
        lock_timeout,
        ..
    } = session;
    let mut tx = client.transaction().map_err(pg("fenced"))?;
    let before = fingerprint(&mut tx, &stmts.fingerprint, &[])?;
    let steps = PgSteps {
        tx,
        failed: false,
        stmts,
        own_statements,
        lock_timeout,
        before,
    };
    fenced_tx::run(steps, lease, now, finish, |steps| {
        let mut handle = PgFencedTx {
            tx: &mut steps.tx,
            failed: false,
            started: 0,
        };
        let value = work(&mut handle);
        steps.failed = handle.failed;
        value
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_fit_their_inferred_types() {
        assert!(fits(&SqlValue::Integer(3), &Type::INT8));
        assert!(!fits(&SqlValue::Integer(1 << 40), &Type::INT4));
        assert!(fits(&SqlValue::Null, &Type::BYTEA));
        assert!(!fits(&SqlValue::Text("x".into()), &Type::INT8));
        assert!(fits(&SqlValue::Bool(true), &Type::BOOL));
        assert!(!fits(&SqlValue::Real(1.5), &Type::INT8));
        assert!(fits(&SqlValue::Real(2.0), &Type::INT8));
    }
}

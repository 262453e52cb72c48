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
//! comes after the second reading.
//!
//! Statements that would end the transaction early or change the session for later callers
//! (`BEGIN`, `COMMIT`, `ROLLBACK`, `SAVEPOINT`, `SET`, `RESET`, `DISCARD`, ...) are refused by
//! their first keyword before they are sent; inside `DO` or a procedure PostgreSQL itself refuses
//! to commit a transaction block. A `synchronous_commit` switched off by the statements is
//! switched back on for the commit, so a granted answer is durable as every other one.

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type};
use postgres::{Row, Transaction};

use super::failure::pg;
use super::store::{check_text, lease_of, PgStore};
use crate::error::{Error, Result};
use crate::outcome::{Fence, Outcome};
use crate::rules::fenced::{check_statement_kind, Finish, SqlValue, Statement};
use crate::rules::{check_now, unexplained, why_write_refused};

/// The library's relations (`jobs` and `leasefence_*` in the schema of the `jobs` the session
/// resolves, and in the session's temporary schema), with what a write to each would change. Sent
/// as a simple query: one round trip, no statement to prepare. `{sync}` is replaced by a column
/// that switches `synchronous_commit` back on for the commit (the second reading only).
const FINGERPRINT: &str = "\
SELECT c.relname::text, pg_relation_filenode(c.oid)::text, c.xmin::text, \
       pg_stat_get_xact_tuples_inserted(c.oid)::text, pg_stat_get_xact_tuples_updated(c.oid)::text, \
       pg_stat_get_xact_tuples_deleted(c.oid)::text, current_setting('track_counts'){sync} \
FROM pg_class c \
WHERE (c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'jobs'::regclass) \
       OR c.relnamespace = pg_my_temp_schema()) \
  AND (c.relname = 'jobs' OR c.relname LIKE 'leasefence\\_%') \
ORDER BY c.oid";

const RESTORE_SYNC: &str = ", (SELECT set_config('synchronous_commit', 'on', true) \
    WHERE current_setting('synchronous_commit') = 'off')";

/// Per relation: name, file node, catalog row version, inserted, updated, deleted, track_counts.
type Fingerprint = Vec<[Option<String>; 7]>;

fn fingerprint(tx: &mut Transaction<'_>, restore_sync: bool) -> Result<Fingerprint> {
    let sql = FINGERPRINT.replace("{sync}", if restore_sync { RESTORE_SYNC } else { "" });
    let messages = tx.simple_query(&sql).map_err(pg("fenced"))?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => {
                Some(std::array::from_fn(|i| row.get(i).map(String::from)))
            }
            _ => None,
        })
        .collect())
}

/// What differs between the readings before and after the caller's statements, as the refusal.
fn compare(before: &Fingerprint, after: &Fingerprint) -> Result<()> {
    if before
        .iter()
        .chain(after)
        .any(|row| row[6].as_deref() != Some("on"))
    {
        return Err(Error::invalid(
            "statements",
            "fenced writes need the server's track_counts setting on (its default): it counts \
             the writes that tell whether your statements touched the library's tables",
        ));
    }
    let name = |row: &[Option<String>; 7]| row[0].clone().unwrap_or_default();
    for row in after {
        match before.iter().find(|b| b[0] == row[0]) {
            Some(b) if b[..6] == row[..6] => {}
            _ => return Err(crate::rules::fenced::refused_table(&name(row))),
        }
    }
    if let Some(gone) = before.iter().find(|b| !after.iter().any(|a| a[0] == b[0])) {
        return Err(crate::rules::fenced::refused_table(&name(gone)));
    }
    Ok(())
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

    fn prepare(&mut self, sql: &str, params: &[SqlValue]) -> Result<postgres::Statement> {
        check_statement_kind(sql)?;
        check_text("statements", sql)?;
        for value in params {
            if let SqlValue::Text(t) = value {
                check_text("params", t)?;
            }
        }
        let stmt = self.tx.prepare(sql).map_err(pg("fenced"))?;
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
    /// let fence = store.claim("j", "me", 0.0, 10.0)?.granted().unwrap();
    /// store.fenced_with("j", "me", fence, 1.0, Finish::KeepLease, |tx| {
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
        self.tx.execute(&stmt, &refs).map_err(pg("fenced"))
    }

    /// Reads the rows of one query with [`SqlValue`] parameters, as the client's [`Row`]s.
    ///
    /// ```no_run
    /// # use leasefence::{Finish, Leases, PgStore};
    /// let store = PgStore::connect("postgres://localhost/queue")?;
    /// let fence = store.claim("j", "me", 0.0, 10.0)?.granted().unwrap();
    /// store.fenced_with("j", "me", fence, 1.0, Finish::KeepLease, |tx| {
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
            self.tx.query(&stmt, &refs).map_err(pg("fenced"))
        })();
        self.checked(result)
    }
}

const READ_LEASE_FOR_SHARE: &str =
    "SELECT owner, until, fence, done FROM jobs WHERE id = $1 FOR SHARE";

/// Fenced writes (docs/contract.md section 8) on PostgreSQL.
impl PgStore {
    /// Runs `work` inside the transaction that checks the lease, and commits its writes only
    /// while the lease (`job`, `owner`, `fence`) is current at `now`: all or nothing. With
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
    /// let fence = store.claim("invoice-42", "A", 0.0, 30.0)?.granted().unwrap();
    /// let done = store.fenced_with("invoice-42", "A", fence, 1.0, Finish::Complete(None), |tx| {
    ///     tx.execute_values("INSERT INTO invoices(id) VALUES ($1)", &["invoice-42".into()])
    /// })?;
    /// assert!(done.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn fenced_with<T>(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        finish: Finish,
        work: impl FnOnce(&mut PgFencedTx<'_, '_>) -> Result<T>,
    ) -> Result<Outcome<T>> {
        check_now(now)?;
        check_text("job", job)?;
        check_text("owner", owner)?;
        if let Finish::Complete(Some(result)) = &finish {
            check_text("result", result)?;
        }
        self.link.with_session("fenced", |session| {
            let mut tx = session.client.transaction().map_err(pg("fenced"))?;
            let before = fingerprint(&mut tx, false)?;
            let mut handle = PgFencedTx {
                tx: &mut tx,
                failed: false,
            };
            let value = work(&mut handle)?;
            if handle.failed {
                return Err(Error::invalid(
                    "statements",
                    "a statement failed and the callback went on; PostgreSQL refuses the rest of \
                     such a transaction, so nothing was committed: return the error instead",
                ));
            }
            // Also switches synchronous_commit back on, should the statements have turned it off.
            let after = fingerprint(&mut tx, true)?;
            compare(&before, &after)?;
            let refused = match &finish {
                Finish::KeepLease => {
                    let row = tx
                        .query_opt(READ_LEASE_FOR_SHARE, &[&job])
                        .map_err(pg("fenced"))?;
                    why_write_refused(lease_of(row, "fenced")?, owner, fence, Some(now))
                }
                Finish::Complete(result) => {
                    let changed = tx
                        .execute(
                            &session.stmts.complete,
                            &[&job, &owner, &fence, &now, result],
                        )
                        .map_err(pg("fenced"))?;
                    if changed == 1 {
                        None
                    } else {
                        // No row matched under READ COMMITTED; read it locked, so it cannot
                        // change before this transaction ends.
                        let row = tx
                            .query_opt(READ_LEASE_FOR_SHARE, &[&job])
                            .map_err(pg("fenced"))?;
                        match why_write_refused(lease_of(row, "fenced")?, owner, fence, Some(now)) {
                            Some(reason) => Some(reason),
                            None => return Err(unexplained("fenced", job, Some(1))),
                        }
                    }
                }
            };
            if let Some(reason) = refused {
                tx.rollback().map_err(pg("fenced"))?;
                return Ok(Outcome::Rejected(reason));
            }
            tx.commit().map_err(pg("fenced"))?;
            Ok(Outcome::Granted(value))
        })
    }

    /// The statement-list form of [`fenced_with`](Self::fenced_with), as [`Leases::fenced`]
    /// (crate::Leases::fenced) runs it.
    pub(super) fn fenced_statements(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        crate::rules::fenced::check_statements(statements)?;
        self.fenced_with(job, owner, fence, now, finish, |tx| {
            for statement in statements {
                tx.execute_values(&statement.sql, &statement.params)?;
            }
            Ok(())
        })
    }
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

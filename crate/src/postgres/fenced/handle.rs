//! [`PgFencedTx`]: the caller's handle on a fenced transaction on PostgreSQL (statements checked,
//! prepared and bound there), and the backend-neutral [`FencedHandle`] on it.

use postgres::types::ToSql;
use postgres::{Row, Transaction};

use super::values::{fits, neutral_value, Bound};
use crate::error::{Error, Result};
use crate::postgres::failure::statement_error;
use crate::postgres::store::check_text;
use crate::rules::fenced::{check_statement_kind, FencedHandle, Rows, SqlValue};

/// The caller's handle on a fenced transaction on PostgreSQL: statements on the caller's own
/// tables, inside the transaction that checks the lease. See
/// [`PgStore::fenced_with`](crate::PgStore::fenced_with).
pub struct PgFencedTx<'t, 'c> {
    pub(super) tx: &'t mut Transaction<'c>,
    pub(super) failed: bool,
    /// How many statements were started: the next one's index.
    pub(super) started: usize,
}

impl std::fmt::Debug for PgFencedTx<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgFencedTx").finish_non_exhaustive()
    }
}

impl<'c> PgFencedTx<'_, 'c> {
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
        self.run_bound(sql, params, |tx, stmt, refs| tx.execute(stmt, refs))
    }

    /// Prepares `sql` (checked, counted), binds `params` to its inferred types and runs it with
    /// `run`; a failure is the statement's, with its index.
    fn run_bound<T>(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        run: impl FnOnce(
            &mut Transaction<'c>,
            &postgres::Statement,
            &[&(dyn ToSql + Sync)],
        ) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        let stmt = self.prepare(sql, params)?;
        let bound: Vec<Bound<'_>> = params.iter().map(Bound).collect();
        let refs: Vec<&(dyn ToSql + Sync)> =
            bound.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
        let index = self.started - 1;
        run(self.tx, &stmt, &refs).map_err(|e| statement_error(index, e))
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
        let result = self.run_bound(sql, params, |tx, stmt, refs| tx.query(stmt, refs));
        self.checked(result)
    }
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

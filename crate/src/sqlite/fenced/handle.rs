//! [`FencedTx`]: the caller's handle on a fenced transaction (`execute`, `query_row`, the
//! [`SqlValue`] forms), and the backend-neutral [`FencedHandle`] on it.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::authorizer::{Protected, Refusal};
use super::parameters::bind_values;
use crate::error::{Error, Result};
use crate::rules::fenced::{refused_table, FencedHandle, Rows, SqlValue};

/// The caller's handle on a fenced transaction: statements on the caller's own tables, inside
/// the transaction that checks the lease. Writes to `jobs` or a `leasefence_*` table, transaction
/// control, `PRAGMA` and `ATTACH` are refused with [`Error::InvalidArgument`]; a failing
/// statement is [`Error::Statement`]. Either error, returned from the closure, rolls everything
/// back. See [`LeaseStore::fenced_with`](crate::LeaseStore::fenced_with).
pub struct FencedTx<'c> {
    conn: &'c Connection,
    refusal: Refusal,
}

impl std::fmt::Debug for FencedTx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FencedTx").finish_non_exhaustive()
    }
}

impl<'c> FencedTx<'c> {
    pub(crate) fn new(conn: &'c Connection, refusal: Refusal) -> Self {
        FencedTx { conn, refusal }
    }

    /// The slot the authorizer writes its refusals to (the JavaScript engines re-create the
    /// handle for each call from JavaScript).
    #[cfg_attr(not(any(web, feature = "addon")), allow(dead_code))]
    pub(crate) fn refusal_slot(&self) -> Refusal {
        self.refusal.clone()
    }

    /// A refusal by the authorizer becomes `invalid_argument` naming what was refused; any other
    /// failure is [`Error::Statement`], naming the statement.
    fn failed(&self, err: rusqlite::Error) -> Error {
        let (refused, protect, index) = match self.refusal.lock() {
            Ok(mut slot) => {
                slot.failed = true;
                (
                    slot.refused.take(),
                    slot.protect,
                    slot.started.saturating_sub(1),
                )
            }
            Err(_) => (None, Protected::LeaseStore, 0),
        };
        match (&err, refused) {
            (rusqlite::Error::SqliteFailure(e, _), Some(why))
                if e.code == rusqlite::ErrorCode::AuthorizationForStatementDenied =>
            {
                match why.split_once(':') {
                    Some(("table", table)) if protect == Protected::GuardFile => Error::invalid(
                        "statements",
                        format!(
                            "write to {table:?} refused: guarded statements may write the \
                             application's tables only, never the guard's own `leasefence_*` \
                             tables (the accepted fences are the guard's to keep)"
                        ),
                    ),
                    Some(("table", table)) => refused_table(table),
                    Some((_, what)) => Error::invalid(
                        "statements",
                        format!("{what}; not allowed among your statements (of a fenced write, or run with enqueue_many)"),
                    ),
                    None => Error::invalid("statements", why),
                }
            }
            (rusqlite::Error::MultipleStatement, _) => Error::invalid(
                "statements",
                "one SQL statement per entry: split the text into several statements",
            ),
            _ => Error::statement(index, &err),
        }
    }

    /// Marks the phase failed: its transaction will not commit.
    fn poison(&self, err: Error) -> Error {
        if let Ok(mut state) = self.refusal.lock() {
            state.failed = true;
        }
        err
    }

    fn prepare(&self, sql: &str) -> Result<rusqlite::Statement<'c>> {
        // Never the statement cache: the authorizer sees a statement when it is compiled.
        self.conn.prepare(sql).map_err(|e| self.failed(e))
    }

    /// Prepares `sql` and runs `step` on it; when the statement alters a table, the schema's
    /// library-named objects are read before and after, and a table renamed into the library's
    /// namespace (`ALTER TABLE app RENAME TO leasefence_mine`) is refused, rolling back.
    fn run<T>(
        &self,
        sql: &str,
        step: impl FnOnce(&mut rusqlite::Statement<'c>) -> Result<T>,
    ) -> Result<T> {
        if let Ok(mut slot) = self.refusal.lock() {
            slot.started += 1;
        }
        let mut stmt = self.prepare(sql)?;
        let alters = self
            .refusal
            .lock()
            .map(|mut slot| std::mem::take(&mut slot.alters_table))
            .unwrap_or(true);
        if !alters {
            return step(&mut stmt);
        }
        let before = self.library_names()?;
        let value = step(&mut stmt)?;
        drop(stmt);
        let after = self.library_names()?;
        match after.iter().find(|name| !before.contains(name)) {
            None => Ok(value),
            Some(name) => Err(self.poison(Error::invalid(
                "statements",
                format!(
                    "ALTER TABLE ... RENAME TO {name:?} refused: the names `jobs` and \
                     `leasefence_*` are the library's; choose another name"
                ),
            ))),
        }
    }

    /// The names in the schema (main and temp) that the library's namespace holds. A fixed
    /// query: nothing of the caller's is spliced into it.
    fn library_names(&self) -> Result<Vec<String>> {
        const NAMES: &str = "SELECT name FROM sqlite_schema \
            WHERE name LIKE 'leasefence\\_%' ESCAPE '\\' OR name LIKE 'jobs' \
            UNION ALL SELECT name FROM sqlite_temp_schema \
            WHERE name LIKE 'leasefence\\_%' ESCAPE '\\' OR name LIKE 'jobs'";
        let read = || -> rusqlite::Result<Vec<String>> {
            let mut stmt = self.conn.prepare(NAMES)?;
            let names = stmt.query_map([], |row| row.get(0))?;
            names.collect()
        };
        read().map_err(|e| self.poison(Error::storage("fenced")(e)))
    }

    /// Runs one statement with rusqlite parameters (`?`, `?NNN`, `:name`); the number of rows
    /// it changed.
    ///
    /// ```
    /// # let store = leasefence::LeaseStore::open_in_memory()?;
    /// # store.connection().execute("CREATE TABLE t(x)", []).unwrap();
    /// # store.enqueue("j")?;
    /// # let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let done = store.fenced_with(&lease, 1.0, Default::default(), |tx| {
    ///     tx.execute("INSERT INTO t(x) VALUES (?1)", [42])
    /// })?;
    /// assert_eq!(done.granted(), Some(1));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn execute(&self, sql: &str, params: impl rusqlite::Params) -> Result<usize> {
        self.run(sql, |stmt| stmt.execute(params).map_err(|e| self.failed(e)))
    }

    /// Reads one row with rusqlite parameters; `Ok(None)` when there is none.
    ///
    /// ```
    /// # let store = leasefence::LeaseStore::open_in_memory()?;
    /// # store.enqueue("j")?;
    /// # let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let n = store.fenced_with(&lease, 1.0, Default::default(), |tx| {
    ///     tx.query_row("SELECT count(*) FROM jobs", [], |row| row.get::<_, i64>(0))
    /// })?;
    /// assert_eq!(n.granted(), Some(Some(1)));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn query_row<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        read: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>> {
        use rusqlite::OptionalExtension;
        self.run(sql, |stmt| {
            stmt.query_row(params, read)
                .optional()
                .map_err(|e| self.failed(e))
        })
    }

    /// Runs one statement with [`SqlValue`] parameters, `$N` (or `?NNN`) taking the N-th and a
    /// plain `?` the next; the number of rows it changed. What the statement lists of every
    /// runtime run.
    ///
    /// ```
    /// # let store = leasefence::LeaseStore::open_in_memory()?;
    /// # store.connection().execute("CREATE TABLE t(x)", []).unwrap();
    /// # store.enqueue("j")?;
    /// # let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// store.fenced_with(&lease, 1.0, Default::default(), |tx| {
    ///     tx.execute_values("INSERT INTO t(x) VALUES ($1)", &["a".into()])
    /// })?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn execute_values(&self, sql: &str, params: &[SqlValue]) -> Result<usize> {
        self.run(sql, |stmt| {
            bind_values(stmt, params).map_err(|e| self.poison(e))?;
            stmt.raw_execute().map_err(|e| self.failed(e))
        })
    }

    /// Reads every row of one query with [`SqlValue`] parameters: the column names, then the
    /// rows. A blob column is refused (select `hex(column)` instead).
    ///
    /// ```
    /// # let store = leasefence::LeaseStore::open_in_memory()?;
    /// # store.enqueue("j")?;
    /// # let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
    /// let read = store.fenced_with(&lease, 1.0, Default::default(), |tx| {
    ///     tx.query_values("SELECT $1 AS x", &[7.into()])
    /// })?;
    /// let (columns, rows) = read.granted().unwrap();
    /// assert_eq!((columns, rows), (vec!["x".to_string()], vec![vec![leasefence::SqlValue::Integer(7)]]));
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn query_values(
        &self,
        sql: &str,
        params: &[SqlValue],
    ) -> Result<(Vec<String>, Vec<Vec<SqlValue>>)> {
        self.run(sql, |stmt| self.rows_of(stmt, params))
    }

    fn rows_of(
        &self,
        stmt: &mut rusqlite::Statement<'_>,
        params: &[SqlValue],
    ) -> Result<(Vec<String>, Vec<Vec<SqlValue>>)> {
        bind_values(stmt, params).map_err(|e| self.poison(e))?;
        let columns: Vec<String> = stmt.column_names().map(String::from).collect();
        let width = columns.len();
        let mut rows = stmt.raw_query();
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.failed(e))? {
            let mut values = Vec::with_capacity(width);
            for (i, column) in columns.iter().enumerate() {
                values.push(match row.get_ref(i).map_err(|e| self.failed(e))? {
                    ValueRef::Null => SqlValue::Null,
                    ValueRef::Integer(n) => SqlValue::Integer(n),
                    ValueRef::Real(f) => SqlValue::Real(f),
                    ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
                    ValueRef::Blob(_) => {
                        return Err(self.poison(Error::invalid(
                            "statements",
                            format!(
                                "column {:?} holds a blob, which has no JSON form; \
                                 select hex({0}) instead",
                                column
                            ),
                        )))
                    }
                });
            }
            out.push(values);
        }
        Ok((columns, out))
    }
}

/// The backend-neutral handle (what [`Leases::fenced_with`](crate::Leases::fenced_with) hands
/// out on SQLite): [`FencedTx::execute_values`] and [`FencedTx::query_values`].
///
/// ```
/// use leasefence::{FencedHandle, Finish, LeaseStore, SqlValue};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("j")?;
/// let lease = store.claim("j", "me", 0.0, 10.0)?.lease("j", "me").unwrap();
/// let read = store.fenced_with(&lease, 1.0, Finish::KeepLease, |tx| {
///     let mut handle = tx;
///     FencedHandle::query(&mut handle, "SELECT $1 AS x", &[7.into()])
/// })?;
/// assert_eq!(read.granted().unwrap().get(0, "x"), Some(&SqlValue::Integer(7)));
/// # Ok::<(), leasefence::Error>(())
/// ```
impl FencedHandle for &FencedTx<'_> {
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64> {
        self.execute_values(sql, params).map(|n| n as u64)
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Rows> {
        let (columns, rows) = self.query_values(sql, params)?;
        Ok(Rows { columns, rows })
    }
}

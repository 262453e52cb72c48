//! Fenced writes on SQLite (docs/contract.md section 8): the caller's statements run inside the
//! `BEGIN IMMEDIATE` transaction that then checks the lease, and commit only with it.
//!
//! The order inside the transaction: the caller's statements (each compiled under an authorizer
//! that refuses `jobs`, the `leasefence_*` tables, transaction control, `PRAGMA` and `ATTACH`),
//! then the lease check (the conditions and reasons of `renew`, or `complete`'s own `UPDATE` when
//! the job completes), then the commit. The write lock is held from `BEGIN IMMEDIATE` on, so the
//! lease cannot change between the check and the commit; anything that fails or is refused rolls
//! the whole transaction back.
//!
//! Why the authorizer: SQLite calls it for every table a statement would write while compiling
//! it, including the writes of triggers and `INSTEAD OF` views the statement fires, so a write to
//! `jobs` is refused however it is spelled. It is installed through the C API
//! (`sqlite3_set_authorizer`) because rusqlite's wrapper needs `&mut Connection`, and the store's
//! methods take `&self`. The wasm builds compile it too (sqlite-wasm-rs leaves it in).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, Mutex};

use rusqlite::types::ValueRef;
use rusqlite::{ffi, Connection, Transaction};

use super::ops::{immediate, read_lease};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::rules::fenced::{
    is_library_table, refused_table, FencedHandle, Finish, Rows, SqlValue, Statement,
};
use crate::rules::fenced_tx::{self, FencedSteps};
use crate::rules::LeaseRow;

/// Whose tables the caller's statements may not write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Protected {
    /// A fenced write on the lease store's database: `jobs` and every `leasefence_*` table.
    #[default]
    LeaseStore,
    /// A guarded write on the application's own file (the fence guard): only the guard's
    /// `leasefence_*` tables; a `jobs` table there is the application's.
    #[cfg_attr(not(feature = "node"), allow(dead_code))]
    GuardFile,
}

impl Protected {
    fn covers(self, table: &str) -> bool {
        match self {
            Protected::LeaseStore => is_library_table(table),
            Protected::GuardFile => !table.eq_ignore_ascii_case("jobs") && is_library_table(table),
        }
    }
}

/// What the caller phase learned: what the authorizer refused last (for the error message),
/// whether any statement failed (a failure the caller's code swallowed still rolls back), how many
/// statements were started (the index a failure names), and whether the statement being compiled
/// alters a table (its new name is checked after it ran).
#[derive(Debug, Default)]
pub(crate) struct PhaseState {
    refused: Option<String>,
    failed: bool,
    started: usize,
    alters_table: bool,
    protect: Protected,
}

impl PhaseState {
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
    pub(crate) fn protecting(protect: Protected) -> Refusal {
        Arc::new(Mutex::new(PhaseState {
            protect,
            ..PhaseState::default()
        }))
    }
}

/// SQLite's planner statistics (`sqlite_stat1`, `sqlite_stat4`, ...): rows planted there steer
/// the plan of every later statement, the store's `claim_next` included (a full scan instead of
/// its index), so the caller's statements may neither write them nor run `ANALYZE`.
fn is_planner_statistics(table: &str) -> bool {
    const PREFIX: &str = "sqlite_stat";
    table.len() >= PREFIX.len()
        && table.is_char_boundary(PREFIX.len())
        && table[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
}

pub(crate) type Refusal = Arc<Mutex<PhaseState>>;

/// The authorizer's decision for one action: `Some(why)` refuses it. Pure, so it is tested alone.
fn refuse(
    action: c_int,
    first: Option<&str>,
    second: Option<&str>,
    protect: Protected,
) -> Option<String> {
    let table = |name: Option<&str>| {
        let name = name?;
        if protect.covers(name) {
            Some(format!("table:{name}"))
        } else if is_planner_statistics(name) {
            Some(format!(
                "statement:a write to {name}: the planner's statistics steer the plans of the \
                 store's own queries too"
            ))
        } else {
            None
        }
    };
    match action {
        ffi::SQLITE_INSERT | ffi::SQLITE_DELETE | ffi::SQLITE_UPDATE => table(first),
        ffi::SQLITE_CREATE_TABLE
        | ffi::SQLITE_CREATE_TEMP_TABLE
        | ffi::SQLITE_DROP_TABLE
        | ffi::SQLITE_DROP_TEMP_TABLE
        | ffi::SQLITE_CREATE_VIEW
        | ffi::SQLITE_CREATE_TEMP_VIEW
        | ffi::SQLITE_DROP_VIEW
        | ffi::SQLITE_DROP_TEMP_VIEW
        | ffi::SQLITE_CREATE_VTABLE
        | ffi::SQLITE_DROP_VTABLE
        | ffi::SQLITE_REINDEX => table(first),
        ffi::SQLITE_CREATE_INDEX
        | ffi::SQLITE_CREATE_TEMP_INDEX
        | ffi::SQLITE_DROP_INDEX
        | ffi::SQLITE_DROP_TEMP_INDEX
        | ffi::SQLITE_DROP_TRIGGER
        | ffi::SQLITE_DROP_TEMP_TRIGGER => table(first).or_else(|| table(second)),
        ffi::SQLITE_ALTER_TABLE => table(second),
        // A trigger's body is authorized when a statement fires it, not when it is created: one
        // created here could write `jobs` later, outside any fenced write.
        ffi::SQLITE_CREATE_TRIGGER | ffi::SQLITE_CREATE_TEMP_TRIGGER => Some(
            "statement:CREATE TRIGGER: create triggers outside fenced writes (their bodies are \
             checked when they fire)"
                .into(),
        ),
        ffi::SQLITE_TRANSACTION | ffi::SQLITE_SAVEPOINT => Some(
            "statement:transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT): the library \
             opens, commits and rolls back the transaction itself"
                .into(),
        ),
        ffi::SQLITE_PRAGMA => Some(format!(
            "statement:PRAGMA {}: pragmas change the connection, not your tables",
            first.unwrap_or("")
        )),
        ffi::SQLITE_ATTACH | ffi::SQLITE_DETACH => {
            Some("statement:ATTACH/DETACH: fenced statements write this database only".into())
        }
        ffi::SQLITE_ANALYZE => Some(
            "statement:ANALYZE: the planner's statistics steer the plans of the store's own \
             queries too; run ANALYZE outside fenced writes"
                .into(),
        ),
        ffi::SQLITE_READ | ffi::SQLITE_SELECT | ffi::SQLITE_FUNCTION | ffi::SQLITE_RECURSIVE => {
            None
        }
        other => Some(format!(
            "statement:an action SQLite calls {other}, unknown here"
        )),
    }
}

unsafe extern "C" fn authorize(
    refusal: *mut c_void,
    action: c_int,
    first: *const c_char,
    second: *const c_char,
    _database: *const c_char,
    _trigger: *const c_char,
) -> c_int {
    let text = |p: *const c_char| {
        // SAFETY: SQLite passes NUL-terminated strings or null, alive for this call.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("\u{fffd}"))
    };
    // SAFETY: `refusal` is the Mutex that `CallerPhase` keeps alive while installed.
    let slot = unsafe { &*(refusal as *const Mutex<PhaseState>) };
    let Ok(mut slot) = slot.lock() else {
        return ffi::SQLITE_DENY;
    };
    match refuse(action, text(first), text(second), slot.protect) {
        None => {
            // The authorizer is told the table an ALTER TABLE changes, never the name a RENAME
            // gives it: that is checked once the statement ran.
            if action == ffi::SQLITE_ALTER_TABLE {
                slot.alters_table = true;
            }
            ffi::SQLITE_OK
        }
        Some(why) => {
            slot.refused.get_or_insert(why);
            ffi::SQLITE_DENY
        }
    }
}

/// The authorizer, installed while the caller's statements compile; removed on drop (also when
/// the caller's closure panics), before the library's own statements run.
struct CallerPhase<'c> {
    conn: &'c Connection,
    _refusal: Refusal,
}

impl<'c> CallerPhase<'c> {
    fn install(conn: &'c Connection, refusal: Refusal) -> Self {
        let slot = Arc::as_ptr(&refusal) as *mut c_void;
        // SAFETY: the handle is this open connection's; `slot` outlives the registration
        // (`self` holds the Arc and unregisters in Drop).
        unsafe { ffi::sqlite3_set_authorizer(conn.handle(), Some(authorize), slot) };
        CallerPhase {
            conn,
            _refusal: refusal,
        }
    }
}

impl Drop for CallerPhase<'_> {
    fn drop(&mut self) {
        // SAFETY: unregisters the callback on the same open connection.
        unsafe { ffi::sqlite3_set_authorizer(self.conn.handle(), None, std::ptr::null_mut()) };
    }
}

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

    /// The slot the authorizer writes its refusals to (the wasm boundary re-creates the handle
    /// for each call from JavaScript).
    #[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
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
                        format!("{what}; not allowed in a fenced write"),
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

/// The position in `params` of the parameter SQLite numbers `index` (1-based) and names `name`.
fn position(index: usize, name: Option<&str>) -> Result<usize> {
    let numbered = |digits: &str| digits.parse::<usize>().ok().filter(|n| *n >= 1);
    match name {
        None => Ok(index),
        Some(name) => match name
            .strip_prefix('$')
            .or_else(|| name.strip_prefix('?'))
            .and_then(numbered)
        {
            Some(n) => Ok(n),
            None => Err(Error::invalid(
                "statements",
                format!(
                    "parameter {name} is named; write $1, $2, ... (taken from params in order)"
                ),
            )),
        },
    }
}

fn bind_values(stmt: &mut rusqlite::Statement<'_>, params: &[SqlValue]) -> Result<()> {
    let count = stmt.parameter_count();
    let mut highest = 0;
    for index in 1..=count {
        let n = position(index, stmt.parameter_name(index))?;
        highest = highest.max(n);
        let Some(value) = params.get(n - 1) else {
            return Err(Error::invalid(
                "statements",
                format!(
                    "the statement uses parameter {n}, but only {} were given",
                    params.len()
                ),
            ));
        };
        let bound = match value {
            SqlValue::Null => stmt.raw_bind_parameter(index, rusqlite::types::Null),
            SqlValue::Integer(n) => stmt.raw_bind_parameter(index, n),
            SqlValue::Real(f) => stmt.raw_bind_parameter(index, f),
            SqlValue::Text(t) => stmt.raw_bind_parameter(index, t),
            SqlValue::Bool(b) => stmt.raw_bind_parameter(index, i64::from(*b)),
        };
        bound.map_err(Error::storage("fenced"))?;
    }
    if params.len() > highest {
        return Err(Error::invalid(
            "statements",
            format!(
                "{} parameters given, but the statement uses {highest}: \
                 each parameter needs its $N",
                params.len()
            ),
        ));
    }
    Ok(())
}

/// A fenced transaction on SQLite, `BEGIN IMMEDIATE` taken: the write lock is held from before
/// the caller's statements to the commit, so the lease cannot change in between. `refusal` is the
/// slot the authorizer reports to while the statements compile.
struct SqliteSteps<'c> {
    conn: &'c Connection,
    tx: Transaction<'c>,
    refusal: Refusal,
}

impl FencedSteps for SqliteSteps<'_> {
    const WENT_ON: &'static str = "a statement failed and the callback went on; nothing was \
         committed (as on PostgreSQL, which refuses the rest of such a transaction): return the \
         error";
    const TRIES: Option<usize> = None;

    fn statements_failed(&self) -> bool {
        self.refusal.lock().map_or(true, |state| state.failed)
    }

    /// Nothing left to check: the authorizer refused every write to the library's tables while
    /// the statements compiled, and a rename into their names when it ran.
    fn check_library_tables(&mut self) -> Result<()> {
        Ok(())
    }

    fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>> {
        read_lease(&self.tx, job, "fenced")
    }

    fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool> {
        let changed = self
            .tx
            .prepare_cached(include_str!("sql/complete.sql"))
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    lease.job,
                    lease.owner,
                    lease.fence,
                    now,
                    result
                ])
            })
            .map_err(Error::storage("fenced"))?;
        Ok(changed == 1)
    }

    fn commit(self) -> Result<()> {
        self.tx.commit().map_err(Error::storage("fenced"))
    }

    fn rollback(self) -> Result<()> {
        self.tx.rollback().map_err(Error::storage("fenced"))
    }
}

/// The fenced transaction ([`fenced_tx::run`]): `work` with the caller's handle under the
/// authorizer, then the lease check and `finish`, then the commit. An error from `work` rolls
/// back and is returned as is.
pub(crate) fn fenced_with<T>(
    conn: &Connection,
    lease: &Lease,
    now: f64,
    finish: &Finish,
    work: impl FnOnce(&FencedTx<'_>) -> Result<T>,
) -> Result<Outcome<T>> {
    let steps = SqliteSteps {
        conn,
        tx: immediate(conn, "fenced")?,
        refusal: Refusal::default(),
    };
    fenced_tx::run(steps, lease, now, finish, |steps| {
        let _phase = CallerPhase::install(steps.conn, steps.refusal.clone());
        work(&FencedTx::new(steps.conn, steps.refusal.clone()))
    })
}

/// Runs `statements` in order under the authorizer, protecting `protect`'s tables, inside a
/// transaction the caller opened; the columns and rows of the last one. The fence guard's
/// statement lists (JavaScript) run through this.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
pub(crate) fn run_protected(
    conn: &Connection,
    protect: Protected,
    statements: &[Statement],
) -> Result<(Vec<String>, Vec<Vec<SqlValue>>)> {
    let refusal = PhaseState::protecting(protect);
    let _phase = CallerPhase::install(conn, refusal.clone());
    let tx = FencedTx::new(conn, refusal);
    let mut last = (Vec::new(), Vec::new());
    for statement in statements {
        last = tx.query_values(&statement.sql, &statement.params)?;
    }
    Ok(last)
}

/// The statement-list form: every statement in order, then as [`fenced_with`].
pub(crate) fn fenced(
    conn: &Connection,
    lease: &Lease,
    now: f64,
    statements: &[Statement],
    finish: &Finish,
) -> Result<Outcome<()>> {
    fenced_with(conn, lease, now, finish, |tx| {
        for statement in statements {
            tx.execute_values(&statement.sql, &statement.params)?;
        }
        Ok(())
    })
}

/// Fenced writes (docs/contract.md section 8).
impl super::LeaseStore {
    /// Runs `work` inside the transaction that checks the lease, and commits its writes only
    /// while `lease` is current at `now`: all or nothing. With
    /// [`Finish::Complete`] the job completes in the same commit.
    ///
    /// The lease is checked after `work` ran, under the write lock taken before it started, with
    /// the checks and reasons of [`renew`](Self::renew) (`not_found`, `done`, `stale_fence`,
    /// `not_owner`, `expired`): a refused lease rolls `work`'s writes back and answers
    /// [`Outcome::Rejected`]. `work` gets a [`FencedTx`] restricted to your own tables; an error
    /// it returns (a refused or failing statement) rolls back and is returned. Inside `work`, use
    /// only the handle: the store's other methods would try to open a second transaction.
    ///
    /// ```
    /// use leasefence::{Finish, LeaseStore, Reason};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE balance(n INTEGER)", []).unwrap();
    /// store.connection().execute("INSERT INTO balance VALUES (0)", []).unwrap();
    /// store.enqueue("pay")?;
    /// let old = store.claim("pay", "A", 0.0, 10.0)?.lease("pay", "A").unwrap();
    /// let new = store.claim("pay", "B", 20.0, 10.0)?.lease("pay", "B").unwrap();
    ///
    /// // A's lease is gone: its write is rolled back.
    /// let late = store.fenced_with(&old, 21.0, Finish::KeepLease, |tx| {
    ///     tx.execute("UPDATE balance SET n = n + 100", [])
    /// })?;
    /// assert_eq!(late.reason(), Some(&Reason::StaleFence { current: new.fence }));
    ///
    /// // B's write and completion commit together.
    /// let done = Finish::Complete(Some("paid".into()));
    /// let ok = store.fenced_with(&new, 22.0, done, |tx| {
    ///     tx.execute("UPDATE balance SET n = n + 100", [])
    /// })?;
    /// assert!(ok.is_granted());
    /// let n: i64 = store.connection().query_row("SELECT n FROM balance", [], |r| r.get(0)).unwrap();
    /// assert_eq!(n, 100);
    /// assert!(store.state("pay")?.unwrap().done);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn fenced_with<T>(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: impl FnOnce(&FencedTx<'_>) -> Result<T>,
    ) -> Result<Outcome<T>> {
        crate::rules::check_now(now)?;
        fenced_with(&self.conn, lease, now, &finish, work)
    }

    /// The statement-list form of [`fenced_with`](Self::fenced_with): every statement in order
    /// (placeholders `$1`, `$2`, ...), then the lease check, then the commit. What the protocol's
    /// `fenced` op, Node's and the browser's statement lists run.
    ///
    /// ```
    /// use leasefence::{Error, Finish, LeaseStore, Statement};
    /// let store = LeaseStore::open_in_memory()?;
    /// store.connection().execute("CREATE TABLE sent(id TEXT)", []).unwrap();
    /// store.enqueue("mail")?;
    /// let lease = store.claim("mail", "A", 0.0, 10.0)?.lease("mail", "A").unwrap();
    /// let refused = store.fenced(&lease, 1.0,
    ///     &[Statement::new("UPDATE jobs SET fence = 99", [])], Finish::KeepLease);
    /// assert!(matches!(refused, Err(Error::InvalidArgument { .. })));
    /// let sent = [Statement::new("INSERT INTO sent VALUES ($1)", ["mail".into()])];
    /// assert!(store.fenced(&lease, 1.0, &sent, Finish::Complete(None))?.is_granted());
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn fenced(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        crate::rules::check_now(now)?;
        crate::rules::fenced::check_statements(statements)?;
        fenced(&self.conn, lease, now, statements, &finish)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorizer_refuses_library_tables_and_transaction_control() {
        let refuse = |action, first, second| refuse(action, first, second, Protected::LeaseStore);
        assert!(refuse(ffi::SQLITE_INSERT, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_UPDATE, Some("Jobs"), Some("fence")).is_some());
        assert!(refuse(ffi::SQLITE_DELETE, Some("leasefence_order"), None).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TRIGGER, Some("t"), Some("jobs")).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TRIGGER, Some("t"), Some("counters")).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TEMP_TABLE, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_ALTER_TABLE, Some("main"), Some("jobs")).is_some());
        assert!(refuse(ffi::SQLITE_TRANSACTION, Some("COMMIT"), None).is_some());
        assert!(refuse(ffi::SQLITE_PRAGMA, Some("journal_mode"), None).is_some());
        assert!(refuse(ffi::SQLITE_INSERT, Some("counters"), None).is_none());
        assert!(refuse(ffi::SQLITE_READ, Some("jobs"), Some("fence")).is_none());
        assert!(refuse(ffi::SQLITE_CREATE_INDEX, Some("i"), Some("counters")).is_none());
        // The planner's statistics: ANALYZE and any write to sqlite_stat*.
        assert!(refuse(ffi::SQLITE_ANALYZE, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_INSERT, Some("sqlite_stat1"), None).is_some());
        assert!(refuse(ffi::SQLITE_DELETE, Some("SQLITE_STAT4"), None).is_some());
        assert!(refuse(ffi::SQLITE_DROP_TABLE, Some("sqlite_stat1"), None).is_some());
        assert!(refuse(ffi::SQLITE_READ, Some("sqlite_stat1"), Some("stat")).is_none());
    }

    #[test]
    fn on_the_guards_file_jobs_is_the_applications_table() {
        let guard = |action, first| refuse(action, first, None, Protected::GuardFile);
        assert!(guard(ffi::SQLITE_UPDATE, Some("jobs")).is_none());
        assert!(guard(ffi::SQLITE_INSERT, Some("leasefence_guard")).is_some());
        assert!(guard(ffi::SQLITE_DELETE, Some("Leasefence_guard")).is_some());
        assert!(guard(ffi::SQLITE_TRANSACTION, Some("COMMIT")).is_some());
    }

    #[test]
    fn parameter_positions() {
        assert_eq!(position(1, None).unwrap(), 1);
        assert_eq!(position(1, Some("$2")).unwrap(), 2);
        assert_eq!(position(1, Some("?3")).unwrap(), 3);
        assert!(position(1, Some(":name")).is_err());
        assert!(position(1, Some("$0")).is_err());
    }
}

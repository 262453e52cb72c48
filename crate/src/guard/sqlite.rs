//! The fence guard on an SQLite file (see [the module notes](super)).

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};

use super::Guarded;
use crate::error::{Error, Result};
use crate::outcome::Fence;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS leasefence_guard(\
    key TEXT PRIMARY KEY, fence INTEGER NOT NULL) WITHOUT ROWID";

/// Records `fence` for `key` if it is at least the highest recorded; on a lower fence, nothing.
const ACCEPT: &str = "INSERT INTO leasefence_guard(key, fence) VALUES (?1, ?2) \
    ON CONFLICT(key) DO UPDATE SET fence = excluded.fence WHERE excluded.fence >= fence";

const CURRENT: &str = "SELECT fence FROM leasefence_guard WHERE key = ?1";

/// Creates the guard's table (`leasefence_guard`) if it is missing.
///
/// ```
/// let conn = rusqlite::Connection::open_in_memory().unwrap();
/// leasefence::guard::sqlite::install(&conn)?;
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn install(conn: &Connection) -> Result<()> {
    conn.execute(CREATE, [])
        .map(drop)
        .map_err(Error::storage("guard"))
}

/// The guard's check inside a transaction of your own: records `fence` for `key` when it is at
/// least the highest accepted, else answers [`Guarded::Refused`] with the current one. Do your
/// write after an accepted check, in the same transaction, and roll back on a refusal (nothing
/// was recorded then). Open the transaction with `BEGIN IMMEDIATE`
/// ([`TransactionBehavior::Immediate`]) so that its reads are not stale either.
///
/// ```
/// use leasefence::guard::{sqlite, Guarded};
/// let mut conn = rusqlite::Connection::open_in_memory().unwrap();
/// sqlite::install(&conn)?;
/// let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
/// assert_eq!(sqlite::accept(&tx, "invoice-42", 3)?, Guarded::Accepted(()));
/// assert_eq!(sqlite::accept(&tx, "invoice-42", 2)?, Guarded::Refused { current: 3 });
/// tx.commit().unwrap();
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn accept(conn: &Connection, key: &str, fence: Fence) -> Result<Guarded<()>> {
    let changed = conn
        .prepare_cached(ACCEPT)
        .and_then(|mut stmt| stmt.execute(rusqlite::params![key, fence]))
        .map_err(Error::storage("guard"))?;
    if changed == 1 {
        return Ok(Guarded::Accepted(()));
    }
    let current: Option<Fence> = conn
        .prepare_cached(CURRENT)
        .and_then(|mut stmt| stmt.query_row([key], |row| row.get(0)).optional())
        .map_err(Error::storage("guard"))?;
    match current {
        Some(current) => Ok(Guarded::Refused { current }),
        None => Err(Error::Internal {
            message: format!("the guard refused key {key:?} but has no fence recorded for it"),
        }),
    }
}

/// The highest fence accepted for `key`, or `None` when none was.
///
/// ```
/// let conn = rusqlite::Connection::open_in_memory().unwrap();
/// leasefence::guard::sqlite::install(&conn)?;
/// assert_eq!(leasefence::guard::sqlite::current(&conn, "k")?, None);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn current(conn: &Connection, key: &str) -> Result<Option<Fence>> {
    conn.prepare_cached(CURRENT)
        .and_then(|mut stmt| stmt.query_row([key], |row| row.get(0)).optional())
        .map_err(Error::storage("guard"))
}

/// A fence guard on an SQLite file the other store's owner keeps: each [`write`](Self::write)
/// is one `BEGIN IMMEDIATE` transaction with the guard's check first.
///
/// ```
/// use leasefence::guard::{Guarded, SqliteGuard};
/// let dir = tempfile::tempdir().unwrap();
/// let guard = SqliteGuard::open(dir.path().join("ledger.db"))?;
/// guard.connection().execute("CREATE TABLE ledger(entry TEXT)", []).unwrap();
/// let write = |fence| guard.write("ledger", fence, |tx| tx.execute("INSERT INTO ledger VALUES ('x')", []));
/// assert!(write(2)?.is_accepted());
/// assert_eq!(write(1)?, Guarded::Refused { current: 2 });
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug)]
pub struct SqliteGuard {
    conn: Connection,
}

impl SqliteGuard {
    /// Opens (creating if missing) the SQLite file at `path` with a 10 s busy timeout, and
    /// creates the guard's table in it.
    #[cfg(not(web))]
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<SqliteGuard> {
        let path = path.as_ref();
        if let Ok(meta) = std::fs::metadata(path) {
            crate::sqlite::refuse_non_file(&meta, &path.display().to_string())?;
        }
        let conn = Connection::open(path).map_err(|err| Error::Open {
            path: path.display().to_string(),
            problem: err.to_string(),
        })?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(Error::storage("guard"))?;
        Self::from_connection(conn)
    }

    /// A guard on a connection you opened; creates the guard's table.
    ///
    /// ```
    /// let guard = leasefence::guard::SqliteGuard::from_connection(rusqlite::Connection::open_in_memory().unwrap())?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn from_connection(conn: Connection) -> Result<SqliteGuard> {
        install(&conn)?;
        Ok(SqliteGuard { conn })
    }

    /// Runs `work` in one `BEGIN IMMEDIATE` transaction after the guard accepted `fence` for
    /// `key`, and commits both; on a refusal `work` never runs. An error from `work` rolls back
    /// (the fence is not recorded either).
    pub fn write<T>(
        &self,
        key: &str,
        fence: Fence,
        work: impl FnOnce(&Transaction<'_>) -> rusqlite::Result<T>,
    ) -> Result<Guarded<T>> {
        // new_unchecked: `&self` API, and the guard never nests transactions.
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(Error::storage("guard"))?;
        match accept(&tx, key, fence)? {
            Guarded::Accepted(()) => {}
            Guarded::Refused { current } => return Ok(Guarded::Refused { current }),
        }
        let value = work(&tx).map_err(Error::storage("guard"))?;
        tx.commit().map_err(Error::storage("guard"))?;
        Ok(Guarded::Accepted(value))
    }

    /// The highest fence accepted for `key`.
    pub fn current(&self, key: &str) -> Result<Option<Fence>> {
        current(&self.conn, key)
    }

    /// The connection, for your own reads and set-up.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }
}

/// The JavaScript engines' guarded write of a statement list (`FenceGuard.write`, the
/// browser's `guardWrite`): the check, then the statements under the authorizer (`protect` says
/// which tables they may not write), then the commit; a refusal writes nothing. The columns and
/// rows of the last statement.
#[cfg(any(web, feature = "addon"))]
pub(crate) fn write_statements(
    conn: &Connection,
    protect: crate::sqlite::Protected,
    key: &str,
    fence: Fence,
    statements: &[crate::Statement],
) -> Result<Guarded<crate::Rows>> {
    install(conn)?;
    let tx = crate::sqlite::immediate_tx(conn, "guard")?;
    if let Guarded::Refused { current } = accept(&tx, key, fence)? {
        return Ok(Guarded::Refused { current });
    }
    let (columns, rows) = crate::sqlite::run_protected(conn, protect, statements)?;
    tx.commit().map_err(Error::storage("guard"))?;
    Ok(Guarded::Accepted(crate::Rows { columns, rows }))
}

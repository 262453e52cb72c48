//! One write transaction of an operation, and groups of operations in one transaction.
//!
//! Every operation opens its write with [`immediate`]. Alone, that is `BEGIN IMMEDIATE`: the write
//! lock is taken before anything is read. Inside a [`Group`] (a batch operation, or the group
//! commit of a shared store) the connection is already in a transaction, so the same call opens a
//! savepoint instead: the operation's error rolls back to it and fails that operation alone,
//! while its neighbours' changes stay for the group's one commit (docs/contract.md section 10).
//! The operations themselves cannot tell the difference, which is the point: an operation is
//! checked and answered exactly as if it ran alone.

use std::ops::Deref;

use rusqlite::Connection;

use crate::error::{Error, Result};

/// The savepoint's name. Savepoints of one name nest: `ROLLBACK TO` and `RELEASE` find the
/// innermost, so one name serves every level.
const SAVEPOINT: &str = "leasefence_op";
/// The statements that open and end a savepoint of [`SAVEPOINT`]'s name.
const SAVEPOINT_BEGIN: &str = "SAVEPOINT leasefence_op";
const SAVEPOINT_RELEASE: &str = "RELEASE leasefence_op";

/// Runs one transaction-control statement (`BEGIN`, `SAVEPOINT`, `RELEASE`, `COMMIT`) from the
/// connection's statement cache: a group of 16 claims runs 34 of them, and parsing each anew
/// (`execute_batch`) cost more than some of the operations did.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// An open write: a top-level `BEGIN IMMEDIATE` transaction or a savepoint in an enclosing one.
/// Dropped without [`commit`](WriteTx::commit), it rolls back (errors ignored, as rusqlite's
/// `Transaction` does); it dereferences to the connection to run statements.
pub(crate) struct WriteTx<'c> {
    conn: &'c Connection,
    nested: bool,
    operation: &'static str,
    finished: bool,
    /// The write gate of a top-level write (native WAL files, see `gate.rs`), held until this
    /// transaction ends: dropped after `Drop` has rolled back, or when `commit` returns.
    #[cfg(target_os = "linux")]
    _gate: Option<super::gate::Pass<'c>>,
}

/// Where an operation writes. `Own`: in a write of its own, opened with [`immediate`] (alone, or
/// a savepoint in a group whose operations are answered one by one). `Batch`: inside the write of
/// an all-or-nothing batch (`claim_next_many`, `complete_many`, `renew_many`, a heartbeat's
/// renews), where an item's error undoes the whole batch anyway: a savepoint per item would only
/// make SQLite copy each page the item changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scope {
    Own,
    Batch,
}

/// The write an operation opens for `scope`: its own ([`immediate`]), or none inside a batch's.
pub(crate) fn write_for<'c>(
    conn: &'c Connection,
    operation: &'static str,
    scope: Scope,
) -> Result<Option<WriteTx<'c>>> {
    match scope {
        Scope::Own => immediate(conn, operation).map(Some),
        Scope::Batch => Ok(None),
    }
}

/// Opens the write of `operation` on `conn`: `BEGIN IMMEDIATE` when the connection is idle, a
/// savepoint when a group's transaction is open.
pub(crate) fn immediate<'c>(conn: &'c Connection, operation: &'static str) -> Result<WriteTx<'c>> {
    open(conn, operation, "BEGIN IMMEDIATE")
}

/// Opens a read of `operation` that must see one moment: `BEGIN DEFERRED` when the connection is
/// idle; inside a group the group's transaction already is one moment.
pub(crate) fn deferred<'c>(conn: &'c Connection, operation: &'static str) -> Result<WriteTx<'c>> {
    open(conn, operation, "BEGIN DEFERRED")
}

fn open<'c>(conn: &'c Connection, operation: &'static str, begin: &str) -> Result<WriteTx<'c>> {
    let nested = !conn.is_autocommit();
    // Writers queue at the gate first, in the kernel, rather than all polling SQLite's lock; a
    // savepoint is inside a transaction that already passed it, and a read needs no gate.
    #[cfg(target_os = "linux")]
    let gate = if !nested && begin == "BEGIN IMMEDIATE" {
        super::gate::enter(conn, operation)?
    } else {
        None
    };
    let begin = if nested { SAVEPOINT_BEGIN } else { begin };
    let begun = control(conn, begin);
    #[cfg(target_os = "linux")]
    super::gate::began_writing(conn);
    begun.map_err(Error::storage(operation))?;
    Ok(WriteTx {
        conn,
        nested,
        operation,
        finished: false,
        #[cfg(target_os = "linux")]
        _gate: gate,
    })
}

/// Runs `write`, one statement in its own implicit transaction (no `BEGIN`), behind the write
/// gate as [`immediate`] would: a single-statement write queues with the others.
pub(crate) fn single_statement<T>(
    conn: &Connection,
    operation: &'static str,
    write: impl FnOnce() -> Result<T>,
) -> Result<T> {
    #[cfg(target_os = "linux")]
    let _gate = if conn.is_autocommit() {
        super::gate::enter(conn, operation)?
    } else {
        None
    };
    #[cfg(not(target_os = "linux"))]
    let _ = (conn, operation);
    let written = write();
    #[cfg(target_os = "linux")]
    super::gate::began_writing(conn);
    written
}

impl WriteTx<'_> {
    /// Makes the write durable (top level) or keeps it for the enclosing commit (savepoint).
    pub(crate) fn commit(mut self) -> rusqlite::Result<()> {
        self.finished = true;
        let end = if self.nested {
            SAVEPOINT_RELEASE
        } else {
            "COMMIT"
        };
        let committed = control(self.conn, end);
        if committed.is_err() {
            // A failed COMMIT can leave the transaction open (SQLITE_BUSY): undo it, so nothing
            // of it stays behind for a later statement to commit by accident.
            let _ = self.undo();
        }
        committed
    }

    /// Undoes the write now; errors are the caller's to see.
    pub(crate) fn rollback(mut self) -> rusqlite::Result<()> {
        self.finished = true;
        self.undo()
    }

    /// Rolls back to where this write began. Nothing to do when SQLite already rolled the whole
    /// transaction back (an I/O error, a full disk): the enclosing group then sees the
    /// connection idle.
    fn undo(&self) -> rusqlite::Result<()> {
        if self.conn.is_autocommit() {
            return Ok(());
        }
        if self.nested {
            self.conn
                .execute_batch(&format!("ROLLBACK TO {SAVEPOINT}; RELEASE {SAVEPOINT}"))
        } else {
            self.conn.execute_batch("ROLLBACK")
        }
    }
}

impl Deref for WriteTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for WriteTx<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // As rusqlite's Transaction does on drop: an error here has no one to go to.
            let _ = self.undo();
        }
    }
}

/// Several operations in one transaction (docs/contract.md section 10): each runs through
/// [`Group::run`] in a savepoint of its own, and nothing is durable before [`Group::commit`].
pub(crate) struct Group<'c> {
    tx: WriteTx<'c>,
}

impl<'c> Group<'c> {
    /// Opens the group's transaction (`BEGIN IMMEDIATE`, or a savepoint when `conn` is already
    /// in one, so a batch inside a group is one more level).
    pub(crate) fn begin(conn: &'c Connection, operation: &'static str) -> Result<Self> {
        Ok(Group {
            tx: immediate(conn, operation)?,
        })
    }

    /// Runs one operation of the group. Its own error is its answer alone (its savepoint rolled
    /// back); the outer `Err` means the group itself is lost: SQLite rolled the whole transaction
    /// back under the operation (a full disk, an I/O error), so neither it nor any neighbour may
    /// be answered as done, and the caller must not go on (the connection is idle now, so a
    /// further operation would commit on its own).
    pub(crate) fn run<T>(&self, operation: impl FnOnce() -> Result<T>) -> Result<Result<T>> {
        self.check_open()?;
        let answer = operation();
        match self.check_open() {
            Ok(()) => Ok(answer),
            // The operation's own error says why the transaction went; report it for the group.
            Err(lost) => Err(answer.err().unwrap_or(lost)),
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.tx.conn.is_autocommit() {
            let message = format!(
                "the transaction of a group of operations ({}) was rolled back by SQLite under \
                 one of them; nothing of the group was applied: retry the group",
                self.tx.operation
            );
            let abort = rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT_ROLLBACK);
            return Err(Error::storage(self.tx.operation)(
                rusqlite::Error::SqliteFailure(abort, Some(message)),
            ));
        }
        Ok(())
    }

    /// Commits every operation run so far, at once.
    pub(crate) fn commit(self) -> Result<()> {
        self.check_open()?;
        let operation = self.tx.operation;
        self.tx.commit().map_err(Error::storage(operation))
    }
}

//! The fenced transaction on SQLite: its [`FencedSteps`] (`BEGIN IMMEDIATE`, the lease check,
//! the commit), and the calls that run the caller's work or statement list in it.

use rusqlite::Connection;

use super::authorizer::{CallerPhase, PhaseState, Protected, Refusal};
use super::handle::FencedTx;
use crate::async_leases::ready;
use crate::batch::NewJob;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::rules::fenced::{Finish, SqlValue, Statement};
use crate::rules::fenced_tx::{self, FencedSteps};
use crate::rules::LeaseRow;
use crate::sqlite::ops::{immediate, read_lease};
use crate::sqlite::write_tx::WriteTx;

/// A fenced transaction on SQLite, `BEGIN IMMEDIATE` taken: the write lock is held from before
/// the caller's statements to the commit, so the lease cannot change in between. `refusal` is the
/// slot the authorizer reports to while the statements compile.
struct SqliteSteps<'c> {
    conn: &'c Connection,
    tx: WriteTx<'c>,
    refusal: Refusal,
    operation: &'static str,
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
    async fn check_library_tables(&mut self) -> Result<()> {
        Ok(())
    }

    async fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>> {
        read_lease(&self.tx, job, self.operation)
    }

    async fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool> {
        let changed = self
            .tx
            .prepare_cached(include_str!("../sql/complete.sql"))
            .and_then(|mut stmt| {
                stmt.execute(rusqlite::params![
                    lease.job,
                    lease.owner,
                    lease.fence,
                    now,
                    result
                ])
            })
            .map_err(Error::storage(self.operation))?;
        if changed == 1 {
            crate::sqlite::ops::stamp_finished(&self.tx, &lease.job, now, self.operation)?;
        }
        Ok(changed == 1)
    }

    async fn commit(self) -> Result<()> {
        self.tx.commit().map_err(Error::storage(self.operation))
    }

    async fn rollback(self) -> Result<()> {
        self.tx.rollback().map_err(Error::storage(self.operation))
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
        operation: "fenced",
    };
    // Every step is synchronous here: one poll ends it.
    ready(fenced_tx::run(steps, lease, now, finish, async |steps| {
        let _phase = CallerPhase::install(steps.conn, steps.refusal.clone());
        work(&FencedTx::new(steps.conn, steps.refusal.clone()))
    }))
}

/// Runs `statements` in order under the authorizer, protecting `protect`'s tables, inside a
/// transaction the caller opened; the columns and rows of the last one. The fence guard's
/// statement lists (JavaScript) run through this.
#[cfg_attr(not(any(web, feature = "addon")), allow(dead_code))]
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

/// Enqueue in your own transaction, the statement-list form (docs/contract.md section 11): the
/// caller's `statements` in order under the authorizer (section 8's restrictions: never `jobs`
/// nor a `leasefence_*` table, no transaction control, no `PRAGMA` or `ATTACH`), then `enqueue`
/// of every job, then one commit. No lease is checked. A refused statement is
/// `invalid_argument`, a failing one [`Error::Statement`] naming it; either rolls everything back.
pub(crate) fn enqueue_with_statements(
    conn: &Connection,
    jobs: &[NewJob],
    statements: &[Statement],
) -> Result<Vec<bool>> {
    let steps = SqliteSteps {
        conn,
        tx: immediate(conn, "enqueue_many")?,
        refusal: Refusal::default(),
        operation: "enqueue_many",
    };
    ready(fenced_tx::run_unleased(
        steps,
        async |steps| {
            let _phase = CallerPhase::install(steps.conn, steps.refusal.clone());
            let tx = FencedTx::new(steps.conn, steps.refusal.clone());
            for statement in statements {
                tx.execute_values(&statement.sql, &statement.params)?;
            }
            Ok(())
        },
        async |steps| crate::sqlite::ops::enqueue_each(steps.conn, "enqueue_many", jobs),
    ))
}

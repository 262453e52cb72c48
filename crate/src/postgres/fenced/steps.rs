//! The fenced transaction on a PostgreSQL session: its [`FencedSteps`] (the first reading, the
//! check of the library's tables after the caller's statements, the lease read under the row's
//! lock, the commit).

use postgres::Transaction;

use super::handle::PgFencedTx;
use super::readings::{fingerprint, rows, Reading};
use crate::async_leases::ready;
use crate::batch::NewJob;
use crate::error::Result;
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::postgres::failure::pg;
use crate::postgres::library_tables::{self, compare, given_back, GIVE_BACK_SESSION};
use crate::postgres::many::enqueue_rows;
use crate::postgres::native_wire::ClientWire;
use crate::postgres::native_wire::Statements;
use crate::postgres::session::Session;
use crate::postgres::store::lease_of;
use crate::postgres::wire::Control;
use crate::rules::fenced::{Finish, Statement};
use crate::rules::fenced_tx::{self, FencedSteps};
use crate::rules::LeaseRow;

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
    const WENT_ON: &'static str = library_tables::WENT_ON;
    const TRIES: Option<usize> = Some(1);

    fn statements_failed(&self) -> bool {
        self.failed
    }

    /// Gives the session back, checks its prepared statements, takes the second reading (which
    /// applies the store's settings again) and compares it with the first (see the module notes).
    async fn check_library_tables(&mut self) -> Result<()> {
        let track_counts =
            given_back(&rows(&mut self.tx, GIVE_BACK_SESSION)?, self.own_statements)?;
        let after = fingerprint(
            &mut self.tx,
            &self.stmts.fingerprint_after,
            &[self.lock_timeout],
        )?;
        compare(&self.before, &after, track_counts.as_deref())
    }

    /// Reads the row locked (`FOR SHARE`): under READ COMMITTED it could change otherwise before
    /// this transaction ends.
    async fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>> {
        let row = self
            .tx
            .query_opt(&self.stmts.read_lease_for_share, &[&job])
            .map_err(pg("fenced"))?;
        lease_of(row, "fenced")
    }

    async fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool> {
        let changed = self
            .tx
            .execute(
                &self.stmts.complete,
                &[&lease.job, &lease.owner, &lease.fence, &now, &result],
            )
            .map_err(pg("fenced"))?;
        Ok(changed == 1)
    }

    async fn commit(self) -> Result<()> {
        self.tx.commit().map_err(pg("fenced"))
    }

    async fn rollback(self) -> Result<()> {
        self.tx.rollback().map_err(pg("fenced"))
    }
}

/// The fenced transaction on `session` ([`fenced_tx::run`]): see
/// [`PgStore::fenced_with`](crate::PgStore::fenced_with).
pub(super) fn fenced_in<T>(
    session: &mut Session,
    lease: &Lease,
    now: f64,
    finish: &Finish,
    work: impl FnOnce(&mut PgFencedTx<'_, '_>) -> Result<T>,
) -> Result<Outcome<T>> {
    // Every step is synchronous here: one poll ends it.
    ready(fenced_tx::run(
        begin(session)?,
        lease,
        now,
        finish,
        async |steps| caller_work(steps, work),
    ))
}

/// Enqueue in your own transaction, the statement-list form (docs/contract.md section 11): the
/// caller's `statements` on the fenced handle (refused and checked as in a fenced write), the
/// check that the library's tables are unwritten, then `enqueue_many`'s own statements, then
/// the commit. No lease.
pub(super) fn enqueue_in_session(
    session: &mut Session,
    jobs: &[NewJob],
    statements: &[Statement],
) -> Result<Vec<bool>> {
    ready(fenced_tx::run_unleased(
        begin(session)?,
        async |steps| {
            caller_work(steps, |tx| {
                for statement in statements {
                    tx.execute_values(&statement.sql, &statement.params)?;
                }
                Ok(())
            })
        },
        async |steps| {
            let stmts = steps.stmts;
            enqueue_rows(&mut ClientWire::prepared(&mut steps.tx, stmts), jobs).await
        },
    ))
}

/// Begins the transaction on `session` and takes the first reading of the library's tables.
fn begin(session: &mut Session) -> Result<PgSteps<'_, '_>> {
    let Session {
        client,
        stmts,
        own_statements,
        lock_timeout,
        ..
    } = session;
    let mut tx = client.transaction().map_err(pg("fenced"))?;
    // The store's sessions force generic plans for its own statements (wire.rs,
    // SESSION_SETTINGS); the caller's statements are planned as the server would plan them.
    tx.batch_execute(Control::CallersPlans.sql())
        .map_err(pg("fenced"))?;
    let before = fingerprint(&mut tx, &stmts.fingerprint, &[])?;
    Ok(PgSteps {
        tx,
        failed: false,
        stmts,
        own_statements,
        lock_timeout,
        before,
    })
}

/// Runs the caller's `work` on the handle, noting whether one of its statements failed.
fn caller_work<T>(
    steps: &mut PgSteps<'_, '_>,
    work: impl FnOnce(&mut PgFencedTx<'_, '_>) -> Result<T>,
) -> Result<T> {
    let mut handle = PgFencedTx {
        tx: &mut steps.tx,
        failed: false,
        started: 0,
    };
    let value = work(&mut handle);
    steps.failed = handle.failed;
    value
}

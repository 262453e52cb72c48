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
//!
//! # Layout
//!
//! - `../library_tables.rs` (every client's): the readings before and after the caller's
//!   statements and their comparison, the session given back after them, and the check of its
//!   prepared statements; `readings.rs` takes the readings on the native client;
//! - `values.rs`: [`SqlValue`](crate::SqlValue)s bound to the types PostgreSQL infers, and read
//!   back from rows;
//! - `handle.rs`: [`PgFencedTx`], the caller's handle, and its
//!   [`FencedHandle`](crate::FencedHandle);
//! - `steps.rs`: the transaction's [`FencedSteps`](crate::rules::fenced_tx::FencedSteps);
//! - here: [`PgStore::fenced_with`] and the statement-list form.

mod handle;
mod readings;
mod steps;
mod values;

pub use handle::PgFencedTx;

use super::checks;
use super::session::Session;
use super::store::PgStore;
use crate::batch::NewJob;
use crate::error::Result;
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::postgres::library_tables::{prepared_intact, prepared_row, AFTER_ROLLBACK};
use crate::rules::fenced::{Finish, Statement};
use readings::rows;
use steps::{enqueue_in_session, fenced_in};

/// After a transaction that ran the caller's statements: when it `failed` (rolled back), the
/// settings went back with it, advisory locks and prepared statements did not. A session that
/// cannot be checked, or whose statements changed, is closed (the next call connects again).
fn after_caller_statements(session: &mut Session, failed: bool) {
    if !failed {
        return;
    }
    let own = session.own_statements.clone();
    let intact = rows(&mut session.client, AFTER_ROLLBACK)
        .map(|after| prepared_intact(prepared_row(&after), &own));
    if !matches!(intact, Ok(true)) {
        session.tainted = true;
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
        checks::fenced(lease, now, &finish)?;
        self.link.limits.check_finish(&finish)?;
        self.link.with_session("fenced", |session| {
            let result = fenced_in(session, lease, now, &finish, work);
            after_caller_statements(session, result.is_err());
            result
        })
    }

    /// Contract `enqueue_many` with the caller's statements in the same transaction
    /// (docs/contract.md section 11), as [`Leases::enqueue_many_with`](crate::Leases) runs it:
    /// the statements under section 8's checks, then the jobs, then one commit.
    pub(super) fn enqueue_many_statements(
        &self,
        jobs: &[NewJob],
        statements: &[Statement],
    ) -> Result<Vec<bool>> {
        checks::enqueue_many(jobs)?;
        self.link.limits.check_jobs(jobs)?;
        crate::rules::fenced::check_statements(statements)?;
        if statements.is_empty() {
            return crate::async_leases::ready(super::operations::enqueue_many(self, jobs));
        }
        self.link.with_session("enqueue_many", |session| {
            let result = enqueue_in_session(session, jobs, statements);
            after_caller_statements(session, result.is_err());
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

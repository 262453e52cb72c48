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
//!
//! # Layout
//!
//! - `authorizer.rs`: the authorizer, which statements and tables it refuses, its installation;
//! - `handle.rs`: [`FencedTx`], the caller's handle (`execute`, `query_row`, the
//!   [`SqlValue`](crate::SqlValue) forms) and its [`FencedHandle`](crate::FencedHandle);
//! - `parameters.rs`: binding [`SqlValue`](crate::SqlValue) parameters by position (`$1`, `$2`,
//!   ...);
//! - `steps.rs`: the transaction's [`FencedSteps`](crate::rules::fenced_tx::FencedSteps), and the
//!   calls that run a closure or a statement list in it;
//! - here: [`LeaseStore::fenced_with`](super::LeaseStore::fenced_with) and
//!   [`LeaseStore::fenced`](super::LeaseStore::fenced).

mod authorizer;
mod handle;
mod parameters;
mod steps;

#[cfg(any(web, feature = "addon"))]
pub(crate) use authorizer::{Protected, Refusal};
pub use handle::FencedTx;
pub(crate) use steps::enqueue_with_statements;
#[cfg(any(web, feature = "addon"))]
pub(crate) use steps::run_protected;

use crate::error::Result;
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::rules::fenced::{Finish, Statement};
use steps::{fenced, fenced_with};

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
        self.options.limits.check_finish(&finish)?;
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
        self.options.limits.check_finish(&finish)?;
        fenced(&self.conn, lease, now, statements, &finish)
    }
}

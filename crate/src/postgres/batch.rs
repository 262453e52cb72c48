//! `enqueue_in` on the native store: `enqueue_many` inside the caller's own transaction
//! (docs/contract.md section 11), `many.rs`'s statements on the caller's `postgres` transaction.
//! The batch operations themselves are `operations.rs`'s.

use postgres::Transaction;

use super::checks;
use super::failure::pg;
use super::many;
use super::native_wire::ClientWire;
use super::store::PgStore;
use crate::async_leases::ready;
use crate::batch::NewJob;
use crate::error::{Error, Result};

impl PgStore {
    /// Contract `enqueue_many` inside the caller's own transaction (docs/contract.md section 11):
    /// the jobs commit when `tx` commits, with the caller's rows, and vanish when it rolls back.
    /// Runs the store's own `enqueue_many` SQL on `tx` in a savepoint (an error leaves `tx` as it
    /// was, still usable), answering each job as [`Leases::enqueue_many`](crate::Leases) does.
    /// The tables are found by `tx`'s `search_path`, so connect to the schema the store uses; they
    /// must exist already (any [`PgStore::connect`] to that schema made them), or the call is
    /// [`Error::InvalidArgument`] and writes nothing. Your own statements on `tx` are not
    /// restricted here: leave `jobs` and the `leasefence_*` tables to the library.
    ///
    /// ```no_run
    /// use leasefence::{NewJob, PgStore};
    /// let url = "postgres://localhost/shop";
    /// let store = PgStore::connect(url)?; // creates the tables on first use
    /// let mut app = postgres::Client::connect(url, postgres::NoTls).unwrap();
    /// let mut tx = app.transaction().unwrap();
    /// tx.execute("INSERT INTO orders(id) VALUES ($1)", &[&"o-1"]).unwrap();
    /// PgStore::enqueue_in(&mut tx, &[NewJob::new("ship-o-1")])?;
    /// tx.commit().unwrap(); // the order and its job, or neither
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn enqueue_in(tx: &mut Transaction<'_>, jobs: &[NewJob]) -> Result<Vec<bool>> {
        checks::enqueue_many(jobs)?;
        // No store here to hold limits: the caller's transaction gets the defaults.
        crate::Limits::default().check_jobs(jobs)?;
        let mut inner = tx.transaction().map_err(pg("enqueue_many"))?;
        let present: bool = inner
            .query_one(SCHEMA_PRESENT, &[])
            .and_then(|row| row.try_get(0))
            .map_err(pg("enqueue_many"))?;
        if !present {
            return Err(Error::invalid(
                "transaction",
                "its search_path does not lead to leasefence's tables (jobs with its queue and \
                 seq columns, leasefence_payloads and the trigger leasefence_track): connect a \
                 PgStore to this schema once (it creates them), or set the transaction's \
                 search_path to the store's schema",
            ));
        }
        // The store's own statements, prepared on the caller's connection for this call.
        let added = ready(many::enqueue_rows(&mut ClientWire::bare(&mut inner), jobs))?;
        inner.commit().map_err(pg("enqueue_many"))?;
        Ok(added)
    }
}

/// Whether the tables, columns and the trigger `enqueue_many` writes through are where
/// `search_path` leads: without the trigger a job could start below the fence floor.
const SCHEMA_PRESENT: &str = "SELECT to_regclass('jobs') IS NOT NULL \
    AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('jobs') \
                AND attname = 'seq' AND attidentity = 'd') \
    AND to_regclass('leasefence_payloads') IS NOT NULL \
    AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('jobs') \
                AND tgname = 'leasefence_track')";

//! The batch operations on the native store (docs/contract.md section 10): the arguments
//! checked before any connection (`checks.rs`), then the operations of `many.rs`, written once
//! for every client, run on the session; and `enqueue_in`, the caller's own transaction.

use postgres::Transaction;

use super::checks;
use super::failure::pg;
use super::many::{self, ManyWrite};
use super::native_wire::ClientWire;
use super::store::PgStore;
use crate::async_leases::ready;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::registry::WorkerBeat;

impl PgStore {
    pub(super) fn enqueue_many_on(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        checks::enqueue_many(jobs)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        self.run("enqueue_many", async |wire| {
            many::enqueue_many(wire, jobs).await
        })
    }

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
        let mut inner = tx.transaction().map_err(pg("enqueue_many"))?;
        let present: bool = inner
            .query_one(SCHEMA_PRESENT, &[])
            .and_then(|row| row.try_get(0))
            .map_err(pg("enqueue_many"))?;
        if !present {
            return Err(Error::invalid(
                "transaction",
                "its search_path does not lead to leasefence's tables (jobs, leasefence_order, \
                 leasefence_payloads and the trigger leasefence_track): connect a PgStore to \
                 this schema once (it creates them), or set the transaction's search_path to the \
                 store's schema",
            ));
        }
        // The store's own statements, prepared on the caller's connection for this call.
        let added = ready(many::enqueue_rows(&mut ClientWire::bare(&mut inner), jobs))?;
        inner.commit().map_err(pg("enqueue_many"))?;
        Ok(added)
    }

    pub(super) fn renew_many_on(
        &self,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("renew_many", None, leases, now, ttl)
    }

    /// `Leases::heartbeat`: `renew_many`'s statement over the leases, then the beat, in one
    /// transaction.
    pub(super) fn heartbeat_on(
        &self,
        beat: &WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("heartbeat", Some(beat), leases, now, ttl)
    }

    /// The leases renewed by `renew_many`'s statement, and the worker's beat if given, in one
    /// transaction; every argument checked first.
    fn renew_with_beat(
        &self,
        operation: &'static str,
        beat: Option<&WorkerBeat>,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        let until = checks::renew_many(leases, beat, now, ttl)?;
        let items: Vec<&Lease> = leases.iter().collect();
        if items.is_empty() && beat.is_none() {
            return Ok(Vec::new());
        }
        let beat = beat.map(|beat| (beat, ttl));
        self.run(operation, async |wire| {
            many::write_many(
                wire,
                operation,
                &items,
                now,
                beat,
                ManyWrite::Renew { until },
            )
            .await
        })
    }

    pub(super) fn complete_many_on(
        &self,
        completions: &[LeaseCompletion],
        now: f64,
    ) -> Result<Vec<Outcome<()>>> {
        checks::complete_many(completions, now)?;
        let items: Vec<&Lease> = completions.iter().map(|done| &done.lease).collect();
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let write = ManyWrite::Complete { completions };
        self.run("complete_many", async |wire| {
            many::write_many(wire, "complete_many", &items, now, None, write).await
        })
    }
}

/// Whether the tables and the trigger `enqueue_many` writes through are where `search_path`
/// leads: without the trigger a job would never be claimed.
const SCHEMA_PRESENT: &str = "SELECT to_regclass('jobs') IS NOT NULL \
    AND to_regclass('leasefence_order') IS NOT NULL \
    AND to_regclass('leasefence_payloads') IS NOT NULL \
    AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = to_regclass('jobs') \
                AND tgname = 'leasefence_track')";

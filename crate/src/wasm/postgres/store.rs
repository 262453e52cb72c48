//! [`NodePgStore`]: the contract on PostgreSQL from Node, as [`AsyncLeases`]: each operation
//! borrows a connection from a `pg` pool, sets it up the first time (the session settings, and
//! the schema checked or made by the store's first connection: `postgres/schema.rs`), and runs
//! the operation written once for every client in `postgres/operations.rs` on it (its
//! arguments checked before a connection is borrowed, as natively).

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::js_wire::{reported, JsWire, PgClient};
use crate::async_leases::AsyncLeases;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::postgres::operations::{self, Connections};
use crate::postgres::{checks, schema};
use crate::rules::fenced::{Finish, Statement};
use crate::rules::{check_owner_count, LeaseWindow};
use crate::schedule::{Schedule, StoredSchedule};

#[wasm_bindgen]
extern "C" {
    /// A `pg` `Pool`.
    #[derive(Clone)]
    pub type PgPool;

    /// `pool.connect()`: a promise of a client lent out until its `release`.
    #[wasm_bindgen(method, catch)]
    fn connect(this: &PgPool) -> std::result::Result<Promise, JsValue>;

    /// `client.release(destroy)`: back to the pool, or closed (`true`) when it is broken.
    #[wasm_bindgen(method)]
    fn release(this: &PgClient, destroy: bool);
}

/// Set on a pooled client once this crate has set it up (`schema::set_up`).
const SET_UP: &str = "__leasefenceSetUp";

/// The store: a pool, the lock timeout each connection is set up with, and the URL for messages
/// (password redacted).
pub(super) struct NodePgStore {
    pub(super) pool: PgPool,
    /// The busy timeout as PostgreSQL's `lock_timeout` (`250ms`).
    pub(super) lock_timeout: String,
    pub(super) label: String,
    /// Whether a connection of this store checked the schema (and made what was missing) since
    /// the store opened or last lost a connection. The pool opens connections all the time (it
    /// grows under load and closes idle ones), and the check is a dozen catalog reads: each new
    /// connection after the first gets only the session settings. A lost connection (a server
    /// restart, perhaps onto a restored database) makes the next one check again.
    pub(super) schema_checked: std::cell::Cell<bool>,
}

impl NodePgStore {
    /// Sets a connection up, so that a wrong password or an unreachable server shows at open.
    pub(super) async fn connect(&self) -> Result<()> {
        self.run("connect", async |_| Ok(())).await
    }

    /// Runs `work` on a pooled connection, set up first if it is new. A connection whose error
    /// says it is lost is closed instead of going back to the pool; the next call gets a fresh one.
    pub(super) async fn run<T>(
        &self,
        operation: &'static str,
        work: impl AsyncFnOnce(&mut JsWire) -> Result<T>,
    ) -> Result<T> {
        on_lent(&self.pool, operation, async |wire| {
            let ready = Reflect::get(&wire.client, &SET_UP.into())
                .map(|v| v.is_truthy())
                .unwrap_or(false);
            if !ready {
                if self.schema_checked.get() {
                    schema::session_settings(wire, &self.lock_timeout).await?;
                } else {
                    schema::set_up(wire, &self.lock_timeout, &self.label).await?;
                    self.schema_checked.set(true);
                }
                let _ = Reflect::set(&wire.client, &SET_UP.into(), &true.into());
            }
            work(wire).await
        })
        .await
        .inspect_err(|err| {
            if matches!(
                err,
                Error::Postgres {
                    disconnected: true,
                    ..
                }
            ) {
                self.schema_checked.set(false);
            }
        })
    }
}

/// Runs `work` on a connection lent from `pool`. A connection whose error says it is lost, or
/// that `work` marked (`JsWire::close`), is closed instead of going back to the pool; the next
/// call gets a fresh one.
pub(super) async fn on_lent<T>(
    pool: &PgPool,
    operation: &'static str,
    work: impl AsyncFnOnce(&mut JsWire) -> Result<T>,
) -> Result<T> {
    let promise = pool.connect().map_err(|e| reported(operation, &e))?;
    let client: PgClient = JsFuture::from(promise)
        .await
        .map_err(|e| reported(operation, &e))?
        .into();
    let mut wire = JsWire {
        client: client.clone(),
        close: false,
    };
    let result = work(&mut wire).await;
    let broken = matches!(
        result,
        Err(Error::Postgres {
            disconnected: true,
            ..
        })
    );
    client.release(broken || wire.close);
    result
}

/// The connections the operations (`postgres/operations.rs`) run on: the pool's.
impl Connections for NodePgStore {
    type Wire<'w> = JsWire;

    fn on_connection<T>(
        &self,
        operation: &'static str,
        work: impl AsyncFnOnce(&mut JsWire) -> Result<T>,
    ) -> impl std::future::Future<Output = Result<T>> {
        self.run(operation, work)
    }
}

/// Each operation is `postgres/operations.rs`'s (its checks, then its statements on a pooled
/// connection), but `claim_many` (a race across the pool) and fenced writes (`fenced.rs`).
impl AsyncLeases for NodePgStore {
    async fn init(&self) -> Result<()> {
        operations::init(self).await
    }
    async fn enqueue_job(&self, new: &NewJob) -> Result<bool> {
        operations::enqueue(self, new).await
    }
    async fn state(&self, job: &str) -> Result<Option<JobState>> {
        operations::state(self, job).await
    }
    async fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        operations::claim(self, job, owner, now, ttl).await
    }
    async fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>> {
        operations::renew(self, lease, now, ttl).await
    }
    async fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>> {
        operations::complete(self, lease, now, result).await
    }
    async fn release(&self, lease: &Lease) -> Result<Outcome<()>> {
        operations::release(self, lease).await
    }
    /// Every owner's claim at once, each on a connection of its own from the pool (owners past
    /// the pool's size wait for one), so that they really race at the server; answers in input
    /// order.
    async fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        let window = LeaseWindow::new(now, ttl)?;
        check_owner_count(owners.len())?;
        checks::check_text("job", job)?;
        for owner in owners {
            checks::check_text("owner", owner)?;
        }
        let claims = owners
            .iter()
            .map(|owner| operations::claim_within(self, "claim_many", job, owner, window));
        join_all(claims.collect()).await.into_iter().collect()
    }
    async fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>> {
        operations::claim_next(self, queues, owner, now, ttl).await
    }
    async fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>> {
        operations::fail(self, lease, now, retry_at, error).await
    }
    async fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>> {
        operations::revive(self, job, now).await
    }
    async fn inspect(&self, job: &str) -> Result<Option<Inspection>> {
        operations::inspect(self, job).await
    }
    async fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts> {
        operations::stats(self, queue, now).await
    }
    async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        operations::enqueue_many(self, jobs).await
    }
    async fn enqueue_many_with(
        &self,
        jobs: &[NewJob],
        statements: &[Statement],
    ) -> Result<Vec<bool>> {
        self.enqueue_many_statements(jobs, statements).await
    }
    async fn claim_next_many_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        operations::claim_next_many(self, queues, owner, n, now, ttl).await
    }
    async fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>> {
        operations::renew_with_beat(self, "renew_many", None, leases, now, ttl).await
    }
    async fn complete_many(
        &self,
        completions: &[LeaseCompletion],
        now: f64,
    ) -> Result<Vec<Outcome<()>>> {
        operations::complete_many(self, completions, now).await
    }
    async fn schedule(&self, schedule: &Schedule) -> Result<()> {
        operations::schedule(self, schedule).await
    }
    async fn unschedule(&self, name: &str) -> Result<bool> {
        operations::unschedule(self, name).await
    }
    async fn schedules(&self) -> Result<Vec<StoredSchedule>> {
        operations::schedules(self).await
    }
    async fn enqueue_due(&self, now: f64) -> Result<Vec<String>> {
        operations::enqueue_due(self, now).await
    }
    async fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage> {
        operations::list_jobs(self, query, now).await
    }
    async fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>> {
        operations::queue_stats(self, now).await
    }
    async fn heartbeat(
        &self,
        beat: &crate::WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        operations::renew_with_beat(self, "heartbeat", Some(beat), leases, now, ttl).await
    }
    async fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>> {
        operations::list_workers(self, now).await
    }
    async fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>> {
        operations::oldest_waiting(self, now).await
    }
    async fn prune(&self, prune: &crate::Prune) -> Result<u64> {
        operations::prune(self, prune).await
    }
    async fn fence_floor(&self) -> Result<i64> {
        operations::fence_floor(self).await
    }
    async fn next_due_in(&self, queues: Option<&[&str]>) -> Result<Option<f64>> {
        operations::next_due(self, queues).await
    }
    async fn fenced(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        self.fenced_statements(lease, now, statements, finish).await
    }
}

/// Runs `futures` together (each polled when any is woken) until every one is done; their
/// outputs in order.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    use std::task::Poll;
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => waiting = true,
                }
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

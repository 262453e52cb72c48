//! [`NodePgStore`]: the contract on PostgreSQL from Node, as [`AsyncLeases`]: each operation
//! borrows a connection from a `pg` pool, sets it up the first time (the session settings, the
//! schema checked or made: `postgres/schema.rs`), and runs the operation written once in
//! `postgres/ops.rs` on it. Arguments are checked before a connection is borrowed
//! (`postgres/checks.rs`), as natively.

use js_sys::{Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::js_wire::{reported, JsWire, PgClient};
use crate::async_leases::AsyncLeases;
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::postgres::many::{self, ManyWrite};
use crate::postgres::{checks, ops, reads, recurring, schema};
use crate::rules::fenced::{Finish, Statement};
use crate::rules::queues::check_queues;
use crate::rules::schedule::{check_name, now_seconds};
use crate::rules::{check_now, check_owner_count, LeaseWindow};
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
    /// `renew_many`, and `heartbeat` with its beat, in one transaction.
    async fn renew_with_beat(
        &self,
        operation: &'static str,
        beat: Option<&crate::WorkerBeat>,
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
        .await
    }

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

impl AsyncLeases for NodePgStore {
    async fn init(&self) -> Result<()> {
        self.run("init", async |wire| {
            schema::create_schema(wire, "init").await
        })
        .await
    }
    async fn enqueue_job(&self, new: &NewJob) -> Result<bool> {
        checks::enqueue(new)?;
        self.run("enqueue", async |wire| ops::enqueue(wire, new).await)
            .await
    }
    async fn state(&self, job: &str) -> Result<Option<JobState>> {
        checks::check_text("job", job)?;
        self.run("state", async |wire| ops::state(wire, job).await)
            .await
    }
    async fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        let window = checks::claim(job, owner, now, ttl)?;
        self.run("claim", async |wire| {
            ops::claim(wire, "claim", job, owner, window).await
        })
        .await
    }
    async fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>> {
        let until = checks::renew(lease, now, ttl)?;
        self.run("renew", async |wire| {
            ops::renew(wire, lease, now, until).await
        })
        .await
    }
    async fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>> {
        checks::complete(lease, now, result)?;
        self.run("complete", async |wire| {
            ops::complete(wire, lease, now, result).await
        })
        .await
    }
    async fn release(&self, lease: &Lease) -> Result<Outcome<()>> {
        checks::check_lease(lease)?;
        self.run("release", async |wire| ops::release(wire, lease).await)
            .await
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
        let claims = owners.iter().map(|owner| {
            self.run("claim_many", async move |wire| {
                ops::claim(wire, "claim_many", job, owner, window).await
            })
        });
        join_all(claims.collect()).await.into_iter().collect()
    }
    async fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>> {
        let window = checks::claim_next(queues, owner, now, ttl)?;
        let queues = queues.map(<[&str]>::to_vec);
        self.run("claim_next", async |wire| {
            ops::claim_next(wire, queues, owner, window).await
        })
        .await
    }
    async fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>> {
        checks::fail(lease, now, retry_at, error)?;
        self.run("fail", async |wire| {
            ops::fail(wire, lease, now, retry_at, error).await
        })
        .await
    }
    async fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>> {
        checks::revive(job, now)?;
        self.run("revive", async |wire| ops::revive(wire, job, now).await)
            .await
    }
    async fn inspect(&self, job: &str) -> Result<Option<Inspection>> {
        checks::check_text("job", job)?;
        self.run("inspect", async |wire| ops::inspect(wire, job).await)
            .await
    }
    async fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts> {
        checks::stats(queue, now)?;
        self.run("stats", async |wire| ops::stats(wire, queue, now).await)
            .await
    }
    async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        checks::enqueue_many(jobs)?;
        if jobs.is_empty() {
            return Ok(Vec::new());
        }
        self.run("enqueue_many", async |wire| {
            many::enqueue_many(wire, jobs).await
        })
        .await
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
        let window = checks::claim_next_many(queues, owner, n, now, ttl)?;
        let queues = queues.map(<[&str]>::to_vec);
        self.run("claim_next_many", async |wire| {
            many::claim_next_many(wire, queues, owner, n, window).await
        })
        .await
    }
    async fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("renew_many", None, leases, now, ttl)
            .await
    }
    async fn complete_many(
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
        .await
    }
    async fn schedule(&self, schedule: &Schedule) -> Result<()> {
        checks::schedule(schedule)?;
        self.run("schedule", async |wire| {
            recurring::schedule(wire, schedule).await
        })
        .await
    }
    async fn unschedule(&self, name: &str) -> Result<bool> {
        check_name(name)?;
        self.run("unschedule", async |wire| {
            recurring::unschedule(wire, name).await
        })
        .await
    }
    async fn schedules(&self) -> Result<Vec<StoredSchedule>> {
        self.run("schedules", async |wire| {
            recurring::schedules(wire, "schedules").await
        })
        .await
    }
    async fn enqueue_due(&self, now: f64) -> Result<Vec<String>> {
        let now = now_seconds(now)?;
        self.run("enqueue_due", async |wire| {
            recurring::enqueue_due(wire, now).await
        })
        .await
    }
    async fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage> {
        let cursor = checks::list_jobs(query, now)?;
        self.run("list_jobs", async |wire| {
            reads::list_jobs(wire, query, cursor, now).await
        })
        .await
    }
    async fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>> {
        check_now(now)?;
        self.run("queue_stats", async |wire| {
            reads::queue_stats(wire, now).await
        })
        .await
    }
    async fn heartbeat(
        &self,
        beat: &crate::WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        self.renew_with_beat("heartbeat", Some(beat), leases, now, ttl)
            .await
    }
    async fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>> {
        check_now(now)?;
        self.run("list_workers", async |wire| {
            reads::list_workers(wire, now).await
        })
        .await
    }
    async fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>> {
        check_now(now)?;
        self.run("oldest_waiting", async |wire| {
            reads::oldest_waiting(wire, now).await
        })
        .await
    }
    async fn next_due_in(&self, queues: Option<&[&str]>) -> Result<Option<f64>> {
        check_queues(queues)?;
        let queues = queues.map(<[&str]>::to_vec);
        self.run("next_due", async |wire| {
            recurring::next_due(wire, queues).await
        })
        .await
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

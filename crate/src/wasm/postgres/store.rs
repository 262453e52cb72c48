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
use crate::call::{Call, Reply};
use crate::error::{Error, Result};
use crate::outcome::{Fence, Outcome};
use crate::postgres::operations::{self, Connections};
use crate::postgres::{checks, schema};
use crate::rules::{claim_many_window, LeaseWindow};

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

/// Each call is `postgres/operations.rs`'s (its checks, then its statements on a pooled
/// connection), but `claim_many` (a race across the pool), fenced writes and `enqueue_many` with
/// statements (`fenced.rs`).
impl AsyncLeases for NodePgStore {
    async fn execute(&self, call: Call<'_>) -> Result<Reply> {
        match call {
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => {
                let window = claim_many_window(owners.len(), now, ttl)?;
                let owners = crate::call::texts(&owners);
                Ok(Reply::Fences(self.claim_race(&job, &owners, window).await?))
            }
            Call::EnqueueMany { jobs, statements } if !statements.is_empty() => Ok(Reply::Bools(
                self.enqueue_many_statements(&jobs, &statements).await?,
            )),
            Call::Fenced {
                lease,
                now,
                statements,
                finish,
            } => Ok(Reply::Outcome(
                self.fenced_statements(&lease, now, &statements, finish)
                    .await?,
            )),
            call => operations::execute(self, call).await,
        }
    }
}

impl NodePgStore {
    /// Every owner's claim at once, each on a connection of its own from the pool (owners past
    /// the pool's size wait for one), so that they really race at the server; answers in input
    /// order.
    async fn claim_race(
        &self,
        job: &str,
        owners: &[&str],
        window: LeaseWindow,
    ) -> Result<Vec<Outcome<Fence>>> {
        checks::check_text("job", job)?;
        for owner in owners {
            checks::check_text("owner", owner)?;
        }
        let claims = owners
            .iter()
            .map(|owner| operations::claim_within(self, "claim_many", job, owner, window));
        join_all(claims.collect()).await.into_iter().collect()
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

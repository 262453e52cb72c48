//! Fenced writes on PostgreSQL from Node (docs/contract.md sections 8 and 11): the transaction of
//! `rules/fenced_tx.rs` on one lent `pg` client. Your statements go out on that client as you
//! wrote them, the server inferring their parameters' types; everything else is the crate's, as
//! natively: the readings before and after them that tell whether they touched the library's
//! tables or left the session changed, the session given back (`postgres/library_tables.rs`),
//! the lease read under the row's lock, `complete`, the commit.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use super::js_wire::{send, JsWire, PgClient};
use super::store::NodePgStore;
use crate::batch::NewJob;
use crate::error::{Error, PgFailure, PostgresError, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::postgres::checks::{self, check_text};
use crate::postgres::library_tables::{
    self, compare, given_back, prepared_intact, prepared_row, readings, Reading, AFTER_ROLLBACK,
    GIVE_BACK_SESSION,
};
use crate::postgres::many::enqueue_rows;
use crate::postgres::ops::{lease_params, lease_row};
use crate::postgres::wire::{Control, Sql, Wire};
use crate::rules::fenced::{check_statement_kind, check_statements, Finish, SqlValue, Statement};
use crate::rules::fenced_tx::{self, FencedSteps};
use crate::rules::LeaseRow;
use crate::wasm::error_to_js;

/// What your statements did so far, shared by the transaction and the handle you hold.
#[derive(Default)]
struct CallerState {
    /// Statements started: the next one's index.
    started: usize,
    /// Statements sent and not answered yet.
    pending: usize,
    /// Whether one failed or was refused, whatever the callback did with the error.
    failed: bool,
    /// Set once the callback returned: the handle takes no more statements.
    over: bool,
}

type Caller = Rc<RefCell<CallerState>>;

/// Your handle on a fenced transaction on PostgreSQL, as the npm package's callback gets it
/// wrapped (`tx.run`, `tx.all`, `tx.get`):
///
/// ```js
/// await store.fenced(job, owner, fence, now, async (tx) => {
///   await tx.run('UPDATE totals SET n = n + $1 WHERE id = $2', [5, 'north']);
/// });
/// ```
#[wasm_bindgen]
pub struct PgFencedTx {
    client: PgClient,
    caller: Caller,
}

#[wasm_bindgen]
impl PgFencedTx {
    /// Runs one statement (`$1`, `$2`, ... bound from `params`) in the fenced transaction: a
    /// promise of `pg`'s result (`rows` as objects, `rowCount`, `fields`). A failure rejects with
    /// code `storage` naming the statement's index; the transaction then commits nothing.
    pub fn query(&self, sql: JsValue, params: JsValue) -> Promise {
        let client = self.client.clone();
        let caller = Rc::clone(&self.caller);
        wasm_bindgen_futures::future_to_promise(async move {
            let sql = sql.as_string().ok_or_else(|| {
                crate::wasm::js_error("invalid_argument", "tx.run(): `sql` must be a string")
            })?;
            let params = crate::wasm::fenced::sql_values("tx.run", &params)?;
            caller_statement(&client, &caller, &sql, &params)
                .await
                .map_err(|e| error_to_js(&e))
        })
    }
}

/// One of your statements, counted, checked and run; its failure marks the transaction failed.
async fn caller_statement(
    client: &PgClient,
    caller: &Caller,
    sql: &str,
    params: &[SqlValue],
) -> Result<JsValue> {
    let index = {
        let mut state = caller.borrow_mut();
        if state.over {
            return Err(Error::invalid(
                "statements",
                "tx.run(): the fenced callback has returned; the transaction is over",
            ));
        }
        state.started += 1;
        state.pending += 1;
        state.started - 1
    };
    let result = async {
        check_statement_kind(sql)?;
        check_text("statements", sql)?;
        for value in params {
            if let SqlValue::Text(text) = value {
                check_text("params", text)?;
            }
        }
        let config = Object::new();
        let _ = Reflect::set(&config, &"text".into(), &sql.into());
        let values: js_sys::Array = params.iter().map(param_to_js).collect();
        let _ = Reflect::set(&config, &"values".into(), &values);
        send(client, "fenced", &config)
            .await
            .map_err(|e| statement_failed(index, e))
    }
    .await;
    let mut state = caller.borrow_mut();
    state.pending -= 1;
    state.failed |= result.is_err();
    result
}

/// A parameter as `pg` sends it, as text the server reads in the type it infers: integers in
/// decimal (exact past 2^53); booleans as `1` and `0`, which read as a `boolean` and as an
/// integer alike (natively a boolean binds to either type).
fn param_to_js(value: &SqlValue) -> JsValue {
    match value {
        SqlValue::Null => JsValue::NULL,
        SqlValue::Integer(n) => n.to_string().into(),
        SqlValue::Real(x) => (*x).into(),
        SqlValue::Text(text) => text.into(),
        SqlValue::Bool(b) => if *b { "1" } else { "0" }.into(),
    }
}

/// A failure the server reported for your statement number `index` is
/// [`Error::Statement`]; a lost connection stays what it is (retryable). Parameters that do not
/// match the statement's are `invalid_argument`, as natively (where the client counts them before
/// sending): the server answers them with a protocol error (`08P01`) and carries on.
fn statement_failed(index: usize, err: Error) -> Error {
    if let Error::Postgres {
        source:
            PostgresError(PgFailure::Reported {
                sqlstate: Some(code),
                message,
            }),
        ..
    } = &err
    {
        if code == "08P01" && message.contains("bind message supplies") {
            return Error::invalid(
                "statements",
                format!(
                    "statement {index}: the number of parameters given is not the number the                      statement uses ({message})"
                ),
            );
        }
    }
    match err {
        Error::Postgres {
            source:
                PostgresError(PgFailure::Reported {
                    sqlstate: Some(code),
                    message,
                }),
            disconnected: false,
            transient,
            ..
        } => Error::Statement {
            index,
            message: format!("{message} (SQLSTATE {code})"),
            busy: transient,
        },
        other => other,
    }
}

/// A fenced transaction begun on a lent client, the first reading taken.
struct NodeSteps<'w> {
    wire: &'w mut JsWire,
    operation: &'static str,
    caller: Caller,
    /// The statements `pg` prepared on this connection before: the session must still have them.
    own: &'w [String],
    lock_timeout: &'w str,
    before: Vec<Reading>,
}

impl FencedSteps for NodeSteps<'_> {
    const WENT_ON: &'static str = library_tables::WENT_ON;
    const TRIES: Option<usize> = Some(1);

    fn statements_failed(&self) -> bool {
        self.caller.borrow().failed
    }

    /// Gives the session back, checks its prepared statements, takes the second reading (which
    /// applies the store's settings again) and compares it with the first.
    async fn check_library_tables(&mut self) -> Result<()> {
        let rows = self
            .wire
            .simple_rows(self.operation, GIVE_BACK_SESSION)
            .await?;
        let track_counts = given_back(&rows, self.own)?;
        let after = self
            .wire
            .run(
                self.operation,
                Sql::FingerprintAfter,
                vec![self.lock_timeout.into()],
            )
            .await?;
        compare(&self.before, &readings(&after)?, track_counts.as_deref())
    }

    async fn read_lease(&mut self, job: &str) -> Result<Option<LeaseRow>> {
        let answer = self
            .wire
            .run(self.operation, Sql::ReadLeaseForShare, vec![job.into()])
            .await?;
        answer
            .first()
            .map(|row| lease_row(self.operation, &row))
            .transpose()
    }

    async fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Result<bool> {
        let mut params = lease_params(lease);
        params.extend([now.into(), result.into()]);
        let answer = self.wire.run(self.operation, Sql::Complete, params).await?;
        Ok(answer.changed == 1)
    }

    async fn commit(self) -> Result<()> {
        self.wire.control(self.operation, Control::Commit).await
    }

    async fn rollback(self) -> Result<()> {
        self.wire.control(self.operation, Control::Rollback).await
    }
}

/// Runs your statement list on the handle's connection, in order.
async fn run_list(steps: &mut NodeSteps<'_>, statements: &[Statement]) -> Result<()> {
    for statement in statements {
        caller_statement(
            &steps.wire.client,
            &steps.caller,
            &statement.sql,
            &statement.params,
        )
        .await?;
    }
    Ok(())
}

/// Runs `statements` in order on `client` inside a transaction the caller opened, checked and
/// numbered as a fenced write's are: the rows of the last one (`pg`'s row objects), or an empty
/// array. The fence guard's writes run through this.
pub(super) async fn run_statements(client: &PgClient, statements: &[Statement]) -> Result<JsValue> {
    let caller = Caller::default();
    let mut rows: JsValue = js_sys::Array::new().into();
    for statement in statements {
        let result = caller_statement(client, &caller, &statement.sql, &statement.params).await?;
        rows =
            Reflect::get(&result, &"rows".into()).unwrap_or_else(|_| js_sys::Array::new().into());
    }
    Ok(rows)
}

/// Calls `work(handle)` and waits for what it returns (a promise or a value). An exception it
/// throws (or a rejection) goes to `thrown`, to be thrown again once the transaction rolled back.
async fn call_back(
    steps: &mut NodeSteps<'_>,
    work: &Function,
    thrown: &RefCell<Option<JsValue>>,
) -> Result<()> {
    let handle = PgFencedTx {
        client: steps.wire.client.clone(),
        caller: Rc::clone(&steps.caller),
    };
    let settled = match work.call1(&JsValue::NULL, &handle.into()) {
        Ok(returned) => JsFuture::from(Promise::resolve(&returned)).await.map(drop),
        Err(exception) => Err(exception),
    };
    steps.caller.borrow_mut().over = true;
    if let Err(exception) = settled {
        *thrown.borrow_mut() = Some(exception);
        return Err(Error::Internal {
            message: "the fenced callback threw".into(),
        });
    }
    if steps.caller.borrow().pending > 0 {
        return Err(Error::invalid(
            "statements",
            "the fenced callback returned before its statements finished, so nothing was \
             committed: await every tx.run / tx.all / tx.get",
        ));
    }
    Ok(())
}

impl NodePgStore {
    /// `fenced` with a statement list (docs/contract.md section 8).
    pub(super) async fn fenced_statements(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        checks::fenced(lease, now, &finish)?;
        crate::Limits::default().check_finish(&finish)?;
        check_statements(statements)?;
        self.fenced_tx("fenced", async |steps| {
            fenced_tx::run(steps, lease, now, &finish, async |steps| {
                run_list(steps, statements).await
            })
            .await
        })
        .await
    }

    /// `fenced` with a callback: see [`call_back`].
    pub(super) async fn fenced_callback(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &Function,
        thrown: &RefCell<Option<JsValue>>,
    ) -> Result<Outcome<()>> {
        checks::fenced(lease, now, &finish)?;
        crate::Limits::default().check_finish(&finish)?;
        self.fenced_tx("fenced", async |steps| {
            fenced_tx::run(steps, lease, now, &finish, async |steps| {
                call_back(steps, work, thrown).await
            })
            .await
        })
        .await
    }

    /// `enqueue_many` with your statements in the same transaction (docs/contract.md section 11).
    pub(super) async fn enqueue_many_statements(
        &self,
        jobs: &[NewJob],
        statements: &[Statement],
    ) -> Result<Vec<bool>> {
        checks::enqueue_many(jobs)?;
        crate::Limits::default().check_jobs(jobs)?;
        check_statements(statements)?;
        self.fenced_tx("enqueue_many", async |steps| {
            fenced_tx::run_unleased(
                steps,
                async |steps| run_list(steps, statements).await,
                async |steps| enqueue_rows(&mut *steps.wire, jobs).await,
            )
            .await
        })
        .await
    }

    /// Begins the transaction on a lent connection, takes the first reading, runs `body`; after a
    /// failure, rolls back and checks the session (a connection whose prepared statements your
    /// statements changed is closed, not pooled).
    async fn fenced_tx<T>(
        &self,
        operation: &'static str,
        body: impl AsyncFnOnce(NodeSteps<'_>) -> Result<T>,
    ) -> Result<T> {
        self.run(operation, async |wire| {
            let own = wire.prepared_names();
            wire.control(operation, Control::Begin).await?;
            let result = async {
                wire.control(operation, Control::CallersPlans).await?;
                let before = wire.run(operation, Sql::Fingerprint, vec![]).await?;
                let steps = NodeSteps {
                    wire: &mut *wire,
                    operation,
                    caller: Caller::default(),
                    own: &own,
                    lock_timeout: &self.lock_timeout,
                    before: readings(&before)?,
                };
                body(steps).await
            }
            .await;
            if result.is_err() {
                after_failure(wire, operation, &own).await;
            }
            result
        })
        .await
    }
}

/// After a fenced transaction failed: rolls it back (a rollback outside a transaction only
/// warns), then checks the session's prepared statements, which a rollback does not restore;
/// advisory locks are released by the same query. A session that cannot be checked, or whose
/// statements changed, is closed.
async fn after_failure(wire: &mut JsWire, operation: &'static str, own: &[String]) {
    let _ = wire.control(operation, Control::Rollback).await;
    let intact = wire
        .simple_rows(operation, AFTER_ROLLBACK)
        .await
        .map(|rows| prepared_intact(prepared_row(&rows), own));
    if !matches!(intact, Ok(true)) {
        wire.close = true;
    }
}

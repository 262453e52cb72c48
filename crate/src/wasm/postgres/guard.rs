//! Node's `FenceGuard` on a PostgreSQL database of the application's
//! (`FenceGuard.connect('postgres://...')`): the guard's statements and check are
//! `postgres/guard.rs`'s, as the native `guard::postgres` runs them; `pg` carries them.

use std::cell::Cell;
use std::rc::Rc;

use js_sys::Promise;
use wasm_bindgen::prelude::*;

use super::fenced::run_statements;
use super::js_wire::{JsWire, PgClient};
use super::store::{on_lent, PgPool};
use crate::error::Result;
use crate::guard::Guarded;
use crate::postgres::guard;
use crate::postgres::wire::{Control, Wire};
use crate::rules::fenced::Statement;
use crate::wasm::error_to_js;
use crate::wasm::fenced::statements_of;
use crate::wasm::guard::{guard_args, guarded_to_js};

/// A fence guard on a PostgreSQL database, through a `pg` pool:
///
/// ```js
/// const guard = WasmPgGuard.onPool(new Pool({ connectionString: url }));
/// await guard.connect();                          // makes leasefence_guard where missing
/// await guard.write('invoice-42', 3, [{ sql: 'UPDATE invoices SET sent = true WHERE id = $1', params: [42] }]);
/// ```
#[wasm_bindgen]
pub struct WasmPgGuard {
    pool: PgPool,
    installed: Rc<Cell<bool>>,
}

#[wasm_bindgen]
impl WasmPgGuard {
    /// A guard on `pool` (a `pg` `Pool`, or anything with its `connect()`). Connects nothing yet.
    #[wasm_bindgen(js_name = onPool)]
    pub fn on_pool(pool: PgPool) -> WasmPgGuard {
        WasmPgGuard {
            pool,
            installed: Rc::new(Cell::new(false)),
        }
    }

    /// Borrows a connection and makes the guard's table where it is missing: a promise that
    /// rejects, with the reason, when the server cannot be used.
    pub fn connect(&self) -> Promise {
        let (pool, installed) = (self.pool.clone(), Rc::clone(&self.installed));
        wasm_bindgen_futures::future_to_promise(async move {
            lent(&pool, &installed, async |_| Ok(()))
                .await
                .map_err(|e| error_to_js(&e))?;
            Ok(JsValue::UNDEFINED)
        })
    }

    /// Runs `statements` (`[{sql, params}]`, `$1`, `$2`, ...) in one transaction if the guard
    /// accepts `fence` for `key`: a promise of `{accepted: true, rows}` (`pg`'s rows of the last
    /// statement) or `{accepted: false, current, rows: []}` with nothing written. The statements
    /// may write anything but the guard's table.
    pub fn write(&self, key: JsValue, fence: JsValue, statements: JsValue) -> Promise {
        let args = guard_args("FenceGuard.write", &key, &fence).and_then(|(key, fence)| {
            Ok((key, fence, statements_of("FenceGuard.write", &statements)?))
        });
        let (key, fence, statements) = match args {
            Ok(args) => args,
            Err(err) => return Promise::reject(&err),
        };
        let (pool, installed) = (self.pool.clone(), Rc::clone(&self.installed));
        wasm_bindgen_futures::future_to_promise(async move {
            let outcome = lent(&pool, &installed, async |wire| {
                guarded_write(wire, &key, fence, &statements).await
            })
            .await
            .map_err(|e| error_to_js(&e))?;
            guarded_to_js(outcome)
        })
    }

    /// The guard's check inside your own transaction on `client` (a `pg` client you began a
    /// transaction on): a promise of `{accepted: true}`, or `{accepted: false, current}`; on a
    /// refusal roll back. The key's row stays locked until your transaction ends.
    pub fn accept(client: PgClient, key: JsValue, fence: JsValue) -> Promise {
        let (key, fence) = match guard_args("FenceGuard.accept", &key, &fence) {
            Ok(args) => args,
            Err(err) => return Promise::reject(&err),
        };
        wasm_bindgen_futures::future_to_promise(async move {
            let mut wire = JsWire {
                client,
                close: false,
            };
            let outcome = guard::accept(&mut wire, &key, fence)
                .await
                .map_err(|e| error_to_js(&e))?;
            let answer = js_sys::Object::new();
            let set =
                |key: &str, value: JsValue| js_sys::Reflect::set(&answer, &key.into(), &value);
            match outcome {
                Guarded::Accepted(()) => set("accepted", true.into())?,
                Guarded::Refused { current } => {
                    set("accepted", false.into())?;
                    set("current", (current as f64).into())?
                }
            };
            Ok(answer.into())
        })
    }
}

/// The guard's transaction: the check, then your statements, then the commit; a refusal writes
/// nothing. Statements that wrote the guard's table are refused (the server's counts of this
/// transaction's writes to it, read after the check and after them, must agree).
async fn guarded_write(
    wire: &mut JsWire,
    key: &str,
    fence: i64,
    statements: &[Statement],
) -> Result<Guarded<JsValue>> {
    wire.control("guard", Control::Begin).await?;
    let result = async {
        if let Guarded::Refused { current } = guard::accept(wire, key, fence).await? {
            return Ok(Guarded::Refused { current });
        }
        let before = guard::writes(wire).await?;
        let rows = run_statements(&wire.client, statements).await?;
        if guard::writes(wire).await? != before {
            return Err(guard::refused_writes());
        }
        Ok(Guarded::Accepted(rows))
    }
    .await;
    match result {
        Ok(Guarded::Accepted(rows)) => {
            wire.control("guard", Control::Commit).await?;
            Ok(Guarded::Accepted(rows))
        }
        other => {
            // A refusal wrote nothing; an error rolls back what the statements did.
            if wire.control("guard", Control::Rollback).await.is_err() {
                wire.close = true;
            }
            other
        }
    }
}

/// Runs `work` on a connection from `pool`, the guard's table made first if this guard has not
/// made it yet.
async fn lent<T>(
    pool: &PgPool,
    installed: &Cell<bool>,
    work: impl AsyncFnOnce(&mut JsWire) -> Result<T>,
) -> Result<T> {
    on_lent(pool, "guard", async |wire| {
        if !installed.get() {
            guard::install(wire).await?;
            installed.set(true);
        }
        work(wire).await
    })
    .await
}

//! The playground's wasm (`web/app`): leasefence's browser build (`WasmStore`, `checkArguments`,
//! the storage calls) with what only the playground asks of the store added on top. Its calls
//! take the page worker's `WasmStore` and run on that store's own connection, in the same SQLite
//! database, so what the page shows is what SQLite did:
//!
//! - the statements an operation ran (`setTracing`, `callTraced`: [`trace`]);
//! - the same operation on the counterfactual store without fencing (`leaseOnly`: [`lease_only`]);
//! - the page's saved timeline next to the jobs, and the reset (`appGet`, `appSet`,
//!   `eraseEverything`: [`app_data`]).
//!
//! `publish = false`: none of this is part of the library. scripts/build-wasm.sh builds it into
//! `web/app/pkg`, which `web/app/playground-worker.js` loads.
#![cfg(target_arch = "wasm32")]

mod app_data;
mod lease_only;
mod trace;

use js_sys::Array;
use leasefence::WasmStore;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// A JavaScript `Error` with the protocol's `code` and `retryable`, as the library's calls throw.
fn js_error(code: &str, message: &str, retryable: bool) -> JsValue {
    let error = js_sys::Error::new(message);
    let _ = js_sys::Reflect::set(&error, &"code".into(), &code.into());
    let _ = js_sys::Reflect::set(&error, &"retryable".into(), &retryable.into());
    error.into()
}

fn error_to_js(err: &leasefence::Error) -> JsValue {
    js_error(err.code(), &err.to_string(), err.is_retryable())
}

/// A failing statement of the playground's own, in the shape of the library's storage errors:
/// code `storage`, retryable only when the database was busy. (The library's `Error` does not
/// take a client error from outside the crate, so its client can change without breaking users.)
fn storage(operation: &'static str) -> impl FnOnce(rusqlite::Error) -> JsValue {
    move |source| {
        let busy = matches!(
            source.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        );
        js_error(
            "storage",
            &format!("storage failed during {operation}: {source}"),
            busy,
        )
    }
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| {
            js_error(
                "storage",
                &format!("the answer could not cross to JavaScript: {e}"),
                false,
            )
        })
}

/// Records every statement the store's connection runs (on) or stops recording (off, the
/// default: no hook, no cost). Used with `callTraced` and `leaseOnly`, which return what they ran.
///
/// ```js
/// setTracing(store, true);
/// callTraced(store, 'claim', ['job', 'A', 0, 30]);
/// // {value: 1, reason: null, statements: [{sql: 'BEGIN IMMEDIATE', ...}, {sql: 'UPDATE jobs ...', expanded, rows: 1, changed: 1}, ...]}
/// ```
#[wasm_bindgen(js_name = setTracing)]
pub fn set_tracing(store: &WasmStore, on: bool) -> Result<(), JsValue> {
    trace::set(store.lease_store()?.connection(), on);
    Ok(())
}

/// `store.call(op, args)`, answering `{value, reason, statements}`: the statements this operation
/// ran, in order (empty unless tracing is on).
///
/// ```js
/// const { value: fence, statements } = callTraced(store, 'claim', ['job', 'A', 0, 30]);
/// ```
#[wasm_bindgen(js_name = callTraced)]
pub fn call_traced(store: &WasmStore, op: &str, args: Array) -> Result<JsValue, JsValue> {
    store.lease_store()?;
    trace::take(); // what ran before this call is not part of it
    let answered = store.call(op, args);
    let statements = trace::take();
    let answer = answered?;
    js_sys::Reflect::set(&answer, &"statements".into(), &to_js(&statements)?)?;
    Ok(answer)
}

/// The same operation, with the same positional arguments as `store.call` (and checked as the
/// store checks them), on the store without fencing (`lease_only_jobs`): `{value, row,
/// statements}`. `value` says whether a write changed a row; `row` is the stored row for `state`.
/// It checks renew, complete, release and fail by job id alone, so the owner and fence arguments
/// are read and ignored. `fail` with a `retryAt` lets the job wait until then; with `retryAt` null
/// it marks the job dead, and `revive(job, now)` queues a dead job again.
///
/// ```js
/// leaseOnly(store, 'complete', ['job', 'A', 1, 14, "A's result"]);  // {value: true, row: null, statements}
/// leaseOnly(store, 'fail', ['job', 'A', 1, 14, null, 'crashed']);    // dead: {value: true, ...}
/// ```
#[wasm_bindgen(js_name = leaseOnly)]
pub fn lease_only(store: &WasmStore, op: &str, args: Array) -> Result<JsValue, JsValue> {
    let conn = store.lease_store()?.connection();
    // The real store's argument checks, so both stores refuse the same calls.
    leasefence::check_arguments(op, args.clone())?;
    let run = lease_only::Op::read(op, &args)?;
    lease_only::create(conn)?;
    trace::take(); // the table's creation is not part of the operation
    let answered = lease_only::run(conn, &run)?;
    to_js(&Traced {
        answer: answered,
        statements: trace::take(),
    })
}

#[derive(Serialize)]
struct Traced<T: Serialize> {
    #[serde(flatten)]
    answer: T,
    statements: Vec<trace::Statement>,
}

/// Reads a value the page stored next to the jobs (`leasefence_app_data`, an extra table as
/// docs/contract.md section 1 allows); `undefined` when missing.
///
/// ```js
/// appSet(store, 'timeline', '{"entries":[]}');
/// appGet(store, 'timeline');   // '{"entries":[]}'
/// ```
#[wasm_bindgen(js_name = appGet)]
pub fn app_get(store: &WasmStore, key: &str) -> Result<Option<String>, JsValue> {
    app_data::get(store.lease_store()?.connection(), key)
}

/// Stores a value next to the jobs, in its own transaction.
///
/// ```js
/// appSet(store, 'timeline', '{"entries":[]}');
/// ```
#[wasm_bindgen(js_name = appSet)]
pub fn app_set(store: &WasmStore, key: &str, value: &str) -> Result<(), JsValue> {
    app_data::set(store.lease_store()?.connection(), key, value)
}

/// Erases every job, the lease-only table and the page's data: a brand-new database. Fences
/// start over, which is only sound because every token of the old database is gone with it (the
/// playground's reset and time travel use this; workers never should).
///
/// ```js
/// eraseEverything(store);
/// store.call('state', ['job']);   // {value: null}
/// ```
#[wasm_bindgen(js_name = eraseEverything)]
pub fn erase_everything(store: &WasmStore) -> Result<(), JsValue> {
    app_data::erase(store.lease_store()?)
}

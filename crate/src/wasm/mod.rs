//! The JavaScript face of the crate, for Node (`--features node`) and the browser
//! (`--features browser`), built with wasm-bindgen.
//!
//! The surface is deliberately small: open a store, then `call(op, args)` with the positional
//! arguments of docs/contract.md section 5, which are type-checked here and run through
//! [`crate::protocol::execute`], so argument checks, the contract and its error codes exist once,
//! in Rust. The JavaScript packages wrap this in the `LeaseStore` class (and run `claimMany` on
//! worker threads in Node).

use wasm_bindgen::prelude::*;

use js_sys::{Array, JSON};

use crate::protocol::{answer, respond, Answer, Backend, Request, Response};
use crate::{LeaseStore, Result};

#[cfg(feature = "node")]
mod node_vfs;
#[cfg(feature = "node")]
mod postgres;

#[cfg(feature = "browser")]
mod browser_host;
#[cfg(feature = "browser")]
mod opfs;

mod fenced;
mod guard;
mod worker_rules;

/// An open lease store for JavaScript. The npm package and `web/store/` wrap it; used directly:
///
/// ```js
/// const store = WasmStore.openFile('/tmp/queue.db', 10000);   // Node; openOpfs(name) in a worker
/// store.call('enqueue', ['job']);                              // {value: true, reason: null}
/// const { value: fence } = store.call('claim', ['job', 'A', 0, 30]);
/// store.call('complete', ['job', 'A', fence, 1, 'done']);      // {value: true}
/// store.respond('{"op":"state","job":"job"}');                 // a protocol response line
/// store.close();
/// ```
#[wasm_bindgen]
pub struct WasmStore {
    store: Option<LeaseStore>,
    /// The open fenced transaction's caller phase, while a `fencedWith` callback runs.
    fenced: fenced::Active,
}

struct Open<'a>(&'a LeaseStore);

impl Backend for Open<'_> {
    fn store(&mut self) -> Result<&LeaseStore> {
        Ok(self.0)
    }
}

const CLOSED: &str = "the store is closed; open it again";

/// A JavaScript `Error` carrying the protocol's error `code`, and `retryable: false`.
pub(crate) fn js_error(code: &str, message: &str) -> JsValue {
    js_error_retryable(code, message, false)
}

/// `retryable` tells a runtime whether the same call may succeed if made again (a busy
/// database), or never will (a constraint a fenced statement broke, a closed store).
fn js_error_retryable(code: &str, message: &str, retryable: bool) -> JsValue {
    let error = js_sys::Error::new(message);
    let _ = js_sys::Reflect::set(&error, &"code".into(), &code.into());
    let _ = js_sys::Reflect::set(&error, &"retryable".into(), &retryable.into());
    error.into()
}

/// The error as JavaScript's: `code`, `retryable`, and for a failing statement of the caller's
/// ([`crate::Error::Statement`]) its index as `statement`, so that a runtime tells the caller's
/// failure from the store's by kind.
pub(crate) fn error_to_js(err: &crate::Error) -> JsValue {
    let error = js_error_retryable(err.code(), &err.to_string(), err.is_retryable());
    if let crate::Error::Statement { index, .. } = err {
        let _ = js_sys::Reflect::set(&error, &"statement".into(), &(*index as f64).into());
    }
    error
}

#[wasm_bindgen]
impl WasmStore {
    /// Opens (creating if missing) the SQLite file at `path` on disk, through Node's `fs`.
    #[cfg(feature = "node")]
    /// `exclusive`: this connection owns the file alone until its close, in WAL mode (one sync
    /// per commit); every other opener is refused meanwhile.
    #[wasm_bindgen(js_name = openFile)]
    pub fn open_file(
        path: &str,
        busy_timeout_ms: f64,
        exclusive: Option<bool>,
        payload_bytes: Option<f64>,
        result_bytes: Option<f64>,
        error_bytes: Option<f64>,
    ) -> std::result::Result<WasmStore, JsValue> {
        let limits = crate::js::limits_of(payload_bytes, result_bytes, error_bytes)
            .map_err(arg_error_to_js)?;
        let mut store = node_vfs::open(path, busy_timeout_ms, exclusive.unwrap_or(false))
            .map_err(|e| error_to_js(&e))?;
        store.set_limits(limits);
        Ok(WasmStore {
            store: Some(store),
            fenced: Default::default(),
        })
    }

    /// Opens (creating if missing) the database `name` in this origin's OPFS. Only in a
    /// dedicated Web Worker; fails with a clear message where OPFS is unavailable or another
    /// tab holds the database.
    #[cfg(feature = "browser")]
    #[wasm_bindgen(js_name = openOpfs)]
    pub async fn open_opfs(name: String) -> std::result::Result<WasmStore, JsValue> {
        let store = opfs::open(&name).await?;
        Ok(WasmStore {
            store: Some(store),
            fenced: Default::default(),
        })
    }

    /// Runs one protocol request line and returns the response line.
    pub fn respond(&self, line: &str) -> String {
        match &self.store {
            Some(store) => respond(&mut Open(store), line).to_json(),
            None => Response::Failed {
                code: "storage",
                message: CLOSED.into(),
            }
            .to_json(),
        }
    }

    /// Runs the operation `op` of docs/contract.md sections 5, 7 and 10 (`enqueue`, `state`,
    /// `claim`, `renew`, `complete`, `release`, `claimNext`, `claimMany`, `fail`, `revive`,
    /// `inspect`, `stats`, `enqueueMany`, `claimNextMany`, `renewMany`, `completeMany`) with its
    /// positional arguments. Returns
    /// `{value, reason}`; throws an `Error` with `code` (`invalid_argument`, `storage`) otherwise.
    pub fn call(&self, op: &str, args: Array) -> std::result::Result<JsValue, JsValue> {
        let request = request_from_js(op, &args)?;
        match answer(&mut Open(self.open_store()?), &request) {
            Ok(answer) => answer_to_js(&answer),
            Err(err) => Err(error_to_js(&err)),
        }
    }

    /// Runs `calls`, a list of `[op, args]` as `call` takes them, as one group (docs/contract.md
    /// section 10): one transaction, each call in a savepoint of its own, checked and answered
    /// exactly as if it ran alone, in order; nothing is answered before the commit. Answers one
    /// item per call: `{value, reason}`, or `{error}` (an `Error` with `code` and `retryable`)
    /// for a call that failed alone; when the group's commit fails, every call gets its error
    /// and nothing of the group applied. `claimMany` and the callback form of `fenced` cannot
    /// join a group (the JavaScript stores run them alone).
    ///
    /// ```js
    /// store.callGroup([['complete', ['a', 'me', 1, 5, 'ok']], ['claimNext', ['me', 5, 30]]]);
    /// // [{value: true}, {value: {job: 'b', fence: 1, payload: null}}]
    /// ```
    #[wasm_bindgen(js_name = callGroup)]
    pub fn call_group(&self, calls: Array) -> std::result::Result<Array, JsValue> {
        let store = self.open_store()?;
        // Each call's arguments are read and checked before the transaction: a bad one fails
        // alone and never reaches the database.
        let mut slots: Vec<Slot> = calls.iter().map(|call| read_group_call(&call)).collect();
        if slots.iter().any(|slot| matches!(slot, Slot::Pending(_))) {
            if let Err(lost) = run_group(store, &mut slots) {
                let lost = error_to_js(&lost);
                slots.fill_with(|| Slot::Done(Err(lost.clone())));
            }
        }
        Ok(slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(Ok(answer)) => answer,
                Slot::Done(Err(error)) | Slot::Failed(error) => {
                    let item = js_sys::Object::new();
                    let _ = js_sys::Reflect::set(&item, &"error".into(), &error);
                    item.into()
                }
                Slot::Pending(_) => unreachable_pending(),
            })
            .collect())
    }

    fn open_store(&self) -> std::result::Result<&LeaseStore, JsValue> {
        self.store
            .as_ref()
            .ok_or_else(|| js_error("storage", CLOSED))
    }

    /// Closes the connection; later calls answer with a `storage` error.
    pub fn close(&mut self) {
        #[cfg(feature = "node")]
        if let Some(store) = &self.store {
            node_vfs::before_close(store);
        }
        self.store = None;
    }
}

/// For Rust crates that build their own wasm on top of this one (the playground,
/// `playground/`): the open store behind a JavaScript `WasmStore`, to run more on its connection.
impl WasmStore {
    /// The open [`LeaseStore`], or the `storage` error every call gets once the store is closed.
    /// A `#[wasm_bindgen]` function of another crate takes the `WasmStore` JavaScript holds as
    /// `&WasmStore` and reaches the connection through this.
    ///
    /// ```ignore
    /// #[wasm_bindgen(js_name = countJobs)]
    /// pub fn count_jobs(store: &leasefence::WasmStore) -> Result<f64, JsValue> {
    ///     let conn = store.lease_store()?.connection();
    ///     conn.query_row("SELECT count(*) FROM jobs", [], |row| row.get(0))
    ///         .map_err(|err| JsValue::from_str(&err.to_string()))
    /// }
    /// ```
    pub fn lease_store(&self) -> std::result::Result<&LeaseStore, JsValue> {
        self.open_store()
    }
}

/// Checks the arguments of `op` without running it (used before `claimMany` starts threads).
///
/// ```js
/// checkArguments('claimMany', ['job', ['a', 'b'], 0, 30]);  // throws {code: 'invalid_argument'} if bad
/// ```
#[wasm_bindgen(js_name = checkArguments)]
pub fn check_arguments(op: &str, args: Array) -> std::result::Result<(), JsValue> {
    let args: Vec<JsValue> = args.iter().collect();
    crate::js::check_request(op, &args, &JsValue::UNDEFINED)
        .map(drop)
        .map_err(arg_error_to_js)
}

/// One call of a group: checked and waiting for the transaction, answered, or refused before it.
enum Slot {
    Pending(Request),
    Done(std::result::Result<JsValue, JsValue>),
    Failed(JsValue),
}

/// A group's call `[op, args]`, read and checked.
fn read_group_call(call: &JsValue) -> Slot {
    let call = Array::from(call);
    let op = call.get(0).as_string().unwrap_or_default();
    if op == "claimMany" {
        return Slot::Failed(js_error(
            "invalid_argument",
            "claimMany races its owners on threads and cannot join a group: call it alone",
        ));
    }
    let checked = request_from_js(&op, &Array::from(&call.get(1))).and_then(|request| {
        request
            .validate()
            .map(|()| request)
            .map_err(|e| error_to_js(&e))
    });
    match checked {
        Ok(request) => Slot::Pending(request),
        Err(error) => Slot::Failed(error),
    }
}

/// Every slot is answered once `run_group` returns; a pending one left over is a bug, answered
/// as an error rather than a panic across the boundary.
fn unreachable_pending() -> JsValue {
    let item = js_sys::Object::new();
    let error = js_error(
        "storage",
        "internal: a call of a group was never run; report it as a bug",
    );
    let _ = js_sys::Reflect::set(&item, &"error".into(), &error);
    item.into()
}

/// Runs the pending calls of `slots` in one group and answers each in its slot; `Err` when the
/// group itself failed (its start, its commit, or SQLite rolled it back under a call).
fn run_group(store: &LeaseStore, slots: &mut [Slot]) -> Result<()> {
    let group = crate::sqlite::write_tx::Group::begin(store.connection(), "group")?;
    for slot in slots.iter_mut() {
        let Slot::Pending(request) = slot else {
            continue;
        };
        let answer = group.run(|| answer(&mut Open(store), request))?;
        *slot = Slot::Done(match answer {
            Ok(answer) => answer_to_js(&answer),
            Err(err) => Err(error_to_js(&err)),
        });
    }
    group.commit()
}

/// The answer as a JavaScript value `{value, reason?}`, built by serde-wasm-bindgen straight from
/// the typed [`Answer`] (`null` for Rust's `None`, no `reason` key when the store agreed, as the
/// protocol's JSON has it).
fn answer_to_js(answer: &Answer) -> std::result::Result<JsValue, JsValue> {
    use serde::Serialize;
    match answer.serialize(&serde_wasm_bindgen::Serializer::json_compatible()) {
        Ok(value) => Ok(value),
        // Only a fence beyond 2^53 (no JavaScript number holds every such integer) is refused;
        // it crosses as before, through the protocol's JSON and the engine's JSON.parse, as the
        // nearest number.
        Err(_) => JSON::parse(&Response::from(answer.clone()).to_json()),
    }
}

/// The wasm faces' values as the shared argument readers (`crate::js`) see them.
impl crate::js::JsArg for JsValue {
    fn is_undefined(&self) -> bool {
        JsValue::is_undefined(self)
    }
    fn is_null(&self) -> bool {
        JsValue::is_null(self)
    }
    fn as_string(&self) -> Option<String> {
        JsValue::as_string(self)
    }
    fn as_f64(&self) -> Option<f64> {
        JsValue::as_f64(self)
    }
    fn as_bool(&self) -> Option<bool> {
        JsValue::as_bool(self)
    }
    fn is_array(&self) -> bool {
        Array::is_array(self)
    }
    fn is_object(&self) -> bool {
        JsValue::is_object(self)
    }
    fn as_bigint(&self) -> Option<std::result::Result<i64, ()>> {
        self.is_bigint()
            .then(|| i64::try_from(self.clone()).map_err(drop))
    }
    fn items(&self) -> Vec<JsValue> {
        if Array::is_array(self) {
            Array::from(self).iter().collect()
        } else {
            Vec::new()
        }
    }
    fn member(&self, name: &str) -> JsValue {
        js_sys::Reflect::get(self, &JsValue::from_str(name)).unwrap_or(JsValue::UNDEFINED)
    }
    fn keys(&self) -> Vec<String> {
        js_sys::Object::keys(&js_sys::Object::from(self.clone()))
            .iter()
            .filter_map(|key| key.as_string())
            .collect()
    }
    fn type_of(&self) -> String {
        self.js_typeof().as_string().unwrap_or_default()
    }
}

/// An argument error as JavaScript's `Error` (`code: 'invalid_argument'`).
pub(crate) fn arg_error_to_js(err: crate::js::ArgError) -> JsValue {
    js_error("invalid_argument", &err.0)
}

fn request_from_js(op: &str, args: &Array) -> std::result::Result<Request, JsValue> {
    let args: Vec<JsValue> = args.iter().collect();
    crate::js::read_request(op, &args, &JsValue::UNDEFINED).map_err(arg_error_to_js)
}

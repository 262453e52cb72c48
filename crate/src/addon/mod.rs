//! The Node-API addon (feature `addon`): the npm package's native engine. The same crate as the
//! Rust library, so a Node process runs the bundled SQLite with WAL and `synchronous = FULL`,
//! POSIX locks, the write gate and the authorizer exactly as a native process does, and shares
//! its file with them with default options on every side (docs/contract.md section 13).
//!
//! The surface is the wasm engine's (`wasm/`): open a store, then `call(op, args)` with the
//! positional arguments of docs/contract.md section 5, read by the readers both engines share
//! (`crate::js`), run through the one protocol dispatch. The JavaScript package wraps it in the
//! same `LeaseStore` class as the wasm engine. Answers cross as `{value, reason}`, failures as
//! `{error: {code, message, retryable}}` for the JavaScript side to throw, so both engines throw
//! the same `LeaseError`.
//!
//! `callGroup` runs on libuv's thread pool and answers a Promise: the package's group commit
//! (web/store/core.js) sends the calls of one event-loop turn as one group, one transaction and
//! one sync, while the event loop runs on.
//!
//! ```js
//! const { NativeStore } = require('./leasefence.node');
//! const store = NativeStore.open('/tmp/queue.db', 10000);   // or {error} it could not
//! store.call('enqueue', ['job']);                        // {value: true}
//! const { value: fence } = store.call('claim', ['job', 'A', 0, 30]);
//! await store.callGroup([['complete', ['job', 'A', fence, 1, 'done']]]);   // [{value: true}]
//! store.close();
//! ```

#[cfg(feature = "addon-faults")]
mod faults;
mod fenced;
mod guard;
mod value;
mod worker_rules;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Either, ToNapiValue, TypeName, Unknown};
use napi::{Env, Task};
use napi_derive::napi;
use serde_json::{json, Value};

use crate::protocol::{answer, Answer, Backend, Request};
use crate::{LeaseStore, OpenOptions, Result};

use value::Arg;

const CLOSED: &str = "the store is closed; open it again";

/// The error as the JavaScript side throws it: `code`, `message`, `retryable`, and for a failing
/// statement of the caller's its index as `statement`.
fn error_value(err: &crate::Error) -> Value {
    let mut error = json!({
        "code": err.code(),
        "message": err.to_string(),
        "retryable": err.is_retryable(),
    });
    if let crate::Error::Statement { index, .. } = err {
        error["statement"] = json!(index);
    }
    json!({ "error": error })
}

fn closed_value() -> Value {
    json!({"error": {"code": "storage", "message": CLOSED, "retryable": false}})
}

fn arg_error_value(err: crate::js::ArgError) -> Value {
    json!({"error": {"code": "invalid_argument", "message": err.0, "retryable": false}})
}

/// `{value, reason}`, as the protocol's JSON has it (no `reason` when the store agreed).
fn answer_value(answer: &Answer) -> Value {
    serde_json::to_value(answer).unwrap_or_else(|err| {
        error_value(&crate::Error::Internal {
            message: format!("an answer could not be written as JSON: {err}"),
        })
    })
}

struct Open<'a>(&'a LeaseStore);

impl Backend for Open<'_> {
    fn store(&mut self) -> Result<&LeaseStore> {
        Ok(self.0)
    }
}

/// The connection, shared by the JavaScript thread (synchronous calls) and the thread pool
/// (groups); `None` once closed.
type Connection = Arc<Mutex<Option<LeaseStore>>>;

fn lock(connection: &Connection) -> MutexGuard<'_, Option<LeaseStore>> {
    // A panic while the lock was held cannot leave the store half-written (SQLite rolls an
    // unfinished transaction back), so a poisoned lock is taken as it is.
    connection
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// An open lease store on one SQLite file, run natively.
#[napi]
pub struct NativeStore {
    connection: Connection,
    /// The fenced transaction whose callback is running, if any (fenced.rs).
    active: std::cell::RefCell<Option<fenced::ActiveTx>>,
}

#[napi]
impl NativeStore {
    /// Opens (creating if missing) the database file at `path` with the library's defaults
    /// (WAL, `synchronous = FULL`, POSIX locks, the write gate unless `writeGate` is `false`),
    /// waiting up to `busyTimeoutMs` for another process's write lock. Answers the store, or
    /// `{error}`.
    #[napi]
    pub fn open(
        path: String,
        busy_timeout_ms: f64,
        payload_bytes: Option<f64>,
        result_bytes: Option<f64>,
        error_bytes: Option<f64>,
        write_gate: Option<bool>,
    ) -> Either<NativeStore, Value> {
        if !busy_timeout_ms.is_finite() || busy_timeout_ms < 0.0 {
            return Either::B(arg_error_value(crate::js::ArgError(
                "LeaseStore.open(): `busyTimeoutMs` must be a finite number >= 0".into(),
            )));
        }
        let limits = match crate::js::limits_of(payload_bytes, result_bytes, error_bytes) {
            Ok(limits) => limits,
            Err(err) => return Either::B(arg_error_value(err)),
        };
        #[cfg(feature = "addon-faults")]
        faults::install_from_env();
        let timeout = Duration::from_secs_f64(busy_timeout_ms / 1000.0);
        let options = OpenOptions::new()
            .busy_timeout(timeout)
            .limits(limits)
            .write_gate(write_gate.unwrap_or(true));
        match options.open(&path) {
            Ok(store) => {
                #[cfg(feature = "addon-faults")]
                faults::after_open(&store);
                Either::A(NativeStore {
                    connection: Arc::new(Mutex::new(Some(store))),
                    active: Default::default(),
                })
            }
            Err(err) => Either::B(error_value(&err)),
        }
    }

    /// Runs the operation `op` (its JavaScript name: `claimNext`) with its positional
    /// arguments, on this thread: `{value, reason}` or `{error}`.
    #[napi]
    pub fn call(&self, env: Env, op: String, args: Vec<Unknown<'_>>) -> Value {
        let args: Vec<Arg> = args.iter().map(Arg::of).collect();
        let request = match crate::js::read_request(&op, &args, &Arg::undefined(env.raw())) {
            Ok(request) => request,
            Err(err) => return arg_error_value(err),
        };
        match lock(&self.connection).as_ref() {
            Some(store) => match answer(&mut Open(store), &request) {
                Ok(answer) => answer_value(&answer),
                Err(err) => error_value(&err),
            },
            None => closed_value(),
        }
    }

    /// Runs `calls`, a list of `[op, args]`, as one group (docs/contract.md section 10) on
    /// libuv's thread pool: one transaction, each call in a savepoint of its own, checked and
    /// answered exactly as if it ran alone, in order. Resolves to one item per call: `{value,
    /// reason}`, or `{error}` for a call that failed alone; when the group's commit fails, every
    /// call gets its error and nothing of the group applied.
    #[napi(js_name = "callGroup")]
    pub fn call_group(&self, env: Env, calls: Vec<Vec<Unknown<'_>>>) -> AsyncTask<GroupTask> {
        let undefined = Arg::undefined(env.raw());
        let calls = calls
            .iter()
            .map(|call| {
                let op = call
                    .first()
                    .map(Arg::of)
                    .and_then(|op| crate::js::JsArg::as_string(&op))
                    .unwrap_or_default();
                if op == "claimMany" {
                    return Err(arg_error_value(crate::js::ArgError(
                        "claimMany races its owners on threads and cannot join a group: call it alone"
                            .into(),
                    )));
                }
                let args: Vec<Arg> = call
                    .get(1)
                    .map(Arg::of)
                    .map(|list| crate::js::JsArg::items(&list))
                    .unwrap_or_default();
                match crate::js::check_request(&op, &args, &undefined) {
                    Ok(request) => Ok(request),
                    Err(err) => Err(arg_error_value(err)),
                }
            })
            .collect();
        AsyncTask::new(GroupTask {
            connection: self.connection.clone(),
            calls,
        })
    }

    /// Closes the connection (after a group in flight); later calls answer a `storage` error.
    #[napi]
    pub fn close(&self) {
        lock(&self.connection).take();
        #[cfg(feature = "addon-faults")]
        faults::note_events();
    }
}

/// Checks the arguments of `op` without running it (before `claimMany` starts its work): `null`,
/// or `{error}`.
#[napi(js_name = "checkArguments")]
pub fn check_arguments(env: Env, op: String, args: Vec<Unknown<'_>>) -> Value {
    let args: Vec<Arg> = args.iter().map(Arg::of).collect();
    match crate::js::check_request(&op, &args, &Arg::undefined(env.raw())) {
        Ok(_) => Value::Null,
        Err(err) => arg_error_value(err),
    }
}

/// A group's run on the thread pool.
pub struct GroupTask {
    connection: Connection,
    calls: Vec<Result<Request, Value>>,
}

/// A JSON value handed to JavaScript as the value it spells (the answers of a group).
pub struct Answers(Value);

impl TypeName for Answers {
    fn type_name() -> &'static str {
        "Array"
    }
    fn value_type() -> napi::ValueType {
        napi::ValueType::Object
    }
}

impl ToNapiValue for Answers {
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        answers: Answers,
    ) -> napi::Result<napi::sys::napi_value> {
        // SAFETY: the env napi handed the caller, passed on as it is.
        unsafe { Value::to_napi_value(env, answers.0) }
    }
}

impl Task for GroupTask {
    type Output = Value;
    type JsValue = Answers;

    fn compute(&mut self) -> napi::Result<Value> {
        let calls = std::mem::take(&mut self.calls);
        Ok(Value::Array(match lock(&self.connection).as_ref() {
            None => closed_answers(calls, closed_value),
            Some(store) => run_group(store.connection(), "group", calls, |request| {
                answer(&mut Open(store), request).map(|answer| answer_value(&answer))
            }),
        }))
    }

    fn resolve(&mut self, _env: Env, output: Value) -> napi::Result<Answers> {
        Ok(Answers(output))
    }
}

/// Runs a group's `items` on `conn` in one transaction (docs/contract.md section 10): each `Ok`
/// item by `run`, in a savepoint of its own, its error its answer alone; an `Err` item is an
/// answer already given (an argument refused on the JavaScript thread) and passes through. When
/// the group itself fails (its start, its commit, or SQLite rolled it back under an item) every
/// item gets that error (one refused for its arguments too) and nothing applied. Shared by the
/// store's `callGroup` and the guard's `writeGroup`.
pub(crate) fn run_group<T>(
    conn: &rusqlite::Connection,
    operation: &'static str,
    items: Vec<Result<T, Value>>,
    mut run: impl FnMut(&T) -> crate::Result<Value>,
) -> Vec<Value> {
    let mut answers: Vec<Option<Value>> = items
        .iter()
        .map(|item| item.as_ref().err().cloned())
        .collect();
    let ran = (|| {
        let group = crate::sqlite::write_tx::Group::begin(conn, operation)?;
        for (item, answer) in items.iter().zip(answers.iter_mut()) {
            if let Ok(item) = item {
                let answered = group.run(|| run(item))?;
                *answer = Some(answered.unwrap_or_else(|err| error_value(&err)));
            }
        }
        group.commit()
    })();
    answers
        .into_iter()
        .map(|answer| match (&ran, answer) {
            (Err(lost), _) => error_value(lost),
            (Ok(()), Some(answer)) => answer,
            (Ok(()), None) => error_value(&crate::Error::Internal {
                message: "an item of a group was never run; report it as a bug".into(),
            }),
        })
        .collect()
}

/// A group's answers when its connection is closed: `closed()` for each item, but an answer
/// already given (an argument refused) stays that answer.
pub(crate) fn closed_answers<T>(items: Vec<Result<T, Value>>, closed: fn() -> Value) -> Vec<Value> {
    items
        .into_iter()
        .map(|item| item.err().unwrap_or_else(closed))
        .collect()
}

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

use crate::outcome::Fence;
use crate::protocol::{answer, respond, Answer, Backend, Members, Op, Request, Response, Source};
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
    ) -> std::result::Result<WasmStore, JsValue> {
        let store = node_vfs::open(path, busy_timeout_ms, exclusive.unwrap_or(false))
            .map_err(|e| error_to_js(&e))?;
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
    let request = request_from_js(op, &args)?;
    request.validate().map_err(|e| error_to_js(&e))
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

/// The wasm calls' [`Source`]: positional JavaScript arguments, checked as they are read; every
/// bad one is `invalid_argument`, in positional order.
struct Args<'a> {
    op: &'a str,
    args: &'a Array,
    next: u32,
}

impl Members for Args<'_> {
    type Error = JsValue;
    fn string(&mut self, name: &'static str) -> std::result::Result<String, JsValue> {
        let index = self.advance();
        Args::string(self, index, name)
    }
    fn optional_string(
        &mut self,
        name: &'static str,
    ) -> std::result::Result<Option<String>, JsValue> {
        let index = self.advance();
        Args::optional_string(self, index, name)
    }
    fn number(&mut self, name: &'static str) -> std::result::Result<f64, JsValue> {
        let index = self.advance();
        Args::number(self, index, name)
    }
    fn fence(&mut self, _name: &'static str) -> std::result::Result<Fence, JsValue> {
        let index = self.advance();
        Args::fence(self, index)
    }
    fn maybe_string(&mut self, name: &'static str) -> std::result::Result<Option<String>, JsValue> {
        self.maybe(name, "a string, null or undefined", JsValue::as_string)
    }
    fn maybe_number(&mut self, name: &'static str) -> std::result::Result<Option<f64>, JsValue> {
        self.maybe(name, "a number, null or undefined", JsValue::as_f64)
    }
    fn maybe_integer(&mut self, name: &'static str) -> std::result::Result<Option<i64>, JsValue> {
        self.maybe(name, INTEGER_WANTED, fence_of)
    }
    fn maybe_bool(&mut self, name: &'static str) -> std::result::Result<Option<bool>, JsValue> {
        self.maybe(name, "a boolean, null or undefined", JsValue::as_bool)
    }
}

impl<'a> Source for Args<'a> {
    type Item = Member<'a>;
    fn count(&mut self, name: &'static str) -> std::result::Result<usize, JsValue> {
        let value = self.args.get(self.advance());
        match value.as_f64() {
            // Past u32 the count is out of range anyway; the range check names the bound.
            Some(n) if n.fract() == 0.0 && n >= 0.0 => Ok(n.min(u32::MAX as f64) as usize),
            _ => Err(self.bad(name, "a whole number", &value)),
        }
    }
    fn objects<T>(
        &mut self,
        name: &'static str,
        mut read: impl FnMut(&mut Member<'a>) -> std::result::Result<T, JsValue>,
    ) -> std::result::Result<Vec<T>, JsValue> {
        let value = self.args.get(self.advance());
        if !Array::is_array(&value) {
            return Err(self.bad(name, "an array of objects", &value));
        }
        let op = self.op;
        Array::from(&value)
            .iter()
            .enumerate()
            .map(|(index, object)| {
                let place = |member: &str| match member {
                    "" => format!("{name}[{index}]"),
                    _ => format!("{name}[{index}].{member}"),
                };
                if !object.is_object() || Array::is_array(&object) {
                    return Err(bad_value(op, &place(""), "an object", &object));
                }
                let mut member = Member {
                    op,
                    list: name,
                    index: Some(index),
                    object,
                    read: Vec::new(),
                };
                let item = read(&mut member)?;
                member.refuse_others()?;
                Ok(item)
            })
            .collect()
    }
    fn strings(&mut self, name: &'static str) -> std::result::Result<Vec<String>, JsValue> {
        let index = self.advance();
        Args::strings(self, index, name)
    }
    fn maybe_strings(
        &mut self,
        name: &'static str,
    ) -> std::result::Result<Option<Vec<String>>, JsValue> {
        let index = self.advance();
        let value = self.args.get(index);
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        Args::strings(self, index, name).map(Some)
    }
    fn maybe_statements(
        &mut self,
        _name: &'static str,
    ) -> std::result::Result<Option<Vec<crate::Statement>>, JsValue> {
        let value = self.args.get(self.advance());
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        fenced::statements_of(self.op, &value).map(Some)
    }
    fn fenced_writes(&mut self) -> std::result::Result<crate::protocol::FencedArgs, JsValue> {
        let (statements, options) = (self.advance(), self.advance());
        fenced::fenced_args(self.op, &self.args.get(statements), &self.args.get(options))
    }
    fn options<T>(
        &mut self,
        read: impl FnOnce(&mut Member<'a>) -> std::result::Result<T, JsValue>,
    ) -> std::result::Result<T, JsValue> {
        // JavaScript's options are one object argument (`schedule(name, cron, {tz, queue})`);
        // left out or null, it has no members.
        let value = self.args.get(self.advance());
        let object = if value.is_undefined() || value.is_null() {
            js_sys::Object::new().into()
        } else if value.is_object() && !Array::is_array(&value) {
            value
        } else {
            return Err(self.bad("options", "an object, null or undefined", &value));
        };
        let mut member = Member {
            op: self.op,
            list: "options",
            index: None,
            object,
            read: Vec::new(),
        };
        let options = read(&mut member)?;
        member.refuse_others()?;
        Ok(options)
    }
}

impl Args<'_> {
    fn advance(&mut self) -> u32 {
        self.next += 1;
        self.next - 1
    }

    /// An optional argument: undefined (left out) and null are both none.
    fn maybe<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&JsValue) -> Option<T>,
    ) -> std::result::Result<Option<T>, JsValue> {
        let value = self.args.get(self.advance());
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        convert(&value)
            .map(Some)
            .ok_or_else(|| self.bad(name, want, &value))
    }

    fn bad(&self, name: &str, want: &str, got: &JsValue) -> JsValue {
        bad_value(self.op, &format!("argument `{name}`"), want, got)
    }

    fn string(&self, index: u32, name: &str) -> std::result::Result<String, JsValue> {
        let value = self.args.get(index);
        value
            .as_string()
            .ok_or_else(|| self.bad(name, "a string", &value))
    }

    fn number(&self, index: u32, name: &str) -> std::result::Result<f64, JsValue> {
        let value = self.args.get(index);
        value
            .as_f64()
            .ok_or_else(|| self.bad(name, "a number", &value))
    }

    fn fence(&self, index: u32) -> std::result::Result<i64, JsValue> {
        let value = self.args.get(index);
        fence_of(&value).ok_or_else(|| self.bad("fence", FENCE_WANTED, &value))
    }

    fn optional_string(
        &self,
        index: u32,
        name: &str,
    ) -> std::result::Result<Option<String>, JsValue> {
        let value = self.args.get(index);
        if value.is_null() {
            return Ok(None);
        }
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| self.bad(name, "a string or null (null: no result)", &value))
    }

    fn strings(&self, index: u32, name: &str) -> std::result::Result<Vec<String>, JsValue> {
        let value = self.args.get(index);
        if !Array::is_array(&value) {
            return Err(self.bad(name, "an array of strings", &value));
        }
        Array::from(&value)
            .iter()
            .map(|item| {
                item.as_string()
                    .ok_or_else(|| self.bad(name, "an array of strings", &item))
            })
            .collect()
    }
}

const FENCE_WANTED: &str = "an integer number (a fence from claim)";
const INTEGER_WANTED: &str = "an integer number within ±(2^53 - 1), null or undefined";

/// A fence from JavaScript: an integer number within 2^53 (beyond it a JavaScript number cannot
/// hold every integer exactly).
fn fence_of(value: &JsValue) -> Option<i64> {
    value
        .as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0)
        .map(|f| f as i64)
}

/// The `invalid_argument` error for a bad value at `place` (`argument \`job\``, `leases[2].fence`).
fn bad_value(op: &str, place: &str, want: &str, got: &JsValue) -> JsValue {
    let got = if got.is_undefined() {
        let kind = if place.starts_with("argument") {
            "argument"
        } else {
            "member"
        };
        format!("nothing (the {kind} is missing)")
    } else if got.is_null() {
        "null".to_string()
    } else {
        format!("a {}", got.js_typeof().as_string().unwrap_or_default())
    };
    js_error(
        "invalid_argument",
        &format!("{op}(): {place} must be {want}, got {got}"),
    )
}

/// One object of a list argument (`enqueueMany`'s jobs, `renewMany`'s leases): its members read
/// by their JavaScript names (`run_at` is `runAt`); a member the operation does not take is
/// refused, so a misspelt option never goes unnoticed.
struct Member<'a> {
    op: &'a str,
    list: &'static str,
    /// The item's index in its list; `None` for a lone options object.
    index: Option<usize>,
    object: JsValue,
    read: Vec<String>,
}

impl Member<'_> {
    /// The object, for messages: `jobs[2]`, or `options`.
    fn whole(&self) -> String {
        match self.index {
            Some(index) => format!("{}[{index}]", self.list),
            None => self.list.to_string(),
        }
    }

    /// The member `name` (a protocol name) by its JavaScript name, and where it is, for messages.
    fn get(&mut self, name: &str) -> (JsValue, String) {
        let js_name = crate::protocol::js_name(name);
        let value = js_sys::Reflect::get(&self.object, &JsValue::from_str(&js_name))
            .unwrap_or(JsValue::UNDEFINED);
        let place = format!("{}.{js_name}", self.whole());
        self.read.push(js_name);
        (value, place)
    }

    fn refuse_others(&self) -> std::result::Result<(), JsValue> {
        let keys = js_sys::Object::keys(&js_sys::Object::from(self.object.clone()));
        for key in keys.iter() {
            let key = key.as_string().unwrap_or_default();
            if !self.read.contains(&key) {
                return Err(js_error(
                    "invalid_argument",
                    &format!(
                        "{}(): {} has the member `{key}`; it takes only {}",
                        self.op,
                        self.whole(),
                        self.read.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn wanted<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&JsValue) -> Option<T>,
    ) -> std::result::Result<T, JsValue> {
        let (value, place) = self.get(name);
        convert(&value).ok_or_else(|| bad_value(self.op, &place, want, &value))
    }

    fn maybe<T>(
        &mut self,
        name: &str,
        want: &str,
        convert: impl Fn(&JsValue) -> Option<T>,
    ) -> std::result::Result<Option<T>, JsValue> {
        let (value, place) = self.get(name);
        if value.is_undefined() || value.is_null() {
            return Ok(None);
        }
        convert(&value)
            .map(Some)
            .ok_or_else(|| bad_value(self.op, &place, want, &value))
    }
}

impl Members for Member<'_> {
    type Error = JsValue;
    fn string(&mut self, name: &'static str) -> std::result::Result<String, JsValue> {
        self.wanted(name, "a string", JsValue::as_string)
    }
    fn optional_string(
        &mut self,
        name: &'static str,
    ) -> std::result::Result<Option<String>, JsValue> {
        let (value, place) = self.get(name);
        if value.is_null() {
            return Ok(None);
        }
        value
            .as_string()
            .map(Some)
            .ok_or_else(|| bad_value(self.op, &place, "a string or null", &value))
    }
    fn number(&mut self, name: &'static str) -> std::result::Result<f64, JsValue> {
        self.wanted(name, "a number", JsValue::as_f64)
    }
    fn maybe_string(&mut self, name: &'static str) -> std::result::Result<Option<String>, JsValue> {
        self.maybe(name, "a string, null or undefined", JsValue::as_string)
    }
    fn maybe_number(&mut self, name: &'static str) -> std::result::Result<Option<f64>, JsValue> {
        self.maybe(name, "a number, null or undefined", JsValue::as_f64)
    }
    fn fence(&mut self, name: &'static str) -> std::result::Result<Fence, JsValue> {
        self.wanted(name, FENCE_WANTED, fence_of)
    }
    fn maybe_integer(&mut self, name: &'static str) -> std::result::Result<Option<i64>, JsValue> {
        self.maybe(name, INTEGER_WANTED, fence_of)
    }
    fn maybe_bool(&mut self, name: &'static str) -> std::result::Result<Option<bool>, JsValue> {
        self.maybe(name, "a boolean, null or undefined", JsValue::as_bool)
    }
}

fn request_from_js(op: &str, args: &Array) -> std::result::Result<Request, JsValue> {
    let Some(kind) = Op::from_js(op) else {
        return Err(js_error(
            "invalid_argument",
            &format!("unknown operation {op:?}"),
        ));
    };
    Request::read(kind, Args { op, args, next: 0 })
}

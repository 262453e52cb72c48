//! What the playground asks of the store beyond the contract (browser builds): the statements an
//! operation ran ([`super::trace`]) and the same operation on the counterfactual store without
//! fencing ([`super::lease_only`]). Both run on the store's own connection, in the same SQLite
//! database, so what the page shows is what SQLite did.

use js_sys::Array;
use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::{error_to_js, js_error, lease_only, request_from_js, trace, Open, WasmStore};
use crate::protocol::answer;

#[derive(Serialize)]
struct Traced<T: Serialize> {
    #[serde(flatten)]
    answer: T,
    statements: Vec<trace::Statement>,
}

fn to_js<T: Serialize>(value: &T) -> std::result::Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| {
            js_error(
                "storage",
                &format!("the answer could not cross to JavaScript: {e}"),
            )
        })
}

#[wasm_bindgen]
impl WasmStore {
    /// Records every statement the connection runs (on) or stops recording (off, the default:
    /// no hook, no cost). Used with `callTraced` and `leaseOnly`, which return what they ran.
    ///
    /// ```js
    /// store.setTracing(true);
    /// store.callTraced('claim', ['job', 'A', 0, 30]);
    /// // {value: 1, statements: [{sql: 'BEGIN IMMEDIATE', ...}, {sql: 'UPDATE jobs ...', expanded, rows: 1, changed: 1}, ...]}
    /// ```
    #[wasm_bindgen(js_name = setTracing)]
    pub fn set_tracing(&self, on: bool) -> std::result::Result<(), JsValue> {
        trace::set(self.open_store()?.connection(), on);
        Ok(())
    }

    /// `call(op, args)`, answering `{value, reason, statements}`: the statements this operation
    /// ran, in order (empty unless tracing is on).
    #[wasm_bindgen(js_name = callTraced)]
    pub fn call_traced(&self, op: &str, args: Array) -> std::result::Result<JsValue, JsValue> {
        let request = request_from_js(op, &args)?;
        let store = self.open_store()?;
        trace::take(); // what ran before this call is not part of it
        let answered = answer(&mut Open(store), &request);
        let statements = trace::take();
        match answered {
            Ok(answer) => to_js(&Traced { answer, statements }),
            Err(err) => Err(error_to_js(&err)),
        }
    }

    /// The same operation, with the same positional arguments as `call`, on the store without
    /// fencing (`lease_only_jobs`): `{value, row, statements}`. `value` says whether a write
    /// changed a row; `row` is the stored row for `state`. It checks renew, complete, release and
    /// fail by job id alone, so the owner and fence arguments are read and ignored. `fail` with
    /// a `retryAt` lets the job wait until then; with `retryAt` null it marks the job dead, and
    /// `revive(job, now)` queues a dead job again.
    ///
    /// ```js
    /// store.leaseOnly('complete', ['job', 'A', 1, 14, "A's result"]);  // {value: true, row: null, statements}
    /// store.leaseOnly('fail', ['job', 'A', 1, 14, null, 'crashed']);    // dead: {value: true, ...}
    /// ```
    #[wasm_bindgen(js_name = leaseOnly)]
    pub fn lease_only(&self, op: &str, args: Array) -> std::result::Result<JsValue, JsValue> {
        let conn = self.open_store()?.connection();
        let string = |i: u32, name: &str| {
            args.get(i).as_string().ok_or_else(|| {
                js_error(
                    "invalid_argument",
                    &format!("leaseOnly {op}(): argument `{name}` must be a string"),
                )
            })
        };
        let number = |i: u32, name: &str| {
            args.get(i).as_f64().ok_or_else(|| {
                js_error(
                    "invalid_argument",
                    &format!("leaseOnly {op}(): argument `{name}` must be a number"),
                )
            })
        };
        // A missing optional argument (undefined) means null, as in `call`.
        let optional_string = |i: u32, name: &str| {
            let value = args.get(i);
            if value.is_null() || value.is_undefined() {
                Ok(None)
            } else {
                string(i, name).map(Some)
            }
        };
        let job = string(0, "job")?;
        let (owner, result, error);
        let run = match op {
            "enqueue" => lease_only::Op::Enqueue { job: &job },
            "state" => lease_only::Op::State { job: &job },
            "claim" => {
                owner = string(1, "owner")?;
                lease_only::Op::Claim {
                    job: &job,
                    owner: &owner,
                    now: number(2, "now")?,
                    ttl: number(3, "ttl")?,
                }
            }
            "renew" => lease_only::Op::Renew {
                job: &job,
                now: number(3, "now")?,
                ttl: number(4, "ttl")?,
            },
            "complete" => {
                let value = args.get(4);
                result = if value.is_null() {
                    None
                } else {
                    Some(string(4, "result")?)
                };
                lease_only::Op::Complete {
                    job: &job,
                    result: result.as_deref(),
                }
            }
            "release" => lease_only::Op::Release { job: &job },
            "fail" => {
                let retry_at = args.get(4);
                let retry_at = if retry_at.is_null() || retry_at.is_undefined() {
                    None
                } else {
                    Some(number(4, "retryAt")?)
                };
                error = optional_string(5, "error")?;
                lease_only::Op::Fail {
                    job: &job,
                    retry_at,
                    error: error.as_deref(),
                }
            }
            "revive" => lease_only::Op::Revive {
                job: &job,
                now: number(1, "now")?,
            },
            _ => {
                return Err(js_error(
                    "invalid_argument",
                    &format!("leaseOnly: unknown operation {op:?}"),
                ))
            }
        };
        lease_only::create(conn).map_err(|e| error_to_js(&e))?;
        trace::take(); // the table's creation is not part of the operation
        let answered = lease_only::run(conn, run).map_err(|e| error_to_js(&e))?;
        to_js(&Traced {
            answer: answered,
            statements: trace::take(),
        })
    }
}

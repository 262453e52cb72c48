//! Fenced writes across the JavaScript boundary (docs/contract.md section 8): the statement lists
//! of `call('fenced', ...)`, and Node's synchronous callback form, `fencedWith`, whose callback
//! runs statements through `fencedRun` / `fencedAll` while the transaction is open.

use std::cell::RefCell;

use js_sys::{Array, Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::{answer_to_js, arg_error_to_js, error_to_js, js_error, WasmStore};
use crate::protocol::{Answer, Returned};
use crate::rules::fenced::{Finish, SqlValue, Statement};
use crate::sqlite::{FencedTx, Refusal};
use crate::Outcome;

/// The caller phase of the fenced transaction whose callback is running, if any.
pub(crate) type Active = RefCell<Option<Refusal>>;

fn bad(op: &str, what: &str) -> JsValue {
    js_error("invalid_argument", &format!("{op}(): {what}"))
}

/// The lease, time and finish of a callback-form fenced write (`fencedWith`), checked as `call`
/// checks them.
pub(crate) fn lease_args(
    job: &JsValue,
    owner: &JsValue,
    fence: &JsValue,
    now: &JsValue,
    options: &JsValue,
) -> Result<(crate::Lease, f64, Finish), JsValue> {
    let positional = [job.clone(), owner.clone(), fence.clone(), now.clone()];
    let (lease, now) =
        crate::js::lease_args(&positional, &JsValue::UNDEFINED).map_err(arg_error_to_js)?;
    let (complete, result) =
        crate::js::fenced_options("fenced", options).map_err(arg_error_to_js)?;
    let finish = Finish::from_parts(complete, result).map_err(|e| error_to_js(&e))?;
    Ok((lease, now, finish))
}

/// A statement's parameters, read as every JavaScript face reads them.
pub(crate) fn sql_values(op: &str, params: &JsValue) -> Result<Vec<SqlValue>, JsValue> {
    crate::js::sql_values(op, params).map_err(arg_error_to_js)
}

/// An array of `{sql, params}` as statements.
pub(crate) fn statements_of(op: &str, statements: &JsValue) -> Result<Vec<Statement>, JsValue> {
    crate::js::statements_of(op, statements).map_err(arg_error_to_js)
}

/// The answer of a fenced write: `{value: true}`, or `{value: false, reason}`.
pub(crate) fn outcome_to_js(outcome: Outcome<()>) -> Result<JsValue, JsValue> {
    let answer = match outcome {
        Outcome::Granted(()) => Answer {
            value: Returned::Bool(true),
            reason: None,
        },
        Outcome::Rejected(reason) => Answer {
            value: Returned::Bool(false),
            reason: Some(reason),
        },
    };
    answer_to_js(&answer)
}

/// Rows as an array of plain objects.
pub(crate) fn rows_to_js(columns: &[String], rows: Vec<Vec<SqlValue>>) -> Result<JsValue, JsValue> {
    let out = Array::new();
    for row in rows {
        out.push(&row_object(columns, row)?);
    }
    Ok(out.into())
}

/// A row as a plain object, column names as keys.
fn row_object(columns: &[String], row: Vec<SqlValue>) -> Result<JsValue, JsValue> {
    let object = Object::new();
    for (name, value) in columns.iter().zip(row) {
        let value = match value {
            SqlValue::Null => JsValue::NULL,
            SqlValue::Integer(n) => JsValue::from_f64(n as f64),
            SqlValue::Real(f) => JsValue::from_f64(f),
            SqlValue::Text(t) => JsValue::from_str(&t),
            SqlValue::Bool(b) => JsValue::from_bool(b),
        };
        Reflect::set(&object, &JsValue::from_str(name), &value)?;
    }
    Ok(object.into())
}

#[wasm_bindgen]
impl WasmStore {
    /// Node's callback form: opens the fenced transaction, calls `work()` (which runs statements
    /// with `fencedRun` / `fencedAll`), then checks the lease and commits. Answers `{value,
    /// reason}`; an exception thrown by `work` rolls back and is thrown again.
    #[wasm_bindgen(js_name = fencedWith)]
    pub fn fenced_with(
        &self,
        job: JsValue,
        owner: JsValue,
        fence: JsValue,
        now: JsValue,
        options: JsValue,
        work: &Function,
    ) -> Result<JsValue, JsValue> {
        let (lease, now, finish) = lease_args(&job, &owner, &fence, &now, &options)?;
        let store = self.open_store()?;
        if self.fenced.borrow().is_some() {
            return Err(bad(
                "fenced",
                "a fenced callback is already running on this store",
            ));
        }
        let mut thrown = None;
        let outcome = store.fenced_with(&lease, now, finish, |tx| {
            *self.fenced.borrow_mut() = Some(tx.refusal_slot());
            let called = work.call0(&JsValue::NULL);
            *self.fenced.borrow_mut() = None;
            called.map(drop).map_err(|exception| {
                thrown = Some(exception);
                crate::Error::Internal {
                    message: "the fenced callback threw".into(),
                }
            })
        });
        if let Some(exception) = thrown {
            return Err(exception);
        }
        outcome_to_js(outcome.map_err(|e| error_to_js(&e))?)
    }

    /// Inside a `fencedWith` callback: runs one statement (`$1`, `$2`, ... bound from `params`);
    /// the number of rows it changed.
    #[wasm_bindgen(js_name = fencedRun)]
    pub fn fenced_run(&self, sql: JsValue, params: JsValue) -> Result<f64, JsValue> {
        let (sql, params) = self.statement_of("run", &sql, &params)?;
        let tx = self.active_tx("run")?;
        tx.execute_values(&sql, &params)
            .map(|n| n as f64)
            .map_err(|e| error_to_js(&e))
    }

    /// Inside a `fencedWith` callback: the rows of one query, as objects.
    #[wasm_bindgen(js_name = fencedAll)]
    pub fn fenced_all(&self, sql: JsValue, params: JsValue) -> Result<Array, JsValue> {
        let (sql, params) = self.statement_of("all", &sql, &params)?;
        let tx = self.active_tx("all")?;
        let (columns, rows) = tx
            .query_values(&sql, &params)
            .map_err(|e| error_to_js(&e))?;
        rows.into_iter()
            .map(|row| row_object(&columns, row))
            .collect()
    }
}

impl WasmStore {
    fn statement_of(
        &self,
        method: &str,
        sql: &JsValue,
        params: &JsValue,
    ) -> Result<(String, Vec<SqlValue>), JsValue> {
        let op = format!("tx.{method}");
        let sql = sql
            .as_string()
            .ok_or_else(|| bad(&op, "argument `sql` must be a string"))?;
        Ok((sql, sql_values(&op, params)?))
    }

    fn active_tx(&self, method: &str) -> Result<FencedTx<'_>, JsValue> {
        let store = self.open_store()?;
        let refusal = self.fenced.borrow().clone().ok_or_else(|| {
            js_error(
                "invalid_argument",
                &format!(
                    "tx.{method}(): the fenced callback has returned; the transaction is over"
                ),
            )
        })?;
        Ok(FencedTx::new(store.connection(), refusal))
    }
}

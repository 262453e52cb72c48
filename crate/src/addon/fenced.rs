//! The callback form of fenced writes on the native engine (docs/contract.md section 8), as the
//! wasm engine has it: `fencedWith` opens the fenced transaction and calls the JavaScript
//! callback, whose `tx.run` / `tx.all` come back here as `fencedRun` / `fencedAll` while the
//! transaction is open, on the same connection, under the same authorizer; then the lease check
//! and the commit. A throw in the callback rolls back and is thrown again, as it was thrown.

use napi::bindgen_prelude::{Function, Unknown};
use napi::Env;
use napi_derive::napi;
use serde_json::{json, Value};

use super::value::Arg;
use super::{arg_error_value, closed_value, error_value, lock, NativeStore};
use crate::rules::fenced::{Finish, SqlValue};
use crate::sqlite::{FencedTx, Refusal};
use crate::Outcome;

/// The fenced transaction whose callback is running: its connection and the authorizer's slot.
/// Set only while `fencedWith` is on the stack, holding the store's lock, so the connection it
/// points to is alive and no other thread uses it.
pub(crate) struct ActiveTx {
    connection: *const rusqlite::Connection,
    refusal: Refusal,
}

/// A row as a plain object, column names as keys.
pub(crate) fn row_value(columns: &[String], row: Vec<SqlValue>) -> Value {
    let object = columns
        .iter()
        .zip(row)
        .map(|(name, value)| {
            let value = match value {
                SqlValue::Null => Value::Null,
                SqlValue::Integer(n) => json!(n),
                SqlValue::Real(f) => json!(f),
                SqlValue::Text(t) => Value::String(t),
                SqlValue::Bool(b) => Value::Bool(b),
            };
            (name.clone(), value)
        })
        .collect();
    Value::Object(object)
}

#[napi]
impl NativeStore {
    /// Opens the fenced transaction on `job`'s lease, calls `work()` (which runs statements with
    /// `fencedRun` / `fencedAll`), then checks the lease and commits (or completes the job with
    /// `options.complete`). `{value, reason}` or `{error}`; a throw of `work` rolls back and is
    /// thrown again.
    #[napi(js_name = "fencedWith")]
    #[allow(clippy::too_many_arguments)]
    pub fn fenced_with(
        &self,
        env: Env,
        job: Unknown<'_>,
        owner: Unknown<'_>,
        fence: Unknown<'_>,
        now: Unknown<'_>,
        options: Unknown<'_>,
        work: Function<'_, (), Unknown<'_>>,
    ) -> napi::Result<Value> {
        let undefined = Arg::undefined(env.raw());
        let positional = [
            Arg::of(&job),
            Arg::of(&owner),
            Arg::of(&fence),
            Arg::of(&now),
        ];
        let read = crate::js::lease_args(&positional, &undefined).and_then(|(lease, now)| {
            let (complete, result) = crate::js::fenced_options("fenced", &Arg::of(&options))?;
            Ok((lease, now, complete, result))
        });
        let (lease, now, complete, result) = match read {
            Ok(read) => read,
            Err(err) => return Ok(arg_error_value(err)),
        };
        let finish = match Finish::from_parts(complete, result) {
            Ok(finish) => finish,
            Err(err) => return Ok(error_value(&err)),
        };
        if self.active.borrow().is_some() {
            return Ok(arg_error_value(crate::js::ArgError(
                "fenced(): a fenced callback is already running on this store".into(),
            )));
        }
        let guard = lock(&self.connection);
        let Some(store) = guard.as_ref() else {
            return Ok(closed_value());
        };
        let mut thrown = None;
        let outcome = store.fenced_with(&lease, now, finish, |tx| {
            *self.active.borrow_mut() = Some(ActiveTx {
                connection: store.connection(),
                refusal: tx.refusal_slot(),
            });
            let called = work.call(());
            *self.active.borrow_mut() = None;
            called.map(drop).map_err(|exception| {
                thrown = Some(exception);
                crate::Error::Internal {
                    message: "the fenced callback threw".into(),
                }
            })
        });
        drop(guard);
        if let Some(exception) = thrown {
            return Err(exception);
        }
        Ok(match outcome {
            Ok(Outcome::Granted(())) => json!({"value": true}),
            Ok(Outcome::Rejected(reason)) => json!({"value": false, "reason": reason}),
            Err(err) => error_value(&err),
        })
    }

    /// Inside a `fencedWith` callback: runs one statement (`$1`, `$2`, ... bound from `params`).
    /// `{changes}` or `{error}`.
    #[napi(js_name = "fencedRun")]
    pub fn fenced_run(&self, sql: Unknown<'_>, params: Unknown<'_>) -> Value {
        self.in_active_tx("run", sql, params, |tx, sql, params| {
            tx.execute_values(sql, params)
                .map(|changes| json!({ "changes": changes }))
        })
    }

    /// Inside a `fencedWith` callback: the rows of one query as objects (`{rows}`), or
    /// `{error}`.
    #[napi(js_name = "fencedAll")]
    pub fn fenced_all(&self, sql: Unknown<'_>, params: Unknown<'_>) -> Value {
        self.in_active_tx("all", sql, params, |tx, sql, params| {
            let (columns, rows) = tx.query_values(sql, params)?;
            let rows: Vec<Value> = rows
                .into_iter()
                .map(|row| row_value(&columns, row))
                .collect();
            Ok(json!({ "rows": rows }))
        })
    }
}

impl NativeStore {
    fn in_active_tx(
        &self,
        method: &str,
        sql: Unknown<'_>,
        params: Unknown<'_>,
        run: impl FnOnce(&FencedTx<'_>, &str, &[SqlValue]) -> crate::Result<Value>,
    ) -> Value {
        let op = format!("tx.{method}");
        let Some(sql) = crate::js::JsArg::as_string(&Arg::of(&sql)) else {
            return arg_error_value(crate::js::ArgError(format!(
                "{op}(): argument `sql` must be a string"
            )));
        };
        let params = match crate::js::sql_values(&op, &Arg::of(&params)) {
            Ok(params) => params,
            Err(err) => return arg_error_value(err),
        };
        let active = self.active.borrow();
        let Some(active) = active.as_ref() else {
            return arg_error_value(crate::js::ArgError(format!(
                "{op}(): the fenced callback has returned; the transaction is over"
            )));
        };
        // SAFETY: `active` is set only while `fenced_with` runs the callback that called us, on
        // this thread, holding the store's lock: the connection is alive and used by no one else.
        let connection = unsafe { &*active.connection };
        let tx = FencedTx::new(connection, active.refusal.clone());
        run(&tx, &sql, &params).unwrap_or_else(|err| error_value(&err))
    }
}

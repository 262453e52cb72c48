//! The fence guard for JavaScript (Node's `FenceGuard`): one `BEGIN IMMEDIATE` transaction with
//! the guard's check, then the caller's statements (docs/contract.md section 8, part 2).

use js_sys::{Array, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::fenced::{rows_to_js, statements_of};
use super::{error_to_js, js_error, WasmStore};
use crate::error::Error;
use crate::guard::{sqlite, Guarded};
use crate::sqlite::FencedTx;

#[wasm_bindgen]
impl WasmStore {
    /// Runs `statements` (`[{sql, params}]`) in one transaction if the guard accepts `fence` for
    /// `key`: `{accepted: true, rows}` (the rows of the last statement), or `{accepted: false,
    /// current}` with nothing written.
    #[wasm_bindgen(js_name = guardWrite)]
    pub fn guard_write(
        &self,
        key: JsValue,
        fence: JsValue,
        statements: JsValue,
    ) -> Result<JsValue, JsValue> {
        let op = "FenceGuard.write";
        let key = key.as_string().ok_or_else(|| {
            js_error(
                "invalid_argument",
                &format!("{op}(): `key` must be a string"),
            )
        })?;
        let fence = match fence.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0 => f as i64,
            _ => {
                return Err(js_error(
                    "invalid_argument",
                    &format!("{op}(): `fence` must be an integer (a fence from claim)"),
                ))
            }
        };
        let statements = statements_of(op, &statements)?;
        let store = self.open_store()?;
        let conn = store.connection();
        let outcome = (|| -> crate::Result<Guarded<JsValue>> {
            sqlite::install(conn)?;
            let tx = crate::sqlite::immediate_tx(conn, "guard")?;
            if let Guarded::Refused { current } = sqlite::accept(&tx, &key, fence)? {
                return Ok(Guarded::Refused { current });
            }
            let run = FencedTx::new(conn, Default::default());
            let mut last = (Vec::new(), Vec::new());
            for statement in &statements {
                last = run.query_values(&statement.sql, &statement.params)?;
            }
            let rows = rows_to_js(&last.0, last.1).map_err(|_| Error::Internal {
                message: "a row could not be made a JavaScript object".into(),
            })?;
            tx.commit().map_err(Error::storage("guard"))?;
            Ok(Guarded::Accepted(rows))
        })()
        .map_err(|e| error_to_js(&e))?;
        let answer = Object::new();
        match outcome {
            Guarded::Accepted(rows) => {
                Reflect::set(&answer, &"accepted".into(), &true.into())?;
                Reflect::set(&answer, &"rows".into(), &rows)?;
            }
            Guarded::Refused { current } => {
                Reflect::set(&answer, &"accepted".into(), &false.into())?;
                Reflect::set(&answer, &"current".into(), &(current as f64).into())?;
                Reflect::set(&answer, &"rows".into(), &Array::new())?;
            }
        }
        Ok(answer.into())
    }
}

//! The fence guard for JavaScript (docs/contract.md section 8, part 2): one `BEGIN IMMEDIATE`
//! transaction with the guard's check, then the caller's statements.
//!
//! Two places, two rules for what the statements may write:
//! - Node's `FenceGuard` ([`WasmGuard`]) opens the application's own file as the application's:
//!   it adds only the guard's table, accepts any other tables (a `jobs` of the application's
//!   included) and refuses writes to the guard's own `leasefence_*` tables only.
//! - The browser's `guardWrite` runs on the lease store's database ([`WasmStore::guard_write`]),
//!   so its statements are refused `jobs` and every `leasefence_*` table, as fenced writes are.

use js_sys::{Array, Object, Reflect};
use rusqlite::Connection;
use wasm_bindgen::prelude::*;

use super::fenced::{rows_to_js, statements_of};
#[cfg(feature = "node")]
use super::js_error;
use super::{error_to_js, WasmStore};
#[cfg(feature = "node")]
use crate::error::Error;
use crate::guard::{sqlite, Guarded};
use crate::sqlite::Protected;

#[wasm_bindgen]
impl WasmStore {
    /// Runs `statements` (`[{sql, params}]`) in one transaction if the guard accepts `fence` for
    /// `key`: `{accepted: true, rows}` (the rows of the last statement), or `{accepted: false,
    /// current}` with nothing written. The statements may not write `jobs` or a `leasefence_*`
    /// table: this is the lease store's own database.
    #[wasm_bindgen(js_name = guardWrite)]
    pub fn guard_write(
        &self,
        key: JsValue,
        fence: JsValue,
        statements: JsValue,
    ) -> Result<JsValue, JsValue> {
        let store = self.open_store()?;
        guarded_write(
            store.connection(),
            Protected::LeaseStore,
            "guardWrite",
            key,
            fence,
            statements,
        )
    }
}

/// A fence guard on an SQLite file of the application's (Node's `FenceGuard`):
///
/// ```js
/// const guard = WasmGuard.openFile('/srv/app.db', 10000);
/// guard.write('invoice-42', 3, [{ sql: 'UPDATE invoices SET sent = 1 WHERE id = $1', params: [42] }]);
/// guard.close();
/// ```
#[cfg(feature = "node")]
#[wasm_bindgen]
pub struct WasmGuard {
    conn: Option<Connection>,
}

#[cfg(feature = "node")]
#[wasm_bindgen]
impl WasmGuard {
    /// Opens (creating if missing) the SQLite file at `path` through Node's `fs` and adds the
    /// guard's table `leasefence_guard`; nothing else of the file is checked or changed.
    #[wasm_bindgen(js_name = openFile)]
    pub fn open_file(path: &str, busy_timeout_ms: f64) -> Result<WasmGuard, JsValue> {
        let open = || -> crate::Result<Connection> {
            if !(busy_timeout_ms.is_finite() && busy_timeout_ms >= 0.0) {
                return Err(Error::invalid(
                    "busyTimeout",
                    "must be a finite number of milliseconds >= 0",
                ));
            }
            let conn = super::node_vfs::open_connection(path)?;
            conn.busy_timeout(std::time::Duration::from_millis(busy_timeout_ms as u64))
                .map_err(Error::storage("guard"))?;
            // Durable before the answer, as the lease store's commits in Node are; a setting of
            // this connection only, not of the application's file.
            conn.execute_batch("PRAGMA synchronous = EXTRA")
                .map_err(Error::storage("guard"))?;
            sqlite::install(&conn)?;
            Ok(conn)
        };
        let conn = open().map_err(|e| error_to_js(&e))?;
        Ok(WasmGuard { conn: Some(conn) })
    }

    /// Runs `statements` in one transaction if the guard accepts `fence` for `key`: `{accepted:
    /// true, rows}` or `{accepted: false, current, rows: []}` with nothing written.
    pub fn write(
        &self,
        key: JsValue,
        fence: JsValue,
        statements: JsValue,
    ) -> Result<JsValue, JsValue> {
        let conn = self.conn.as_ref().ok_or_else(|| {
            js_error(
                "storage",
                "FenceGuard.write(): the guard is closed; open it again",
            )
        })?;
        guarded_write(
            conn,
            Protected::GuardFile,
            "FenceGuard.write",
            key,
            fence,
            statements,
        )
    }

    /// Closes the connection; later writes answer with a `storage` error.
    pub fn close(&mut self) {
        self.conn = None;
    }
}

/// The guard's transaction: the check, then the statements under the authorizer, then the
/// commit; a refusal writes nothing.
fn guarded_write(
    conn: &Connection,
    protect: Protected,
    op: &str,
    key: JsValue,
    fence: JsValue,
    statements: JsValue,
) -> Result<JsValue, JsValue> {
    let (key, fence) = guard_args(op, &key, &fence)?;
    let statements = statements_of(op, &statements)?;
    let outcome = match sqlite::write_statements(conn, protect, &key, fence, &statements) {
        Ok(Guarded::Accepted(found)) => Guarded::Accepted(rows_to_js(&found.columns, found.rows)?),
        Ok(Guarded::Refused { current }) => Guarded::Refused { current },
        Err(err) => return Err(error_to_js(&err)),
    };
    guarded_to_js(outcome)
}

/// A guarded write's `key` (a string) and `fence` (an integer), checked.
pub(crate) fn guard_args(
    op: &str,
    key: &JsValue,
    fence: &JsValue,
) -> Result<(String, i64), JsValue> {
    crate::js::guard_args(op, key, fence).map_err(super::arg_error_to_js)
}

/// `{accepted: true, rows}` or `{accepted: false, current, rows: []}`.
pub(crate) fn guarded_to_js(outcome: Guarded<JsValue>) -> Result<JsValue, JsValue> {
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

//! `FenceGuard` on the native engine (docs/contract.md section 8, part 2): a fence guard on an
//! SQLite file of the application's, opened by this process's one SQLite (the addon's), with the
//! guard's check and the caller's statements in one `BEGIN IMMEDIATE` transaction. As the wasm
//! engine's `WasmGuard`: it adds only the guard's table and refuses writes to the guard's own
//! `leasefence_*` tables.

use std::time::Duration;

use napi::bindgen_prelude::{Either, Unknown};
use napi_derive::napi;
use rusqlite::Connection;
use serde_json::{json, Value};

use super::value::Arg;
use super::{arg_error_value, error_value};
use crate::error::Error;
use crate::guard::{sqlite, Guarded};
use crate::sqlite::Protected;

/// A fence guard on one SQLite file.
#[napi]
pub struct NativeGuard {
    connection: Option<Connection>,
}

#[napi]
impl NativeGuard {
    /// Opens (creating if missing) the SQLite file at `path` and adds the guard's table
    /// `leasefence_guard`; nothing else of the file is checked or changed. The guard, or
    /// `{error}`.
    #[napi]
    pub fn open(path: String, busy_timeout_ms: f64) -> Either<NativeGuard, Value> {
        let open = || -> crate::Result<Connection> {
            if !(busy_timeout_ms.is_finite() && busy_timeout_ms >= 0.0) {
                return Err(Error::invalid(
                    "busyTimeout",
                    "must be a finite number of milliseconds >= 0",
                ));
            }
            // A FIFO would block SQLite for ever, a device fail only at the first commit: refused
            // by name, as the lease store and the library's guard refuse them.
            if let Ok(meta) = std::fs::metadata(&path) {
                crate::sqlite::refuse_non_file(&meta, &path)?;
            }
            let conn = Connection::open(&path).map_err(Error::storage("guard"))?;
            conn.busy_timeout(Duration::from_secs_f64(busy_timeout_ms / 1000.0))
                .map_err(Error::storage("guard"))?;
            // Durable before the answer, as the lease store's commits are; a setting of this
            // connection only, not of the application's file.
            conn.execute_batch("PRAGMA synchronous = FULL")
                .map_err(Error::storage("guard"))?;
            sqlite::install(&conn)?;
            Ok(conn)
        };
        match open() {
            Ok(conn) => Either::A(NativeGuard {
                connection: Some(conn),
            }),
            Err(err) => Either::B(error_value(&err)),
        }
    }

    /// Runs `statements` (`[{sql, params}]`) in one transaction if the guard accepts `fence` for
    /// `key`: `{accepted: true, rows}` or `{accepted: false, current, rows: []}` with nothing
    /// written; `{error}` when it could not run.
    #[napi]
    pub fn write(&self, key: Unknown<'_>, fence: Unknown<'_>, statements: Unknown<'_>) -> Value {
        const OP: &str = "FenceGuard.write";
        let Some(conn) = self.connection.as_ref() else {
            return json!({"error": {"code": "storage", "retryable": false,
                "message": "FenceGuard.write(): the guard is closed; open it again"}});
        };
        let read =
            crate::js::guard_args(OP, &Arg::of(&key), &Arg::of(&fence)).and_then(|(key, fence)| {
                let statements = crate::js::statements_of(OP, &Arg::of(&statements))?;
                Ok((key, fence, statements))
            });
        let (key, fence, statements) = match read {
            Ok(read) => read,
            Err(err) => return arg_error_value(err),
        };
        match sqlite::write_statements(conn, Protected::GuardFile, &key, fence, &statements) {
            Ok(Guarded::Accepted(found)) => {
                let rows: Vec<Value> = found
                    .rows
                    .into_iter()
                    .map(|row| super::fenced::row_value(&found.columns, row))
                    .collect();
                json!({"accepted": true, "rows": rows})
            }
            Ok(Guarded::Refused { current }) => {
                json!({"accepted": false, "current": current, "rows": []})
            }
            Err(err) => error_value(&err),
        }
    }

    /// Closes the connection; later writes answer a `storage` error.
    #[napi]
    pub fn close(&mut self) {
        self.connection = None;
    }
}

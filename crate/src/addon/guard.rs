//! `FenceGuard` on the native engine (docs/contract.md section 8, part 2): a fence guard on an
//! SQLite file of the application's, opened by this process's one SQLite (the addon's), with the
//! guard's check and the caller's statements in one `BEGIN IMMEDIATE` transaction. As the wasm
//! engine's `WasmGuard`: it adds only the guard's table and refuses writes to the guard's own
//! `leasefence_*` tables. `writeGroup` runs several writes on libuv's thread pool in one
//! transaction, each in a savepoint of its own (the package's `guard.grouped.write`).
//!
//! ```js
//! const guard = NativeGuard.open('/tmp/app.db', 10000);          // or {error} it could not
//! guard.write('invoice-42', 3, [{ sql: 'UPDATE invoices SET sent = 1 WHERE id = $1', params: [42] }]);
//! await guard.writeGroup([['invoice-43', 1, []], ['invoice-44', 1, []]]); // one answer each
//! ```

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use napi::bindgen_prelude::{AsyncTask, Either, Unknown};
use napi::{Env, Task};
use napi_derive::napi;
use rusqlite::Connection;
use serde_json::{json, Value};

use super::value::Arg;
use super::{arg_error_value, closed_answers, error_value, run_group, Answers};
use crate::error::Error;
use crate::guard::{sqlite, Guarded};
use crate::sqlite::Protected;

/// The guard's connection, shared by the JavaScript thread (`write`) and the thread pool
/// (`writeGroup`); `None` once closed.
type GuardConnection = Arc<Mutex<Option<Connection>>>;

fn lock(connection: &GuardConnection) -> MutexGuard<'_, Option<Connection>> {
    // SQLite rolls an unfinished transaction back, so a poisoned lock is taken as it is.
    connection
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

const OP: &str = "FenceGuard.write";

fn closed_value() -> Value {
    json!({"error": {"code": "storage", "retryable": false,
        "message": "FenceGuard.write(): the guard is closed; open it again"}})
}

/// One write's arguments, read on the JavaScript thread.
type GuardWrite = (String, crate::Fence, Vec<crate::Statement>);

fn read_write(key: &Arg, fence: &Arg, statements: &Arg) -> Result<GuardWrite, crate::js::ArgError> {
    let (key, fence) = crate::js::guard_args(OP, key, fence)?;
    let statements = crate::js::statements_of(OP, statements)?;
    Ok((key, fence, statements))
}

/// The guard's answer to one write, as JavaScript reads it.
fn guarded_value(guarded: crate::Result<Guarded<crate::Rows>>) -> Value {
    match guarded {
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

/// A fence guard on one SQLite file.
#[napi]
pub struct NativeGuard {
    connection: GuardConnection,
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
                connection: Arc::new(Mutex::new(Some(conn))),
            }),
            Err(err) => Either::B(error_value(&err)),
        }
    }

    /// Runs `statements` (`[{sql, params}]`) in one transaction if the guard accepts `fence` for
    /// `key`: `{accepted: true, rows}` or `{accepted: false, current, rows: []}` with nothing
    /// written; `{error}` when it could not run.
    #[napi]
    pub fn write(&self, key: Unknown<'_>, fence: Unknown<'_>, statements: Unknown<'_>) -> Value {
        let (key, fence, statements) =
            match read_write(&Arg::of(&key), &Arg::of(&fence), &Arg::of(&statements)) {
                Ok(read) => read,
                Err(err) => return arg_error_value(err),
            };
        match lock(&self.connection).as_ref() {
            Some(conn) => guarded_value(sqlite::write_statements(
                conn,
                Protected::GuardFile,
                &key,
                fence,
                &statements,
            )),
            None => closed_value(),
        }
    }

    /// Runs `writes`, a list of `[key, fence, statements]`, on libuv's thread pool in one
    /// transaction (one sync), each write checked and answered as if it ran alone, in a savepoint
    /// of its own: a refused write or a failing statement leaves its neighbours as they are.
    /// Resolves to one answer per write, as `write` answers; when the transaction itself fails,
    /// every write gets its error and nothing applied.
    #[napi(js_name = "writeGroup")]
    pub fn write_group(
        &self,
        env: Env,
        writes: Vec<Vec<Unknown<'_>>>,
    ) -> AsyncTask<GuardGroupTask> {
        let undefined = Arg::undefined(env.raw());
        let writes = writes
            .iter()
            .map(|write| {
                let arg = |i: usize| write.get(i).map(Arg::of).unwrap_or(undefined);
                read_write(&arg(0), &arg(1), &arg(2)).map_err(arg_error_value)
            })
            .collect();
        AsyncTask::new(GuardGroupTask {
            connection: self.connection.clone(),
            writes,
        })
    }

    /// Closes the connection; later writes answer a `storage` error.
    #[napi]
    pub fn close(&self) {
        lock(&self.connection).take();
    }
}

/// A group of guarded writes on the thread pool: each read, or its argument error.
pub struct GuardGroupTask {
    connection: GuardConnection,
    writes: Vec<Result<GuardWrite, Value>>,
}

impl Task for GuardGroupTask {
    type Output = Value;
    type JsValue = Answers;

    fn compute(&mut self) -> napi::Result<Value> {
        let writes = std::mem::take(&mut self.writes);
        Ok(Value::Array(match lock(&self.connection).as_ref() {
            None => closed_answers(writes, closed_value),
            Some(conn) => run_group(conn, "guard", writes, |(key, fence, statements)| {
                let guarded =
                    sqlite::write_statements(conn, Protected::GuardFile, key, *fence, statements);
                guarded.map(|guarded| guarded_value(Ok(guarded)))
            }),
        }))
    }

    fn resolve(&mut self, _env: Env, output: Value) -> napi::Result<Answers> {
        Ok(Answers(output))
    }
}

//! The [`Wire`] of Node's `pg`: each catalogue statement sent as a named prepared statement (its
//! parameters cast in the text, as `pg` cannot declare their types), its rows asked for as
//! arrays and read by their columns' type OIDs. Only statements and rows cross: the SQL and what
//! the rows mean stay in the crate.

use js_sys::{Array, Object, Promise, Reflect};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::error::{Error, PgFailure, PostgresError, Result};
use crate::postgres::library_tables::Reading;
use crate::postgres::wire::{classify, wrong_shape, Answer, Control, Row, Sql, Value, Wire};

#[wasm_bindgen]
extern "C" {
    /// A `pg` client (a `Client`, or one a `Pool` lent out).
    #[derive(Clone)]
    pub type PgClient;

    /// `client.query(config)`: a promise of the result.
    #[wasm_bindgen(method, catch)]
    fn query(this: &PgClient, config: &JsValue) -> std::result::Result<Promise, JsValue>;
}

/// A `pg` client lent to one operation.
pub(super) struct JsWire {
    pub(super) client: PgClient,
    /// Set when the connection must not go back to the pool (its session was changed in a way
    /// the crate cannot undo): it is closed, and the next call connects again.
    pub(super) close: bool,
}

/// Type OIDs of the columns the statements return (PostgreSQL's `pg_type`).
mod oid {
    pub const BOOL: u32 = 16;
    pub const NAME: u32 = 19;
    pub const INT8: u32 = 20;
    pub const INT2: u32 = 21;
    pub const INT4: u32 = 23;
    pub const TEXT: u32 = 25;
    pub const FLOAT4: u32 = 700;
    pub const FLOAT8: u32 = 701;
    pub const BPCHAR: u32 = 1042;
    pub const VARCHAR: u32 = 1043;
}

impl JsWire {
    /// The rows of a simple query (several statements, no parameters), every value as text: what
    /// the fenced write's session checks read (`postgres/library_tables.rs`).
    pub(super) async fn simple_rows(
        &mut self,
        operation: &'static str,
        script: &str,
    ) -> Result<Vec<Reading>> {
        let config = Object::new();
        let _ = Reflect::set(&config, &"text".into(), &script.into());
        let _ = Reflect::set(&config, &"rowMode".into(), &"array".into());
        let answered = self.send(operation, &config).await?;
        // One result per statement when there are several, else the one result.
        let results = if Array::is_array(&answered) {
            Array::from(&answered)
        } else {
            Array::of1(&answered)
        };
        let mut readings = Vec::new();
        for result in results.iter() {
            let rows: Array = Reflect::get(&result, &"rows".into())
                .ok()
                .and_then(|rows| rows.dyn_into().ok())
                .unwrap_or_default();
            for row in rows.iter() {
                let row = Array::from(&row);
                readings.push(std::array::from_fn(|i| {
                    let value = row.get(i as u32);
                    if value.is_null() || value.is_undefined() {
                        None
                    } else {
                        Some(
                            value
                                .as_string()
                                .unwrap_or_else(|| String::from(js_sys::JsString::from(value))),
                        )
                    }
                }));
            }
        }
        Ok(readings)
    }

    /// The names of the statements `pg` has prepared on this connection and will use again
    /// without preparing them (its `connection.parsedStatements`).
    pub(super) fn prepared_names(&self) -> Vec<String> {
        Reflect::get(&self.client, &"connection".into())
            .and_then(|connection| Reflect::get(&connection, &"parsedStatements".into()))
            .ok()
            .filter(JsValue::is_object)
            .map(|parsed| {
                Object::keys(&Object::from(parsed))
                    .iter()
                    .filter_map(|name| name.as_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    async fn send(&self, operation: &'static str, config: &JsValue) -> Result<JsValue> {
        send(&self.client, operation, config).await
    }
}

/// `client.query(config)`, its failure classified as [`reported`] does.
pub(super) async fn send(
    client: &PgClient,
    operation: &'static str,
    config: &JsValue,
) -> Result<JsValue> {
    let promise = client.query(config).map_err(|e| reported(operation, &e))?;
    JsFuture::from(promise)
        .await
        .map_err(|e| reported(operation, &e))
}

impl Wire for JsWire {
    async fn run(
        &mut self,
        operation: &'static str,
        sql: Sql,
        params: Vec<Value>,
    ) -> Result<Answer> {
        let config = Object::new();
        let set = |key: &str, value: &JsValue| {
            let _ = Reflect::set(&config, &key.into(), value);
        };
        // One name per statement and crate version, so that `pg` prepares it once a connection.
        set(
            "name",
            &format!("leasefence_{}_{:?}", env!("CARGO_PKG_VERSION"), sql).into(),
        );
        set("text", &sql.text_with_casts().into());
        set("values", &params.iter().map(value_to_js).collect::<Array>());
        set("rowMode", &"array".into());
        let result = self.send(operation, &config).await?;
        read_result(operation, &result)
    }

    async fn batch(&mut self, operation: &'static str, script: &str) -> Result<()> {
        // No values: `pg` sends a simple query, which may hold many statements.
        self.send(operation, &script.into()).await.map(drop)
    }

    async fn control(&mut self, operation: &'static str, command: Control) -> Result<()> {
        self.send(operation, &command.sql().into()).await.map(drop)
    }
}

/// A parameter as `pg` sends it: integers as decimal text (exact past 2^53; the cast in the
/// statement makes them `int8`), numbers as numbers, lists as arrays.
fn value_to_js(value: &Value) -> JsValue {
    match value {
        Value::Null => JsValue::NULL,
        Value::Text(text) => text.into(),
        Value::Int(n) => n.to_string().into(),
        Value::Float(x) => (*x).into(),
        Value::Bool(b) => (*b).into(),
        Value::TextArray(texts) => texts.iter().map(JsValue::from).collect::<Array>().into(),
        Value::NullableTextArray(texts) => texts
            .iter()
            .map(|text| text.as_deref().map_or(JsValue::NULL, JsValue::from))
            .collect::<Array>()
            .into(),
        Value::IntArray(ns) => ns
            .iter()
            .map(|n| JsValue::from(n.to_string()))
            .collect::<Array>()
            .into(),
        Value::FloatArray(xs) => xs
            .iter()
            .map(|x| JsValue::from(*x))
            .collect::<Array>()
            .into(),
    }
}

/// A `pg` result (`rowMode: 'array'`) as the crate's rows.
fn read_result(operation: &'static str, result: &JsValue) -> Result<Answer> {
    let get = |target: &JsValue, key: &str| Reflect::get(target, &key.into()).unwrap_or_default();
    let fields: Array = get(result, "fields").dyn_into().unwrap_or_default();
    let types: Vec<u32> = fields
        .iter()
        .map(|field| get(&field, "dataTypeID").as_f64().unwrap_or(0.0) as u32)
        .collect();
    let rows: Array = get(result, "rows").dyn_into().unwrap_or_default();
    let rows = rows
        .iter()
        .map(|row| {
            let row: Array = row.dyn_into().unwrap_or_default();
            types
                .iter()
                .enumerate()
                .map(|(i, ty)| value_of(operation, *ty, &row.get(i as u32), i))
                .collect::<Result<Vec<_>>>()
                .map(Row)
        })
        .collect::<Result<Vec<_>>>()?;
    // `rowCount`: the rows an UPDATE changed (null for statements that count nothing).
    let changed = get(result, "rowCount")
        .as_f64()
        .unwrap_or(rows.len() as f64) as u64;
    Ok(Answer { rows, changed })
}

/// One column's value by its type OID. `int8` arrives as text (`pg`'s default, so nothing is
/// rounded) or, where the application changed `pg`'s parsers, as a number or a bigint.
fn value_of(operation: &'static str, ty: u32, value: &JsValue, i: usize) -> Result<Value> {
    if value.is_null() || value.is_undefined() {
        return Ok(Value::Null);
    }
    let unreadable = || {
        wrong_shape(
            operation,
            format!("column {i} (type {ty}) arrived as {value:?}"),
        )
    };
    Ok(match ty {
        oid::TEXT | oid::VARCHAR | oid::NAME | oid::BPCHAR => {
            Value::Text(value.as_string().ok_or_else(unreadable)?)
        }
        oid::INT8 | oid::INT4 | oid::INT2 => {
            if let Some(text) = value.as_string() {
                Value::Int(text.parse().map_err(|_| unreadable())?)
            } else if let Some(x) = value.as_f64() {
                if x.fract() != 0.0 || x.abs() > 9_007_199_254_740_992.0 {
                    return Err(unreadable());
                }
                Value::Int(x as i64)
            } else if value.is_bigint() {
                let text = js_sys::BigInt::from(value.clone())
                    .to_string(10)
                    .map_err(|_| unreadable())?;
                Value::Int(String::from(text).parse().map_err(|_| unreadable())?)
            } else {
                return Err(unreadable());
            }
        }
        oid::FLOAT8 | oid::FLOAT4 => Value::Float(value.as_f64().ok_or_else(unreadable)?),
        oid::BOOL => Value::Bool(value.as_bool().ok_or_else(unreadable)?),
        _ => return Err(unreadable()),
    })
}

/// A `pg` error (or anything thrown) as this crate's [`Error::Postgres`], classified by its
/// SQLSTATE and severity as every client's are; no SQLSTATE (refused, reset, timed out) means the
/// connection is lost.
pub(super) fn reported(operation: &'static str, thrown: &JsValue) -> Error {
    let get = |key: &str| {
        Reflect::get(thrown, &key.into())
            .ok()
            .and_then(|v| v.as_string())
    };
    let code = get("code").filter(|c| c.len() == 5 && c.bytes().all(|b| b.is_ascii_alphanumeric()));
    let severity = get("severity");
    let message = get("message").unwrap_or_else(|| format!("{thrown:?}"));
    let message = match (&severity, get("detail")) {
        (Some(severity), Some(detail)) => format!("{severity}: {message} ({detail})"),
        (Some(severity), None) => format!("{severity}: {message}"),
        (None, _) => message,
    };
    if let Some(problem) = refused_by_tls(&get("code"), &message) {
        // Connecting again cannot change a certificate: refused for good, saying what to check.
        return Error::Postgres {
            operation,
            source: PostgresError(PgFailure::Reported {
                sqlstate: None,
                message: problem,
            }),
            disconnected: false,
            transient: false,
            refused_for_good: true,
        };
    }
    let classified = classify(code.as_deref(), severity.as_deref());
    Error::Postgres {
        operation,
        source: PostgresError(PgFailure::Reported {
            sqlstate: code,
            message,
        }),
        disconnected: classified.lost && !classified.refused_for_good,
        transient: classified.transient,
        refused_for_good: classified.refused_for_good,
    }
}

/// The TLS refusals among Node's errors (its `tls` module's codes, OpenSSL's certificate checks,
/// a server that will not encrypt): what happened and what to check, or `None`.
fn refused_by_tls(code: &Option<String>, message: &str) -> Option<String> {
    const CERTIFICATE: [&str; 9] = [
        "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
        "UNABLE_TO_GET_ISSUER_CERT",
        "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
        "SELF_SIGNED_CERT_IN_CHAIN",
        "DEPTH_ZERO_SELF_SIGNED_CERT",
        "CERT_HAS_EXPIRED",
        "CERT_NOT_YET_VALID",
        "CERT_UNTRUSTED",
        "CERT_SIGNATURE_FAILURE",
    ];
    let code = code.as_deref().unwrap_or("");
    if CERTIFICATE.contains(&code) || code.starts_with("ERR_TLS_CERT") {
        return Some(format!(
            "the server's TLS certificate was refused: {message}; check that sslrootcert holds \
             the authority that signed it and that the URL's host is a name it lists"
        ));
    }
    if code.starts_with("ERR_SSL_") || code.starts_with("ERR_TLS_") {
        return Some(format!(
            "the TLS handshake failed: {message}; if the server asks for a client certificate, \
             check that sslcert and sslkey hold one it trusts"
        ));
    }
    if message.contains("does not support SSL") {
        return Some(format!(
            "{message}: the URL's sslmode asks for TLS (require, verify-ca or verify-full); use \
             sslmode=prefer or disable to connect without it"
        ));
    }
    None
}

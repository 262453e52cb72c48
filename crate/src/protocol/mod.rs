//! The JSON-lines protocol of docs/contract.md section 4: one request object per line in, one
//! response line out. Used by `leasefence batch`, by the CLI's subcommands, and by the shared
//! contract vectors.
//!
//! Checks run in a fixed order, so every bad line gets exactly one, predictable error, and no
//! error ever reaches the database: first the line's shape (`bad_request`: not JSON, unknown op,
//! missing or mistyped field), then the argument values (`invalid_argument`), and only then
//! storage (`storage`).
//!
//! ```
//! use leasefence::protocol::{respond, Backend};
//! use leasefence::LeaseStore;
//!
//! struct Memory(LeaseStore);
//! impl Backend for Memory {
//!     fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) }
//! }
//! let mut backend = Memory(LeaseStore::open_in_memory()?);
//! assert_eq!(respond(&mut backend, r#"{"op":"enqueue","job":"j"}"#).to_json(), r#"{"value":true}"#);
//! assert_eq!(
//!     respond(&mut backend, r#"{"op":"claim","job":"j","owner":"a","now":0,"ttl":0}"#).code(),
//!     Some("invalid_argument")
//! );
//! # Ok::<(), leasefence::Error>(())
//! ```

pub(crate) mod json;
mod read;

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::leases::Leases;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome, Reason};
use crate::rules;
use crate::rules::fenced::{Finish, SqlValue, Statement};
use crate::sqlite::LeaseStore;
use json::Json;
pub use read::{Arg, FencedArgs, Op, Source, TypedArgs, OP_NAMES};

/// One parsed request: an operation and its arguments, named as in docs/contract.md section 2.
///
/// ```
/// let req = leasefence::protocol::Request::parse(r#"{"op":"state","job":"j"}"#).unwrap();
/// assert_eq!(req, leasefence::protocol::Request::State { job: "j".into() });
/// ```
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Request {
    Init,
    Enqueue {
        job: String,
        run_at: Option<f64>,
        payload: Option<String>,
    },
    State {
        job: String,
    },
    Claim {
        job: String,
        owner: String,
        now: f64,
        ttl: f64,
    },
    Renew {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        ttl: f64,
    },
    Complete {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        result: Option<String>,
    },
    Release {
        job: String,
        owner: String,
        fence: Fence,
    },
    ClaimMany {
        job: String,
        owners: Vec<String>,
        now: f64,
        ttl: f64,
    },
    ClaimNext {
        owner: String,
        now: f64,
        ttl: f64,
    },
    Fail {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        retry_at: Option<f64>,
        error: Option<String>,
    },
    Revive {
        job: String,
        now: f64,
    },
    Inspect {
        job: String,
    },
    Stats {
        now: f64,
    },
    /// docs/contract.md section 8: `statements`, then optional `complete` and `result`.
    Fenced {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        statements: Vec<Statement>,
        complete: bool,
        result: Option<String>,
    },
}

/// The operation names, as the protocol spells them (from [`OP_NAMES`]).
pub const OPS: [&str; OP_NAMES.len()] = {
    let mut names = [""; OP_NAMES.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = OP_NAMES[i].1;
        i += 1;
    }
    names
};

/// What one request produced: a value (with a reason when the store said no) or an error.
///
/// ```
/// use leasefence::protocol::Response;
/// let r = Response::Failed { code: "bad_request", message: "not JSON".into() };
/// assert_eq!(r.to_json(), r#"{"error":{"code":"bad_request","message":"not JSON"}}"#);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    /// The operation ran; `value` is what the seed returns, `reason` explains a `false`/`null`.
    Answered {
        /// The returned value, as JSON.
        value: Value,
        /// Why the value is `false` or `null`, when the store refused.
        reason: Option<Reason>,
    },
    /// The operation did not run and nothing changed.
    Failed {
        /// `bad_request`, `invalid_argument` or `storage`.
        code: &'static str,
        /// What went wrong and what to do.
        message: String,
    },
}

impl Response {
    /// The response line, without the newline.
    ///
    /// ```
    /// use leasefence::protocol::Response;
    /// let r = Response::Answered { value: serde_json::json!(3), reason: None };
    /// assert_eq!(r.to_json(), r#"{"value":3}"#);
    /// ```
    pub fn to_json(&self) -> String {
        let mut out = Map::new();
        match self {
            Response::Answered { value, reason } => {
                out.insert("value".into(), value.clone());
                if let Some(reason) = reason {
                    out.insert("reason".into(), reason_json(reason));
                }
            }
            Response::Failed { code, message } => {
                out.insert("error".into(), json!({"code": code, "message": message}));
            }
        }
        Value::Object(out).to_string()
    }

    /// The error code, when the request failed.
    ///
    /// ```
    /// use leasefence::protocol::Response;
    /// assert_eq!(Response::Answered { value: serde_json::Value::Null, reason: None }.code(), None);
    /// ```
    pub fn code(&self) -> Option<&'static str> {
        match self {
            Response::Failed { code, .. } => Some(code),
            Response::Answered { .. } => None,
        }
    }

    fn failed(err: &Error) -> Self {
        Response::Failed {
            code: err.code(),
            message: err.to_string(),
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Response::Failed {
            code: "bad_request",
            message: message.into(),
        }
    }
}

/// A reason as JSON: `{"code": ...}` plus its details (`owner`, `until`, `fence`).
///
/// ```
/// let r = leasefence::protocol::reason_json(&leasefence::Reason::Expired { until: 15.0 });
/// assert_eq!(r.to_string(), r#"{"code":"expired","until":15.0}"#);
/// ```
pub fn reason_json(reason: &Reason) -> Value {
    to_json_value(reason)
}

/// Any of the answer types as a JSON value; they hold only strings, finite numbers and integers,
/// so serializing cannot fail.
fn to_json_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A job row as JSON, `done` as a boolean.
///
/// ```
/// let row = leasefence::JobState { id: "j".into(), owner: None, until: 0.0, fence: 0, result: None, done: false };
/// assert_eq!(leasefence::protocol::state_json(&row)["done"], serde_json::json!(false));
/// ```
pub fn state_json(row: &JobState) -> Value {
    to_json_value(row)
}

/// What an operation returned, typed: the `value` of an answer. Serialized (serde) as the
/// protocol writes it; the wasm calls hand the same value to JavaScript through
/// serde-wasm-bindgen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[allow(missing_docs)]
pub enum Returned {
    /// `null`: nothing (init), no job (state, claim_next) or a refused claim.
    Null,
    Bool(bool),
    Fence(Fence),
    State(JobState),
    Claimed(ClaimedJob),
    /// claim_many: a fence or null per owner.
    Fences(Vec<Option<Fence>>),
    /// inspect: `{state, attempts, dead, payload, failures}`.
    Inspection(Inspection),
    /// stats: `{queued, scheduled, leased, done, dead}`.
    Counts(JobCounts),
}

/// An operation's answer: the value, and the reason when the store refused.
///
/// ```
/// use leasefence::protocol::{Answer, Returned};
/// let a = Answer { value: Returned::Bool(false), reason: Some(leasefence::Reason::NotOwner) };
/// assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"value":false,"reason":{"code":"not_owner"}}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// What the seed returns.
    pub value: Returned,
    /// Why the value is `false` or `null`, when the store refused; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Reason>,
}

impl From<Answer> for Response {
    fn from(answer: Answer) -> Self {
        Response::Answered {
            value: to_json_value(&answer.value),
            reason: answer.reason,
        }
    }
}

/// Where requests run: a store, opened lazily. `claim_many` runs as the store's
/// [`Leases::claim_many`] does (threads and connections per owner on a file).
///
/// Requests run through [`Backend::leases`], the store as the [`Leases`] trait, so a backend may
/// serve any storage. A backend on an SQLite [`LeaseStore`] only implements [`Backend::store`];
/// one on other storage ([`TargetBackend`] on PostgreSQL) overrides `leases` too.
///
/// ```
/// use leasefence::{protocol::Backend, LeaseStore};
/// struct Memory(LeaseStore);
/// impl Backend for Memory {
///     fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) }
/// }
/// # let _ = Memory(LeaseStore::open_in_memory()?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub trait Backend {
    /// The SQLite store to run operations on; may open it on first use. A backend whose storage
    /// is not an SQLite [`LeaseStore`] answers with an error and overrides [`Backend::leases`].
    fn store(&mut self) -> Result<&LeaseStore>;

    /// The store every request runs on, as the [`Leases`] trait. The default is
    /// [`Backend::store`].
    ///
    /// ```
    /// # use leasefence::{protocol::Backend, LeaseStore};
    /// # struct Memory(LeaseStore);
    /// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
    /// let mut backend = Memory(LeaseStore::open_in_memory()?);
    /// assert!(backend.leases()?.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn leases(&mut self) -> Result<&dyn Leases> {
        Ok(self.store()?)
    }
}

/// Parses, checks and runs one request line and returns its response.
///
/// ```
/// # use leasefence::{protocol::{respond, Backend}, LeaseStore};
/// # struct Memory(LeaseStore);
/// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
/// let mut backend = Memory(LeaseStore::open_in_memory()?);
/// assert_eq!(respond(&mut backend, "nonsense").code(), Some("bad_request"));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn respond(backend: &mut dyn Backend, line: &str) -> Response {
    match Request::parse(line) {
        Ok(request) => execute(backend, &request),
        Err(response) => response,
    }
}

/// Checks the argument values, then runs the request.
///
/// ```
/// # use leasefence::{protocol::{execute, Backend, Request}, LeaseStore};
/// # struct Memory(LeaseStore);
/// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
/// let mut backend = Memory(LeaseStore::open_in_memory()?);
/// let r = execute(&mut backend, &Request::Enqueue { job: "j".into(), run_at: None, payload: None });
/// assert_eq!(r.to_json(), r#"{"value":true}"#);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn execute(backend: &mut dyn Backend, request: &Request) -> Response {
    match answer(backend, request) {
        Ok(answer) => answer.into(),
        Err(err) => Response::failed(&err),
    }
}

/// Checks the argument values, then runs the request: the typed [`Answer`], or the error
/// (`invalid_argument`, `storage`). What [`execute`] and the wasm calls share.
///
/// ```
/// # use leasefence::{protocol::{answer, Backend, Request, Returned}, LeaseStore};
/// # struct Memory(LeaseStore);
/// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
/// let mut backend = Memory(LeaseStore::open_in_memory()?);
/// let a = answer(&mut backend, &Request::Enqueue { job: "j".into(), run_at: None, payload: None })?;
/// assert_eq!(a.value, Returned::Bool(true));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn answer(backend: &mut dyn Backend, request: &Request) -> Result<Answer> {
    request.validate()?;
    run(backend, request)
}

fn answered<T>(
    outcome: Outcome<T>,
    to_value: impl FnOnce(T) -> Returned,
    refused: Returned,
) -> Answer {
    match outcome {
        Outcome::Granted(value) => Answer {
            value: to_value(value),
            reason: None,
        },
        Outcome::Rejected(reason) => Answer {
            value: refused,
            reason: Some(reason),
        },
    }
}

fn plain(value: Returned) -> Answer {
    Answer {
        value,
        reason: None,
    }
}

fn run(backend: &mut dyn Backend, request: &Request) -> Result<Answer> {
    Ok(match request {
        Request::Init => {
            backend.leases()?.init()?;
            plain(Returned::Null)
        }
        Request::Enqueue {
            job,
            run_at,
            payload,
        } => plain(Returned::Bool(backend.leases()?.enqueue_with(
            job,
            *run_at,
            payload.as_deref(),
        )?)),
        Request::State { job } => plain(match backend.leases()?.state(job)? {
            Some(row) => Returned::State(row),
            None => Returned::Null,
        }),
        Request::Claim {
            job,
            owner,
            now,
            ttl,
        } => answered(
            backend.leases()?.claim(job, owner, *now, *ttl)?,
            Returned::Fence,
            Returned::Null,
        ),
        Request::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        } => answered(
            backend
                .leases()?
                .renew(&Lease::new(job, owner, *fence), *now, *ttl)?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Complete {
            job,
            owner,
            fence,
            now,
            result,
        } => answered(
            backend
                .leases()?
                .complete(&Lease::new(job, owner, *fence), *now, result.as_deref())?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Release { job, owner, fence } => answered(
            backend.leases()?.release(&Lease::new(job, owner, *fence))?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::ClaimMany {
            job,
            owners,
            now,
            ttl,
        } => {
            let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
            let outcomes = backend.leases()?.claim_many(job, &owners, *now, *ttl)?;
            plain(Returned::Fences(
                outcomes.into_iter().map(Outcome::granted).collect(),
            ))
        }
        Request::ClaimNext { owner, now, ttl } => {
            plain(match backend.leases()?.claim_next(owner, *now, *ttl)? {
                Some(claimed) => Returned::Claimed(claimed),
                None => Returned::Null,
            })
        }
        Request::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        } => answered(
            backend.leases()?.fail(
                &Lease::new(job, owner, *fence),
                *now,
                *retry_at,
                error.as_deref(),
            )?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Revive { job, now } => answered(
            backend.leases()?.revive(job, *now)?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Inspect { job } => plain(match backend.leases()?.inspect(job)? {
            Some(report) => Returned::Inspection(report),
            None => Returned::Null,
        }),
        Request::Stats { now } => plain(Returned::Counts(backend.leases()?.stats(*now)?)),
        Request::Fenced {
            job,
            owner,
            fence,
            now,
            statements,
            complete,
            result,
        } => answered(
            backend.leases()?.fenced(
                &Lease::new(job, owner, *fence),
                *now,
                statements,
                Finish::from_parts(*complete, result.clone())?,
            )?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
    })
}

const STATEMENTS_SHAPE: &str = "an array of {\"sql\": \"...\", \"params\": [...]}";

/// Reads the fields of one request object, turning every shape problem into `bad_request`: the
/// protocol's [`Source`].
struct Fields<'a> {
    object: &'a Json,
    op: &'a str,
    /// A value error found while reading the shape; reported only if the shape is fine, so
    /// shape errors (`bad_request`) always win over value errors (`invalid_argument`).
    deferred: Option<Response>,
}

impl Source for Fields<'_> {
    type Error = Response;
    fn string(&mut self, name: &'static str) -> Result<String, Response> {
        Fields::string(self, name)
    }
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, Response> {
        Fields::optional_string(self, name)
    }
    fn number(&mut self, name: &'static str) -> Result<f64, Response> {
        Fields::number(self, name)
    }
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, Response> {
        match self.object.get(name) {
            None => Ok(None),
            Some(_) => Fields::optional_string(self, name),
        }
    }
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, Response> {
        match self.object.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(Json::Number(n)) => Ok(Some(n.float)),
            Some(other) => Err(self.mistyped(name, "a number or null", other)),
        }
    }
    fn fence(&mut self, name: &'static str) -> Result<Fence, Response> {
        Fields::fence(self, name)
    }
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, Response> {
        Fields::strings(self, name)
    }
    fn fenced_writes(&mut self) -> Result<FencedArgs, Response> {
        Fields::fenced_writes(self)
    }
    fn finish(self) -> Result<(), Response> {
        match self.deferred {
            Some(value_error) => Err(value_error),
            None => Ok(()),
        }
    }
}

impl Fields<'_> {
    fn missing(&self, name: &str, kind: &str) -> Response {
        Response::bad_request(format!(
            "op {:?} needs field {name:?} ({kind}); it is missing",
            self.op
        ))
    }

    fn mistyped(&self, name: &str, kind: &str, got: &Json) -> Response {
        Response::bad_request(format!(
            "field {name:?} of op {:?} must be {kind}, got {}",
            self.op,
            got.type_name()
        ))
    }

    fn string(&self, name: &str) -> Result<String, Response> {
        match self.object.get(name) {
            Some(Json::String(s)) => Ok(s.clone()),
            Some(other) => Err(self.mistyped(name, "a string", other)),
            None => Err(self.missing(name, "a string")),
        }
    }

    fn optional_string(&self, name: &str) -> Result<Option<String>, Response> {
        match self.object.get(name) {
            Some(Json::String(s)) => Ok(Some(s.clone())),
            Some(Json::Null) => Ok(None),
            Some(other) => Err(self.mistyped(name, "a string or null", other)),
            None => Err(self.missing(name, "a string or null")),
        }
    }

    fn number(&self, name: &str) -> Result<f64, Response> {
        match self.object.get(name) {
            Some(Json::Number(n)) => Ok(n.float),
            Some(other) => Err(self.mistyped(name, "a number", other)),
            None => Err(self.missing(name, "a number")),
        }
    }

    /// A fence: an integer. Integral values written as floats (`2.0`) are accepted; values
    /// outside i64 and non-finite values are `invalid_argument`.
    fn fence(&mut self, name: &str) -> Result<Fence, Response> {
        let n = match self.object.get(name) {
            Some(Json::Number(n)) => n,
            Some(other) => return Err(self.mistyped(name, "an integer", other)),
            None => return Err(self.missing(name, "an integer")),
        };
        if let Some(int) = n.int {
            return Ok(int);
        }
        let mut out_of_range = || {
            self.deferred = Some(Response::failed(&Error::invalid(
                "fence",
                "is out of range: fences are integers from -2^63 to 2^63-1",
            )));
            Ok(0)
        };
        if n.integral_lexeme || !n.float.is_finite() {
            return out_of_range();
        }
        if n.float.fract() != 0.0 {
            return Err(Response::bad_request(format!(
                "field {name:?} of op {:?} must be an integer, got {}",
                self.op, n.float
            )));
        }
        // -2^63 is exact in f64; 2^63 is the first float past i64::MAX.
        if n.float >= -9_223_372_036_854_775_808.0 && n.float < 9_223_372_036_854_775_808.0 {
            Ok(n.float as i64)
        } else {
            out_of_range()
        }
    }

    /// `statements` (an array of `{"sql": S, "params": [...]}`, params optional), `complete`
    /// (a boolean, default false) and `result` (a string or null, default null).
    fn fenced_writes(&self) -> Result<FencedArgs, Response> {
        let items = match self.object.get("statements") {
            Some(Json::Array(items)) => items,
            Some(other) => return Err(self.mistyped("statements", STATEMENTS_SHAPE, other)),
            None => return Err(self.missing("statements", STATEMENTS_SHAPE)),
        };
        let statements = items
            .iter()
            .map(|item| self.statement(item))
            .collect::<Result<_, _>>()?;
        let complete = match self.object.get("complete") {
            None => false,
            Some(Json::Bool(b)) => *b,
            Some(other) => return Err(self.mistyped("complete", "a boolean", other)),
        };
        let result = match self.object.get("result") {
            None | Some(Json::Null) => None,
            Some(Json::String(s)) => Some(s.clone()),
            Some(other) => return Err(self.mistyped("result", "a string or null", other)),
        };
        Ok(FencedArgs {
            statements,
            complete,
            result,
        })
    }

    fn statement(&self, item: &Json) -> Result<Statement, Response> {
        let Json::Object(members) = item else {
            return Err(self.mistyped("statements", STATEMENTS_SHAPE, item));
        };
        if let Some((key, _)) = members.iter().find(|(k, _)| k != "sql" && k != "params") {
            return Err(Response::bad_request(format!(
                "a statement of op {:?} has the member {key:?}; only \"sql\" and \"params\"",
                self.op
            )));
        }
        let sql = match item.get("sql") {
            Some(Json::String(s)) => s.clone(),
            _ => return Err(self.mistyped("statements", STATEMENTS_SHAPE, item)),
        };
        let params = match item.get("params") {
            None => Vec::new(),
            Some(Json::Array(values)) => values
                .iter()
                .map(|value| match value {
                    Json::Null => Ok(SqlValue::Null),
                    Json::Bool(b) => Ok(SqlValue::Bool(*b)),
                    Json::Number(n) => Ok(n.int.map_or(SqlValue::Real(n.float), SqlValue::Integer)),
                    Json::String(s) => Ok(SqlValue::Text(s.clone())),
                    other => {
                        Err(self.mistyped("params", "null, a number, a string or a boolean", other))
                    }
                })
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(self.mistyped("params", "an array", other)),
        };
        Ok(Statement { sql, params })
    }

    fn strings(&self, name: &str) -> Result<Vec<String>, Response> {
        match self.object.get(name) {
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::String(s) => Ok(s.clone()),
                    other => Err(self.mistyped(name, "an array of strings", other)),
                })
                .collect(),
            Some(other) => Err(self.mistyped(name, "an array of strings", other)),
            None => Err(self.missing(name, "an array of strings")),
        }
    }
}

impl Request {
    /// Parses one protocol line. Shape problems (not JSON, not an object, unknown op, missing or
    /// mistyped field) come back as a `bad_request` [`Response`]; value checks are left to
    /// [`Request::validate`].
    ///
    /// ```
    /// use leasefence::protocol::Request;
    /// assert!(Request::parse(r#"{"op":"fly"}"#).is_err());
    /// ```
    pub fn parse(line: &str) -> Result<Request, Response> {
        let value = json::parse(line)
            .map_err(|err| Response::bad_request(format!("the line is not valid JSON: {err}")))?;
        if !matches!(value, Json::Object(_)) {
            return Err(Response::bad_request(format!(
                "a request must be a JSON object like {{\"op\": \"state\", \"job\": \"j\"}}, got {}",
                value.type_name()
            )));
        }
        let op = match value.get("op") {
            Some(Json::String(op)) => op.as_str(),
            Some(other) => {
                return Err(Response::bad_request(format!(
                    "field \"op\" must be a string, got {}",
                    other.type_name()
                )))
            }
            None => {
                return Err(Response::bad_request(format!(
                    "the request has no \"op\"; use one of {}",
                    OPS.join(", ")
                )))
            }
        };
        let Some(op_kind) = Op::from_protocol(op) else {
            return Err(Response::bad_request(format!(
                "unknown op {op:?}; use one of {}",
                OPS.join(", ")
            )));
        };
        let fields = Fields {
            object: &value,
            op,
            deferred: None,
        };
        Request::read(op_kind, fields)
    }

    /// Checks argument values (the invalid arguments of docs/contract.md section 2) without
    /// touching storage.
    ///
    /// The store checks the same values again, with the same functions of `rules`: this check
    /// comes first so that a bad request never opens a database (`FileBackend` opens on first
    /// use) and `checkArguments` can answer before `claimMany` starts threads, while the store's
    /// own check guards its public methods, which take plain numbers. A checked type handed from
    /// here to the store would have to cross the public [`Leases`] trait.
    ///
    /// ```
    /// use leasefence::protocol::Request;
    /// let r = Request::ClaimNext { owner: "w".into(), now: f64::NAN, ttl: 5.0 };
    /// assert_eq!(r.validate().unwrap_err().code(), "invalid_argument");
    /// ```
    pub fn validate(&self) -> Result<()> {
        match self {
            Request::Init | Request::State { .. } | Request::Inspect { .. } => Ok(()),
            Request::Enqueue { run_at, .. } => rules::check_time("run_at", *run_at),
            Request::Release { .. } => Ok(()),
            Request::Complete { now, .. }
            | Request::Revive { now, .. }
            | Request::Stats { now } => rules::check_now(*now),
            Request::Fail { now, retry_at, .. } => {
                rules::check_now(*now)?;
                rules::check_time("retry_at", *retry_at)
            }
            Request::Fenced {
                now,
                statements,
                complete,
                result,
                ..
            } => {
                rules::check_now(*now)?;
                rules::fenced::check_statements(statements)?;
                Finish::from_parts(*complete, result.clone()).map(drop)
            }
            Request::Claim { now, ttl, .. }
            | Request::Renew { now, ttl, .. }
            | Request::ClaimNext { now, ttl, .. } => rules::lease_end(*now, *ttl).map(drop),
            Request::ClaimMany {
                owners, now, ttl, ..
            } => {
                rules::lease_end(*now, *ttl)?;
                #[cfg(not(target_arch = "wasm32"))]
                rules::check_owner_count(owners.len())?;
                let _ = owners;
                Ok(())
            }
        }
    }
}

/// A [`Backend`] on a database file: opens it on first use (retrying on the next request if
/// that fails, so a batch keeps serving) and runs `claim_many` on real threads.
///
/// ```
/// use leasefence::protocol::{respond, FileBackend};
/// let dir = tempfile::tempdir().unwrap();
/// let mut backend = FileBackend::new(dir.path().join("q.db"), leasefence::OpenOptions::new());
/// assert_eq!(respond(&mut backend, r#"{"op":"init"}"#).to_json(), r#"{"value":null}"#);
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub struct FileBackend {
    path: std::path::PathBuf,
    options: crate::OpenOptions,
    store: Option<LeaseStore>,
}

#[cfg(not(target_arch = "wasm32"))]
impl FileBackend {
    /// A backend for the file at `path`; nothing is opened yet.
    ///
    /// ```
    /// let b = leasefence::protocol::FileBackend::new("q.db", leasefence::OpenOptions::new());
    /// # let _ = b;
    /// ```
    pub fn new(path: impl Into<std::path::PathBuf>, options: crate::OpenOptions) -> Self {
        FileBackend {
            path: path.into(),
            options,
            store: None,
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Backend for FileBackend {
    fn store(&mut self) -> Result<&LeaseStore> {
        let store = match self.store.take() {
            Some(store) => store,
            None => self.options.open(&self.path)?,
        };
        Ok(self.store.insert(store))
    }
}

/// A [`Backend`] on any target [`open`](crate::open) accepts: an SQLite file path or a
/// `postgres://` URL. Opens it on first use (retrying on the next request if that fails, so a
/// batch keeps serving) and runs `claim_many` on real threads, one connection per owner. What
/// `leasefence --db` uses.
///
/// ```
/// use leasefence::protocol::{respond, TargetBackend};
/// let dir = tempfile::tempdir().unwrap();
/// let mut backend = TargetBackend::new(dir.path().join("q.db"), leasefence::OpenOptions::new());
/// assert_eq!(respond(&mut backend, r#"{"op":"enqueue","job":"j"}"#).to_json(), r#"{"value":true}"#);
/// ```
#[cfg(not(target_arch = "wasm32"))]
pub struct TargetBackend {
    target: std::path::PathBuf,
    options: crate::OpenOptions,
    opened: Option<Opened>,
}

#[cfg(not(target_arch = "wasm32"))]
enum Opened {
    Sqlite(LeaseStore),
    Other(Box<dyn Leases>),
}

#[cfg(not(target_arch = "wasm32"))]
impl TargetBackend {
    /// A backend for `target` (a file path or a `postgres://` URL); nothing is opened yet.
    ///
    /// ```
    /// let b = leasefence::protocol::TargetBackend::new("postgres://localhost/q", Default::default());
    /// # let _ = b;
    /// ```
    pub fn new(target: impl Into<std::path::PathBuf>, options: crate::OpenOptions) -> Self {
        TargetBackend {
            target: target.into(),
            options,
            opened: None,
        }
    }

    fn open(&mut self) -> Result<&Opened> {
        let opened = match self.opened.take() {
            Some(opened) => opened,
            None => match self.target.to_str().filter(|t| crate::is_postgres_url(t)) {
                Some(_) => Opened::Other(crate::open_with(&self.target, &self.options)?),
                None => Opened::Sqlite(self.options.open(&self.target)?),
            },
        };
        Ok(self.opened.insert(opened))
    }
}

#[cfg(not(target_arch = "wasm32"))]
impl Backend for TargetBackend {
    fn store(&mut self) -> Result<&LeaseStore> {
        match self.open()? {
            Opened::Sqlite(store) => Ok(store),
            Opened::Other(store) => Err(Error::invalid(
                "store",
                format!("{store:?} is not an SQLite file; use Backend::leases"),
            )),
        }
    }

    fn leases(&mut self) -> Result<&dyn Leases> {
        Ok(match self.open()? {
            Opened::Sqlite(store) => store,
            Opened::Other(store) => store.as_ref(),
        })
    }
}

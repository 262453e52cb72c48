//! What a request produced: the [`Response`] line, and the typed [`Answer`] the wasm calls hand
//! to JavaScript.

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Reason};

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

    /// The typed error code, when the request failed.
    ///
    /// ```
    /// use leasefence::{protocol::Response, ErrorCode};
    /// let r = Response::Failed { code: "bad_request", message: "not JSON".into() };
    /// assert_eq!(r.error_code(), Some(ErrorCode::BadRequest));
    /// ```
    pub fn error_code(&self) -> Option<crate::ErrorCode> {
        self.code().and_then(crate::ErrorCode::parse)
    }

    pub(super) fn failed(err: &Error) -> Self {
        Response::Failed {
            code: err.code(),
            message: err.to_string(),
        }
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        Response::Failed {
            code: "bad_request",
            message: message.into(),
        }
    }
}

/// A reason as JSON: `{"code": ...}` plus its details (`owner`, `until`, `fence`).
fn reason_json(reason: &Reason) -> Value {
    to_json_value(reason)
}

/// Any of the answer types as a JSON value; they hold only strings, finite numbers and integers,
/// so serializing cannot fail.
fn to_json_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// What an operation returned, typed: the `value` of an answer. Serialized (serde) as the
/// protocol writes it; the wasm calls hand the same value to JavaScript through
/// serde-wasm-bindgen.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Returned {
    /// `null`: nothing (init), no job (state, claim_next) or a refused claim.
    Null,
    Bool(bool),
    Fence(Fence),
    State(JobState),
    Claimed(ClaimedJob),
    /// claim_many: a fence or null per owner.
    Fences(Vec<Option<Fence>>),
    /// inspect: `{state, attempts, dead, payload, failures, queue, priority}`.
    Inspection(Inspection),
    /// stats: `{queued, scheduled, leased, done, dead}`.
    Counts(JobCounts),
    /// enqueue_many: `true`/`false` per job, in order.
    Bools(Vec<bool>),
    /// claim_next_many: the claimed jobs, in claim_next order (empty when none was claimable).
    ClaimedList(Vec<ClaimedJob>),
    /// renew_many, complete_many: one answer per item, `{"value": true}` or `{"value": false,
    /// "reason": {...}}`, in order.
    Answers(Vec<Answer>),
    /// enqueue_due: the ids of the jobs it added.
    Strings(Vec<String>),
    /// schedules: every stored schedule, by name.
    Schedules(Vec<crate::StoredSchedule>),
    /// next_due: `{job, slot}`, each a time or null.
    NextDue(crate::wake::NextDue),
    /// list_jobs: `{jobs: [{id, owner, until, fence, result, done, status, queue, priority,
    /// failures}], next}`.
    Page(crate::JobPage),
    /// queue_stats: `[{queue, counts: {queued, scheduled, leased, done, dead}}]`.
    QueueCounts(Vec<crate::QueueCounts>),
    /// list_workers: `[{owner, host, pid, started, last_seen, until, stopped, alive, counters,
    /// held, holding: [{job, fence, until}]}]`.
    Workers(Vec<crate::WorkerInfo>),
    /// oldest_waiting: `[{queue, since}]`.
    Waiting(Vec<crate::QueueWaiting>),
    /// prune: how many jobs it deleted.
    Count(u64),
}

/// An operation's answer: the value, and the reason when the store refused. Serialized, it is
/// the response line's object: `{"value":false,"reason":{"code":"not_owner"}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Answer {
    /// What the seed returns.
    pub(crate) value: Returned,
    /// Why the value is `false` or `null`, when the store refused; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<Reason>,
}

impl From<Answer> for Response {
    fn from(answer: Answer) -> Self {
        Response::Answered {
            value: to_json_value(&answer.value),
            reason: answer.reason,
        }
    }
}

//! What the crate's two JavaScript faces share: the wasm build (`wasm/`, for Node's fallback
//! engine and the browser) and the Node-API addon (`addon/`, Node's native engine). Both take an
//! operation's positional JavaScript arguments (docs/contract.md section 5) and read them into
//! one protocol [`Request`](crate::protocol::Request) here, so that every argument check and
//! every message is written once, whichever engine a Node process runs.
//!
//! Each face shows its own values to this module through [`JsArg`]; an argument that is wrong is
//! an [`ArgError`], which each face turns into its JavaScript `Error` with
//! `code: 'invalid_argument'`.

mod args;
mod statements;

pub(crate) use args::{check_request, lease_args, read_request};
pub(crate) use statements::{fenced_options, sql_values, statements_of};

/// A JavaScript value as the argument readers see it. `wasm_bindgen::JsValue` and the addon's
/// napi values implement it.
pub(crate) trait JsArg: Sized {
    /// `undefined` (also what a missing argument or member reads as).
    fn is_undefined(&self) -> bool;
    fn is_null(&self) -> bool;
    /// The string, if the value is one.
    fn as_string(&self) -> Option<String>;
    /// The number, if the value is one (NaN and infinities included).
    fn as_f64(&self) -> Option<f64>;
    /// The boolean, if the value is one.
    fn as_bool(&self) -> Option<bool>;
    fn is_array(&self) -> bool;
    /// `typeof value === 'object'` and not null: arrays are objects too.
    fn is_object(&self) -> bool;
    /// `Some(Ok(n))` for a BigInt within 64 bits, `Some(Err(()))` for one beyond, `None` for any
    /// other value.
    fn as_bigint(&self) -> Option<Result<i64, ()>>;
    /// An array's items, in order (empty for anything else).
    fn items(&self) -> Vec<Self>;
    /// An object's member `name`, `undefined` when absent.
    fn member(&self, name: &str) -> Self;
    /// An object's own enumerable string keys.
    fn keys(&self) -> Vec<String>;
    /// `typeof value`, for messages.
    fn type_of(&self) -> String;
}

/// A JavaScript argument that is wrong: the message says which, what it must be, and what it
/// got. Always `invalid_argument`; nothing was run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArgError(pub(crate) String);

impl From<crate::Error> for ArgError {
    /// A check of the contract's own (a range, a NaN), as the readers meet it.
    fn from(err: crate::Error) -> Self {
        ArgError(err.to_string())
    }
}

/// `LeaseStore.open`'s `limits` (docs/contract.md section 13), as the JavaScript side passes its
/// members: each a whole number of bytes (`0`: no limit), or undefined/null for the default.
#[cfg_attr(not(any(feature = "addon", feature = "node")), allow(dead_code))]
pub(crate) fn limits_of(
    payload: Option<f64>,
    result: Option<f64>,
    error: Option<f64>,
) -> Result<crate::Limits, ArgError> {
    let bytes = |name: &str, value: Option<f64>| match value {
        None => Ok(None),
        Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= usize::MAX as f64 => {
            Ok(Some(n as usize))
        }
        Some(n) => Err(ArgError(format!(
            "LeaseStore.open(): `limits.{name}` must be a whole number of bytes >= 0 (0: no \
             limit), got {n}"
        ))),
    };
    Ok(crate::Limits::given_or_default(
        bytes("payload", payload)?,
        bytes("result", result)?,
        bytes("error", error)?,
    ))
}

/// `nothing (the argument is missing)`, `null`, `a number`: what a wrong value was, for messages.
fn described<V: JsArg>(place: &str, got: &V) -> String {
    if got.is_undefined() {
        let kind = if place.starts_with("argument") {
            "argument"
        } else {
            "member"
        };
        format!("nothing (the {kind} is missing)")
    } else if got.is_null() {
        "null".to_string()
    } else {
        format!("a {}", got.type_of())
    }
}

/// The error for a bad value at `place` (`argument \`job\``, `leases[2].fence`) of `op`.
fn bad_value<V: JsArg>(op: &str, place: &str, want: &str, got: &V) -> ArgError {
    ArgError(format!(
        "{op}(): {place} must be {want}, got {}",
        described(place, got)
    ))
}

/// The error for a bad argument of `op` described in words.
fn bad(op: &str, what: &str) -> ArgError {
    ArgError(format!("{op}(): {what}"))
}

/// An integer number within 2^53 (beyond it a JavaScript number cannot hold every integer
/// exactly): fences, priorities.
fn safe_integer<V: JsArg>(value: &V) -> Option<i64> {
    value
        .as_f64()
        .filter(|f| f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_991.0)
        .map(|f| f as i64)
}

/// A guarded write's `key` (a string) and `fence` (an integer), checked.
pub(crate) fn guard_args<V: JsArg>(
    op: &str,
    key: &V,
    fence: &V,
) -> Result<(String, i64), ArgError> {
    let key = key
        .as_string()
        .ok_or_else(|| bad(op, "`key` must be a string"))?;
    let fence = safe_integer(fence)
        .ok_or_else(|| bad(op, "`fence` must be an integer (a fence from claim)"))?;
    Ok((key, fence))
}

/// A JavaScript attempt number (or maximum) as a fence, for the worker rules: `Infinity` and
/// anything past the largest fence is the largest; NaN and anything below 0 is 0.
pub(crate) fn fence_of(n: f64) -> crate::outcome::Fence {
    use crate::outcome::Fence;
    if n.is_nan() || n <= 0.0 {
        0
    } else if n >= Fence::MAX as f64 {
        Fence::MAX
    } else {
        n as Fence
    }
}

/// A JavaScript count (failures in a row) for the worker rules: NaN and below 0 is 0.
pub(crate) fn count_of(n: f64) -> u32 {
    if n.is_nan() || n <= 0.0 {
        0
    } else {
        n.min(u32::MAX as f64) as u32
    }
}

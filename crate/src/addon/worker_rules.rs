//! The worker runtime's rules (`crate::rules::worker`) for `JobWorker` on the native engine,
//! under the names the wasm engine exports them by (`workerRetryAt`), so the JavaScript runtime
//! asks either engine the same way. Arguments as in `wasm/worker_rules.rs`.
//!
//! ```js
//! addon.workerRetryAt(1000, 3, 3, 5);   // null: the last attempt failed, dead
//! ```

use napi_derive::napi;
use serde_json::{json, Value};

use crate::js::{count_of, fence_of};
use crate::rules::worker::{self as rules, AttemptVerdict};

/// The exponential backoff's wait after `attempt` failed, with `draw` (in `[0, 1)`).
#[napi(js_name = "workerExponentialBackoff")]
pub fn exponential_backoff(
    base: f64,
    factor: f64,
    max: f64,
    jitter: f64,
    attempt: f64,
    draw: f64,
) -> f64 {
    rules::exponential_backoff(base, factor, max, jitter, fence_of(attempt), draw)
}

/// Whether the claimed `attempt` needs the job's failures read before it may run.
#[napi(js_name = "workerMustCheckPreviousAttempt")]
pub fn must_check_previous_attempt(attempt: f64, max_attempts: f64) -> bool {
    rules::must_check_previous_attempt(fence_of(attempt), fence_of(max_attempts))
}

/// `{run: true}`, or `{run: false, error}` for a poison job.
#[napi(js_name = "workerAttemptVerdict")]
pub fn attempt_verdict(attempt: f64, max_attempts: f64, previous_attempt_failed: bool) -> Value {
    match rules::attempt_verdict(
        fence_of(attempt),
        fence_of(max_attempts),
        previous_attempt_failed,
    ) {
        AttemptVerdict::Run => json!({"run": true}),
        AttemptVerdict::Poison { error } => json!({"run": false, "error": error}),
    }
}

/// `now + delay` for a failed `attempt` that gets another, or `null` (dead) at the last.
#[napi(js_name = "workerRetryAt")]
pub fn retry_at(now: f64, attempt: f64, max_attempts: f64, delay: f64) -> Value {
    match rules::retry_at(now, fence_of(attempt), fence_of(max_attempts), delay) {
        Some(at) => json!(at),
        None => Value::Null,
    }
}

/// When the renew after one granted at `grantedAt` is due.
#[napi(js_name = "workerNextRenewAt")]
pub fn next_renew_at(granted_at: f64, every: f64) -> f64 {
    rules::next_renew_at(granted_at, every)
}

/// The wait before another renew after `failedRenews` failed in a row on a busy store.
#[napi(js_name = "workerRenewRetryDelay")]
pub fn renew_retry_delay(failed_renews: f64, every: f64) -> f64 {
    rules::renew_retry_delay(count_of(failed_renews), every)
}

/// How many jobs a worker with `concurrency` slots claims at once when `free` of them are free.
#[napi(js_name = "workerClaimBatch")]
pub fn claim_batch(free: f64, concurrency: f64) -> f64 {
    rules::claim_batch(count_of(free) as usize, count_of(concurrency) as usize) as f64
}

/// The wait before another try of a write after `failedTries` failed in a row on a busy store.
#[napi(js_name = "workerWriteRetryDelay")]
pub fn write_retry_delay(failed_tries: f64) -> f64 {
    rules::write_retry_delay(count_of(failed_tries))
}

//! The worker runtime's rules (docs/contract.md section 9) as pure functions: no store, no clock,
//! no randomness of their own. The Rust worker (`crate::worker`) calls them, and the wasm builds
//! export them to the JavaScript runtime (`crate::wasm::worker_rules`), so that both runtimes
//! decide the same way from one implementation: the backoff, whether a claimed attempt may run,
//! when a failure is a death, when to renew, and how long to wait before trying a busy store again.
//! The shared worker vectors (`tests/worker-vectors`) hold both runtimes to them.

use crate::outcome::Fence;

/// The first wait after a renew failed on a busy or unreachable store; it doubles up to the
/// renew interval.
pub(crate) const RENEW_FIRST_RETRY: f64 = 0.02;

/// The first wait after a complete, fail, release or inspect failed on a busy store; it doubles up
/// to [`WRITE_LONGEST_RETRY`].
pub(crate) const WRITE_FIRST_RETRY: f64 = 0.01;

/// The longest wait between two tries of a write on a busy store.
pub(crate) const WRITE_LONGEST_RETRY: f64 = 0.5;

/// `base * factor^(attempt - 1)` seconds, at most `max`, then cut by `jitter * draw` of itself:
/// `draw` is a random number in `[0, 1)` (the caller's), `jitter` how much may be cut (0 to 1).
/// Out-of-range arguments are brought into range rather than refused, since a wait must always
/// come out: attempts below 1 count as 1, a jitter or draw outside `[0, 1]` is clamped (NaN as 0),
/// and the answer is finite and >= 0.
pub(crate) fn exponential_backoff(
    base: f64,
    factor: f64,
    max: f64,
    jitter: f64,
    attempt: Fence,
    draw: f64,
) -> f64 {
    let unit = |x: f64| if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) };
    // Past 1024 doublings every factor >= 2 is infinite anyway; the cap below applies.
    let doublings = attempt.clamp(1, 1025) - 1;
    let grown = base * factor.powi(doublings as i32);
    // Not f64::min, which would answer `max` for a NaN: a NaN wait is no wait (sanitized below).
    let full = if grown > max { max } else { grown };
    sanitized_delay(full * (1.0 - unit(jitter) * unit(draw)))
}

/// A wait as the runtimes use it: a negative, NaN or infinite wait (a custom backoff's mistake)
/// is no wait at all, so the job is retried at once rather than never.
pub(crate) fn sanitized_delay(seconds: f64) -> f64 {
    if seconds.is_finite() && seconds > 0.0 {
        seconds
    } else {
        0.0
    }
}

/// The error recorded for a poison job: claimed at `attempt`, past `max_attempts`, with no
/// failure recorded for the attempt before (its holders lost their leases or crashed).
pub(crate) fn poison_error(attempt: Fence, max_attempts: Fence) -> String {
    format!(
        "attempt {attempt} of at most {max_attempts}: earlier holders lost their leases without \
         completing or failing the job (killed, paused, or blocked past the lease); made dead \
         without running the handler"
    )
}

/// Whether a claimed attempt needs the job's failures read before it may run: only a claim past
/// `max_attempts` does (a revived job runs; a poison job is made dead).
pub(crate) fn must_check_previous_attempt(attempt: Fence, max_attempts: Fence) -> bool {
    attempt > max_attempts
}

/// What to do with a claimed attempt, given whether the attempt before it recorded a failure
/// (read only when [`must_check_previous_attempt`] says so): run the handler, or make the job dead
/// at once with the error to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AttemptVerdict {
    Run,
    Poison { error: String },
}

pub(crate) fn attempt_verdict(
    attempt: Fence,
    max_attempts: Fence,
    previous_attempt_failed: bool,
) -> AttemptVerdict {
    if must_check_previous_attempt(attempt, max_attempts) && !previous_attempt_failed {
        AttemptVerdict::Poison {
            error: poison_error(attempt, max_attempts),
        }
    } else {
        AttemptVerdict::Run
    }
}

/// When a failed `attempt` is tried again: `now + delay`, or `None` (the job is made dead) once
/// `attempt >= max_attempts`. `now` is the one the `fail` call carries.
pub(crate) fn retry_at(now: f64, attempt: Fence, max_attempts: Fence, delay: f64) -> Option<f64> {
    (attempt < max_attempts).then(|| now + sanitized_delay(delay))
}

/// When the next renew is due after one granted at `granted_at`.
pub(crate) fn next_renew_at(granted_at: f64, every: f64) -> f64 {
    granted_at + every
}

/// The wait before trying a renew again after `failed_renews` (>= 1) renews in a row failed on a
/// busy or unreachable store: 20 ms, doubling, at most the renew interval.
pub(crate) fn renew_retry_delay(failed_renews: u32, every: f64) -> f64 {
    doubling(RENEW_FIRST_RETRY, failed_renews).min(every)
}

/// The wait before trying a write again after `failed_tries` (>= 1) tries failed on a busy store:
/// 10 ms, doubling, at most half a second.
pub(crate) fn write_retry_delay(failed_tries: u32) -> f64 {
    doubling(WRITE_FIRST_RETRY, failed_tries).min(WRITE_LONGEST_RETRY)
}

fn doubling(first: f64, tries: u32) -> f64 {
    first * 2f64.powi(tries.clamp(1, 64) as i32 - 1)
}

/// How many jobs a concurrent worker claims in one call when `free` of its `concurrency` slots
/// are free: all of them up to 8 slots, else at most a quarter of the slots (at least 8). A claim
/// of every free slot starts all the handlers at once: they finish together, and the slots stand
/// empty while the worker's one connection completes and claims them again, in waves. Smaller
/// claims, one after the other, start the handlers a few at a time, so the completions and
/// claims overlap running handlers (docs/decisions/worker-concurrency.md has the figures).
pub(crate) fn claim_batch(free: usize, concurrency: usize) -> usize {
    free.min((concurrency / 4).max(8))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_doubles_caps_and_cuts_by_the_draw() {
        let delays: Vec<f64> = (1..=6)
            .map(|n| exponential_backoff(1.0, 2.0, 10.0, 0.0, n, 0.9))
            .collect();
        assert_eq!(delays, [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]);
        assert_eq!(exponential_backoff(4.0, 2.0, 300.0, 0.5, 1, 0.5), 3.0);
        assert_eq!(exponential_backoff(4.0, 2.0, 300.0, 0.5, 1, 0.0), 4.0);
        assert_eq!(exponential_backoff(1.0, 2.0, 300.0, 1.0, 1, 1.0), 0.0);
        assert_eq!(exponential_backoff(1.0, 3.0, 300.0, 0.0, 3, 0.0), 9.0);
        // Out of range: attempt 0 counts as 1, a huge attempt is the cap, NaN jitter cuts nothing.
        assert_eq!(exponential_backoff(1.0, 2.0, 300.0, 0.0, 0, 0.0), 1.0);
        assert_eq!(
            exponential_backoff(1.0, 2.0, 300.0, 0.0, i64::MAX, 0.0),
            300.0
        );
        assert_eq!(exponential_backoff(1.0, 2.0, 8.0, f64::NAN, 9, 0.7), 8.0);
        assert_eq!(exponential_backoff(f64::NAN, 2.0, 8.0, 0.0, 1, 0.0), 0.0);
    }

    #[test]
    fn a_claim_past_the_maximum_runs_only_after_a_recorded_failure() {
        assert_eq!(attempt_verdict(3, 3, false), AttemptVerdict::Run);
        assert_eq!(attempt_verdict(4, 3, true), AttemptVerdict::Run);
        let AttemptVerdict::Poison { error } = attempt_verdict(4, 3, false) else {
            panic!("a claim past the maximum with no failure before it must be poison");
        };
        assert!(error.starts_with("attempt 4 of at most 3: earlier holders lost their leases"));
        assert!(!must_check_previous_attempt(3, 3) && must_check_previous_attempt(4, 3));
    }

    #[test]
    fn the_last_attempt_fails_dead_and_bad_delays_are_no_wait() {
        assert_eq!(retry_at(100.0, 1, 3, 5.0), Some(105.0));
        assert_eq!(retry_at(100.0, 2, 3, -1.0), Some(100.0));
        assert_eq!(retry_at(100.0, 2, 3, f64::INFINITY), Some(100.0));
        assert_eq!(retry_at(100.0, 3, 3, 5.0), None);
        assert_eq!(retry_at(100.0, 9, 3, 5.0), None);
    }

    #[test]
    fn retry_waits_double_up_to_their_bounds() {
        let renew: Vec<f64> = (1..=6).map(|n| renew_retry_delay(n, 0.25)).collect();
        assert_eq!(renew, [0.02, 0.04, 0.08, 0.16, 0.25, 0.25]);
        let write: Vec<f64> = (1..=8).map(write_retry_delay).collect();
        assert_eq!(write, [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.5, 0.5]);
        assert_eq!(next_renew_at(100.0, 10.0), 110.0);
    }

    /// The shared rule cases (`tests/worker-vectors/rules/rules.json`), which the JavaScript
    /// runners check through the wasm exports.
    #[test]
    fn the_shared_rule_cases_hold() {
        use serde_json::{json, Value};
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/worker-vectors/rules/rules.json"
        );
        let cases: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
        let cases = cases["cases"].as_array().unwrap();
        assert!(cases.len() >= 20);
        for case in cases {
            let a = case["args"].as_array().unwrap();
            let f = |i: usize| a[i].as_f64().unwrap();
            let n = |i: usize| a[i].as_i64().unwrap();
            let got = match case["rule"].as_str().unwrap() {
                "exponential_backoff" => {
                    json!(exponential_backoff(f(0), f(1), f(2), f(3), n(4), f(5)))
                }
                "must_check_previous_attempt" => json!(must_check_previous_attempt(n(0), n(1))),
                "attempt_verdict" => match attempt_verdict(n(0), n(1), a[2].as_bool().unwrap()) {
                    AttemptVerdict::Run => json!({"run": true}),
                    AttemptVerdict::Poison { error } => json!({"run": false, "error": error}),
                },
                "retry_at" => json!(retry_at(f(0), n(1), n(2), f(3))),
                "next_renew_at" => json!(next_renew_at(f(0), f(1))),
                "renew_retry_delay" => json!(renew_retry_delay(n(0) as u32, f(1))),
                "write_retry_delay" => json!(write_retry_delay(n(0) as u32)),
                "claim_batch" => json!(claim_batch(n(0) as usize, n(1) as usize)),
                other => panic!("unknown rule {other}"),
            };
            let want = &case["expect"];
            let equal = match (got.as_f64(), want.as_f64()) {
                (Some(x), Some(y)) => x == y,
                _ => &got == want,
            };
            assert!(equal, "{case}: got {got}");
        }
    }

    #[test]
    fn claims_come_in_quarters_of_the_slots_from_16_slots() {
        // Up to 8 slots: every free one.
        assert_eq!(claim_batch(8, 8), 8);
        assert_eq!(claim_batch(3, 4), 3);
        // 16 and 32 slots: 8 at a time; 64: 16; never more than are free.
        assert_eq!(claim_batch(16, 16), 8);
        assert_eq!(claim_batch(32, 32), 8);
        assert_eq!(claim_batch(64, 64), 16);
        assert_eq!(claim_batch(5, 64), 5);
        assert_eq!(claim_batch(0, 64), 0);
        assert_eq!(claim_batch(1000, 1000), 250);
    }
}

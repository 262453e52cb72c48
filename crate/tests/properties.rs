#![cfg(not(target_arch = "wasm32"))]
//! Property tests: random operation sequences run against the real store (through the Rust API
//! and through the JSON-lines protocol, each on its own in-memory database) and against a small,
//! obviously-correct model of the contract's sections 2, 3 and 7 written here. Every return value, every
//! reason, every error and the whole table after every operation must agree.
//!
//! `PROPTEST_CASES=N` changes the number of cases (default 512, each up to 60 operations).

use std::collections::BTreeMap;

use leasefence::protocol::{respond, Backend};
use leasefence::{
    ClaimedJob, Error, Fence, JobState, Lease, LeaseStore, Leases, Outcome, Reason, SharedStore,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde_json::{json, Value};

const JOBS: [&str; 4] = ["j0", "j1", "j2", "j3"];
/// The empty owner is a real owner, distinct from a released lease (`owner = NULL`).
const OWNERS: [&str; 4] = ["A", "B", "C", ""];

// ---------------------------------------------------------------------------------------------
// The model: SPEC sections 2 and 3, literally.
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Row {
    owner: Option<String>,
    until: f64,
    fence: Fence,
    result: Option<String>,
    done: bool,
    /// Section 7: failed for good (and `done`).
    dead: bool,
    payload: Option<String>,
    /// Every `fail`: fence, at, error.
    failures: Vec<(Fence, f64, Option<String>)>,
}

#[derive(Debug, Default)]
struct Model {
    rows: BTreeMap<String, Row>,
    /// Insertion order (the table's rowid order).
    order: Vec<String>,
}

/// What an operation answered, in a shape all three implementations can be mapped to.
#[derive(Debug, Clone, PartialEq)]
enum Ans {
    /// The seed's value (as protocol JSON) and the reason when it is `false`/`null`.
    Value(Value, Option<Reason>),
    /// `Error::InvalidArgument` naming this argument.
    Invalid(&'static str),
    /// Any other error (its code).
    Failed(&'static str),
}

/// One operation with every argument resolved to a concrete value.
#[derive(Debug, Clone)]
enum Req {
    Enqueue {
        job: String,
        run_at: Option<f64>,
        payload: Option<String>,
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
    ClaimNext {
        owner: String,
        now: f64,
        ttl: f64,
    },
}

fn model_lease_end(now: f64, ttl: f64) -> Result<f64, &'static str> {
    if !now.is_finite() {
        return Err("now");
    }
    if !ttl.is_finite() || ttl <= 0.0 {
        return Err("ttl");
    }
    let until = now + ttl;
    if !until.is_finite() || until <= now {
        return Err("ttl");
    }
    Ok(until)
}

fn row_json(id: &str, row: &Row) -> Value {
    json!({
        "id": id, "owner": row.owner, "until": row.until,
        "fence": row.fence, "result": row.result, "done": row.done,
    })
}

impl Model {
    fn enqueue(&mut self, job: &str, run_at: Option<f64>, payload: Option<&str>) -> bool {
        if self.rows.contains_key(job) {
            return false;
        }
        self.rows.insert(
            job.to_string(),
            Row {
                owner: None,
                until: run_at.unwrap_or(0.0),
                fence: 0,
                result: None,
                done: false,
                dead: false,
                payload: payload.map(String::from),
                failures: Vec::new(),
            },
        );
        self.order.push(job.to_string());
        true
    }

    fn inspect_json(&self, job: &str) -> Value {
        self.rows.get(job).map_or(Value::Null, |row| {
            json!({
                "state": row_json(job, row),
                "attempts": row.fence,
                "dead": row.dead,
                "payload": row.payload,
                "failures": row.failures.iter()
                    .map(|(fence, at, error)| json!({"fence": fence, "at": at, "error": error}))
                    .collect::<Vec<_>>(),
                // The model enqueues without queues or priorities (section 11's defaults).
                "queue": "default",
                "priority": 0,
            })
        })
    }

    /// The reason a fenced write (renew, complete, release) is refused, in SPEC order; `None` when
    /// it is allowed. `now` is `None` for release, which has no clock check.
    fn fenced_reason(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: Option<f64>,
    ) -> Option<Reason> {
        let Some(row) = self.rows.get(job) else {
            return Some(Reason::NotFound);
        };
        if row.done {
            return Some(Reason::Done);
        }
        if row.fence != fence {
            return Some(Reason::StaleFence { current: row.fence });
        }
        if row.owner.as_deref() != Some(owner) {
            return Some(Reason::NotOwner);
        }
        match now {
            Some(now) if row.until <= now => Some(Reason::Expired { until: row.until }),
            _ => None,
        }
    }

    fn apply(&mut self, req: &Req) -> Ans {
        let refused = |value: Value, reason| Ans::Value(value, Some(reason));
        match req {
            Req::Enqueue {
                job,
                run_at,
                payload,
            } => {
                if run_at.is_some_and(|t| !t.is_finite()) {
                    return Ans::Invalid("run_at");
                }
                Ans::Value(json!(self.enqueue(job, *run_at, payload.as_deref())), None)
            }
            Req::Fail {
                job,
                owner,
                fence,
                now,
                retry_at,
                error,
            } => {
                if !now.is_finite() {
                    return Ans::Invalid("now");
                }
                if retry_at.is_some_and(|t| !t.is_finite()) {
                    return Ans::Invalid("retry_at");
                }
                if let Some(reason) = self.fenced_reason(job, owner, *fence, Some(*now)) {
                    return refused(json!(false), reason);
                }
                let row = self.rows.get_mut(job).unwrap();
                match retry_at {
                    Some(retry_at) => {
                        row.owner = None;
                        row.until = *retry_at;
                    }
                    None => {
                        row.done = true;
                        row.dead = true;
                    }
                }
                row.failures.push((*fence, *now, error.clone()));
                Ans::Value(json!(true), None)
            }
            Req::Revive { job, now } => {
                if !now.is_finite() {
                    return Ans::Invalid("now");
                }
                let Some(row) = self.rows.get_mut(job) else {
                    return refused(json!(false), Reason::NotFound);
                };
                if !row.dead {
                    return refused(json!(false), Reason::NotDead);
                }
                row.done = false;
                row.dead = false;
                row.owner = None;
                row.until = *now;
                Ans::Value(json!(true), None)
            }
            Req::Inspect { job } => Ans::Value(self.inspect_json(job), None),
            Req::State { job } => Ans::Value(
                self.rows
                    .get(job)
                    .map_or(Value::Null, |row| row_json(job, row)),
                None,
            ),
            Req::Claim {
                job,
                owner,
                now,
                ttl,
            } => {
                let until = match model_lease_end(*now, *ttl) {
                    Ok(until) => until,
                    Err(arg) => return Ans::Invalid(arg),
                };
                let Some(row) = self.rows.get_mut(job) else {
                    return refused(Value::Null, Reason::NotFound);
                };
                if row.done {
                    return refused(Value::Null, Reason::Done);
                }
                if row.until > *now {
                    // Nobody holds it but it may not run yet: scheduled (section 7).
                    let reason = match &row.owner {
                        Some(owner) => Reason::Held {
                            owner: Some(owner.clone()),
                            until: row.until,
                        },
                        None => Reason::Scheduled { until: row.until },
                    };
                    return refused(Value::Null, reason);
                }
                if row.fence == Fence::MAX {
                    return Ans::Failed("storage");
                }
                row.owner = Some(owner.clone());
                row.until = until;
                row.fence += 1;
                Ans::Value(json!(row.fence), None)
            }
            Req::Renew {
                job,
                owner,
                fence,
                now,
                ttl,
            } => {
                let until = match model_lease_end(*now, *ttl) {
                    Ok(until) => until,
                    Err(arg) => return Ans::Invalid(arg),
                };
                if let Some(reason) = self.fenced_reason(job, owner, *fence, Some(*now)) {
                    return refused(json!(false), reason);
                }
                self.rows.get_mut(job).unwrap().until = until;
                Ans::Value(json!(true), None)
            }
            Req::Complete {
                job,
                owner,
                fence,
                now,
                result,
            } => {
                if !now.is_finite() {
                    return Ans::Invalid("now");
                }
                if let Some(reason) = self.fenced_reason(job, owner, *fence, Some(*now)) {
                    return refused(json!(false), reason);
                }
                let row = self.rows.get_mut(job).unwrap();
                row.result = result.clone();
                row.done = true;
                Ans::Value(json!(true), None)
            }
            Req::Release { job, owner, fence } => {
                if let Some(reason) = self.fenced_reason(job, owner, *fence, None) {
                    return refused(json!(false), reason);
                }
                let row = self.rows.get_mut(job).unwrap();
                row.owner = None;
                row.until = 0.0;
                Ans::Value(json!(true), None)
            }
            Req::ClaimNext { owner, now, ttl } => {
                let until = match model_lease_end(*now, *ttl) {
                    Ok(until) => until,
                    Err(arg) => return Ans::Invalid(arg),
                };
                // Smallest until first, then insertion order (a stable sort keeps it).
                let mut candidates: Vec<&String> = self
                    .order
                    .iter()
                    .filter(|id| {
                        let row = &self.rows[*id];
                        !row.done && row.until <= *now && row.fence < Fence::MAX
                    })
                    .collect();
                candidates.sort_by(|a, b| self.rows[*a].until.total_cmp(&self.rows[*b].until));
                let Some(id) = candidates.first().map(|id| id.to_string()) else {
                    return Ans::Value(Value::Null, None);
                };
                let row = self.rows.get_mut(&id).unwrap();
                row.owner = Some(owner.clone());
                row.until = until;
                row.fence += 1;
                Ans::Value(
                    json!({"job": id, "fence": row.fence, "payload": row.payload}),
                    None,
                )
            }
        }
    }

    fn table(&self) -> Vec<JobState> {
        self.order
            .iter()
            .map(|id| {
                let row = &self.rows[id];
                JobState {
                    id: id.clone(),
                    owner: row.owner.clone(),
                    until: row.until,
                    fence: row.fence,
                    result: row.result.clone(),
                    done: row.done,
                }
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------------
// The real store, through the Rust API and through the protocol.
// ---------------------------------------------------------------------------------------------

fn api_ans<T>(result: leasefence::Result<T>, value: impl FnOnce(T) -> Ans) -> Ans {
    match result {
        Ok(v) => value(v),
        Err(Error::InvalidArgument { argument, .. }) => Ans::Invalid(argument),
        Err(err) => Ans::Failed(err.code()),
    }
}

fn outcome_ans<T>(outcome: Outcome<T>, granted: impl FnOnce(T) -> Value, refused: Value) -> Ans {
    match outcome {
        Outcome::Granted(v) => Ans::Value(granted(v), None),
        Outcome::Rejected(reason) => Ans::Value(refused, Some(reason)),
    }
}

fn run_api(store: &dyn Leases, req: &Req) -> Ans {
    match req {
        Req::Enqueue {
            job,
            run_at,
            payload,
        } => api_ans(store.enqueue_with(job, *run_at, payload.as_deref()), |b| {
            Ans::Value(json!(b), None)
        }),
        Req::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        } => api_ans(
            store.fail(
                &Lease::new(job, owner, *fence),
                *now,
                *retry_at,
                error.as_deref(),
            ),
            |o| outcome_ans(o, |()| json!(true), json!(false)),
        ),
        Req::Revive { job, now } => api_ans(store.revive(job, *now), |o| {
            outcome_ans(o, |()| json!(true), json!(false))
        }),
        Req::Inspect { job } => api_ans(store.inspect(job), |report| {
            Ans::Value(
                report.map_or(Value::Null, |r| {
                    json!({
                        "state": {"id": r.state.id, "owner": r.state.owner, "until": r.state.until,
                                  "fence": r.state.fence, "result": r.state.result, "done": r.state.done},
                        "attempts": r.attempts, "dead": r.dead, "payload": r.payload,
                        "failures": r.failures.iter()
                            .map(|f| json!({"fence": f.fence, "at": f.at, "error": f.error}))
                            .collect::<Vec<_>>(),
                        "queue": r.queue, "priority": r.priority,
                    })
                }),
                None,
            )
        }),
        Req::State { job } => api_ans(store.state(job), |row| {
            Ans::Value(
                row.map_or(Value::Null, |r| {
                    json!({"id": r.id, "owner": r.owner, "until": r.until,
                           "fence": r.fence, "result": r.result, "done": r.done})
                }),
                None,
            )
        }),
        Req::Claim {
            job,
            owner,
            now,
            ttl,
        } => api_ans(store.claim(job, owner, *now, *ttl), |o| {
            outcome_ans(o, |f| json!(f), Value::Null)
        }),
        Req::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        } => api_ans(
            store.renew(&Lease::new(job, owner, *fence), *now, *ttl),
            |o| outcome_ans(o, |()| json!(true), json!(false)),
        ),
        Req::Complete {
            job,
            owner,
            fence,
            now,
            result,
        } => api_ans(
            store.complete(&Lease::new(job, owner, *fence), *now, result.as_deref()),
            |o| outcome_ans(o, |()| json!(true), json!(false)),
        ),
        Req::Release { job, owner, fence } => {
            api_ans(store.release(&Lease::new(job, owner, *fence)), |o| {
                outcome_ans(o, |()| json!(true), json!(false))
            })
        }
        Req::ClaimNext { owner, now, ttl } => {
            api_ans(store.claim_next(owner, *now, *ttl), |next| {
                Ans::Value(
                    next.map_or(
                        Value::Null,
                        |ClaimedJob {
                             job,
                             fence,
                             payload,
                             ..
                         }| json!({"job": job, "fence": fence, "payload": payload}),
                    ),
                    None,
                )
            })
        }
    }
}

/// `req` on the shared store in a group of two: while a fenced write (on a job that does not
/// exist, so it changes nothing) holds the lead, `req` is queued and then a read of every job;
/// both then run in the next group, in that order, `req` in its savepoint. Its answer must be
/// the one it gets alone.
fn run_in_a_group(shared: &SharedStore, req: &Req) -> Ans {
    use std::sync::mpsc;
    let wait_for_pending = |count: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while shared.pending() < count {
            assert!(std::time::Instant::now() < deadline, "{req:?} never queued");
            std::thread::yield_now();
        }
    };
    let (release, wait) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel::<()>();
    std::thread::scope(|scope| {
        let holder = scope.spawn(move || {
            let nobody = Lease::new("not a job of the model", "holder", 1);
            shared.fenced_with(&nobody, 0.0, leasefence::Finish::KeepLease, &mut |_tx| {
                started.send(()).unwrap();
                wait.recv().unwrap();
                Ok(())
            })
        });
        running.recv().unwrap();
        let answer = scope.spawn(|| run_api(shared, req));
        wait_for_pending(1);
        let neighbour = scope.spawn(|| shared.jobs());
        wait_for_pending(2);
        release.send(()).unwrap();
        let held = holder.join().unwrap().unwrap();
        assert_eq!(held.reason(), Some(&Reason::NotFound));
        neighbour.join().unwrap().unwrap();
        answer.join().unwrap()
    })
}

/// A JSON number token for `x`, with the three non-JSON tokens the protocol accepts.
fn num(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x == f64::INFINITY {
        "Infinity".into()
    } else if x == f64::NEG_INFINITY {
        "-Infinity".into()
    } else {
        // Debug prints the shortest text that reads back as exactly `x` (`1e300`, `-0.0`).
        format!("{x:?}")
    }
}

fn text(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

fn request_line(req: &Req) -> String {
    match req {
        Req::Enqueue {
            job,
            run_at,
            payload,
        } => {
            // A missing member and null are the same; both spellings are exercised.
            let mut line = format!(r#"{{"op":"enqueue","job":{}"#, text(job));
            if let Some(t) = run_at {
                line += &format!(r#","run_at":{}"#, num(*t));
            } else if job.ends_with('1') {
                line += r#","run_at":null"#;
            }
            if let Some(p) = payload {
                line += &format!(r#","payload":{}"#, text(p));
            }
            line + "}"
        }
        Req::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        } => format!(
            r#"{{"op":"fail","job":{},"owner":{},"fence":{fence},"now":{},"retry_at":{},"error":{}}}"#,
            text(job),
            text(owner),
            num(*now),
            retry_at.map_or("null".into(), num),
            error.as_deref().map_or("null".into(), text)
        ),
        Req::Revive { job, now } => format!(
            r#"{{"op":"revive","job":{},"now":{}}}"#,
            text(job),
            num(*now)
        ),
        Req::Inspect { job } => format!(r#"{{"op":"inspect","job":{}}}"#, text(job)),
        Req::State { job } => format!(r#"{{"op":"state","job":{}}}"#, text(job)),
        Req::Claim {
            job,
            owner,
            now,
            ttl,
        } => format!(
            r#"{{"op":"claim","job":{},"owner":{},"now":{},"ttl":{}}}"#,
            text(job),
            text(owner),
            num(*now),
            num(*ttl)
        ),
        Req::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        } => format!(
            r#"{{"op":"renew","job":{},"owner":{},"fence":{fence},"now":{},"ttl":{}}}"#,
            text(job),
            text(owner),
            num(*now),
            num(*ttl)
        ),
        Req::Complete {
            job,
            owner,
            fence,
            now,
            result,
        } => format!(
            r#"{{"op":"complete","job":{},"owner":{},"fence":{fence},"now":{},"result":{}}}"#,
            text(job),
            text(owner),
            num(*now),
            result.as_deref().map_or("null".into(), text)
        ),
        Req::Release { job, owner, fence } => format!(
            r#"{{"op":"release","job":{},"owner":{},"fence":{fence}}}"#,
            text(job),
            text(owner)
        ),
        Req::ClaimNext { owner, now, ttl } => format!(
            r#"{{"op":"claim_next","owner":{},"now":{},"ttl":{}}}"#,
            text(owner),
            num(*now),
            num(*ttl)
        ),
    }
}

/// The reason as SPEC/tests/vectors/README.md spells it, built independently of the crate.
fn reason_json(reason: &Reason) -> Value {
    match reason {
        Reason::NotFound => json!({"code": "not_found"}),
        Reason::Done => json!({"code": "done"}),
        Reason::Held { owner, until } => json!({"code": "held", "owner": owner, "until": until}),
        Reason::StaleFence { current } => json!({"code": "stale_fence", "fence": current}),
        Reason::NotOwner => json!({"code": "not_owner"}),
        Reason::Expired { until } => json!({"code": "expired", "until": until}),
        Reason::Scheduled { until } => json!({"code": "scheduled", "until": until}),
        Reason::NotDead => json!({"code": "not_dead"}),
    }
}

/// JSON equality where numbers compare by value: integers exactly, others as f64.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The protocol response line must be exactly what the model's answer means in SPEC section 4.
fn check_protocol(line: &str, response: &str, expected: &Ans) -> Result<(), TestCaseError> {
    let got: Value = serde_json::from_str(response)
        .map_err(|e| TestCaseError::fail(format!("response {response} is not JSON: {e}")))?;
    let want = match expected {
        Ans::Value(value, None) => json!({ "value": value }),
        Ans::Value(value, Some(reason)) => json!({"value": value, "reason": reason_json(reason)}),
        Ans::Invalid(_) | Ans::Failed(_) => {
            let code = match expected {
                Ans::Invalid(_) => "invalid_argument",
                Ans::Failed(code) => code,
                Ans::Value(..) => unreachable!(),
            };
            let error = got.get("error").and_then(Value::as_object);
            prop_assert!(
                got.as_object().is_some_and(|o| o.len() == 1)
                    && error.is_some_and(|e| {
                        e.len() == 2
                            && e.get("code") == Some(&json!(code))
                            && e.get("message").is_some_and(Value::is_string)
                    }),
                "line {line}\n  response {response}\n  expected error {code}"
            );
            return Ok(());
        }
    };
    prop_assert!(
        same(&got, &want),
        "line {line}\n  response {response}\n  expected {want}"
    );
    Ok(())
}

struct Memory(LeaseStore);

impl Backend for Memory {
    fn store(&mut self) -> leasefence::Result<&LeaseStore> {
        Ok(&self.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Generated operations.
// ---------------------------------------------------------------------------------------------

/// Where the caller's clock goes for this operation. Time never goes back.
#[derive(Debug, Clone)]
enum Clock {
    /// Advance by this many seconds (0 repeats the same instant).
    Step(f64),
    /// Jump to the `until` of this job (if later): lands exactly on a lease end.
    ToUntilOf(usize),
    /// Pass a non-finite `now` for this one call; the clock does not move.
    NonFinite(f64),
}

/// A time relative to the caller's clock (`run_at`, `retry_at`): none, seconds from now
/// (negative: in the past), or a non-finite value.
#[derive(Debug, Clone)]
enum RunAt {
    None,
    In(f64),
    NonFinite(f64),
}

fn run_at() -> impl Strategy<Value = RunAt> {
    prop_oneof![
        6 => Just(RunAt::None),
        6 => prop::sample::select(vec![-1.0, 0.0, 0.5, 2.5, 10.0]).prop_map(RunAt::In),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY])
            .prop_map(RunAt::NonFinite),
    ]
}

#[derive(Debug, Clone)]
enum FenceSel {
    Zero,
    One,
    CurrentMinus1,
    Current,
    CurrentPlus1,
    Any(i64),
}

#[derive(Debug, Clone)]
enum OwnerSel {
    Fixed(usize),
    /// The job's current owner (when there is one), to reach the granted paths often.
    Current,
}

#[derive(Debug, Clone)]
enum Op {
    Enqueue(usize, RunAt, Option<&'static str>),
    Fail(
        usize,
        OwnerSel,
        FenceSel,
        Clock,
        RunAt,
        Option<&'static str>,
    ),
    Revive(usize, Clock),
    Inspect(usize),
    State(usize),
    Claim(usize, usize, Clock, f64),
    Renew(usize, OwnerSel, FenceSel, Clock, f64),
    Complete(usize, OwnerSel, FenceSel, Clock, Option<&'static str>),
    Release(usize, OwnerSel, FenceSel),
    ClaimNext(usize, Clock, f64),
}

/// Skewed towards the first ids, so that most operations hit an enqueued job while a job that
/// is never enqueued stays likely.
fn job() -> impl Strategy<Value = usize> {
    prop::sample::select(vec![0, 0, 0, 0, 1, 1, 1, 2, 2, 3])
}

fn owner() -> impl Strategy<Value = usize> {
    0..OWNERS.len()
}

fn owner_sel() -> impl Strategy<Value = OwnerSel> {
    prop_oneof![1 => owner().prop_map(OwnerSel::Fixed), 3 => Just(OwnerSel::Current)]
}

fn clock() -> impl Strategy<Value = Clock> {
    prop_oneof![
        6 => Just(Clock::Step(0.0)),
        6 => prop::sample::select(vec![0.25, 0.5, 1.0, 2.5, 5.0, 10.0]).prop_map(Clock::Step),
        4 => job().prop_map(Clock::ToUntilOf),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY])
            .prop_map(Clock::NonFinite),
    ]
}

fn ttl() -> impl Strategy<Value = f64> {
    prop_oneof![
        40 => prop::sample::select(vec![0.25, 0.5, 1.0, 2.5, 5.0, 10.0]),
        1 => Just(0.0),
        1 => Just(-0.0),
        1 => prop::sample::select(vec![-1.0, -10.0, -f64::MIN_POSITIVE]),
        1 => Just(5e-324),
        1 => prop::sample::select(vec![f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MAX]),
    ]
}

fn fence_sel() -> impl Strategy<Value = FenceSel> {
    prop_oneof![
        1 => Just(FenceSel::Zero),
        1 => Just(FenceSel::One),
        2 => Just(FenceSel::CurrentMinus1),
        10 => Just(FenceSel::Current),
        2 => Just(FenceSel::CurrentPlus1),
        1 => any::<i64>().prop_map(FenceSel::Any),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let result = prop::sample::select(vec![None, Some("r"), Some(""), Some("x\"y")]);
    prop_oneof![
        6 => (job(), run_at(), prop::sample::select(vec![None, None, Some("p"), Some("")]))
            .prop_map(|(j, t, p)| Op::Enqueue(j, t, p)),
        3 => (job(), owner_sel(), fence_sel(), clock(), run_at(),
              prop::sample::select(vec![None, Some("boom")]))
            .prop_map(|(j, o, f, c, t, e)| Op::Fail(j, o, f, c, t, e)),
        2 => (job(), clock()).prop_map(|(j, c)| Op::Revive(j, c)),
        1 => job().prop_map(Op::Inspect),
        1 => job().prop_map(Op::State),
        6 => (job(), owner(), clock(), ttl()).prop_map(|(j, o, c, t)| Op::Claim(j, o, c, t)),
        4 => (job(), owner_sel(), fence_sel(), clock(), ttl())
            .prop_map(|(j, o, f, c, t)| Op::Renew(j, o, f, c, t)),
        4 => (job(), owner_sel(), fence_sel(), clock(), result)
            .prop_map(|(j, o, f, c, r)| Op::Complete(j, o, f, c, r)),
        3 => (job(), owner_sel(), fence_sel()).prop_map(|(j, o, f)| Op::Release(j, o, f)),
        4 => (owner(), clock(), ttl()).prop_map(|(o, c, t)| Op::ClaimNext(o, c, t)),
    ]
}

/// The first `now`: zero, negative (a fresh job's `until = 0` is then a live lease held by
/// nobody), ordinary, and 2^53 where a step of 0.5 no longer moves the clock.
fn start() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![0.0, -3.0, 100.0, 1e9 + 0.25, 9_007_199_254_740_992.0])
}

/// Turns a generated operation into concrete arguments, using the model to find current owners,
/// fences and lease ends. Advances the caller's clock.
fn resolve(op: &Op, model: &Model, clock_now: &mut f64) -> Req {
    let mut tick = |c: &Clock| -> f64 {
        match c {
            Clock::Step(dt) => {
                *clock_now += dt;
                *clock_now
            }
            Clock::ToUntilOf(j) => {
                if let Some(row) = model.rows.get(JOBS[*j]) {
                    *clock_now = clock_now.max(row.until);
                }
                *clock_now
            }
            Clock::NonFinite(x) => *x,
        }
    };
    let current_fence = |j: usize| model.rows.get(JOBS[j]).map_or(0, |r| r.fence);
    let fence = |j: usize, f: &FenceSel| match f {
        FenceSel::Zero => 0,
        FenceSel::One => 1,
        FenceSel::CurrentMinus1 => current_fence(j).wrapping_sub(1),
        FenceSel::Current => current_fence(j),
        FenceSel::CurrentPlus1 => current_fence(j).wrapping_add(1),
        FenceSel::Any(x) => *x,
    };
    let owner = |j: usize, o: &OwnerSel| match o {
        OwnerSel::Fixed(i) => OWNERS[*i].to_string(),
        OwnerSel::Current => model
            .rows
            .get(JOBS[j])
            .and_then(|r| r.owner.clone())
            .unwrap_or_else(|| OWNERS[0].to_string()),
    };
    let later = |now: f64, t: &RunAt| match t {
        RunAt::None => None,
        RunAt::In(dt) => Some(now + dt),
        RunAt::NonFinite(x) => Some(*x),
    };
    match op {
        Op::Enqueue(j, t, payload) => Req::Enqueue {
            job: JOBS[*j].into(),
            run_at: later(*clock_now, t),
            payload: payload.map(str::to_string),
        },
        Op::Fail(j, o, f, c, t, error) => {
            let (owner, fence) = (owner(*j, o), fence(*j, f));
            let now = tick(c);
            Req::Fail {
                job: JOBS[*j].into(),
                owner,
                fence,
                now,
                // At least one finite moment from now, or dead.
                retry_at: match t {
                    RunAt::None => None,
                    t => later(if now.is_finite() { now } else { 0.0 }, t),
                },
                error: error.map(str::to_string),
            }
        }
        Op::Revive(j, c) => Req::Revive {
            job: JOBS[*j].into(),
            now: tick(c),
        },
        Op::Inspect(j) => Req::Inspect {
            job: JOBS[*j].into(),
        },
        Op::State(j) => Req::State {
            job: JOBS[*j].into(),
        },
        Op::Claim(j, o, c, ttl) => Req::Claim {
            job: JOBS[*j].into(),
            owner: OWNERS[*o].into(),
            now: tick(c),
            ttl: *ttl,
        },
        Op::Renew(j, o, f, c, ttl) => Req::Renew {
            job: JOBS[*j].into(),
            owner: owner(*j, o),
            fence: fence(*j, f),
            now: tick(c),
            ttl: *ttl,
        },
        Op::Complete(j, o, f, c, result) => Req::Complete {
            job: JOBS[*j].into(),
            owner: owner(*j, o),
            fence: fence(*j, f),
            now: tick(c),
            result: result.map(str::to_string),
        },
        Op::Release(j, o, f) => Req::Release {
            job: JOBS[*j].into(),
            owner: owner(*j, o),
            fence: fence(*j, f),
        },
        Op::ClaimNext(o, c, ttl) => Req::ClaimNext {
            owner: OWNERS[*o].into(),
            now: tick(c),
            ttl: *ttl,
        },
    }
}

fn run_sequence(start: f64, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model = Model::default();
    let api = LeaseStore::open_in_memory().unwrap();
    let mut proto = Memory(LeaseStore::open_in_memory().unwrap());
    // The group commit's store, on a connection of its own: answers as a plain store's, each
    // step in a group with a neighbour.
    let shared = SharedStore::new(LeaseStore::open_in_memory().unwrap());
    let mut now = start;
    for (i, op) in ops.iter().enumerate() {
        let req = resolve(op, &model, &mut now);
        let want = model.apply(&req);
        let got = run_api(&api, &req);
        prop_assert_eq!(&got, &want, "step {}: {:?} (Rust API)", i, req);
        let got = run_in_a_group(&shared, &req);
        prop_assert_eq!(&got, &want, "step {}: {:?} (shared store)", i, req);
        let line = request_line(&req);
        let response = respond(&mut proto, &line).to_json();
        check_protocol(&line, &response, &want)?;
        let table = model.table();
        prop_assert_eq!(
            api.jobs().unwrap(),
            table.clone(),
            "step {}: table after {:?} (Rust API)",
            i,
            req
        );
        prop_assert_eq!(
            shared.jobs().unwrap(),
            table.clone(),
            "step {}: table after {:?} (shared store)",
            i,
            req
        );
        prop_assert_eq!(
            proto.0.jobs().unwrap(),
            table,
            "step {}: table after {} (protocol)",
            i,
            line
        );
    }
    // Final state of every job, read one by one through `state`.
    for job in JOBS {
        let want = model.rows.get(job).map(|row| JobState {
            id: job.into(),
            owner: row.owner.clone(),
            until: row.until,
            fence: row.fence,
            result: row.result.clone(),
            done: row.done,
        });
        prop_assert_eq!(
            api.state(job).unwrap(),
            want.clone(),
            "final state of {}",
            job
        );
        prop_assert_eq!(
            shared.state(job).unwrap(),
            want.clone(),
            "final state of {} (shared store)",
            job
        );
        prop_assert_eq!(proto.0.state(job).unwrap(), want, "final state of {}", job);
        let inspect = Req::Inspect { job: job.into() };
        let want = Ans::Value(model.inspect_json(job), None);
        prop_assert_eq!(
            run_api(&api, &inspect),
            want.clone(),
            "final inspect of {}",
            job
        );
        prop_assert_eq!(
            run_api(&shared, &inspect),
            want.clone(),
            "final inspect of {} (shared store)",
            job
        );
        prop_assert_eq!(
            run_api(&proto.0, &inspect),
            want,
            "final inspect of {}",
            job
        );
    }
    Ok(())
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(512)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_shrink_iters: 10_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn store_and_protocol_agree_with_the_model(
        start in start(),
        ops in prop::collection::vec(op(), 1..=60),
    ) {
        run_sequence(start, &ops)?;
    }
}

/// What a step exercised, for the coverage check below.
fn tags(req: &Req, before: &Model, ans: &Ans) -> Vec<String> {
    let op = match req {
        Req::Enqueue { .. } => "enqueue",
        Req::State { .. } => "state",
        Req::Claim { .. } => "claim",
        Req::Renew { .. } => "renew",
        Req::Complete { .. } => "complete",
        Req::Release { .. } => "release",
        Req::ClaimNext { .. } => "claim_next",
        Req::Fail { .. } => "fail",
        Req::Revive { .. } => "revive",
        Req::Inspect { .. } => "inspect",
    };
    let mut out = vec![match ans {
        Ans::Value(_, Some(reason)) => format!("{op}:{}", reason.code()),
        Ans::Value(Value::Null | Value::Bool(false), None) => format!("{op}:none"),
        Ans::Value(..) => format!("{op}:ok"),
        Ans::Invalid(arg) => format!("{op}:invalid_{arg}"),
        Ans::Failed(code) => format!("{op}:{code}"),
    }];
    let (job, now) = match req {
        Req::Claim { job, now, .. }
        | Req::Renew { job, now, .. }
        | Req::Complete { job, now, .. } => (job, *now),
        _ => return out,
    };
    if let Some(row) = before.rows.get(job) {
        if row.fence > 0 && row.until == now && !row.done {
            out.push(format!("{}:at_lease_end", out[0]));
        }
    }
    out
}

/// The generator must keep reaching every answer of the contract (every reason of every
/// operation, both invalid arguments, exact lease-end boundaries), or the property above would
/// pass vacuously. Runs the model only, on the same strategies.
#[test]
fn generated_sequences_reach_every_outcome() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(Config::default().rng_algorithm),
    );
    let strategy = (start(), prop::collection::vec(op(), 1..=60));
    let mut seen: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..cases() {
        let (start, ops) = strategy.new_tree(&mut runner).unwrap().current();
        let mut model = Model::default();
        let mut now = start;
        for op in &ops {
            let req = resolve(op, &model, &mut now);
            let before = Model {
                rows: model.rows.clone(),
                order: model.order.clone(),
            };
            let ans = model.apply(&req);
            for tag in tags(&req, &before, &ans) {
                *seen.entry(tag).or_default() += 1;
            }
        }
    }
    eprintln!("outcomes over {} sequences: {seen:#?}", cases());
    let expected = [
        "enqueue:ok",
        "enqueue:none",
        "state:ok",
        "state:none",
        "claim:ok",
        "claim:not_found",
        "claim:done",
        "claim:held",
        "claim:invalid_now",
        "claim:invalid_ttl",
        "claim:ok:at_lease_end",
        "renew:ok",
        "renew:not_found",
        "renew:done",
        "renew:stale_fence",
        "renew:not_owner",
        "renew:expired",
        "renew:invalid_now",
        "renew:invalid_ttl",
        "renew:expired:at_lease_end",
        "complete:ok",
        "complete:not_found",
        "complete:done",
        "complete:stale_fence",
        "complete:not_owner",
        "complete:expired",
        "complete:invalid_now",
        "complete:expired:at_lease_end",
        "release:ok",
        "release:not_found",
        "release:done",
        "release:stale_fence",
        "release:not_owner",
        "claim_next:ok",
        "claim_next:none",
        "claim_next:invalid_now",
        "claim_next:invalid_ttl",
        "claim:scheduled",
        "enqueue:invalid_run_at",
        "fail:ok",
        "fail:not_found",
        "fail:done",
        "fail:stale_fence",
        "fail:not_owner",
        "fail:expired",
        "fail:invalid_now",
        "fail:invalid_retry_at",
        "revive:ok",
        "revive:not_found",
        "revive:not_dead",
        "revive:invalid_now",
        "inspect:ok",
        "inspect:none",
    ];
    let missing: Vec<&str> = expected
        .iter()
        .copied()
        .filter(|tag| seen.get(*tag).copied().unwrap_or(0) < 3)
        .collect();
    assert!(
        missing.is_empty(),
        "never (or rarely) generated: {missing:?}"
    );
}

/// The model itself on the scenarios the README and SPEC spell out, so that a bug shared by the
/// model and the store cannot hide behind their agreement.
#[test]
fn model_matches_the_spec_examples() {
    let mut m = Model::default();
    let claim = |job: &str, owner: &str, now: f64, ttl: f64| Req::Claim {
        job: job.into(),
        owner: owner.into(),
        now,
        ttl,
    };
    assert_eq!(
        m.apply(&Req::Enqueue {
            job: "j".into(),
            run_at: None,
            payload: None
        }),
        Ans::Value(json!(true), None)
    );
    assert_eq!(
        m.apply(&claim("j", "A", 0.0, 10.0)),
        Ans::Value(json!(1), None)
    );
    assert_eq!(
        m.apply(&claim("j", "B", 5.0, 10.0)),
        Ans::Value(
            Value::Null,
            Some(Reason::Held {
                owner: Some("A".into()),
                until: 10.0
            })
        )
    );
    // now == until is claimable.
    assert_eq!(
        m.apply(&claim("j", "B", 10.0, 10.0)),
        Ans::Value(json!(2), None)
    );
    let complete = |owner: &str, fence, now| Req::Complete {
        job: "j".into(),
        owner: owner.into(),
        fence,
        now,
        result: Some("a".into()),
    };
    assert_eq!(
        m.apply(&complete("A", 1, 12.0)),
        Ans::Value(json!(false), Some(Reason::StaleFence { current: 2 }))
    );
    assert_eq!(
        m.apply(&complete("A", 2, 12.0)),
        Ans::Value(json!(false), Some(Reason::NotOwner))
    );
    assert_eq!(
        m.apply(&complete("B", 2, 20.0)),
        Ans::Value(json!(false), Some(Reason::Expired { until: 20.0 }))
    );
    assert_eq!(m.apply(&claim("j", "B", 0.0, 0.0)), Ans::Invalid("ttl"));
    assert_eq!(
        m.apply(&claim("j", "B", f64::NAN, 1.0)),
        Ans::Invalid("now")
    );
    assert_eq!(
        m.apply(&Req::ClaimNext {
            owner: "C".into(),
            now: 20.0,
            ttl: 1.0
        }),
        Ans::Value(json!({"job": "j", "fence": 3, "payload": null}), None)
    );
    assert_eq!(
        m.apply(&Req::Release {
            job: "j".into(),
            owner: "C".into(),
            fence: 3
        }),
        Ans::Value(json!(true), None)
    );
    assert_eq!(m.rows["j"].fence, 3, "release keeps the fence");
    assert_eq!((m.rows["j"].owner.clone(), m.rows["j"].until), (None, 0.0));
}

/// claim_next order, checked directly (the property test reaches it too, but rarely with ties).
#[test]
fn claim_next_orders_by_until_then_insertion() {
    let store = LeaseStore::open_in_memory().unwrap();
    let mut m = Model::default();
    for job in ["c", "a", "b", "d"] {
        store.enqueue(job).unwrap();
        m.enqueue(job, None, None);
    }
    // a: until 5, b: until 3, d: until 5 (after a), c: done.
    let script = [
        Req::Claim {
            job: "a".into(),
            owner: "x".into(),
            now: 0.0,
            ttl: 5.0,
        },
        Req::Claim {
            job: "b".into(),
            owner: "x".into(),
            now: 0.0,
            ttl: 3.0,
        },
        Req::Claim {
            job: "d".into(),
            owner: "x".into(),
            now: 0.0,
            ttl: 5.0,
        },
        Req::Claim {
            job: "c".into(),
            owner: "x".into(),
            now: 0.0,
            ttl: 5.0,
        },
        Req::Complete {
            job: "c".into(),
            owner: "x".into(),
            fence: 1,
            now: 1.0,
            result: None,
        },
    ];
    for req in &script {
        assert_eq!(run_api(&store, req), m.apply(req));
    }
    let next = |now| Req::ClaimNext {
        owner: "y".into(),
        now,
        ttl: 100.0,
    };
    let mut got = Vec::new();
    for now in [4.0, 4.0, 5.0, 5.0, 5.0] {
        let a = run_api(&store, &next(now));
        assert_eq!(a, m.apply(&next(now)));
        got.push(a);
    }
    let jobs: Vec<Value> = got
        .into_iter()
        .map(|a| match a {
            Ans::Value(v, _) => v.get("job").cloned().unwrap_or(Value::Null),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        jobs,
        [json!("b"), Value::Null, json!("a"), json!("d"), Value::Null]
    );
}

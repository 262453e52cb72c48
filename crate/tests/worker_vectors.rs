#![cfg(not(target_arch = "wasm32"))]
//! Runs the shared worker vectors (`tests/worker-vectors/*.json`, format in their README) against
//! the Rust [`Worker`] on a real SQLite file, on a [`ManualClock`]: the timeline's store calls go
//! through the JSON-lines protocol on a second connection (the rival's), exactly as the contract
//! vectors do, and each run's handler plays the vector's script for the job and attempt it is
//! given. Node and Chromium run the same files against `JobWorker`.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use leasefence::protocol::{respond, TargetBackend};
use leasefence::worker::{
    Backoff, CancelReason, Completion, ManualClock, StopHandle, Worker, WorkerOptions,
};
use leasefence::{OpenOptions, SqlValue, Statement};
use serde_json::{json, Map, Value};
use support::vectors::{check_step, json_files_in, same};

/// How long a step waits for the worker's other thread (a renew, a signal), in real time.
const PATIENCE: Duration = Duration::from_secs(5);

fn vector_files() -> Vec<PathBuf> {
    json_files_in("tests/worker-vectors")
}

fn seconds(value: &Value) -> Duration {
    Duration::from_secs_f64(value.as_f64().expect("seconds"))
}

fn options_of(worker: &Value, clock: &ManualClock) -> WorkerOptions {
    let backoff = &worker["backoff"];
    let backoff = if let Some(fixed) = backoff.get("fixed") {
        Backoff::Fixed(seconds(fixed))
    } else {
        let e = &backoff["exponential"];
        Backoff::exponential(seconds(&e["base"]), seconds(&e["max"]))
            .jitter(e["jitter"].as_f64().unwrap())
    };
    // JobWorker has no liveness rule: it renews while the handler runs, as Unbounded does.
    WorkerOptions::new(worker["owner"].as_str().unwrap())
        .ttl(worker["ttl"].as_f64().unwrap())
        .renew_every(worker["heartbeat_every"].as_f64().unwrap())
        .max_attempts(worker["max_attempts"].as_i64().unwrap())
        .backoff(backoff)
        .liveness(leasefence::worker::Liveness::Unbounded)
        .until_empty(true)
        .manual_clock(clock)
}

/// What the handler was told, as the vectors write it: `{code: "lease_lost", reason}` or
/// `{code: "stopped"}`.
fn signal_of(reason: &CancelReason) -> Value {
    match reason {
        CancelReason::Stopping => json!({"code": "stopped"}),
        CancelReason::Lost(reason) => json!({"code": "lease_lost", "reason": reason}),
        other => json!({"code": "lease_lost", "why": other.to_string()}),
    }
}

fn sql_value(param: &Value) -> SqlValue {
    match param {
        Value::String(text) => SqlValue::from(text.as_str()),
        Value::Number(n) if n.is_i64() => SqlValue::from(n.as_i64().unwrap()),
        Value::Number(n) => SqlValue::from(n.as_f64().unwrap()),
        Value::Bool(b) => SqlValue::from(*b),
        Value::Null => SqlValue::Null,
        other => panic!("a statement parameter cannot be {other}"),
    }
}

/// The job's lease end as the store has it (read through the protocol).
fn lease_end(rival: &mut TargetBackend, job: &str) -> Value {
    let line = json!({"op": "state", "job": job}).to_string();
    let answer: Value = serde_json::from_str(&respond(rival, &line).to_json()).unwrap();
    answer["value"]["until"].clone()
}

struct Play {
    clock: ManualClock,
    stop: StopHandle,
    db: PathBuf,
    script: Map<String, Value>,
    handled: Arc<Mutex<Vec<String>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

impl Play {
    /// Plays the script of one handler call; the completion, or the error to fail with. A step
    /// that does not hold is recorded as a problem (the worker discards what a handler says once
    /// its lease is lost, so an answer could not carry it).
    fn handle(&self, job: &leasefence::worker::Job) -> Result<Completion, String> {
        let key = format!("{}@{}", job.id, job.fence);
        self.handled.lock().unwrap().push(key.clone());
        let problem = |why: String| self.problems.lock().unwrap().push(format!("{key}: {why}"));
        let Some(actions) = self.script.get(&key).and_then(Value::as_array) else {
            problem("the handler ran, but the vector has no script for it".into());
            return Ok(Completion::new(None));
        };
        let mut rival = TargetBackend::new(&self.db, OpenOptions::new());
        for (index, action) in actions.iter().enumerate() {
            let action = action.as_object().expect("an action is an object");
            let (name, arg) = action.iter().next().expect("an action has a member");
            if action.contains_key("op") {
                if let Err(why) = check_step(&key, index, action, &mut rival) {
                    problem(why);
                }
                continue;
            }
            match name.as_str() {
                "job" => {
                    let seen = json!({"payload": job.payload, "fence": job.fence, "attempt": job.attempt()});
                    if !same(&seen, arg) {
                        problem(format!("expected the job {arg}, got {seen}"));
                    }
                }
                "clock" => self.clock.set(arg.as_f64().unwrap()),
                "await_lease_end" => {
                    let start = Instant::now();
                    while !same(&lease_end(&mut rival, &job.id), arg) {
                        if start.elapsed() > PATIENCE {
                            problem(format!(
                                "the lease end never became {arg}: {}",
                                lease_end(&mut rival, &job.id)
                            ));
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                "await_signal" => {
                    job.token.wait_timeout(PATIENCE);
                    let told = job.token.reason().map(|r| signal_of(&r));
                    if !told.as_ref().is_some_and(|told| same(told, arg)) {
                        problem(format!("expected to be told {arg}, was told {told:?}"));
                    }
                }
                "stop" => match arg.as_str() {
                    Some("graceful") => self.stop.stop(),
                    Some("interrupt") => self.stop.interrupt(),
                    other => panic!("unknown stop {other:?}"),
                },
                "return" => return Ok(Completion::new(arg.as_str().map(String::from))),
                "throw" => return Err(arg.as_str().unwrap().to_string()),
                "fenced" => {
                    let statements = arg["statements"].as_array().unwrap().iter().map(|st| {
                        let params = st["params"].as_array().unwrap().iter().map(sql_value);
                        Statement::new(st["sql"].as_str().unwrap(), params)
                    });
                    let result = arg["result"].as_str().map(String::from);
                    return Ok(Completion::fenced(statements, result));
                }
                other => panic!("{key}: unknown action {other}"),
            }
        }
        problem("the script ended without return, throw or fenced".into());
        Ok(Completion::new(None))
    }
}

fn read_vector(file: &Path) -> (String, Value) {
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let vector = serde_json::from_str(&std::fs::read_to_string(file).unwrap())
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    (name, vector)
}

fn run_vector(name: &str, vector: &Value) -> Result<usize, String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("worker-vector.db");
    let clock = ManualClock::new(vector["clock"].as_f64().unwrap());
    let mut worker = Worker::open(
        &db,
        &OpenOptions::new(),
        options_of(&vector["worker"], &clock),
    )
    .map_err(|e| format!("{name}: {e}"))?;
    let mut rival = TargetBackend::new(&db, OpenOptions::new());
    let timeline = vector["timeline"].as_array().unwrap();
    for (index, step) in timeline.iter().enumerate() {
        let step = step.as_object().unwrap();
        let at = format!("{name} step {index}");
        if step.contains_key("op") {
            check_step(name, index, step, &mut rival)?;
        } else if let Some(t) = step.get("clock") {
            clock.set(t.as_f64().unwrap());
        } else if let Some(run) = step.get("run") {
            assert_eq!(
                run["until_empty"], true,
                "{at}: runs end when nothing is claimable"
            );
            let play = Play {
                clock: clock.clone(),
                stop: worker.stop_handle(),
                db: db.clone(),
                script: step["handler"].as_object().cloned().unwrap_or_default(),
                handled: Arc::default(),
                problems: Arc::default(),
            };
            let counters = worker
                .run_fenced(|job| play.handle(job).map_err(Into::into))
                .map_err(|e| format!("{at}: the run failed: {e}"))?;
            let problems = play.problems.lock().unwrap().clone();
            if !problems.is_empty() {
                return Err(format!("{at}: {}", problems.join("\n  ")));
            }
            let handled = json!(*play.handled.lock().unwrap());
            if !same(&handled, &step["handled"]) {
                return Err(format!(
                    "{at}: handled {handled}, expected {}",
                    step["handled"]
                ));
            }
            let counters = serde_json::to_value(counters).unwrap();
            if !same(&counters, &step["counters"]) {
                return Err(format!(
                    "{at}: counters {counters}, expected {}",
                    step["counters"]
                ));
            }
        } else {
            panic!("{at}: unknown step {step:?}");
        }
    }
    Ok(timeline.len())
}

#[test]
fn every_worker_vector_passes_on_the_rust_worker() {
    let files = vector_files();
    assert!(
        files.len() >= 8,
        "expected the worker vectors, found {}",
        files.len()
    );
    let outcomes: BTreeMap<String, Result<usize, String>> = files
        .iter()
        .map(|f| {
            let (name, vector) = read_vector(f);
            let outcome = run_vector(&name, &vector);
            (name, outcome)
        })
        .collect();
    let failures: Vec<&String> = outcomes.values().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} worker vector(s) failed:\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Guards the runner itself: a vector whose expectations are off by one retry second, or that
/// expects a handler call the worker never makes, must fail.
#[test]
fn the_runner_catches_wrong_expectations() {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/worker-vectors/failures-backoff.json");
    let (name, vector) = read_vector(&file);
    assert!(run_vector(&name, &vector).is_ok());

    let mut late = vector.clone();
    late["timeline"][2]["expect"]["value"]["until"] = json!(1003);
    let error = run_vector(&name, &late).unwrap_err();
    assert!(error.contains("expected value"), "{error}");

    let mut extra = vector.clone();
    extra["timeline"][1]["handled"] = json!(["f@1", "f@2"]);
    let error = run_vector(&name, &extra).unwrap_err();
    assert!(error.contains("handled [\"f@1\"]"), "{error}");

    let mut wrong_text = vector;
    wrong_text["timeline"][1]["handler"]["f@1"][0]["throw"] = json!("boom 0");
    let error = run_vector(&name, &wrong_text).unwrap_err();
    assert!(error.contains("boom 0"), "{error}");
}

//! The runner of the shared contract vectors (`tests/vectors/*.json`, format in their README):
//! each step is one JSON-lines request sent through [`respond`] to any protocol [`Backend`], and
//! its response is checked against the step's `expect`. `vectors.rs` runs it on SQLite files,
//! `postgres.rs` on PostgreSQL schemas.

use std::path::{Path, PathBuf};

use leasefence::protocol::{respond, Backend, Response};
use serde_json::Value;

fn vector_files() -> Vec<PathBuf> {
    json_files_in("tests/vectors")
}

/// The `.json` files of a folder of the repository (`tests/vectors`, `tests/worker-vectors`), sorted.
pub fn json_files_in(folder: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

/// JSON equality where numbers compare by value (`10` equals `10.0`).
pub fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The request line of a step: every member but `expect` and `nonfinite`, with the members named
/// in `nonfinite` written as the bare tokens `NaN`, `Infinity`, `-Infinity`.
fn request_line(step: &serde_json::Map<String, Value>) -> String {
    let nonfinite = step.get("nonfinite").and_then(Value::as_object);
    let mut parts = Vec::new();
    // `sized`: texts given by their length in bytes, of `x`.
    if let Some(sized) = step.get("sized").and_then(Value::as_object) {
        for (key, size) in sized {
            let text = "x".repeat(size.as_u64().expect("a sized member is a byte count") as usize);
            parts.push(format!(
                "{}:{}",
                Value::String(key.clone()),
                Value::String(text)
            ));
        }
    }
    for (key, value) in step {
        if key == "expect" || key == "nonfinite" || key == "sized" {
            continue;
        }
        let text = match nonfinite.and_then(|n| n.get(key)).and_then(Value::as_str) {
            Some(token) => token.to_string(),
            None => value.to_string(),
        };
        parts.push(format!("{}:{text}", Value::String(key.clone())));
    }
    if let Some(nonfinite) = nonfinite {
        for (key, token) in nonfinite {
            if !step.contains_key(key) {
                parts.push(format!(
                    "{}:{}",
                    Value::String(key.clone()),
                    token.as_str().unwrap()
                ));
            }
        }
    }
    format!("{{{}}}", parts.join(","))
}

fn snapshot(backend: &mut dyn Backend) -> Vec<leasefence::JobState> {
    backend.leases().unwrap().jobs().unwrap()
}

pub fn check_step(
    file: &str,
    index: usize,
    step: &serde_json::Map<String, Value>,
    backend: &mut dyn Backend,
) -> Result<(), String> {
    let expect = step
        .get("expect")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{file} step {index}: no `expect`"))?;
    let line = request_line(step);
    let before = snapshot(backend);
    let response = respond(backend, &line);
    let got: Value = serde_json::from_str(&response.to_json()).unwrap();
    let fail = |why: String| Err(format!("{file} step {index}: {line}\n  {why}\n  got {got}"));
    if let Some(code) = expect.get("error") {
        if response.code() != code.as_str() {
            return fail(format!("expected error {code}"));
        }
        if snapshot(backend) != before {
            return fail("an error changed the database".into());
        }
        return Ok(());
    }
    let Response::Answered { value, .. } = &response else {
        return fail(format!("expected {}", Value::Object(expect.clone())));
    };
    if let Some(winners) = expect.get("winners") {
        let fence = &expect["fence"];
        let list = value.as_array().cloned().unwrap_or_default();
        let won = list.iter().filter(|v| !v.is_null()).count();
        if Some(won as u64) != winners.as_u64()
            || !list.iter().filter(|v| !v.is_null()).all(|v| same(v, fence))
        {
            return fail(format!("expected {winners} winner(s) with fence {fence}"));
        }
        return Ok(());
    }
    let want = expect
        .get("value")
        .ok_or_else(|| format!("{file} step {index}: expect has no value"))?;
    if !same(value, want) {
        return fail(format!("expected value {want}"));
    }
    if let Some(want_reason) = expect.get("reason") {
        if !got.get("reason").is_some_and(|r| same(r, want_reason)) {
            return fail(format!("expected reason {want_reason}"));
        }
    }
    if (value.is_null() || *value == Value::Bool(false)) && got.get("reason").is_none() {
        let op = step.get("op").and_then(Value::as_str).unwrap_or("");
        // Every refusal of a seed operation carries a reason (SPEC section 3).
        if matches!(op, "claim" | "renew" | "complete" | "release") {
            return fail("a refusal came without a reason".into());
        }
    }
    if got.get("reason").is_some() && !(value.is_null() || *value == Value::Bool(false)) {
        return fail("a reason came with a granted value".into());
    }
    Ok(())
}

/// Runs every vector, each on the fresh, empty backend that `fresh` makes for it (given the
/// vector's file name), stopping a vector at its first failing step. Returns the failures and
/// how many steps ran.
pub fn run_all(mut fresh: impl FnMut(&str) -> Box<dyn Backend>) -> (Vec<String>, usize) {
    let files = vector_files();
    assert!(
        files.len() >= 10,
        "expected the shared vectors, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    let mut steps = 0;
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let vector: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap())
            .unwrap_or_else(|e| panic!("{name} is not valid JSON: {e}"));
        let mut backend = fresh(&name);
        for (index, step) in vector["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .enumerate()
        {
            steps += 1;
            if let Err(why) = check_step(&name, index, step.as_object().unwrap(), &mut *backend) {
                failures.push(why);
                break;
            }
        }
    }
    (failures, steps)
}

#![cfg(not(target_arch = "wasm32"))]
//! Concurrency across real OS processes on one real SQLite file, through the CLI.
//!
//! - Several `leasefence batch --db FILE` processes, each driven over stdin/stdout JSON lines by
//!   its own thread, run a mixed workload of claims, `claim_next`, renewals, releases and
//!   completes on a shared logical clock with short leases, where some workers deliberately stall
//!   past their lease. Checked: no fence is handed out twice, fences grow in real-time order, at
//!   most one complete per job succeeds, a stale complete is always refused and never changes the
//!   stored result, the final rows match what the successful operations did, and the file passes
//!   `PRAGMA integrity_check`.
//! - Many one-shot `leasefence claim` processes started at once on one fresh job: exactly one
//!   gets fence 1, every other one exits 1 with reason `held` naming the winner.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use leasefence::LeaseStore;
use serde_json::{json, Value};
use support::batch::{bin, Batch};
use support::workload::{self, EPOCHS, JOBS};

/// How many `leasefence batch` processes (one driving thread each) share the file.
const THREADS: usize = 5;

#[test]
fn batch_processes_with_stalls_never_break_fencing() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("processes.db");
    let tally = workload::run(&db, THREADS, Batch::spawn);
    eprintln!(
        "processes: {EPOCHS} runs x {THREADS} batch processes x {JOBS} jobs in {:?}: {tally:?}",
        started.elapsed()
    );
    tally.assert_exercised(30, &["stale_fence", "expired", "not_owner"]);

    let conn = workload::assert_integrity(&db);
    let (rows, done): (i64, i64) = conn
        .query_row("SELECT count(*), sum(done) FROM jobs", [], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .unwrap();
    assert_eq!(
        (rows, done),
        ((EPOCHS * JOBS) as i64, (EPOCHS * JOBS) as i64)
    );
}

/// Runs `leasefence --db DB ARGS...` once per argument list, all started before any is waited
/// for, and returns each one's exit code and parsed output line.
fn run_at_once(db: &Path, runs: &[Vec<String>]) -> Vec<(i32, Value)> {
    let children: Vec<Child> = runs
        .iter()
        .map(|args| {
            Command::new(bin())
                .arg("--db")
                .arg(db)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn leasefence")
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8(out.stdout).unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                stdout.lines().count(),
                1,
                "stdout {stdout:?}, stderr {stderr:?}"
            );
            let value: Value = serde_json::from_str(&stdout)
                .unwrap_or_else(|err| panic!("{err}: {stdout:?}, stderr {stderr:?}"));
            (out.status.code().expect("exited normally"), value)
        })
        .collect()
}

#[test]
fn one_shot_claims_at_once_have_exactly_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("oneshot.db");
    let store = LeaseStore::open(&db).unwrap();
    for round in 0..4 {
        let job = format!("race-{round}");
        assert!(store.enqueue(&job).unwrap());
        let runs: Vec<Vec<String>> = (0..8)
            .map(|k| {
                [
                    "claim",
                    &job,
                    "--owner",
                    &format!("p{k}"),
                    "--ttl",
                    "60",
                    "--now",
                    "0",
                ]
                .map(String::from)
                .to_vec()
            })
            .collect();
        let results = run_at_once(&db, &runs);
        let winners: Vec<usize> = (0..results.len()).filter(|&k| results[k].0 == 0).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let winner = format!("p{}", winners[0]);
        for (k, (code, value)) in results.iter().enumerate() {
            if k == winners[0] {
                assert_eq!(value, &json!({"value": 1}), "round {round}");
            } else {
                assert_eq!(*code, 1, "round {round}, p{k}: {value}");
                assert_eq!(
                    value,
                    &json!({"value": null, "reason": {"code": "held", "owner": winner, "until": 60.0}}),
                    "round {round}, p{k}"
                );
            }
        }
        let row = store.state(&job).unwrap().unwrap();
        assert_eq!(
            (row.owner.as_deref(), row.fence, row.until),
            (Some(winner.as_str()), 1, 60.0)
        );
    }
}

/// Every process finds no database and sets it up at the same time; the job is inserted once and
/// no process fails.
///
/// Regression: switching a new file to WAL gets `SQLITE_BUSY` at once, without the busy handler,
/// when another connection converts it too; the open must wait (up to the busy timeout) instead
/// of failing with "database is locked".
#[test]
fn one_shot_enqueues_on_a_new_file_create_it_once() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("fresh.db");
        let runs: Vec<Vec<String>> = (0..8)
            .map(|_| vec!["enqueue".to_string(), "only-job".to_string()])
            .collect();
        let results = run_at_once(&db, &runs);
        let inserted = results.iter().filter(|(code, _)| *code == 0).count();
        assert_eq!(inserted, 1, "round {round}: {results:?}");
        for (code, value) in &results {
            let expected = if *code == 0 {
                json!({"value": true})
            } else {
                json!({"value": false})
            };
            assert!(*code <= 1, "round {round}: {results:?}");
            assert_eq!(value, &expected, "round {round}");
        }
        let rows = LeaseStore::open(&db).unwrap().jobs().unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            (rows[0].id.as_str(), rows[0].fence, rows[0].done),
            ("only-job", 0, false)
        );
    }
}

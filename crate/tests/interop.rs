#![cfg(not(target_arch = "wasm32"))]
//! SPEC section 1: a database written by leasefence stays readable and writable by another SQLite
//! program following the contract, and the other way round. The other program is Python's
//! `sqlite3` running the seed module in `tests/interop/seed.py`.
//!
//! Python runs as a child process: the steps to run come in as JSON on argv, the answers go back
//! as one JSON document on stdout. Steps and their expected answers are stated here, in Rust.

#[path = "support/cli_bin.rs"]
mod cli_bin;

use std::path::{Path, PathBuf};
use std::process::Command;

use leasefence::{JobState, Lease, LeaseStore, Outcome, Reason};
use rusqlite::Connection;
use serde_json::{json, Value};

fn interop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/interop")
}

/// Runs `steps` (a JSON list of `[function, [args after the path]]`) against the seed module on
/// `db` and returns `{"results": [...], "states": {id: state}, "integrity": ..., "journal": ...}`,
/// the states read after the steps for the ids in `read`.
const RUNNER: &str = r#"
import json, sqlite3, sys
from contextlib import closing
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import seed
db, steps, read = sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
results = []
for name, args in steps:
    fn = getattr(seed, name)
    try:
        results.append({"value": fn(db, *args)})
    except ValueError as exc:
        results.append({"error": "ValueError", "message": str(exc)})
states = {job: seed.state(db, job) for job in read}
with closing(sqlite3.connect(db)) as conn:
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    ids = [r[0] for r in conn.execute("SELECT id FROM jobs ORDER BY rowid")]
print(json.dumps({"results": results, "states": states, "integrity": integrity,
                  "journal": journal, "ids": ids}))
"#;

struct PyRun {
    results: Vec<Value>,
    states: serde_json::Map<String, Value>,
    integrity: String,
    journal: String,
    ids: Vec<String>,
}

fn python(db: &Path, steps: &[(&str, Value)], read: &[&str]) -> PyRun {
    let steps: Vec<Value> = steps.iter().map(|(f, a)| json!([f, a])).collect();
    let output = Command::new("python3")
        .arg("-c")
        .arg(RUNNER)
        .arg(interop_dir())
        .arg(db)
        .arg(Value::from(steps).to_string())
        .arg(json!(read).to_string())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONIOENCODING", "utf-8")
        .output()
        .expect("cannot run python3");
    assert!(
        output.status.success(),
        "python failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let out: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "python printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    PyRun {
        results: out["results"].as_array().unwrap().clone(),
        states: out["states"].as_object().unwrap().clone(),
        integrity: out["integrity"].as_str().unwrap().to_string(),
        journal: out["journal"].as_str().unwrap().to_string(),
        ids: out["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
    }
}

/// A state dict from Python, strictly typed: until a float, fence an int, done a bool.
fn py_state(value: &Value) -> Option<JobState> {
    if value.is_null() {
        return None;
    }
    let obj = value.as_object().expect("state is a dict");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["done", "fence", "id", "owner", "result", "until"]);
    let opt_str = |v: &Value| match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => panic!("expected a string or null, got {other}"),
    };
    assert!(obj["until"].is_f64(), "until is a float: {value}");
    assert!(obj["fence"].is_i64(), "fence is an int: {value}");
    Some(JobState {
        id: obj["id"].as_str().unwrap().to_string(),
        owner: opt_str(&obj["owner"]),
        until: obj["until"].as_f64().unwrap(),
        fence: obj["fence"].as_i64().unwrap(),
        result: opt_str(&obj["result"]),
        done: obj["done"].as_bool().expect("done is a bool"),
    })
}

fn job(
    id: &str,
    owner: Option<&str>,
    until: f64,
    fence: i64,
    result: Option<&str>,
    done: bool,
) -> JobState {
    JobState {
        id: id.into(),
        owner: owner.map(Into::into),
        until,
        fence,
        result: result.map(Into::into),
        done,
    }
}

fn cli(db: &Path, args: &[&str]) -> (i32, Value) {
    let output = Command::new(cli_bin::bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LEASEFENCE_DB")
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let value = serde_json::from_str(text.trim_end())
        .unwrap_or_else(|e| panic!("leasefence {args:?} printed {text:?}: {e}"));
    (output.status.code().unwrap(), value)
}

fn integrity(db: &Path) -> String {
    let conn = Connection::open(db).unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

fn check_results(run: &PyRun, steps: &[(&str, Value)], expected: &[Value]) {
    assert_eq!(run.results.len(), steps.len());
    for ((step, got), want) in steps.iter().zip(&run.results).zip(expected) {
        assert_eq!(&got["value"], want, "python step {step:?} answered {got}");
    }
}

const RUST_RESULT: &str = "résultat ✓ 日本語 😀 \"quoted\" \\ tab\t newline\n end";
const CLI_RESULT: &str = "CLI ✓ 完了 🦀";
const PY_RESULT: &str = "py ✓ 結果 🐍 \u{0}nul";
const ODD_ID: &str = "épsilon ✓ 😀";

#[test]
fn a_crate_database_is_read_and_continued_by_python_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crate.db");

    // --- The crate writes: library and CLI.
    let live = LeaseStore::open(&db).unwrap();
    {
        let store = LeaseStore::open(&db).unwrap();
        for id in ["alpha", "beta", "gamma", "delta"] {
            assert!(store.enqueue(id).unwrap());
        }
        assert!(!store.enqueue("alpha").unwrap());
        assert_eq!(
            store.claim("alpha", "rust-a", 100.0, 10.0).unwrap(),
            Outcome::Granted(1)
        );
        assert_eq!(
            store.claim("beta", "rust-b", 100.0, 50.0).unwrap(),
            Outcome::Granted(1)
        );
        assert!(store
            .complete(&Lease::new("beta", "rust-b", 1), 120.0, Some(RUST_RESULT))
            .unwrap()
            .is_granted());
        assert_eq!(
            store.claim("gamma", "rust-c", 100.0, 30.0).unwrap(),
            Outcome::Granted(1)
        );
        assert!(store
            .release(&Lease::new("gamma", "rust-c", 1))
            .unwrap()
            .is_granted());
    }
    assert_eq!(cli(&db, &["enqueue", ODD_ID]), (0, json!({"value": true})));
    assert_eq!(
        cli(
            &db,
            &["claim", ODD_ID, "--owner", "cli", "--ttl", "5", "--now", "100"]
        ),
        (0, json!({"value": 1}))
    );
    assert_eq!(cli(&db, &["enqueue", "zeta"]), (0, json!({"value": true})));
    assert_eq!(
        cli(
            &db,
            &["claim", "zeta", "--owner", "cli-z", "--ttl", "60", "--now", "100"]
        ),
        (0, json!({"value": 1}))
    );
    let complete = [
        "complete", "zeta", "--owner", "cli-z", "--fence", "1", "--now", "101",
    ];
    let (code, value) = cli(&db, &[&complete[..], &["--result", CLI_RESULT]].concat());
    assert_eq!((code, value), (0, json!({"value": true})));

    let ids = ["alpha", "beta", "gamma", "delta", ODD_ID, "zeta"];
    let written = vec![
        job("alpha", Some("rust-a"), 110.0, 1, None, false),
        job("beta", Some("rust-b"), 150.0, 1, Some(RUST_RESULT), true),
        job("gamma", None, 0.0, 1, None, false),
        job("delta", None, 0.0, 0, None, false),
        job(ODD_ID, Some("cli"), 105.0, 1, None, false),
        job("zeta", Some("cli-z"), 160.0, 1, Some(CLI_RESULT), true),
    ];
    for want in &written {
        assert_eq!(
            live.state(&want.id).unwrap().as_ref(),
            Some(want),
            "crate view"
        );
    }

    // --- Python reads exactly those states, then continues the contract.
    let steps: Vec<(&str, Value)> = vec![
        ("state", json!(["no such job"])),
        ("claim", json!(["alpha", "py", 105.0, 10.0])), // held until 110
        ("claim", json!(["alpha", "py", 110.0, 10.0])), // now == until: claimable, fence 2
        ("complete", json!(["alpha", "rust-a", 1, 111.0, "stale"])),
        ("renew", json!(["alpha", "rust-a", 1, 111.0, 10.0])),
        ("release", json!(["alpha", "rust-a", 1])),
        ("complete", json!(["alpha", "py", 2, 111.0, PY_RESULT])),
        ("claim", json!(["beta", "py", 1000.0, 10.0])), // done
        ("complete", json!(["beta", "rust-b", 1, 121.0, "overwrite"])),
        ("claim", json!(["gamma", "py", 100.0, 100.0])), // released: fence kept, so 2
        ("release", json!(["gamma", "rust-c", 1])),
        ("renew", json!(["gamma", "py", 2, 150.0, 100.0])), // until 250
        ("claim", json!([ODD_ID, "py", 105.0, 5.0])),       // CLI lease ended at 105
        ("enqueue", json!(["alpha"])),
        ("enqueue", json!(["eta"])),
        (
            "claim_many",
            json!(["delta", ["p1", "p2", "p3", "p4"], 200.0, 10.0]),
        ),
        ("claim", json!(["alpha", "py", 1.0, 0.0])), // ValueError, nothing changes
    ];
    let before_py = python(&db, &[], &ids);
    for want in &written {
        let got = py_state(&before_py.states[&want.id]);
        assert_eq!(got.as_ref(), Some(want), "python reads the crate's row");
    }
    assert_eq!(before_py.ids, ids, "insertion order");
    assert_eq!(
        before_py.journal, "wal",
        "the crate leaves its database in WAL"
    );

    let mut read = ids.to_vec();
    read.push("eta");
    let run = python(&db, &steps, &read);
    let claim_many = run.results[15]["value"].as_array().unwrap().clone();
    assert_eq!(claim_many.len(), 4);
    let winners: Vec<usize> = (0..4).filter(|&i| !claim_many[i].is_null()).collect();
    assert_eq!(winners.len(), 1, "exactly one owner wins: {claim_many:?}");
    assert_eq!(claim_many[winners[0]], json!(1));
    let winner = ["p1", "p2", "p3", "p4"][winners[0]];
    check_results(
        &run,
        &steps,
        &[
            Value::Null,
            Value::Null,
            json!(2),
            json!(false),
            json!(false),
            json!(false),
            json!(true),
            Value::Null,
            json!(false),
            json!(2),
            json!(false),
            json!(true),
            json!(2),
            json!(false),
            json!(true),
            Value::from(claim_many.clone()),
            Value::Null,
        ],
    );
    assert_eq!(run.results[16]["error"], "ValueError");
    assert_eq!(run.integrity, "ok");

    let after_py = vec![
        job("alpha", Some("py"), 120.0, 2, Some(PY_RESULT), true),
        job("beta", Some("rust-b"), 150.0, 1, Some(RUST_RESULT), true),
        job("gamma", Some("py"), 250.0, 2, None, false),
        job("delta", Some(winner), 210.0, 1, None, false),
        job(ODD_ID, Some("py"), 110.0, 2, None, false),
        job("zeta", Some("cli-z"), 160.0, 1, Some(CLI_RESULT), true),
        job("eta", None, 0.0, 0, None, false),
    ];
    for want in &after_py {
        assert_eq!(
            py_state(&run.states[&want.id]).as_ref(),
            Some(want),
            "python view"
        );
    }

    // --- The crate reads Python's writes: through the connection that stayed open (no
    // cache), through a fresh store, and through the CLI.
    let fresh = LeaseStore::open(&db).unwrap();
    for want in &after_py {
        assert_eq!(
            live.state(&want.id).unwrap().as_ref(),
            Some(want),
            "open store"
        );
        assert_eq!(
            fresh.state(&want.id).unwrap().as_ref(),
            Some(want),
            "fresh store"
        );
    }
    let ids_now: Vec<String> = fresh.jobs().unwrap().into_iter().map(|j| j.id).collect();
    assert_eq!(ids_now, read);
    let (code, value) = cli(&db, &["state", "alpha"]);
    assert_eq!(code, 0);
    assert_eq!(value["value"], serde_json::to_value(&after_py[0]).unwrap());
    drop(fresh);

    // --- And continues the contract on top of Python's writes.
    assert_eq!(
        live.complete(&Lease::new("alpha", "py", 2), 112.0, Some("again"))
            .unwrap(),
        Outcome::Rejected(Reason::Done)
    );
    assert_eq!(
        live.claim("gamma", "rust", 249.0, 10.0).unwrap(),
        Outcome::Rejected(Reason::Held {
            owner: Some("py".into()),
            until: 250.0
        })
    );
    assert_eq!(
        live.claim("gamma", "rust", 250.0, 10.0).unwrap(),
        Outcome::Granted(3)
    );
    assert_eq!(
        live.renew(&Lease::new("gamma", "py", 2), 251.0, 10.0)
            .unwrap(),
        Outcome::Rejected(Reason::StaleFence { current: 3 })
    );
    assert!(live
        .complete(&Lease::new("delta", winner, 1), 205.0, Some("by rust ✓"))
        .unwrap()
        .is_granted());
    // Claimable now: eta (until 0), ODD_ID (until 110), gamma (until 260); in that order.
    let next: Vec<(String, i64)> = (0..4)
        .filter_map(|_| live.claim_next("rust-next", 300.0, 10.0).unwrap())
        .map(|c| (c.job, c.fence))
        .collect();
    assert_eq!(
        next,
        [
            ("eta".to_string(), 1),
            (ODD_ID.to_string(), 3),
            ("gamma".to_string(), 4)
        ]
    );

    // --- Python sees the crate's latest writes.
    let last = python(
        &db,
        &[("complete", json!(["gamma", "rust", 3, 301.0, "stale"]))],
        &read,
    );
    assert_eq!(last.results[0]["value"], json!(false));
    for id in &read {
        assert_eq!(
            py_state(&last.states[*id]),
            live.state(id).unwrap(),
            "python reads the crate's row {id:?}"
        );
    }
    assert_eq!(
        py_state(&last.states["delta"]).unwrap().result.as_deref(),
        Some("by rust ✓")
    );
    assert_eq!(last.integrity, "ok");
    drop(live);
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn a_python_database_is_opened_and_continued_by_the_crate() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("python.db");
    let ids = ["a", "b", "c", "d", ODD_ID];
    let mut steps: Vec<(&str, Value)> = vec![("init_db", json!([]))];
    for id in ids {
        steps.push(("enqueue", json!([id])));
    }
    steps.extend([
        ("enqueue", json!(["a"])),
        ("claim", json!(["a", "py-a", 0.0, 10.0])),
        ("claim", json!(["b", "py-b", 0.0, 100.0])),
        ("complete", json!(["b", "py-b", 1, 1.0, PY_RESULT])),
        ("claim", json!(["c", "py-c", 0.0, 100.0])),
        ("release", json!(["c", "py-c", 1])),
        ("init_db", json!([])),
    ]);
    let run = python(&db, &steps, &ids);
    check_results(
        &run,
        &steps,
        &[
            Value::Null,
            json!(true),
            json!(true),
            json!(true),
            json!(true),
            json!(true),
            json!(false),
            json!(1),
            json!(1),
            json!(true),
            json!(1),
            json!(true),
            Value::Null,
        ],
    );
    assert_eq!(
        run.journal, "delete",
        "python left a rollback-journal database"
    );
    assert_eq!(run.ids, ids);
    let python_wrote = vec![
        job("a", Some("py-a"), 10.0, 1, None, false),
        job("b", Some("py-b"), 100.0, 1, Some(PY_RESULT), true),
        job("c", None, 0.0, 1, None, false),
        job("d", None, 0.0, 0, None, false),
        job(ODD_ID, None, 0.0, 0, None, false),
    ];
    for want in &python_wrote {
        assert_eq!(py_state(&run.states[&want.id]).as_ref(), Some(want));
    }
    let table_sql = |db: &Path| -> String {
        Connection::open(db)
            .unwrap()
            .query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'jobs'",
                [],
                |r| r.get(0),
            )
            .unwrap()
    };
    let python_table = table_sql(&db);

    // --- The crate accepts the schema and sees the same rows, through the CLI too.
    let (code, value) = cli(&db, &["state", "b"]);
    assert_eq!(code, 0);
    assert_eq!(
        value["value"],
        serde_json::to_value(&python_wrote[1]).unwrap()
    );
    let store = LeaseStore::open(&db).expect("a seed database is a leasefence database");
    assert_eq!(store.jobs().unwrap(), python_wrote);
    assert_eq!(
        table_sql(&db),
        python_table,
        "the crate did not rebuild the table"
    );

    // --- And continues it.
    assert_eq!(
        store.claim("a", "rust", 5.0, 10.0).unwrap(),
        Outcome::Rejected(Reason::Held {
            owner: Some("py-a".into()),
            until: 10.0
        })
    );
    assert_eq!(
        store.claim("a", "rust", 10.0, 10.0).unwrap(),
        Outcome::Granted(2)
    );
    assert_eq!(
        store
            .complete(&Lease::new("a", "py-a", 1), 11.0, Some("stale"))
            .unwrap(),
        Outcome::Rejected(Reason::StaleFence { current: 2 })
    );
    assert_eq!(
        store
            .complete(&Lease::new("b", "py-b", 1), 2.0, Some("x"))
            .unwrap(),
        Outcome::Rejected(Reason::Done)
    );
    assert_eq!(
        store.release(&Lease::new("c", "py-c", 1)).unwrap(),
        Outcome::Rejected(Reason::NotOwner)
    );
    assert_eq!(
        store.claim("c", "rust", 0.0, 5.0).unwrap(),
        Outcome::Granted(2)
    );
    let next = store.claim_next("rust-n", 0.0, 5.0).unwrap().unwrap();
    assert_eq!(
        (next.job.as_str(), next.fence),
        ("d", 1),
        "until, then insertion order"
    );
    let many = store
        .claim_many(ODD_ID, &["r1", "r2", "r3"], 0.0, 5.0)
        .unwrap();
    assert_eq!(many.iter().filter(|o| o.is_granted()).count(), 1);
    let won = many.iter().position(Outcome::is_granted).unwrap();
    assert!(store
        .complete(&Lease::new("a", "rust", 2), 12.0, Some(RUST_RESULT))
        .unwrap()
        .is_granted());
    let crate_wrote = vec![
        job("a", Some("rust"), 20.0, 2, Some(RUST_RESULT), true),
        python_wrote[1].clone(),
        job("c", Some("rust"), 5.0, 2, None, false),
        job("d", Some("rust-n"), 5.0, 1, None, false),
        job(ODD_ID, Some(["r1", "r2", "r3"][won]), 5.0, 1, None, false),
    ];
    assert_eq!(store.jobs().unwrap(), crate_wrote);

    // --- Python reads the crate's writes (the store is still open) and continues again.
    let steps: Vec<(&str, Value)> = vec![
        ("claim", json!(["a", "py", 100.0, 10.0])),
        ("complete", json!(["c", "py-c", 1, 1.0, "stale"])),
        ("claim", json!(["c", "py", 4.0, 10.0])),
        ("claim", json!(["c", "py", 5.0, 10.0])),
        ("complete", json!(["c", "py", 3, 6.0, "py done"])),
        ("renew", json!(["d", "rust-n", 1, 4.0, 10.0])),
    ];
    let run = python(&db, &steps, &ids);
    check_results(
        &run,
        &steps,
        &[
            Value::Null,
            json!(false),
            Value::Null,
            json!(3),
            json!(true),
            json!(true),
        ],
    );
    assert_eq!(
        run.journal, "wal",
        "the crate switched the file to WAL; python copes"
    );
    for want in &crate_wrote {
        if want.id == "c" || want.id == "d" {
            continue;
        }
        assert_eq!(py_state(&run.states[&want.id]).as_ref(), Some(want));
    }
    assert_eq!(
        store.state("c").unwrap(),
        Some(job("c", Some("py"), 15.0, 3, Some("py done"), true))
    );
    assert_eq!(
        store.state("d").unwrap(),
        Some(job("d", Some("rust-n"), 14.0, 1, None, false))
    );
    assert_eq!(run.integrity, "ok");
    drop(store);
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn python_and_crate_racing_on_one_job_hand_out_one_fence() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("race.db");
    let store = LeaseStore::open(&db).unwrap();
    let jobs: Vec<String> = (0..4).map(|i| format!("race-{i}")).collect();
    for id in &jobs {
        store.enqueue(id).unwrap();
    }
    let py_owners: Vec<String> = (0..6).map(|i| format!("py-{i}")).collect();
    let rust_owners: Vec<String> = (0..6).map(|i| format!("rust-{i}")).collect();
    let steps: Vec<(&str, Value)> = jobs
        .iter()
        .map(|id| ("claim_many", json!([id, py_owners, 50.0, 10.0])))
        .collect();
    let read: Vec<&str> = jobs.iter().map(String::as_str).collect();
    let (run, rust) = std::thread::scope(|s| {
        let py = s.spawn(|| python(&db, &steps, &read));
        let owners: Vec<&str> = rust_owners.iter().map(String::as_str).collect();
        let rust: Vec<Vec<Option<i64>>> = jobs
            .iter()
            .map(|id| {
                store
                    .claim_many(id, &owners, 50.0, 10.0)
                    .unwrap()
                    .into_iter()
                    .map(Outcome::granted)
                    .collect()
            })
            .collect();
        (py.join().unwrap(), rust)
    });
    for (i, id) in jobs.iter().enumerate() {
        let py: Vec<Option<i64>> = run.results[i]["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(Value::as_i64)
            .collect();
        let granted: Vec<&str> = py_owners
            .iter()
            .zip(&py)
            .chain(rust_owners.iter().zip(&rust[i]))
            .filter(|(_, f)| f.is_some())
            .map(|(o, _)| o.as_str())
            .collect();
        assert_eq!(
            granted.len(),
            1,
            "{id}: one fence across both programs: {granted:?}"
        );
        let row = store.state(id).unwrap().unwrap();
        assert_eq!(
            (row.owner.as_deref(), row.fence),
            (Some(granted[0]), 1),
            "{id}"
        );
        let seen_by_python = py_state(&run.states[id.as_str()]).expect("python sees the job");
        if granted[0].starts_with("py-") {
            assert_eq!(seen_by_python.owner.as_deref(), Some(granted[0]), "{id}");
        }
    }
    drop(store);
    assert_eq!(integrity(&db), "ok");
}

/// Section 7 beside the seed: a job enqueued for later, one waiting to retry after `fail`, and a
/// dead one are refused by the seed's own `claim` until their time (the dead one for ever), and
/// once due the seed claims them with the next fence; a revived job is claimable by the seed.
#[test]
fn the_seed_never_claims_a_delayed_waiting_or_dead_job_early() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("lifecycle.db");
    {
        let store = LeaseStore::open(&db).unwrap();
        assert!(store.enqueue_with("later", Some(100.0), Some("p")).unwrap());
        store.enqueue("retry").unwrap();
        store.enqueue("poison").unwrap();
        assert!(store.claim("retry", "w", 0.0, 10.0).unwrap().is_granted());
        assert!(store
            .fail(&Lease::new("retry", "w", 1), 1.0, Some(50.0), Some("flaky"))
            .unwrap()
            .is_granted());
        assert!(store.claim("poison", "w", 0.0, 10.0).unwrap().is_granted());
        assert!(store
            .fail(&Lease::new("poison", "w", 1), 1.0, None, Some("bad"))
            .unwrap()
            .is_granted());
    }
    let early = [
        ("claim", json!(["later", "seed", 99.0, 5.0])),
        ("claim", json!(["retry", "seed", 49.0, 5.0])),
        ("claim", json!(["poison", "seed", 1e9, 5.0])),
        ("claim_many", json!(["later", ["s1", "s2"], 99.5, 5.0])),
    ];
    let run = python(&db, &early, &["later", "retry", "poison"]);
    for (step, result) in early.iter().zip(&run.results) {
        let refused = match step.0 {
            "claim_many" => json!([null, null]),
            _ => json!(null),
        };
        assert_eq!(result["value"], refused, "the seed claimed early: {step:?}");
    }
    let due = [
        ("claim", json!(["later", "seed", 100.0, 5.0])),
        ("claim", json!(["retry", "seed", 50.0, 5.0])),
    ];
    let run = python(&db, &due, &[]);
    assert_eq!(run.results[0]["value"], json!(1), "later, at its run_at");
    assert_eq!(run.results[1]["value"], json!(2), "retry, at its retry_at");
    assert_eq!(run.integrity, "ok");
    let store = LeaseStore::open(&db).unwrap();
    assert!(store.inspect("poison").unwrap().unwrap().dead);
    assert!(store.revive("poison", 10.0).unwrap().is_granted());
    let run = python(&db, &[("claim", json!(["poison", "seed", 10.0, 5.0]))], &[]);
    assert_eq!(
        run.results[0]["value"],
        json!(2),
        "a revived job, fence kept"
    );
    // The payload stayed with its job through the seed's writes.
    assert_eq!(
        store.inspect("later").unwrap().unwrap().payload.as_deref(),
        Some("p")
    );
}

/// Section 7 from the command line: each subcommand prints the protocol's response line and
/// exits 0 when granted, 1 when refused, 2 for bad usage.
#[test]
fn the_cli_delays_fails_revives_inspects_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");
    let run = |args: &[&str]| cli(&db, args);
    assert_eq!(
        run(&["enqueue", "r", "--run-at", "100", "--payload", "{\"n\":1}"]),
        (0, json!({"value": true}))
    );
    assert_eq!(
        run(&["claim", "r", "--owner", "w", "--ttl", "5", "--now", "99"]),
        (
            1,
            json!({"value": null, "reason": {"code": "scheduled", "until": 100.0}})
        )
    );
    let table = Command::new(cli_bin::bin())
        .args([
            "--db".as_ref(),
            db.as_os_str(),
            "jobs".as_ref(),
            "--now".as_ref(),
            "90".as_ref(),
        ])
        .output()
        .unwrap();
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("scheduled, in 10.0s"), "{table}");
    assert_eq!(
        run(&["claim-next", "--owner", "w", "--ttl", "5", "--now", "100"]),
        (
            0,
            json!({"value": {"job": "r", "fence": 1, "payload": "{\"n\":1}"}})
        )
    );
    // Neither --retry-at nor --dead: a usage error, nothing changes.
    let (code, _) = {
        let output = Command::new(cli_bin::bin())
            .args(["--db".as_ref(), db.as_os_str()])
            .args(["fail", "r", "--owner", "w", "--fence", "1", "--now", "101"])
            .output()
            .unwrap();
        (output.status.code().unwrap(), output.stderr)
    };
    assert_eq!(code, 2);
    assert_eq!(
        run(&[
            "fail", "r", "--owner", "w", "--fence", "1", "--now", "101", "--dead", "--error", "bad"
        ]),
        (0, json!({"value": true}))
    );
    assert_eq!(
        run(&["stats", "--now", "101"]),
        (
            0,
            json!({"value": {"queued": 0, "scheduled": 0, "leased": 0, "done": 0, "dead": 1}})
        )
    );
    let (code, report) = run(&["inspect", "r"]);
    assert_eq!(code, 0);
    assert_eq!(report["value"]["dead"], json!(true));
    assert_eq!(report["value"]["failures"][0]["error"], json!("bad"));
    assert_eq!(run(&["inspect", "ghost"]), (1, json!({"value": null})));
    assert_eq!(
        run(&["revive", "r", "--now", "102"]),
        (0, json!({"value": true}))
    );
    assert_eq!(
        run(&["revive", "r", "--now", "102"]),
        (1, json!({"value": false, "reason": {"code": "not_dead"}}))
    );
    assert_eq!(
        run(&["enqueue", "x", "--run-at", "NaN"]),
        (
            2,
            json!({"error": {"code": "invalid_argument", "message": "invalid argument `run_at`: must be a finite number of seconds (or null), got NaN"}})
        )
    );
}

/// The schema a leasefence before section 11 (queues and priorities) wrote: `jobs`, its claim
/// index and the side tables of section 7, no `leasefence_order`.
const SCHEMA_BEFORE_QUEUES: &str = "
CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0,
    fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);
CREATE INDEX leasefence_claimable ON jobs(until) WHERE done = 0;
CREATE TABLE leasefence_payloads(job TEXT PRIMARY KEY, payload TEXT NOT NULL);
CREATE TABLE leasefence_failures(job TEXT NOT NULL, fence INTEGER NOT NULL,
    at REAL NOT NULL, error TEXT);
CREATE INDEX leasefence_failures_of_job ON leasefence_failures(job);
CREATE TABLE leasefence_dead(job TEXT PRIMARY KEY, fence INTEGER NOT NULL, at REAL NOT NULL);";

/// Every job has its row in `leasefence_order`, in insertion order, whose copies of `until` and
/// claimability are the row's: what the triggers must keep whoever writes `jobs`.
fn assert_order_matches_jobs(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let mismatched: Vec<String> = conn
        .prepare(
            "SELECT j.id FROM jobs j LEFT JOIN leasefence_order o ON o.job = j.id \
             WHERE o.job IS NULL OR o.until IS NOT j.until \
                OR o.open IS NOT (j.done = 0 AND j.fence < 9223372036854775807) \
             UNION ALL SELECT o.job FROM leasefence_order o \
             WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = o.job)",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(
        mismatched.is_empty(),
        "leasefence_order disagrees with jobs on {mismatched:?}"
    );
    let by_rowid: Vec<String> = conn
        .prepare("SELECT id FROM jobs ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let by_seq: Vec<String> = conn
        .prepare("SELECT job FROM leasefence_order ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        by_seq, by_rowid,
        "leasefence_order's insertion order is not jobs' order"
    );
}

/// Section 11 on files written before it: a seed file and a file of an older leasefence open and
/// are upgraded in place (every job in queue "default" with priority 0, in its old claim order),
/// and afterwards the seed module keeps enqueueing, claiming, completing and releasing on the
/// upgraded file while leasefence claims by queue and priority around it.
#[test]
fn files_from_before_queues_are_upgraded_and_the_seed_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    // 1. A file only the seed ever wrote.
    let seed_db = dir.path().join("seed.db");
    let steps = [
        ("init_db", json!([])),
        ("enqueue", json!(["s1"])),
        ("enqueue", json!(["s2"])),
        ("enqueue", json!(["s3"])),
        ("claim", json!(["s1", "py", 0.0, 10.0])),
    ];
    let run = python(&seed_db, &steps, &[]);
    check_results(
        &run,
        &steps,
        &[Value::Null, json!(true), json!(true), json!(true), json!(1)],
    );
    // 2. A file an older leasefence wrote: its own schema, a payload, a delayed job.
    let old_db = dir.path().join("old.db");
    {
        let conn = Connection::open(&old_db).unwrap();
        conn.execute_batch(SCHEMA_BEFORE_QUEUES).unwrap();
        conn.execute_batch(
            "INSERT INTO jobs(id, until) VALUES ('o1', 0), ('o2', 5), ('o3', 0);
             INSERT INTO leasefence_payloads VALUES ('o2', 'payload of o2');",
        )
        .unwrap();
    }
    for db in [&seed_db, &old_db] {
        let store = LeaseStore::open(db).unwrap();
        assert_order_matches_jobs(db);
        for job in store.jobs().unwrap() {
            let report = store.inspect(&job.id).unwrap().unwrap();
            assert_eq!((report.queue.as_str(), report.priority), ("default", 0));
        }
        assert_eq!(integrity(db), "ok");
    }
    // The older file's jobs are claimed in their old order (until, then age), payload kept.
    let store = LeaseStore::open(&old_db).unwrap();
    let order: Vec<String> = store
        .claim_next_many("w", 3, 10.0, 5.0)
        .unwrap()
        .into_iter()
        .map(|c| c.job)
        .collect();
    assert_eq!(order, ["o1", "o3", "o2"]);
    assert_eq!(
        store.inspect("o2").unwrap().unwrap().payload.as_deref(),
        Some("payload of o2")
    );

    // 3. On the upgraded seed file: leasefence adds jobs in queues with priorities, the seed
    // works on them by id, and each side sees the other's writes.
    let store = LeaseStore::open(&seed_db).unwrap();
    assert!(store
        .enqueue_job(&leasefence::NewJob::new("mail-hi").queue("mail").priority(5))
        .unwrap());
    assert!(store
        .enqueue_job(&leasefence::NewJob::new("mail-lo").queue("mail"))
        .unwrap());
    let steps = [
        ("claim", json!(["mail-hi", "py", 1.0, 100.0])),
        ("enqueue", json!(["s4"])),
        (
            "complete",
            json!(["mail-hi", "py", 1, 2.0, "done by python"]),
        ),
        ("claim", json!(["s2", "py", 2.0, 100.0])),
        ("release", json!(["s2", "py", 1])),
        ("enqueue", json!(["mail-hi"])),
    ];
    let run = python(&seed_db, &steps, &["mail-hi", "s4"]);
    check_results(
        &run,
        &steps,
        &[
            json!(1),
            json!(true),
            json!(true),
            json!(1),
            json!(true),
            json!(false),
        ],
    );
    assert_order_matches_jobs(&seed_db);
    // The seed's job s4 is in the default queue; mail-hi is done (by the seed), so the mail
    // queue's next is mail-lo; the default queue goes by until, then age: s2 (released, until
    // 0), s3, s4, then s1 (its lease expired at 10).
    let report = store.inspect("s4").unwrap().unwrap();
    assert_eq!((report.queue.as_str(), report.priority), ("default", 0));
    let mail = store
        .claim_next_in(Some(&["mail"]), "w", 20.0, 30.0)
        .unwrap();
    assert_eq!(mail.map(|c| c.job).as_deref(), Some("mail-lo"));
    assert_eq!(
        store
            .claim_next_in(Some(&["mail"]), "w", 20.0, 30.0)
            .unwrap(),
        None
    );
    let rest: Vec<String> = store
        .claim_next_many("w", 10, 20.0, 30.0)
        .unwrap()
        .into_iter()
        .map(|c| c.job)
        .collect();
    assert_eq!(rest, ["s2", "s3", "s4", "s1"]);
    let hi = store.inspect("mail-hi").unwrap().unwrap();
    assert_eq!(hi.state.result.as_deref(), Some("done by python"));
    assert_eq!((hi.queue.as_str(), hi.priority), ("mail", 5));
    // The seed completes what leasefence claimed; the copies follow.
    let steps = [("complete", json!(["s3", "w", 1, 25.0, "py"]))];
    let run = python(&seed_db, &steps, &[]);
    check_results(&run, &steps, &[json!(true)]);
    assert_order_matches_jobs(&seed_db);
    assert_eq!(store.stats_in(Some("mail"), 25.0).unwrap().leased, 1);
    assert_eq!(store.stats_in(Some("default"), 25.0).unwrap().done, 1);
    assert_eq!(integrity(&seed_db), "ok");
}

/// The CLI's section 11 flags: `enqueue --queue --priority`, `claim-next --queue` (repeatable),
/// `stats --queue`, and `work --queue`, which runs only the jobs of the queues it serves,
/// highest priority first.
#[test]
fn the_cli_enqueues_claims_counts_and_works_by_queue() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli-queues.db");
    for args in [
        &["enqueue", "m-low", "--queue", "mail"][..],
        &["enqueue", "m-high", "--queue", "mail", "--priority", "7"],
        &["enqueue", "b-1", "--queue", "billing", "--priority", "-2"],
        &["enqueue", "d-1"],
    ] {
        assert_eq!(cli(&db, args), (0, json!({"value": true})), "{args:?}");
    }
    assert_eq!(
        cli(&db, &["enqueue", "x", "--queue", ""]).1["error"]["code"],
        "invalid_argument"
    );
    assert_eq!(
        cli(&db, &["stats", "--queue", "mail", "--now", "0"]),
        (
            0,
            json!({"value": {"queued": 2, "scheduled": 0, "leased": 0, "done": 0, "dead": 0}})
        )
    );
    let (_, claimed) = cli(
        &db,
        &[
            "claim-next",
            "--owner",
            "o",
            "--ttl",
            "5",
            "--now",
            "0",
            "--queue",
            "nobody",
            "--queue",
            "billing",
        ],
    );
    assert_eq!(claimed["value"]["job"], "b-1");
    // `work --queue mail` runs the mail jobs, highest priority first, and nothing else.
    let output = Command::new(cli_bin::bin())
        .arg("--db")
        .arg(&db)
        .args([
            "work",
            "--queue",
            "mail",
            "--until-empty",
            "--",
            "sh",
            "-c",
            "printf '%s' \"$LEASEFENCE_JOB\" >> \"$ORDER_FILE\"; echo >> \"$ORDER_FILE\"",
        ])
        .env("ORDER_FILE", dir.path().join("order.txt"))
        .env_remove("LEASEFENCE_DB")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let order = std::fs::read_to_string(dir.path().join("order.txt")).unwrap();
    assert_eq!(order, "m-high\nm-low\n");
    let store = LeaseStore::open(&db).unwrap();
    assert!(!store.state("d-1").unwrap().unwrap().done);
    assert_eq!(store.inspect("m-high").unwrap().unwrap().priority, 7);
}

#![cfg(not(target_arch = "wasm32"))]
//! The CLI's batch operations as real processes on real SQLite files: `enqueue --stdin` (100,000
//! jobs in transactions of up to 1024; a bad line anywhere adds nothing), and `claim-next-many`,
//! `renew-many`, `complete-many`.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};
use support::cli_bin::bin;

/// Runs `leasefence --db DB ARGS` with `input` on standard input: exit code, stdout, stderr.
fn leasefence(db: &Path, args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .env_remove("LEASEFENCE_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot start leasefence");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written on a thread: a child that answers before reading everything must not block us.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn value_of(stdout: &str) -> Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"))
}

fn job_ids(db: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut statement = conn.prepare("SELECT id FROM jobs ORDER BY rowid").unwrap();
    let ids = statement
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<Vec<String>, _>>()
        .unwrap();
    ids
}

fn ids_input(range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("job-{i}\n")).collect()
}

#[test]
fn a_hundred_thousand_ids_from_stdin_are_enqueued_in_order_and_again_only_counted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let input = ids_input(0..100_000);
    let started = Instant::now();
    let (code, out, err) = leasefence(&db, &["enqueue", "--stdin"], input.as_bytes());
    let took = started.elapsed();
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(
        value_of(&out),
        json!({"value": {"added": 100_000, "existed": 0}})
    );
    eprintln!("enqueue --stdin: 100,000 jobs in {took:?}");
    let ids = job_ids(&db);
    assert_eq!(ids.len(), 100_000);
    assert_eq!(
        (ids[0].as_str(), ids[99_999].as_str()),
        ("job-0", "job-99999")
    );

    // Half of these exist: only the rest is added, in input order after the others.
    let (code, out, err) = leasefence(
        &db,
        &["enqueue", "--stdin"],
        ids_input(50_000..150_000).as_bytes(),
    );
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(
        value_of(&out),
        json!({"value": {"added": 50_000, "existed": 50_000}})
    );
    let ids = job_ids(&db);
    assert_eq!((ids.len(), ids[100_000].as_str()), (150_000, "job-100000"));
}

#[test]
fn a_bad_line_anywhere_names_its_number_and_enqueues_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let (code, out, _) = leasefence(&db, &["enqueue", "before"], b"");
    assert_eq!((code, out.trim()), (0, r#"{"value":true}"#));
    // Line 5,001 is bad: the 5,000 good lines before it span several transactions' worth.
    for (bad, says) in [
        (r#"{"job": "x", "run_at": "soon"}"#, "run_at"),
        (r#"{"job": "x", "runAt": 5}"#, "runAt"),
        (r#"{"job": 7}"#, "job"),
        (r#"{"job": "x""#, "not valid JSON"),
    ] {
        let input = format!("{}{bad}\n{}", ids_input(0..5_000), ids_input(5_000..6_000));
        let (code, out, err) = leasefence(&db, &["enqueue", "--stdin"], input.as_bytes());
        assert_eq!(code, 2, "{out} {err}");
        let message = value_of(&out)["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(message.contains("line 5001 "), "{message}");
        assert!(message.contains(says), "{message} should name {says}");
        assert!(message.contains("nothing was enqueued"), "{message}");
        assert_eq!(job_ids(&db), ["before"], "a refused input changed the file");
    }
    // --stdin takes no id, run_at or payload of its own.
    let (code, _, err) = leasefence(&db, &["enqueue", "--stdin", "job"], b"a\n");
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = leasefence(&db, &["enqueue", "--stdin", "--payload", "p"], b"a\n");
    assert_eq!(code, 2, "{err}");
    assert_eq!(job_ids(&db), ["before"]);
}

#[test]
fn json_lines_carry_run_at_and_payload_and_the_batch_subcommands_answer_item_by_item() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let input = "plain\n{\"job\": \"later\", \"run_at\": 100, \"payload\": \"p\"}\r\n\n\
                 {\"job\": \"carry\", \"payload\": \"c\"}\nplain\n";
    let (code, out, err) = leasefence(&db, &["enqueue", "--stdin"], input.as_bytes());
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(value_of(&out), json!({"value": {"added": 3, "existed": 1}}));

    let claim = ["claim-next-many", "--owner", "w", "--n", "5"];
    let (code, out, err) = leasefence(
        &db,
        &[&claim[..], &["--ttl", "30", "--now", "0"]].concat(),
        b"",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        value_of(&out),
        json!({"value": [{"job": "plain", "fence": 1, "payload": null},
                         {"job": "carry", "fence": 1, "payload": "c"}]})
    );
    let (code, out, _) = leasefence(
        &db,
        &[&claim[..], &["--ttl", "30", "--now", "1"]].concat(),
        b"",
    );
    assert_eq!((code, value_of(&out)), (1, json!({"value": []})));
    let (code, out, _) = leasefence(
        &db,
        &[
            "claim-next-many",
            "--owner",
            "w",
            "--n",
            "1025",
            "--ttl",
            "30",
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert_eq!(value_of(&out)["error"]["code"], "invalid_argument");

    let leases = r#"[{"job": "plain", "fence": 1}, {"job": "carry", "fence": 2}]"#;
    let (code, out, _) = leasefence(
        &db,
        &[
            "renew-many",
            "--owner",
            "w",
            "--leases",
            leases,
            "--ttl",
            "60",
            "--now",
            "2",
        ],
        b"",
    );
    assert_eq!(code, 1, "one lease was refused");
    assert_eq!(
        value_of(&out),
        json!({"value": [{"value": true},
                         {"value": false, "reason": {"code": "stale_fence", "fence": 1}}]})
    );
    let done = r#"[{"job": "plain", "fence": 1, "result": "r"}, {"job": "carry", "fence": 1}]"#;
    let (code, out, _) = leasefence(
        &db,
        &[
            "complete-many",
            "--owner",
            "w",
            "--leases",
            done,
            "--now",
            "3",
        ],
        b"",
    );
    assert_eq!(
        (code, value_of(&out)),
        (0, json!({"value": [{"value": true}, {"value": true}]}))
    );
    let (code, out, _) = leasefence(
        &db,
        &[
            "complete-many",
            "--owner",
            "w",
            "--leases",
            "[{\"job\": \"plain\"}]",
            "--now",
            "3",
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert_eq!(value_of(&out)["error"]["code"], "bad_request");
    let (code, out, _) = leasefence(&db, &["inspect", "later"], b"");
    assert_eq!(code, 0);
    let inspection = value_of(&out);
    assert_eq!(
        (
            &inspection["value"]["payload"],
            &inspection["value"]["state"]["until"]
        ),
        (&json!("p"), &json!(100.0))
    );
}

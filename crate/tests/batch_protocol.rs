#![cfg(not(target_arch = "wasm32"))]
//! SPEC section 4, end to end: `leasefence batch --db FILE` as a long-lived child process. One
//! line in, exactly one response line out, flushed at once; every bad line gets one error with
//! the right code, changes nothing in the database (compared row by row, byte for byte), and the
//! process keeps serving.

#[path = "support/cells.rs"]
mod cells;
#[path = "support/cli_bin.rs"]
mod cli_bin;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use cells::{rows, Cell};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

/// A running `leasefence batch`; stdout is read on a thread so a missing response is a timeout,
/// never a hang.
struct Batch {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
}

impl Batch {
    fn start(db: &Path) -> Batch {
        let mut child = Command::new(cli_bin::bin())
            .arg("batch")
            .arg("--db")
            .arg(db)
            .env_remove("LEASEFENCE_DB")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start leasefence batch");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut line = Vec::new();
            match stdout.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        });
        Batch {
            child,
            stdin,
            lines,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin already closed");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// The next response line, without its newline; panics after TIMEOUT.
    fn read(&mut self) -> String {
        let line = self
            .lines
            .recv_timeout(TIMEOUT)
            .expect("no response line within the timeout (not flushed, or no answer)");
        assert_eq!(
            line.last(),
            Some(&b'\n'),
            "response line ends with a newline"
        );
        let text = String::from_utf8(line).expect("responses are UTF-8");
        let text = text.strip_suffix('\n').unwrap().to_string();
        assert!(!text.contains('\r') && !text.contains('\n'), "{text:?}");
        text
    }

    /// Sends `bytes` plus a newline and returns the one response line, parsed.
    fn send_raw(&mut self, bytes: &[u8]) -> Value {
        let mut line = bytes.to_vec();
        line.push(b'\n');
        self.write(&line);
        let text = self.read();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("response not JSON ({e}): {text}"))
    }

    fn send(&mut self, request: &Value) -> Value {
        self.send_raw(request.to_string().as_bytes())
    }

    /// Closes stdin, collects whatever is still printed, and waits for the exit.
    fn finish(mut self) -> (i32, Vec<String>) {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(TIMEOUT) {
            rest.push(String::from_utf8_lossy(&line).into_owned());
        }
        let status = self.child.wait().unwrap();
        (status.code().expect("killed by a signal"), rest)
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Checks that `response` is exactly `{"error": {"code": code, "message": non-empty}}`.
fn assert_error(response: &Value, code: &str, what: &str) {
    let obj = response
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {response}"));
    assert_eq!(
        obj.keys().collect::<Vec<_>>(),
        ["error"],
        "{what}: {response}"
    );
    let err = obj["error"].as_object().unwrap();
    let mut keys: Vec<&str> = err.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["code", "message"], "{what}: {response}");
    assert_eq!(err["code"], code, "{what}: {response}");
    let message = err["message"].as_str().unwrap();
    assert!(!message.trim().is_empty(), "{what}: empty message");
}

/// The whole `jobs` table with rowids, and the schema, read through a fresh connection.
#[derive(Debug, PartialEq)]
struct Snapshot {
    rows: Vec<Vec<Cell>>,
    schema: Vec<Vec<Cell>>,
    /// Section 7's side tables: payloads, failures, dead marks.
    side: Vec<Vec<Cell>>,
}

fn snapshot(db: &Path) -> Snapshot {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap();
    Snapshot {
        rows: rows(
            &conn,
            "SELECT rowid, id, owner, until, fence, result, done FROM jobs ORDER BY rowid",
        ),
        schema: rows(
            &conn,
            "SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name",
        ),
        side: rows(
            &conn,
            "SELECT 'payload', job, payload, NULL FROM leasefence_payloads \
             UNION ALL SELECT 'failure', job, fence, at || ' ' || coalesce(error, '-') \
             FROM leasefence_failures \
             UNION ALL SELECT 'dead', job, fence, at FROM leasefence_dead ORDER BY 1, 2, 3",
        ),
    }
}

/// A request line with `field` replaced by the raw JSON text `raw` (or removed when `None`),
/// other members in the order of `base`.
fn line_with(base: &Value, field: &str, raw: Option<&str>) -> String {
    let obj = base.as_object().unwrap();
    assert!(obj.contains_key(field), "{field} not in {base}");
    let parts: Vec<String> = obj
        .iter()
        .filter_map(|(k, v)| {
            let text = if k == field {
                raw?.to_string()
            } else {
                v.to_string()
            };
            Some(format!("{}:{text}", Value::String(k.clone())))
        })
        .collect();
    format!("{{{}}}", parts.join(","))
}

const DONE_RESULT: &str = "fin ✓ 😀";

/// free: never claimed; held: w1 holds fence 1 until 1000; done: completed; spare: untouched.
fn fixture(batch: &mut Batch) {
    assert_eq!(batch.send(&json!({"op": "init"})), json!({"value": null}));
    for id in ["free", "held", "done", "spare"] {
        assert_eq!(
            batch.send(&json!({"op": "enqueue", "job": id})),
            json!({"value": true})
        );
    }
    let claim = |job: &str, owner: &str| json!({"op": "claim", "job": job, "owner": owner, "now": 0, "ttl": 1000});
    assert_eq!(batch.send(&claim("held", "w1")), json!({"value": 1}));
    assert_eq!(batch.send(&claim("done", "w2")), json!({"value": 1}));
    let complete = json!({"op": "complete", "job": "done", "owner": "w2", "fence": 1, "now": 1, "result": DONE_RESULT});
    assert_eq!(batch.send(&complete), json!({"value": true}));
    // `spare` is dead (section 7), so that `revive` has something to bring back.
    assert_eq!(batch.send(&claim("spare", "w3")), json!({"value": 1}));
    let fail = json!({"op": "fail", "job": "spare", "owner": "w3", "fence": 1, "now": 1, "retry_at": null, "error": "poison"});
    assert_eq!(batch.send(&fail), json!({"value": true}));
}

fn probe() -> Value {
    json!({"op": "state", "job": "held"})
}

fn probe_answer() -> Value {
    json!({"value": {"id": "held", "owner": "w1", "until": 1000.0, "fence": 1, "result": null, "done": false}})
}

/// One valid request per op; each but `state` would change the fixture's database.
fn bases() -> Vec<Value> {
    vec![
        json!({"op": "enqueue", "job": "new-job"}),
        json!({"op": "state", "job": "held"}),
        json!({"op": "claim", "job": "free", "owner": "x", "now": 10, "ttl": 5}),
        json!({"op": "renew", "job": "held", "owner": "w1", "fence": 1, "now": 10, "ttl": 50}),
        json!({"op": "complete", "job": "held", "owner": "w1", "fence": 1, "now": 10, "result": "r"}),
        json!({"op": "release", "job": "held", "owner": "w1", "fence": 1}),
        json!({"op": "claim_many", "job": "free", "owners": ["x", "y"], "now": 10, "ttl": 5}),
        json!({"op": "claim_next", "owner": "x", "now": 10, "ttl": 5}),
        json!({"op": "enqueue", "job": "later-job", "run_at": 50, "payload": "p"}),
        json!({"op": "fail", "job": "held", "owner": "w1", "fence": 1, "now": 10, "retry_at": 20, "error": "e"}),
        json!({"op": "revive", "job": "spare", "now": 10}),
        json!({"op": "inspect", "job": "held"}),
        json!({"op": "stats", "now": 10}),
    ]
}

/// Section 7's members that may be left out (a missing one means null).
const OPTIONAL: [&str; 4] = ["run_at", "payload", "retry_at", "error"];

/// The ops that only read.
const READS: [&str; 3] = ["state", "inspect", "stats"];

/// Wrong-typed JSON texts for a field, by what the field must be.
fn mistyped(field: &str) -> &'static [&'static str] {
    match field {
        "job" | "owner" => &[
            "1",
            "1.5",
            "-3",
            "null",
            "true",
            "[]",
            "{}",
            "[\"x\"]",
            "{\"s\":\"x\"}",
        ],
        "now" | "ttl" => &[
            "\"1\"", "\"NaN\"", "\"\"", "null", "false", "[]", "{}", "[1]",
        ],
        "fence" => &[
            "\"1\"", "1.5", "-0.5", "1e-3", "null", "true", "[]", "{}", "[1]",
        ],
        "owners" => &[
            "\"x\"",
            "1",
            "null",
            "true",
            "{}",
            "{\"0\":\"x\"}",
            "[\"x\",1]",
            "[\"x\",null]",
            "[[\"x\"]]",
            "[true]",
            "[\"x\",{}]",
        ],
        "result" => &["1", "0", "-1.5", "true", "false", "[]", "{}", "[\"r\"]"],
        "run_at" | "retry_at" => &["\"1\"", "\"\"", "false", "[]", "{}", "[1]"],
        "payload" | "error" => &["1", "-1.5", "true", "[]", "{}", "[\"p\"]"],
        other => panic!("no mistyped values for {other}"),
    }
}

/// Every malformed line: (what, bytes, expected code).
fn bad_lines() -> Vec<(String, Vec<u8>, &'static str)> {
    let mut cases: Vec<(String, Vec<u8>, &'static str)> = Vec::new();
    let mut add =
        |what: String, bytes: Vec<u8>, code: &'static str| cases.push((what, bytes, code));
    let fixed: &[(&str, &[u8])] = &[
        ("not JSON", b"hello"),
        ("not JSON: unquoted keys", b"{op: state, job: held}"),
        ("not JSON: single quotes", b"{'op':'state','job':'held'}"),
        ("not JSON: comment", b"// {\"op\":\"init\"}"),
        (
            "not JSON: trailing comma",
            b"{\"op\":\"state\",\"job\":\"held\",}",
        ),
        (
            "not JSON: trailing text",
            b"{\"op\":\"state\",\"job\":\"held\"} x",
        ),
        (
            "two objects on one line",
            b"{\"op\":\"enqueue\",\"job\":\"a1\"}{\"op\":\"enqueue\",\"job\":\"a2\"}",
        ),
        ("trailing NUL byte", b"{\"op\":\"enqueue\",\"job\":\"n\"}\0"),
        (
            "raw control character in a string",
            b"{\"op\":\"enqueue\",\"job\":\"t\tab\"}",
        ),
        (
            "lone surrogate escape",
            b"{\"op\":\"enqueue\",\"job\":\"\\ud800\"}",
        ),
        ("bad escape", b"{\"op\":\"enqueue\",\"job\":\"\\x41\"}"),
        (
            "leading zero",
            b"{\"op\":\"claim\",\"job\":\"free\",\"owner\":\"x\",\"now\":010,\"ttl\":5}",
        ),
        (
            "-NaN",
            b"{\"op\":\"claim\",\"job\":\"free\",\"owner\":\"x\",\"now\":-NaN,\"ttl\":5}",
        ),
        (
            "truncated object",
            b"{\"op\":\"enqueue\",\"job\":\"new-job\"",
        ),
        ("truncated string", b"{\"op\":\"enqueue\",\"job\":\"new-j"),
        (
            "truncated after colon",
            b"{\"op\":\"claim\",\"job\":\"free\",\"owner\":\"x\",\"now\":10,\"ttl\":",
        ),
        (
            "truncated number",
            b"{\"op\":\"claim\",\"job\":\"free\",\"owner\":\"x\",\"now\":10,\"ttl\":5e",
        ),
        ("just an opening brace", b"{"),
        ("array", b"[]"),
        (
            "array holding a request",
            b"[{\"op\":\"enqueue\",\"job\":\"new-job\"}]",
        ),
        ("number", b"42"),
        ("negative float", b"-1.5e3"),
        ("string", b"\"enqueue\""),
        ("null", b"null"),
        ("true", b"true"),
        ("false", b"false"),
        ("missing op: empty object", b"{}"),
        ("missing op", b"{\"job\":\"new-job\"}"),
        ("op is a number", b"{\"op\":1,\"job\":\"new-job\"}"),
        ("op is null", b"{\"op\":null,\"job\":\"new-job\"}"),
        (
            "op is an array",
            b"{\"op\":[\"enqueue\"],\"job\":\"new-job\"}",
        ),
        (
            "op is an object",
            b"{\"op\":{\"name\":\"enqueue\"},\"job\":\"new-job\"}",
        ),
        ("op is a boolean", b"{\"op\":true,\"job\":\"new-job\"}"),
        ("unknown op", b"{\"op\":\"fly\",\"job\":\"new-job\"}"),
        (
            "unknown op: wrong case",
            b"{\"op\":\"ENQUEUE\",\"job\":\"new-job\"}",
        ),
        (
            "unknown op: padded",
            b"{\"op\":\" enqueue\",\"job\":\"new-job\"}",
        ),
        ("unknown op: empty", b"{\"op\":\"\",\"job\":\"new-job\"}"),
        (
            "unknown op: camelCase",
            b"{\"op\":\"claimNext\",\"owner\":\"x\",\"now\":10,\"ttl\":5}",
        ),
        (
            "duplicate key, the last one mistyped",
            b"{\"op\":\"enqueue\",\"job\":\"new-job\",\"job\":7}",
        ),
        ("empty line", b""),
        ("whitespace-only line", b"  \t  "),
        ("carriage return only (CRLF empty line)", b"\r"),
        ("bad line ending in CRLF", b"{\"op\":\"fly\"}\r"),
        (
            "invalid UTF-8: 0xff",
            b"{\"op\":\"enqueue\",\"job\":\"\xff\"}",
        ),
        (
            "invalid UTF-8: overlong",
            b"{\"op\":\"enqueue\",\"job\":\"\xc0\xaf\"}",
        ),
        (
            "invalid UTF-8: encoded surrogate",
            b"{\"op\":\"enqueue\",\"job\":\"\xed\xa0\x80\"}",
        ),
        (
            "invalid UTF-8: truncated sequence",
            b"{\"op\":\"enqueue\",\"job\":\"\xe2\x82\"}",
        ),
        (
            "invalid UTF-8: Latin-1",
            b"{\"op\":\"enqueue\",\"job\":\"caf\xe9\"}",
        ),
        (
            "invalid UTF-8 outside the JSON",
            b"\xff\xfe{\"op\":\"enqueue\",\"job\":\"new-job\"}",
        ),
    ];
    for (what, bytes) in fixed {
        add(what.to_string(), bytes.to_vec(), "bad_request");
    }
    add("10000 '['".into(), b"[".repeat(10_000), "bad_request");
    add(
        "10000 nested arrays, closed".into(),
        [b"[".repeat(10_000), b"]".repeat(10_000)].concat(),
        "bad_request",
    );
    add(
        "10000 nested objects".into(),
        [
            b"{\"a\":".repeat(10_000),
            b"1".to_vec(),
            b"}".repeat(10_000),
        ]
        .concat(),
        "bad_request",
    );
    add(
        "deep nesting inside a valid request".into(),
        format!(
            "{{\"op\":\"enqueue\",\"job\":\"new-job\",\"x\":{}{}}}",
            "[".repeat(10_000),
            "]".repeat(10_000)
        )
        .into_bytes(),
        "bad_request",
    );

    for base in bases() {
        let op = base["op"].as_str().unwrap().to_string();
        let fields: Vec<String> = base
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| *k != "op")
            .cloned()
            .collect();
        for field in &fields {
            if !OPTIONAL.contains(&field.as_str()) {
                add(
                    format!("{op}: missing {field}"),
                    line_with(&base, field, None).into_bytes(),
                    "bad_request",
                );
            }
            for raw in mistyped(field) {
                add(
                    format!("{op}: {field} = {raw}"),
                    line_with(&base, field, Some(raw)).into_bytes(),
                    "bad_request",
                );
            }
        }
        let nonfinite = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"];
        if fields.iter().any(|f| f == "now") {
            for raw in nonfinite {
                add(
                    format!("{op}: now = {raw}"),
                    line_with(&base, "now", Some(raw)).into_bytes(),
                    "invalid_argument",
                );
            }
        }
        for time in ["run_at", "retry_at"] {
            if fields.iter().any(|f| f == time) {
                for raw in nonfinite {
                    add(
                        format!("{op}: {time} = {raw}"),
                        line_with(&base, time, Some(raw)).into_bytes(),
                        "invalid_argument",
                    );
                }
            }
        }
        if fields.iter().any(|f| f == "ttl") {
            for raw in nonfinite
                .iter()
                .chain(&["0", "-0", "0.0", "0e5", "-1", "-0.5", "-1e-300", "-5e-324"])
            {
                add(
                    format!("{op}: ttl = {raw}"),
                    line_with(&base, "ttl", Some(raw)).into_bytes(),
                    "invalid_argument",
                );
            }
            let mut overflow = base.clone();
            overflow["now"] = json!(1e308);
            overflow["ttl"] = json!(1e308);
            add(
                format!("{op}: now + ttl overflows"),
                overflow.to_string().into_bytes(),
                "invalid_argument",
            );
        }
        if fields.iter().any(|f| f == "fence") {
            for raw in [
                "1e30",
                "-1e30",
                "9223372036854775808",
                "-9223372036854775809",
                "18446744073709551616",
                "1e19",
                "9.3e18",
                "1e400",
                "NaN",
                "Infinity",
                "-Infinity",
            ] {
                add(
                    format!("{op}: fence = {raw}"),
                    line_with(&base, "fence", Some(raw)).into_bytes(),
                    "invalid_argument",
                );
            }
        }
    }
    cases
}

#[test]
fn every_malformed_line_gets_one_error_changes_nothing_and_the_process_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut batch = Batch::start(&db);
    fixture(&mut batch);
    assert_eq!(batch.send(&probe()), probe_answer());
    let start = snapshot(&db);
    assert_eq!(start.rows.len(), 4);

    let cases = bad_lines();
    assert!(cases.len() > 250, "{} cases", cases.len());
    let mut by_code = std::collections::BTreeMap::new();
    for (what, bytes, code) in &cases {
        let before = snapshot(&db);
        let response = batch.send_raw(bytes);
        assert_error(&response, code, what);
        assert_eq!(snapshot(&db), before, "{what}: the database changed");
        // Still serving, and in step: the next response belongs to the next request.
        assert_eq!(batch.send(&probe()), probe_answer(), "after {what}");
        *by_code.entry(*code).or_insert(0) += 1;
    }
    assert_eq!(snapshot(&db), start);
    assert!(by_code["invalid_argument"] > 50, "{by_code:?}");

    // A valid request ending in CRLF is answered once, like any other.
    batch.write(b"{\"op\":\"state\",\"job\":\"held\"}\r\n");
    let crlf: Value = serde_json::from_str(&batch.read()).unwrap();
    assert_eq!(crlf, probe_answer());
    assert_eq!(batch.send(&probe()), probe_answer());

    let (code, rest) = batch.finish();
    assert_eq!(rest, Vec::<String>::new(), "no stray response lines");
    assert_eq!(code, 0);
}

/// The "database unchanged" checks above mean something only if the base requests would change
/// it when valid: run each once on a fresh fixture.
#[test]
fn the_base_requests_do_change_the_database() {
    let dir = tempfile::tempdir().unwrap();
    for (i, base) in bases().into_iter().enumerate() {
        let db = dir.path().join(format!("base-{i}.db"));
        let mut batch = Batch::start(&db);
        fixture(&mut batch);
        let before = snapshot(&db);
        let response = batch.send(&base);
        assert!(response.get("error").is_none(), "{base}: {response}");
        assert!(response.get("reason").is_none(), "{base}: {response}");
        if base["op"] == "state" {
            assert_eq!(response, probe_answer());
            assert_eq!(snapshot(&db), before);
        } else if READS.contains(&base["op"].as_str().unwrap()) {
            assert_eq!(snapshot(&db), before, "{base} is a read");
        } else {
            assert_ne!(snapshot(&db), before, "{base} changed nothing");
        }
        assert_eq!(batch.finish(), (0, vec![]));
    }
}

/// (owner, until, fence, result, done) of one row.
type Row = (Option<String>, f64, i64, Option<String>, i64);

/// Reads one row with rusqlite, exactly as stored.
fn stored(db: &Path, job: &str) -> Option<Row> {
    let conn = Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut stmt = conn
        .prepare("SELECT owner, until, fence, result, done FROM jobs WHERE id = ?1")
        .unwrap();
    let mut rows = stmt.query([job]).unwrap();
    rows.next().unwrap().map(|r| {
        (
            r.get(0).unwrap(),
            r.get(1).unwrap(),
            r.get(2).unwrap(),
            r.get(3).unwrap(),
            r.get(4).unwrap(),
        )
    })
}

/// A state value must be the SPEC's object, `done` a boolean, and equal to the stored row.
fn assert_state(db: &Path, value: &Value, job: &str) -> Map<String, Value> {
    let obj = value
        .as_object()
        .unwrap_or_else(|| panic!("state of {job} is not an object: {value}"));
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["done", "fence", "id", "owner", "result", "until"]);
    assert!(obj["done"].is_boolean(), "done is a boolean: {value}");
    assert!(obj["fence"].is_i64(), "fence is an integer: {value}");
    assert!(obj["until"].is_number());
    let (owner, until, fence, result, done) = stored(db, job).expect("row exists");
    assert_eq!(obj["id"], job);
    assert_eq!(obj["owner"].as_str().map(String::from), owner);
    assert_eq!(obj["until"].as_f64(), Some(until));
    assert_eq!(obj["fence"].as_i64(), Some(fence));
    assert_eq!(obj["result"].as_str().map(String::from), result);
    assert_eq!(obj["done"].as_bool(), Some(done != 0));
    obj.clone()
}

#[test]
fn every_op_returns_the_spec_value_shape() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut b = Batch::start(&db);

    // init: exactly {"value": null}, twice (idempotent).
    for _ in 0..2 {
        b.write(b"{\"op\":\"init\"}\n");
        assert_eq!(b.read(), "{\"value\":null}");
    }
    // enqueue: true, then false.
    b.write(b"{\"op\":\"enqueue\",\"job\":\"a\"}\n");
    assert_eq!(b.read(), "{\"value\":true}");
    assert_eq!(
        b.send(&json!({"op": "enqueue", "job": "a"}))["value"],
        false
    );
    // state: null when missing, the object otherwise.
    assert_eq!(
        b.send(&json!({"op": "state", "job": "zz"})),
        json!({"value": null})
    );
    let s = assert_state(
        &db,
        &b.send(&json!({"op": "state", "job": "a"}))["value"],
        "a",
    );
    assert_eq!(
        (s["owner"].clone(), s["fence"].clone(), s["done"].clone()),
        (json!(null), json!(0), json!(false))
    );

    // claim: an integer fence, or null with the held reason.
    let claim = |job: &str, owner: &str, now: f64, ttl: f64| json!({"op": "claim", "job": job, "owner": owner, "now": now, "ttl": ttl});
    let r = b.send(&claim("a", "o1", 100.0, 30.0));
    assert_eq!(r, json!({"value": 1}));
    assert!(r["value"].is_i64());
    let r = b.send(&claim("a", "o2", 110.0, 30.0));
    assert_eq!(r["value"], Value::Null);
    assert_eq!(
        r["reason"],
        json!({"code": "held", "owner": "o1", "until": 130.0})
    );
    assert_eq!(
        b.send(&claim("ghost", "o1", 0.0, 1.0))["value"],
        Value::Null
    );

    // renew.
    let renew = |owner: &str, fence: i64, now: f64| json!({"op": "renew", "job": "a", "owner": owner, "fence": fence, "now": now, "ttl": 30});
    assert_eq!(b.send(&renew("o1", 1, 120.0)), json!({"value": true}));
    let r = b.send(&renew("o2", 1, 121.0));
    assert_eq!(
        (r["value"].clone(), r["reason"]["code"].clone()),
        (json!(false), json!("not_owner"))
    );
    let r = b.send(&renew("o1", 0, 121.0));
    assert_eq!(r["reason"], json!({"code": "stale_fence", "fence": 1}));
    let s = assert_state(
        &db,
        &b.send(&json!({"op": "state", "job": "a"}))["value"],
        "a",
    );
    assert_eq!(s["until"], json!(150.0));

    // complete, with a unicode result; fence written as 1.0 is accepted as 1.
    let unicode = "✓ ünï 😀 \"q\" \\ \n\t end";
    let r = b.send(&json!({"op": "complete", "job": "a", "owner": "o1", "fence": 1.0, "now": 125, "result": unicode}));
    assert_eq!(r, json!({"value": true}));
    let s = assert_state(
        &db,
        &b.send(&json!({"op": "state", "job": "a"}))["value"],
        "a",
    );
    assert_eq!(
        (s["result"].clone(), s["done"].clone()),
        (json!(unicode), json!(true))
    );
    let r = b.send(&json!({"op": "complete", "job": "a", "owner": "o1", "fence": 1, "now": 126, "result": null}));
    assert_eq!(
        (r["value"].clone(), r["reason"].clone()),
        (json!(false), json!({"code": "done"}))
    );
    assert_eq!(
        stored(&db, "a").unwrap().3.as_deref(),
        Some(unicode),
        "result kept"
    );

    // release keeps the fence.
    assert_eq!(b.send(&json!({"op": "enqueue", "job": "b"}))["value"], true);
    assert_eq!(b.send(&claim("b", "o1", 0.0, 10.0)), json!({"value": 1}));
    let release = json!({"op": "release", "job": "b", "owner": "o1", "fence": 1});
    assert_eq!(b.send(&release), json!({"value": true}));
    let s = assert_state(
        &db,
        &b.send(&json!({"op": "state", "job": "b"}))["value"],
        "b",
    );
    assert_eq!(
        (s["owner"].clone(), s["until"].clone(), s["fence"].clone()),
        (json!(null), json!(0.0), json!(1))
    );
    let r = b.send(&release);
    assert_eq!(
        (r["value"].clone(), r["reason"]["code"].clone()),
        (json!(false), json!("not_owner"))
    );

    // claim_many: a list in input order, exactly one fence, and the stored owner is the one
    // at the fence's position.
    let owners: Vec<String> = (0..8).map(|i| format!("m{i}")).collect();
    for job in ["c1", "c2", "c3"] {
        assert_eq!(b.send(&json!({"op": "enqueue", "job": job}))["value"], true);
        let r =
            b.send(&json!({"op": "claim_many", "job": job, "owners": owners, "now": 0, "ttl": 10}));
        let list = r["value"].as_array().unwrap_or_else(|| panic!("{r}"));
        assert_eq!(list.len(), owners.len());
        let won: Vec<usize> = (0..list.len()).filter(|&i| !list[i].is_null()).collect();
        assert_eq!(won.len(), 1, "{r}");
        assert_eq!(list[won[0]], json!(1));
        assert_eq!(stored(&db, job).unwrap().0, Some(owners[won[0]].clone()));
        // Held now: every owner gets null.
        let again = b.send(
            &json!({"op": "claim_many", "job": job, "owners": ["p", "q"], "now": 5, "ttl": 10}),
        );
        assert_eq!(again, json!({"value": [null, null]}));
    }
    let r = b.send(
        &json!({"op": "claim_many", "job": "ghost", "owners": ["p", "q", "r"], "now": 0, "ttl": 1}),
    );
    assert_eq!(r, json!({"value": [null, null, null]}));
    let r = b.send(&json!({"op": "claim_many", "job": "b", "owners": [], "now": 0, "ttl": 1}));
    assert_eq!(r, json!({"value": []}));

    // claim_next: {"job", "fence"} by until, then insertion order; null when nothing is left.
    for job in ["n1", "n2", "n3"] {
        assert_eq!(b.send(&json!({"op": "enqueue", "job": job}))["value"], true);
    }
    let next = json!({"op": "claim_next", "owner": "w", "now": 5, "ttl": 100});
    let mut got = Vec::new();
    loop {
        let r = b.send(&next);
        let v = &r["value"];
        if v.is_null() {
            break;
        }
        let obj = v.as_object().unwrap();
        assert_eq!(obj.keys().collect::<Vec<_>>().len(), 3, "{v}");
        got.push((
            obj["job"].as_str().unwrap().to_string(),
            obj["fence"].as_i64().unwrap(),
        ));
        assert!(got.len() < 10, "claim_next never ran out");
    }
    // b: released (until 0), then n1..n3 (until 0, later rowids); c1..c3 held until 10 > 5.
    let want: Vec<(String, i64)> = [("b", 2), ("n1", 1), ("n2", 1), ("n3", 1)]
        .iter()
        .map(|(j, f)| (j.to_string(), *f))
        .collect();
    assert_eq!(got, want);
    assert_eq!(stored(&db, "n2").unwrap().0.as_deref(), Some("w"));

    // A valid request ending in CRLF.
    b.write(b"{\"op\":\"enqueue\",\"job\":\"crlf\"}\r\n");
    assert_eq!(b.read(), "{\"value\":true}");
    assert!(stored(&db, "crlf").is_some());
    assert_eq!(b.finish(), (0, vec![]));
}

#[test]
fn responses_are_flushed_per_line_and_the_unterminated_last_line_is_answered() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut b = Batch::start(&db);
    // stdin stays open: each response must arrive on its own.
    for i in 0..5 {
        b.write(format!("{{\"op\":\"enqueue\",\"job\":\"j{i}\"}}\n").as_bytes());
        assert_eq!(b.read(), "{\"value\":true}");
    }
    b.write(b"{\"op\":\"state\",\"job\":\"j4\"}");
    let (code, rest) = b.finish();
    assert_eq!(code, 0);
    assert_eq!(rest.len(), 1, "{rest:?}");
    let value: Value = serde_json::from_str(rest[0].trim_end()).unwrap();
    assert_eq!(value["value"]["id"], "j4");

    // An unterminated bad last line still gets its error.
    let mut b = Batch::start(&db);
    b.write(b"{\"op\":\"enqueue\",\"job\":");
    let (code, rest) = b.finish();
    assert_eq!(code, 0);
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_error(
        &serde_json::from_str(rest[0].trim_end()).unwrap(),
        "bad_request",
        "last line",
    );

    // No input, no output.
    let b = Batch::start(&db);
    assert_eq!(b.finish(), (0, vec![]));
}

#[test]
fn a_thousand_requests_in_one_write_get_a_thousand_responses_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut b = Batch::start(&db);
    let mut input = String::new();
    type Check = Box<dyn Fn(&Value) -> bool>;
    let mut expect: Vec<Check> = Vec::new();
    for i in 0..1000usize {
        match i % 5 {
            0 => {
                input.push_str(&format!("{{\"op\":\"enqueue\",\"job\":\"k{i}\"}}\n"));
                expect.push(Box::new(|v| *v == json!({"value": true})));
            }
            1 => {
                input.push_str(&format!("{{\"op\":\"state\",\"job\":\"k{}\"}}\n", i - 1));
                let id = format!("k{}", i - 1);
                expect.push(Box::new(move |v| v["value"]["id"] == id.as_str()));
            }
            2 => {
                input.push_str(&format!("{{\"op\":\"enqueue\",\"job\":\"k{}\"}}\n", i - 2));
                expect.push(Box::new(|v| *v == json!({"value": false})));
            }
            3 => {
                input.push_str(&format!("{{\"op\":\"op{i}\"}}\n"));
                let needle = format!("op{i}");
                expect.push(Box::new(move |v| {
                    v["error"]["code"] == "bad_request"
                        && v["error"]["message"].as_str().unwrap().contains(&needle)
                }));
            }
            _ => {
                let job = format!("k{}", i - 4);
                input.push_str(&format!(
                    "{{\"op\":\"claim\",\"job\":\"{job}\",\"owner\":\"o{i}\",\"now\":{i},\"ttl\":1}}\n"
                ));
                expect.push(Box::new(|v| *v == json!({"value": 1})));
            }
        }
    }
    b.write(input.as_bytes());
    let (code, lines) = b.finish();
    assert_eq!(code, 0);
    assert_eq!(lines.len(), 1000);
    for (i, (line, ok)) in lines.iter().zip(&expect).enumerate() {
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        assert!(ok(&v), "response {i} out of order or wrong: {line}");
    }
    assert_eq!(stored(&db, "k995").unwrap().0.as_deref(), Some("o999"));
}

#[test]
fn a_database_in_a_missing_directory_answers_storage_and_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let missing: PathBuf = dir.path().join("missing");
    let db = missing.join("sub").join("q.db");
    let mut b = Batch::start(&db);
    let storage = [
        json!({"op": "init"}),
        json!({"op": "enqueue", "job": "j"}),
        json!({"op": "state", "job": "j"}),
        json!({"op": "claim", "job": "j", "owner": "o", "now": 0, "ttl": 5}),
        json!({"op": "renew", "job": "j", "owner": "o", "fence": 1, "now": 0, "ttl": 5}),
        json!({"op": "complete", "job": "j", "owner": "o", "fence": 1, "now": 0, "result": null}),
        json!({"op": "release", "job": "j", "owner": "o", "fence": 1}),
        json!({"op": "claim_many", "job": "j", "owners": ["a", "b"], "now": 0, "ttl": 5}),
        json!({"op": "claim_next", "owner": "o", "now": 0, "ttl": 5}),
    ];
    for (i, request) in storage.iter().enumerate() {
        let r = b.send(request);
        assert_error(&r, "storage", &request.to_string());
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains("does not exist"), "{message}");
        // Bad lines between them keep their own codes.
        assert_error(&b.send_raw(b"not json"), "bad_request", "not json");
        assert_error(
            &b.send_raw(b"{\"op\":\"fly\"}"),
            "bad_request",
            "unknown op",
        );
        assert_error(&b.send_raw(&[0xff]), "bad_request", "invalid UTF-8");
        let bad_ttl =
            json!({"op": "claim", "job": "j", "owner": "o", "now": 0, "ttl": -(i as i64)});
        assert_error(&b.send(&bad_ttl), "invalid_argument", "ttl <= 0");
    }
    assert!(!missing.exists(), "the missing directory was created");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // The backend retries the open: once the directory exists, the same process works.
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    assert_eq!(b.send(&storage[1]), json!({"value": true}));
    assert_eq!(b.send(&storage[3]), json!({"value": 1}));
    assert_eq!(b.finish(), (0, vec![]));
}

/// Regression: an out-of-range fence must not hide a missing or mistyped later field; shape
/// errors (`bad_request`) come before value errors (`invalid_argument`).
#[test]
fn shape_errors_win_over_an_out_of_range_fence() {
    let dir = tempfile::tempdir().unwrap();
    let mut b = Batch::start(&dir.path().join("q.db"));
    for line in [
        r#"{"op":"renew","job":"a","owner":"w","fence":1e30,"ttl":1}"#,
        r#"{"op":"complete","job":"a","owner":"w","fence":1e30,"now":1}"#,
        r#"{"op":"renew","job":"a","owner":"w","fence":9223372036854775808,"now":"x","ttl":1}"#,
    ] {
        assert_error(&b.send_raw(line.as_bytes()), "bad_request", line);
    }
}

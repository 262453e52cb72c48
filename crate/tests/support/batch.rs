//! A client of one `leasefence batch` process, spoken to one JSON line at a time: the mixed
//! workload's [`Client`] over real processes (`processes.rs` on SQLite files, `postgres.rs` on a
//! PostgreSQL server).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use leasefence::{ClaimedJob, Fence, JobState, Lease, Outcome, Reason};
use serde_json::{json, Value};

use super::workload::Client;

pub use super::cli_bin::bin;

/// One `leasefence batch` process, spoken to one request line at a time.
pub struct Batch {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    requests: usize,
}

impl Batch {
    pub fn spawn(db: &Path) -> Batch {
        let mut child = Command::new(bin())
            .arg("--db")
            .arg(db)
            .arg("batch")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn leasefence batch");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Batch {
            child,
            stdin,
            stdout,
            requests: 0,
        }
    }

    /// Sends one request and reads its one response line; an `error` response fails the test.
    pub fn call(&mut self, request: Value) -> (Value, Option<Reason>) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "leasefence batch closed its output after {request}");
        self.requests += 1;
        let response: Value = serde_json::from_str(&line).unwrap();
        assert!(
            response.get("error").is_none(),
            "{request} -> {}",
            line.trim_end()
        );
        let object = response.as_object().unwrap();
        let value = object.get("value").cloned().expect("a value");
        let reason = object.get("reason").map(parse_reason);
        match &value {
            Value::Null | Value::Bool(false) => {}
            _ => assert!(reason.is_none(), "a reason on a granted answer: {line}"),
        }
        (value, reason)
    }

    fn outcome_unit(&mut self, request: Value) -> Outcome<()> {
        match self.call(request) {
            (Value::Bool(true), None) => Outcome::Granted(()),
            (Value::Bool(false), Some(reason)) => Outcome::Rejected(reason),
            other => panic!("expected true, or false with a reason; got {other:?}"),
        }
    }
}

/// Each worker of the mixed workload drives its own `leasefence batch` process.
impl Client for Batch {
    fn claim(&mut self, job: &str, owner: &str, now: f64, ttl: f64) -> Outcome<Fence> {
        let request = json!({"op": "claim", "job": job, "owner": owner, "now": now, "ttl": ttl});
        match self.call(request) {
            (Value::Number(fence), None) => Outcome::Granted(fence.as_i64().unwrap()),
            (Value::Null, Some(reason)) => Outcome::Rejected(reason),
            other => panic!("claim: expected a fence or null with a reason; got {other:?}"),
        }
    }

    fn claim_next(&mut self, owner: &str, now: f64, ttl: f64) -> Option<ClaimedJob> {
        let request = json!({"op": "claim_next", "owner": owner, "now": now, "ttl": ttl});
        match self.call(request) {
            (Value::Null, None) => None,
            (Value::Object(claimed), None) => {
                assert_eq!(claimed.len(), 3, "{claimed:?}");
                Some(ClaimedJob {
                    job: claimed["job"].as_str().unwrap().to_string(),
                    owner: owner.into(),
                    fence: claimed["fence"].as_i64().unwrap(),
                    payload: claimed["payload"].as_str().map(String::from),
                    base: 0,
                })
            }
            other => panic!("claim_next: expected {{job, fence, payload}} or null; got {other:?}"),
        }
    }

    fn renew(&mut self, lease: &Lease, now: f64, ttl: f64) -> Outcome<()> {
        let Lease { job, owner, fence } = lease;
        self.outcome_unit(
            json!({"op": "renew", "job": job, "owner": owner, "fence": fence,
                                 "now": now, "ttl": ttl}),
        )
    }

    fn complete(&mut self, lease: &Lease, now: f64, result: Option<&str>) -> Outcome<()> {
        let Lease { job, owner, fence } = lease;
        self.outcome_unit(
            json!({"op": "complete", "job": job, "owner": owner, "fence": fence,
                                 "now": now, "result": result}),
        )
    }

    fn release(&mut self, lease: &Lease) -> Outcome<()> {
        let Lease { job, owner, fence } = lease;
        self.outcome_unit(json!({"op": "release", "job": job, "owner": owner, "fence": fence}))
    }

    fn state(&mut self, job: &str) -> Option<JobState> {
        match self.call(json!({"op": "state", "job": job})) {
            (Value::Null, None) => None,
            (Value::Object(row), None) => {
                assert_eq!(row.len(), 6, "{row:?}");
                Some(JobState {
                    id: row["id"].as_str().unwrap().to_string(),
                    owner: row["owner"].as_str().map(str::to_string),
                    until: row["until"].as_f64().unwrap(),
                    fence: row["fence"].as_i64().unwrap(),
                    result: row["result"].as_str().map(str::to_string),
                    done: row["done"].as_bool().expect("done is a boolean"),
                })
            }
            other => panic!("state: expected a row or null; got {other:?}"),
        }
    }

    /// Closes stdin; the process must then exit 0. Returns how many requests it answered.
    fn finish(mut self) -> usize {
        drop(self.stdin.take());
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut self.stdout, &mut rest).unwrap();
        assert_eq!(rest, "", "output after the last response");
        let status = self.child.wait().unwrap();
        assert!(status.success(), "leasefence batch exited with {status}");
        self.requests
    }
}

/// A reason object of the protocol, back to the typed [`Reason`].
pub fn parse_reason(value: &Value) -> Reason {
    let code = value["code"].as_str().expect("a reason code");
    let reason = match code {
        "not_found" => Reason::NotFound,
        "done" => Reason::Done,
        "held" => Reason::Held {
            owner: value["owner"].as_str().map(str::to_string),
            until: value["until"].as_f64().unwrap(),
        },
        "stale_fence" => Reason::StaleFence {
            current: value["fence"].as_i64().unwrap(),
        },
        "not_owner" => Reason::NotOwner,
        "expired" => Reason::Expired {
            until: value["until"].as_f64().unwrap(),
        },
        other => panic!("unknown reason code {other:?} in {value}"),
    };
    assert_eq!(reason.code(), code);
    reason
}

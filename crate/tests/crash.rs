#![cfg(not(target_arch = "wasm32"))]
//! Crash safety: worker processes (`leasefence batch`) claim, renew and complete on one file while
//! a killer sends SIGKILL at random moments, hundreds of times; killed workers are replaced and
//! the survivors carry on. After every kill the database passes `PRAGMA integrity_check`; at the
//! end no fence that any caller received was handed out twice, and no acknowledged result was
//! lost or overwritten.
//!
//! `LEASEFENCE_CRASH_KILLS` sets the number of kills (default 200).

#[path = "support/cli_bin.rs"]
mod cli_bin;
#[path = "support/rng.rs"]
mod rng;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rng::Rng;
use rusqlite::Connection;
use serde_json::{json, Value};

const WORKERS: usize = 3;
const JOBS: usize = 100;
const TTL: f64 = 5.0;

struct Worker {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

fn spawn(db: &std::path::Path) -> Worker {
    let mut child = Command::new(cli_bin::bin())
        .args(["--db", db.to_str().unwrap(), "batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn leasefence batch");
    let input = child.stdin.take().unwrap();
    let output = BufReader::new(child.stdout.take().unwrap());
    Worker {
        child,
        input,
        output,
    }
}

impl Worker {
    /// One request; `None` when the process died before answering.
    fn ask(&mut self, request: &Value) -> Option<Value> {
        writeln!(self.input, "{request}").ok()?;
        self.input.flush().ok()?;
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).expect("a JSON response line")),
        }
    }
}

#[derive(Default)]
struct Ledger {
    /// Every (job, fence) a caller received from a granted claim.
    granted: Vec<(String, i64)>,
    /// Acknowledged completes: job -> result.
    completed: HashMap<String, Vec<String>>,
    requests: u64,
    unanswered: u64,
}

fn now(clock: &AtomicU64) -> f64 {
    clock.fetch_add(1, Ordering::SeqCst) as f64 / 10.0
}

fn record_complete(ledger: &Mutex<Ledger>, step: &Value, answer: &Value) {
    if step["op"] == "complete" && answer["value"] == true {
        let job = step["job"].as_str().unwrap().to_string();
        let result = step["result"].as_str().unwrap().to_string();
        let mut ledger = ledger.lock().unwrap();
        ledger.completed.entry(job).or_default().push(result);
    }
}

/// Works until `stop`, replacing its process whenever the killer took it.
fn drive(
    id: usize,
    db: std::path::PathBuf,
    slot: Arc<Mutex<Option<u32>>>,
    clock: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    ledger: Arc<Mutex<Ledger>>,
) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id as u64 + 1));
    let mut worker = spawn(&db);
    *slot.lock().unwrap() = Some(worker.child.id());
    let owner = format!("w{id}");
    let mut made = 0u64;
    // Completes this worker put off (it "stalled"); sent late, when the lease may be gone.
    let mut late: Vec<Value> = Vec::new();
    while !stop.load(Ordering::SeqCst) {
        // Keep the queue fed, so kills land in the middle of real work.
        made += 1;
        let mut plan = vec![json!({"op": "enqueue", "job": format!("{owner}-{made}")})];
        plan.push(json!({"op": "claim_next", "owner": owner, "now": now(&clock), "ttl": TTL}));
        if rng.below(4) == 0 {
            if let Some(step) = late.pop() {
                let mut step = step;
                step["now"] = json!(now(&clock));
                plan.push(step);
            }
        }
        let mut died = false;
        for step in plan {
            ledger.lock().unwrap().requests += 1;
            let Some(answer) = worker.ask(&step) else {
                died = true;
                break;
            };
            assert!(answer.get("error").is_none(), "{step} failed: {answer}");
            match step["op"].as_str() {
                Some("claim_next") => {
                    let Some(claimed) = answer["value"].as_object() else {
                        clock.fetch_add(10, Ordering::SeqCst);
                        continue;
                    };
                    let job = claimed["job"].as_str().unwrap().to_string();
                    let fence = claimed["fence"].as_i64().unwrap();
                    ledger.lock().unwrap().granted.push((job.clone(), fence));
                    let result = format!("{job} by {owner} with fence {fence}");
                    let complete = json!({"op": "complete", "job": job, "owner": owner, "fence": fence, "now": 0, "result": result});
                    if rng.below(5) == 0 {
                        late.push(complete);
                        continue;
                    }
                    let mut follow = vec![];
                    if rng.below(3) == 0 {
                        follow.push(json!({"op": "renew", "job": job, "owner": owner, "fence": fence, "now": now(&clock), "ttl": TTL}));
                    }
                    let mut complete = complete;
                    complete["now"] = json!(now(&clock));
                    follow.push(complete);
                    for step in follow {
                        ledger.lock().unwrap().requests += 1;
                        let Some(answer) = worker.ask(&step) else {
                            died = true;
                            break;
                        };
                        assert!(answer.get("error").is_none(), "{step} failed: {answer}");
                        record_complete(&ledger, &step, &answer);
                    }
                }
                Some("complete") => record_complete(&ledger, &step, &answer),
                _ => {}
            }
            if died {
                break;
            }
        }
        if died {
            ledger.lock().unwrap().unanswered += 1;
            let _ = worker.child.wait();
            worker = spawn(&db);
            *slot.lock().unwrap() = Some(worker.child.id());
        }
    }
    let _ = worker.child.kill();
    let _ = worker.child.wait();
}

#[test]
fn sigkilled_workers_never_reissue_a_fence_or_lose_a_result() {
    let kills_wanted: u64 = std::env::var("LEASEFENCE_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("crash.db");
    {
        let store = leasefence::LeaseStore::open(&db).unwrap();
        for j in 0..JOBS {
            store.enqueue(&format!("job-{j:03}")).unwrap();
        }
    }
    let clock = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let slots: Vec<Arc<Mutex<Option<u32>>>> =
        (0..WORKERS).map(|_| Arc::new(Mutex::new(None))).collect();
    let drivers: Vec<_> = (0..WORKERS)
        .map(|id| {
            let (db, slot, clock, stop, ledger) = (
                db.clone(),
                Arc::clone(&slots[id]),
                Arc::clone(&clock),
                Arc::clone(&stop),
                Arc::clone(&ledger),
            );
            std::thread::spawn(move || drive(id, db, slot, clock, stop, ledger))
        })
        .collect();

    let mut rng = Rng(0xC0FF_EE00_D15E_A5E5);
    let checker = Connection::open(&db).unwrap();
    let started = Instant::now();
    let mut kills = 0u64;
    let mut last_pid = [0u32; WORKERS];
    while kills < kills_wanted {
        assert!(
            started.elapsed() < Duration::from_secs(240),
            "only {kills} kills in 240 s"
        );
        std::thread::sleep(Duration::from_millis(2 + rng.below(25)));
        let victim = rng.below(WORKERS as u64) as usize;
        let Some(pid) = *slots[victim].lock().unwrap() else {
            continue;
        };
        if pid == last_pid[victim] {
            continue; // not yet replaced after the last kill
        }
        last_pid[victim] = pid;
        // SIGKILL: no chance to finish the transaction, flush or unlock.
        let status = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        if !status.success() {
            continue; // it had already exited
        }
        kills += 1;
        let check: String = checker
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "integrity_check after kill {kills}");
    }
    stop.store(true, Ordering::SeqCst);
    for driver in drivers {
        driver.join().expect("a driver thread panicked");
    }

    // The survivors carried on: a fresh worker can still claim and complete what is left.
    let store = leasefence::LeaseStore::open(&db).unwrap();
    let ledger = ledger.lock().unwrap();
    let mut seen = HashSet::new();
    for pair in &ledger.granted {
        assert!(
            seen.insert(pair.clone()),
            "fence handed out twice: {pair:?}"
        );
    }
    for (job, results) in &ledger.completed {
        assert_eq!(results.len(), 1, "{job} completed twice: {results:?}");
        let row = store.state(job).unwrap().unwrap();
        assert!(row.done, "{job}: acknowledged complete lost");
        assert_eq!(
            row.result.as_ref(),
            Some(&results[0]),
            "{job}: result overwritten"
        );
    }
    for row in store.jobs().unwrap() {
        assert!(
            seen.iter()
                .all(|(job, fence)| job != &row.id || *fence <= row.fence),
            "{}: a caller holds a fence above the stored {}",
            row.id,
            row.fence
        );
        if let Some(result) = &row.result {
            // Only the holder of the current fence can have completed.
            assert_eq!(
                result,
                &format!(
                    "{} by {} with fence {}",
                    row.id,
                    row.owner.clone().unwrap(),
                    row.fence
                )
            );
        }
    }
    let check: String = checker
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    eprintln!(
        "crash: {kills} SIGKILLs in {:.1}s, {} requests ({} unanswered), {} fences received, {} acknowledged completes",
        started.elapsed().as_secs_f64(),
        ledger.requests,
        ledger.unanswered,
        ledger.granted.len(),
        ledger.completed.len()
    );
    assert!(
        ledger.completed.len() > 10,
        "too little work got done to mean anything"
    );
}

#![cfg(not(target_arch = "wasm32"))]
//! A process killed (SIGKILL) while its threads share one `SharedStore`: every answer it gave was
//! durable, and nothing it did not acknowledge is half applied. The child is this test binary,
//! run again on one test.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use leasefence::{LeaseStore, Leases, OpenOptions};
use support::jobs::enqueue_jobs;

/// The child of `answers_given_before_a_sigkill_are_durable`: threads on one shared store print
/// each answer (`claimed JOB FENCE`, `done JOB FENCE`) only once they have it. Does nothing in a
/// normal run.
#[test]
fn sigkill_child() {
    let Ok(db) = std::env::var("LEASEFENCE_SHARED_CHILD_DB") else {
        return;
    };
    let store = OpenOptions::new().open_shared(db).unwrap();
    let out = std::sync::Arc::new(Mutex::new(std::io::stdout()));
    std::thread::scope(|scope| {
        for t in 0..8 {
            let (store, out) = (store.clone(), out.clone());
            scope.spawn(move || loop {
                let owner = format!("c{t}");
                let Some(claimed) = store.claim_next(&owner, 1.0, 1e6).unwrap() else {
                    return;
                };
                let lease = claimed.lease();
                let line = format!("claimed {} {}\n", lease.job, lease.fence);
                out.lock().unwrap().write_all(line.as_bytes()).unwrap();
                let result = format!("{owner}/{}", lease.fence);
                assert!(store
                    .complete(&lease, 2.0, Some(&result))
                    .unwrap()
                    .is_granted());
                let line = format!("done {} {}\n", lease.job, lease.fence);
                out.lock().unwrap().write_all(line.as_bytes()).unwrap();
            });
        }
    });
}

#[test]
fn answers_given_before_a_sigkill_are_durable() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let ids = enqueue_jobs(&LeaseStore::open(&db).unwrap(), "job", 20_000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sigkill_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("LEASEFENCE_SHARED_CHILD_DB", &db)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut claimed = BTreeMap::new();
    let mut done = BTreeSet::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    while done.len() < 1500 {
        let line = lines.next().expect("the child ended early").unwrap();
        let mut words = line.split(' ');
        match (words.next(), words.next(), words.next()) {
            (Some("claimed"), Some(job), Some(fence)) => {
                claimed.insert(job.to_owned(), fence.parse::<i64>().unwrap());
            }
            (Some("done"), Some(job), Some(_)) => {
                done.insert(job.to_owned());
            }
            _ => {}
        }
    }
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    assert!(status.success());
    child.wait().unwrap();

    let store = LeaseStore::open(&db).unwrap();
    let rows = store.jobs().unwrap();
    assert_eq!(rows.len(), ids.len());
    for row in rows {
        if done.contains(&row.id) {
            assert!(row.done, "{}: completion answered, then lost", row.id);
        }
        if let Some(&fence) = claimed.get(&row.id) {
            assert_eq!(row.fence, fence, "{}: claim answered, then lost", row.id);
        }
        // Nothing half-applied: a stored completion is of the stored lease's owner and fence.
        if row.done {
            let owner = row.owner.clone().unwrap();
            assert_eq!(row.result, Some(format!("{owner}/{}", row.fence)));
        }
    }
}

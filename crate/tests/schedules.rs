#![cfg(not(target_arch = "wasm32"))]
//! Recurring jobs (docs/contract.md section 11) under real concurrency: several `leasefence
//! batch` processes call `enqueue_due` on one SQLite file (and, `#[ignore]`d, on one PostgreSQL
//! schema) for the same times, and every slot's job is enqueued, and answered, exactly once.
//! Plus the schema upgrade of a file from before schedules. The cron and daylight-saving rules
//! are unit-tested in `rules/schedule.rs` and run by every runtime in `tests/vectors/schedule-*`.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Barrier};

use leasefence::{LeaseStore, Leases, Missed, Schedule};
use serde_json::{json, Value};
use support::batch::Batch;

/// The times every process calls `enqueue_due` at: every 20 s for 40 minutes.
fn nows() -> Vec<f64> {
    (0..=120).map(|i| 1_000_000.0 + 20.0 * i as f64).collect()
}

/// The ids `enqueue_due` must add over [`nows`], exactly once each: a minute schedule's every
/// minute, and an hourly one (`missed: all`) at each hour.
fn expected() -> BTreeSet<String> {
    let store = LeaseStore::open_in_memory().unwrap();
    schedule(&store);
    let mut ids = BTreeSet::new();
    for now in nows() {
        for id in store.enqueue_due(now).unwrap() {
            assert!(ids.insert(id), "one store alone added a slot twice");
        }
    }
    ids
}

fn schedule(store: &dyn Leases) {
    store
        .schedule(&Schedule::new("minute", "* * * * *"))
        .unwrap();
    store
        .schedule(
            &Schedule::new("hourly", "0 * * * *")
                .tz("Europe/Paris")
                .queue("reports")
                .missed(Missed::All),
        )
        .unwrap();
}

/// `processes` batch processes on `db` (a file or a PostgreSQL URL), each calling `enqueue_due`
/// at every time of [`nows`] in order, started together; answers every id any of them added.
fn race(db: &Path, processes: usize) -> Vec<String> {
    let start = Arc::new(Barrier::new(processes));
    let threads: Vec<_> = (0..processes)
        .map(|_| {
            let (db, start) = (db.to_path_buf(), start.clone());
            std::thread::spawn(move || {
                let mut batch = Batch::spawn(&db);
                start.wait();
                let mut added = Vec::new();
                for now in nows() {
                    let (value, _) = batch.call(json!({"op": "enqueue_due", "now": now}));
                    let Value::Array(ids) = value else {
                        panic!("enqueue_due answered {value}")
                    };
                    added.extend(ids.into_iter().map(|id| id.as_str().unwrap().to_owned()));
                }
                added
            })
        })
        .collect();
    threads
        .into_iter()
        .flat_map(|thread| thread.join().unwrap())
        .collect()
}

/// Every third minute slot's job, enqueued before the race by someone else: `enqueue_due` must
/// neither add nor answer it (enqueue if missing), whatever `last` says.
fn enqueued_before() -> BTreeSet<String> {
    expected()
        .into_iter()
        .filter(|id| id.starts_with("minute@"))
        .step_by(3)
        .collect()
}

/// Every slot once: no id answered twice, the answers are exactly the expected slots but those
/// enqueued before, and the store holds exactly the expected jobs.
fn assert_each_slot_once(added: Vec<String>, jobs: Vec<String>) {
    let want = expected();
    assert!(want.len() > 40, "the run covers {} slots", want.len());
    let mut seen = BTreeSet::new();
    for id in &added {
        assert!(seen.insert(id.clone()), "{id} was answered as added twice");
    }
    let answered: BTreeSet<String> = want.difference(&enqueued_before()).cloned().collect();
    assert_eq!(seen, answered, "the slots added by the racing processes");
    let stored: BTreeSet<String> = jobs.into_iter().collect();
    assert_eq!(stored, want, "the jobs in the store");
}

#[test]
fn racing_processes_enqueue_each_slot_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("schedules.db");
    let store = LeaseStore::open(&db).unwrap();
    schedule(&store);
    for id in enqueued_before() {
        assert!(store.enqueue(&id).unwrap());
    }
    let added = race(&db, 4);
    let jobs = store.jobs().unwrap().into_iter().map(|j| j.id).collect();
    assert_each_slot_once(added, jobs);
    let hourly = store
        .inspect("hourly@1970-01-12T14:00:00Z")
        .unwrap()
        .expect("the hourly slot 15:00 in Paris");
    assert_eq!(hourly.queue, "reports");
}

#[test]
fn a_file_from_before_schedules_is_upgraded_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    {
        let store = LeaseStore::open(&db).unwrap();
        store.enqueue("kept").unwrap();
        store
            .connection()
            .execute_batch("DROP TABLE leasefence_schedules")
            .unwrap();
    }
    let store = LeaseStore::open(&db).unwrap();
    store.schedule(&Schedule::new("t", "0 * * * *")).unwrap();
    assert_eq!(
        store.enqueue_due(3600.0).unwrap(),
        ["t@1970-01-01T01:00:00Z"]
    );
    assert!(store.state("kept").unwrap().is_some());
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test schedules -- --ignored"]
#[cfg(feature = "postgres")]
fn racing_processes_enqueue_each_slot_exactly_once_on_postgres() {
    let schema = support::pg_schema::PgSchema::new("schedules_race");
    let store = leasefence::PgStore::connect(&schema.url).unwrap();
    schedule(&store);
    for id in enqueued_before() {
        assert!(store.enqueue(&id).unwrap());
    }
    let added = race(Path::new(&schema.url), 4);
    let jobs = store.jobs().unwrap().into_iter().map(|j| j.id).collect();
    assert_each_slot_once(added, jobs);
    assert_eq!(
        store
            .inspect("hourly@1970-01-12T14:00:00Z")
            .unwrap()
            .expect("the hourly slot")
            .queue,
        "reports"
    );
    // A schema from before schedules gains the table when a store opens it.
    drop(store);
    let mut admin = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    admin
        .batch_execute("DROP TABLE leasefence_schedules")
        .unwrap();
    let store = leasefence::PgStore::connect(&schema.url).unwrap();
    assert!(store.schedules().unwrap().is_empty());
    store.schedule(&Schedule::new("t", "0 * * * *")).unwrap();
    assert_eq!(
        store.enqueue_due(3600.0).unwrap(),
        ["t@1970-01-01T01:00:00Z"]
    );
}

/// The Rust worker enqueues due slots as it ticks: a worker run until empty, started after a
/// slot, runs that slot's job (one handler call, the slot's id), alone and with concurrency.
#[test]
fn a_running_worker_enqueues_and_runs_the_due_slot() {
    use leasefence::worker::{Worker, WorkerOptions};
    for concurrency in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("worker.db");
        let store = LeaseStore::open(&db).unwrap();
        store
            .schedule(&Schedule::new("nightly", "0 2 * * *").payload("p"))
            .unwrap();
        // 1970-01-02 03:00 UTC: the latest slot is 02:00 that day.
        let options = WorkerOptions::new("w")
            .until_empty(true)
            .concurrency(concurrency)
            .clock(|| 97_200.0);
        let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
        let ran = std::sync::Mutex::new(Vec::new());
        let handler = |job: &leasefence::worker::Job| {
            ran.lock()
                .unwrap()
                .push((job.id.clone(), job.payload.clone()));
            Ok(Some("done".to_owned()))
        };
        let counters = if concurrency == 1 {
            worker.run(handler).unwrap()
        } else {
            worker.run_concurrent(handler).unwrap()
        };
        assert_eq!(counters.completed, 1, "concurrency {concurrency}");
        assert_eq!(
            ran.into_inner().unwrap(),
            [(
                "nightly@1970-01-02T02:00:00Z".to_owned(),
                Some("p".to_owned())
            )]
        );
    }
}

/// An idle worker wakes at the next slot of a schedule, not at its next poll: with a poll of a
/// minute, a worker whose clock starts 1.5 s before a minute runs the slot of the minute before
/// at once, and the new minute's slot within seconds of it (at the poll before waking knew the
/// slots: about a minute later, past the test's limit).
#[test]
fn an_idle_worker_wakes_at_the_next_slot_rather_than_at_its_poll() {
    use leasefence::worker::{Worker, WorkerOptions};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
    let real = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
    };
    for concurrency in [1, 3] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("minutely.db");
        let store = LeaseStore::open(&db).unwrap();
        store
            .schedule(&Schedule::new("minutely", "* * * * *"))
            .unwrap();
        let start = real();
        let minute = (start / 60.0).ceil() * 60.0 + 60.0;
        let offset = minute - 1.5 - start;
        let options = WorkerOptions::new("w")
            .concurrency(concurrency)
            .idle_poll(Duration::from_secs(60))
            .clock(move || real() + offset);
        let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options).unwrap();
        let stop = worker.stop_handle();
        let ran = std::sync::Mutex::new(Vec::new());
        let began = Instant::now();
        let limit = Duration::from_secs(20);
        let counters = std::thread::scope(|scope| {
            let watchdog = stop.clone();
            scope.spawn(move || {
                while began.elapsed() < limit && !watchdog.is_stopping() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                watchdog.stop();
            });
            let handler = |job: &leasefence::worker::Job| {
                let mut ran = ran.lock().unwrap();
                ran.push(job.id.clone());
                if ran.len() == 2 {
                    stop.stop();
                }
                Ok(Some("done".to_owned()))
            };
            if concurrency == 1 {
                worker.run(handler).unwrap()
            } else {
                worker.run_concurrent(handler).unwrap()
            }
        });
        let ran = ran.into_inner().unwrap();
        assert_eq!(
            ran.len(),
            2,
            "concurrency {concurrency}: ran {ran:?} in {:?} ({counters:?})",
            began.elapsed()
        );
        assert!(
            began.elapsed() < limit,
            "concurrency {concurrency}: the second slot waited for the stop"
        );
        assert!(
            ran[0].starts_with("minutely@") && ran[1].starts_with("minutely@") && ran[0] < ran[1],
            "{ran:?}"
        );
    }
}

/// The CLI's `schedule`, `schedules`, `enqueue-due` and `unschedule`, and their exit codes.
#[test]
fn the_cli_schedules_lists_enqueues_and_unschedules() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("cli.db");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(support::cli_bin::bin())
            .arg("--db")
            .arg(&db)
            .args(args)
            .output()
            .unwrap();
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        (out.status.code(), line)
    };
    let (code, line) = run(&[
        "schedule",
        "nightly",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--queue",
        "reports",
        "--priority",
        "-1",
        "--missed",
        "all",
    ]);
    assert_eq!((code, line), (Some(0), json!({"value": true})));
    let (code, line) = run(&["schedule", "bad", "30 2 * *"]);
    assert_eq!(
        (code, line["error"]["code"].clone()),
        (Some(2), json!("invalid_argument"))
    );
    let (_, line) = run(&["schedules"]);
    assert_eq!(
        line["value"],
        json!([{"name": "nightly", "cron": "30 2 * * *", "tz": "America/New_York",
                "queue": "reports", "priority": -1, "payload": null, "missed": "all", "last": null}])
    );
    let (code, line) = run(&["enqueue-due", "--now", "1772953200"]);
    assert_eq!(
        (code, line),
        (Some(0), json!({"value": ["nightly@2026-03-08T07:00:00Z"]}))
    );
    assert_eq!(
        run(&["unschedule", "nightly"]),
        (Some(0), json!({"value": true}))
    );
    assert_eq!(
        run(&["unschedule", "nightly"]),
        (Some(1), json!({"value": false}))
    );
}

#![cfg(all(feature = "postgres", not(target_arch = "wasm32")))]
//! The contract on a real PostgreSQL server (`PgStore`, `leasefence --db postgres://...`).
//!
//! Needs `LEASEFENCE_PG_URL` (a server this suite may create and drop schemas on). Every test is
//! `#[ignore]`d, so a plain `cargo test` (no server) runs none of them and counts none as
//! passed; run with `--ignored` and no server, each fails saying how to start one.
//! `bash scripts/postgres.sh` starts a throwaway server and runs this suite on it, with
//! `LEASEFENCE_PG_RESTART` set to a command that crash-restarts that server.
//!
//! Each test works in a schema of its own (`?options=-csearch_path%3D...`), dropped at the end:
//!
//! - the shared vectors (`tests/vectors/*.json`) through the JSON-lines protocol, one fresh schema
//!   per vector, with the same runner as the SQLite run;
//! - the stall-heavy mixed workload (`support/workload.rs`) on several `leasefence batch`
//!   processes, and on library stores in threads: no fence twice, no job completed twice, the
//!   final rows exactly what the acknowledged operations did;
//! - several processes draining one queue with `claim_next`: each job handed out once;
//! - a crash restart of the server mid-run: no acknowledged fence or result is lost, no fence is
//!   handed out again, and every failure on the way was a retryable `storage` error;
//! - a dropped connection: a `storage` error saying to retry, then the next call works;
//! - the index behind `claim_next`, fence exhaustion, foreign tables, concurrent first opens,
//!   invalid arguments rejected before the server is asked.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Barrier, Mutex, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

use leasefence::protocol::{Backend, TargetBackend};
use leasefence::{
    fenced_value, ClaimedJob, Error, Fence, JobState, Lease, Leases, NewJob, OpenOptions, Outcome,
    PgStore, Prune, Reason, SqlValue,
};
use serde_json::{json, Value};
use support::batch::{bin, Batch};
use support::pg_schema::PgSchema as Schema;
use support::workload::{self, Client, EPOCHS, JOBS};

/// The restart test takes this for writing; every other test holds it for reading, so no test
/// loses its connections to a restart it did not ask for.
static SERVER: RwLock<()> = RwLock::new(());

fn shared_server() -> RwLockReadGuard<'static, ()> {
    SERVER
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Terminates every connection named `application` and waits until they are gone.
fn terminate(schema: &Schema, application: &str) -> usize {
    let mut admin = schema.admin();
    let killed = admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .len();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
                &[&application],
            )
            .unwrap()
            .get(0);
        if left == 0 {
            return killed;
        }
        assert!(
            Instant::now() < deadline,
            "{application} connections linger"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The library's columns of `jobs` agree with the contract's: no open job carries a finish time,
/// every job started at or below its fence, insertion numbers are unique, and no side table of
/// an earlier version came back.
fn assert_order_table_consistent(schema: &Schema) {
    let mut admin = schema.admin();
    let row = admin
        .query_one(
            "SELECT count(*) FILTER (WHERE done = 0 AND finished IS NOT NULL), \
                    count(*) FILTER (WHERE base > fence), \
                    count(*) - count(DISTINCT seq), \
                    to_regclass('leasefence_order') IS NULL \
             FROM jobs",
            &[],
        )
        .unwrap();
    let found: (i64, i64, i64, bool) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(
        found,
        (0, 0, 0, true),
        "the library's columns drifted from jobs"
    );
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn every_vector_passes_on_postgres() {
    let _server = shared_server();
    let mut schemas = Vec::new();
    let (failures, steps) = support::vectors::run_all(|name| {
        let test = format!("v_{}", name.trim_end_matches(".json").replace('-', "_"));
        let schema = Schema::new(&test);
        let backend = TargetBackend::new(&schema.url, OpenOptions::new());
        schemas.push(schema);
        Box::new(backend) as Box<dyn Backend>
    });
    assert!(
        failures.is_empty(),
        "{} vector(s) failed on PostgreSQL:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(steps > 100, "only {steps} steps ran");
    for schema in &schemas {
        assert_order_table_consistent(schema);
    }
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn batch_processes_with_stalls_never_break_fencing() {
    let _server = shared_server();
    let started = Instant::now();
    let schema = Schema::new("processes");
    let workers = 6;
    let tally = workload::run(Path::new(&schema.url), workers, Batch::spawn);
    eprintln!(
        "postgres processes: {EPOCHS} runs x {workers} batch processes x {JOBS} jobs in {:?}: \
         {tally:?}",
        started.elapsed()
    );
    tally.assert_exercised(30, &["stale_fence", "expired", "not_owner"]);
    let row = schema
        .admin()
        .query_one("SELECT count(*), sum(done)::bigint FROM jobs", &[])
        .unwrap();
    let (rows, done): (i64, i64) = (row.get(0), row.get(1));
    let expected = (EPOCHS * JOBS) as i64;
    assert_eq!((rows, done), (expected, expected));
    assert_order_table_consistent(&schema);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn library_stores_on_threads_never_break_fencing() {
    let _server = shared_server();
    let started = Instant::now();
    let schema = Schema::new("threads");
    let workers = 8;
    let tally = workload::run(Path::new(&schema.url), workers, |db: &Path| {
        PgStore::connect(db.to_str().unwrap()).unwrap()
    });
    eprintln!(
        "postgres threads: {EPOCHS} runs x {workers} stores x {JOBS} jobs in {:?}: {tally:?}",
        started.elapsed()
    );
    tally.assert_exercised(50, &["stale_fence", "expired", "done", "not_owner"]);
    assert_order_table_consistent(&schema);
}

/// What one draining process got: its (job, fence) grants and the jobs it completed.
type DrainLog = (Vec<(String, Fence)>, Vec<String>);

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn draining_processes_hand_out_each_job_once() {
    let _server = shared_server();
    let schema = Schema::new("drain");
    const QUEUE: usize = 600;
    const PROCESSES: usize = 8;
    {
        let store = leasefence::open(&schema.url).unwrap();
        for i in 0..QUEUE {
            assert!(store.enqueue(&format!("job-{i:04}")).unwrap());
        }
    }
    let barrier = Barrier::new(PROCESSES);
    let logs: Vec<DrainLog> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..PROCESSES)
            .map(|p| {
                let (barrier, url) = (&barrier, &schema.url);
                scope.spawn(move || {
                    let mut batch = Batch::spawn(Path::new(url));
                    let owner = format!("p{p}");
                    let (mut grants, mut completed) = (Vec::new(), Vec::new());
                    barrier.wait();
                    while let Some(claimed) = batch.claim_next(&owner, 0.0, 600.0) {
                        let ClaimedJob { job, fence, .. } = &claimed;
                        let result = format!("{owner}/{job}/{fence}");
                        let done = batch.complete(&claimed.lease(), 1.0, Some(&result));
                        assert_eq!(done, Outcome::Granted(()), "{owner}: {job} fence {fence}");
                        grants.push((job.clone(), *fence));
                        completed.push(job.clone());
                    }
                    batch.finish();
                    (grants, completed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut handed_out = BTreeSet::new();
    let mut completed = BTreeSet::new();
    for (grants, done) in &logs {
        assert!(!grants.is_empty(), "a process never got a job: {logs:?}");
        for grant in grants {
            assert!(
                handed_out.insert(grant.clone()),
                "{grant:?} handed out twice"
            );
            assert_eq!(grant.1, 1, "{grant:?}: the first claim of a job is fence 1");
        }
        for job in done {
            assert!(completed.insert(job.clone()), "{job} completed twice");
        }
    }
    assert_eq!((handed_out.len(), completed.len()), (QUEUE, QUEUE));
    let rows = leasefence::open(&schema.url).unwrap().jobs().unwrap();
    assert!(rows.iter().all(|row| row.done && row.fence == 1));
    eprintln!(
        "postgres drain: {QUEUE} jobs over {PROCESSES} processes: {:?}",
        logs.iter().map(|l| l.0.len()).collect::<Vec<_>>()
    );
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_server_crash_restart_loses_no_acknowledged_fence_or_result() {
    let Ok(restart) = std::env::var("LEASEFENCE_PG_RESTART") else {
        eprintln!(
            "skipping postgres::a_server_crash_restart_loses_no_acknowledged_fence_or_result: \
             LEASEFENCE_PG_RESTART is unset (scripts/postgres.sh sets it)"
        );
        return;
    };
    // Alone on the server: the restart drops every connection.
    let _server = SERVER
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let schema = Schema::new("restart");
    const QUEUE: usize = 400;
    const WORKERS: usize = 4;
    {
        let store = leasefence::open(&schema.url).unwrap();
        for i in 0..QUEUE {
            store.enqueue(&format!("job-{i:04}")).unwrap();
        }
    }
    // A logical clock that moves with every operation: a lease whose complete was lost in the
    // restart runs out and the job is claimed again, with a new fence.
    let clock = AtomicU64::new(0);
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let acknowledged_grants = Mutex::new(Vec::<(String, Fence)>::new());
    let acknowledged_completes = Mutex::new(Vec::<(String, Fence, String)>::new());
    // Completes that failed with an error: lost with the connection, they may or may not have
    // committed (the caller cannot know; `state` tells).
    let uncertain_completes = Mutex::new(Vec::<(String, Fence, String)>::new());
    let errors = Mutex::new(Vec::<String>::new());
    let deadline = Instant::now() + Duration::from_secs(180);

    std::thread::scope(|scope| {
        for w in 0..WORKERS {
            let (clock, done, stop) = (&clock, &done, &stop);
            let (grants, completes, uncertain, errors) = (
                &acknowledged_grants,
                &acknowledged_completes,
                &uncertain_completes,
                &errors,
            );
            let url = &schema.url;
            scope.spawn(move || {
                let store = PgStore::connect(url).unwrap();
                let owner = format!("w{w}");
                let failed = |err: Error| {
                    assert_eq!(err.code(), "storage", "{err}");
                    assert!(err.is_retryable(), "not retryable: {err}");
                    assert!(err.to_string().contains("retry"), "{err}");
                    errors.lock().unwrap().push(err.to_string());
                    std::thread::sleep(Duration::from_millis(50));
                };
                while !stop.load(Ordering::SeqCst) {
                    assert!(Instant::now() < deadline, "the run did not finish");
                    let now = clock.fetch_add(1, Ordering::SeqCst) as f64;
                    let claimed = match store.claim_next(&owner, now, 40.0) {
                        Ok(Some(claimed)) => claimed,
                        Ok(None) => {
                            // Nothing claimable: finished once every job is done (a complete
                            // lost in the restart may have committed without an answer).
                            if store
                                .jobs()
                                .is_ok_and(|rows| rows.iter().all(|row| row.done))
                            {
                                stop.store(true, Ordering::SeqCst);
                            }
                            std::thread::sleep(Duration::from_millis(2));
                            continue;
                        }
                        Err(err) => {
                            failed(err);
                            continue;
                        }
                    };
                    grants
                        .lock()
                        .unwrap()
                        .push((claimed.job.clone(), claimed.fence));
                    let result = format!("{owner}/{}/{}", claimed.job, claimed.fence);
                    let now = clock.fetch_add(1, Ordering::SeqCst) as f64;
                    match store.complete(&claimed.lease(), now, Some(&result)) {
                        Ok(Outcome::Granted(())) => {
                            completes
                                .lock()
                                .unwrap()
                                .push((claimed.job, claimed.fence, result));
                            done.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(Outcome::Rejected(_)) => {} // the lease ran out meanwhile
                        Err(err) => {
                            uncertain
                                .lock()
                                .unwrap()
                                .push((claimed.job, claimed.fence, result));
                            failed(err);
                        }
                    }
                }
            });
        }
        // Crash-restart the server a third of the way through.
        while done.load(Ordering::SeqCst) < QUEUE / 3 {
            assert!(Instant::now() < deadline, "no progress before the restart");
            std::thread::sleep(Duration::from_millis(5));
        }
        let status = Command::new("sh").arg("-c").arg(&restart).status().unwrap();
        if !status.success() {
            stop.store(true, Ordering::SeqCst);
            panic!("{restart} failed: {status}");
        }
        eprintln!(
            "postgres restart: crash-restarted with {} of {QUEUE} jobs done",
            done.load(Ordering::SeqCst)
        );
    });

    let grants = acknowledged_grants.into_inner().unwrap();
    let completes = acknowledged_completes.into_inner().unwrap();
    let uncertain = uncertain_completes.into_inner().unwrap();
    let errors = errors.into_inner().unwrap();
    assert!(
        !errors.is_empty(),
        "the restart interrupted nothing; the test proves nothing"
    );
    let mut seen = BTreeSet::new();
    let mut max_fence: BTreeMap<&str, Fence> = BTreeMap::new();
    for (job, fence) in &grants {
        assert!(
            seen.insert((job, fence)),
            "{job} fence {fence} handed out twice"
        );
        let max = max_fence.entry(job).or_default();
        *max = (*max).max(*fence);
    }
    let store = leasefence::open(&schema.url).unwrap();
    let rows: BTreeMap<String, JobState> = store
        .jobs()
        .unwrap()
        .into_iter()
        .map(|row| (row.id.clone(), row))
        .collect();
    assert_eq!(rows.len(), QUEUE);
    for (job, max) in &max_fence {
        assert!(
            rows[*job].fence >= *max,
            "{job}: fence {max} was acknowledged, the server has {}",
            rows[*job].fence
        );
    }
    let mut completed = BTreeSet::new();
    for (job, fence, result) in &completes {
        assert!(completed.insert(job), "{job} completed twice");
        let row = &rows[job];
        assert!(row.done, "{job}: an acknowledged complete was lost");
        assert_eq!(row.result.as_deref(), Some(result.as_str()), "{job}");
        assert_eq!(row.fence, *fence, "{job}");
    }
    // Every job is done, by an acknowledged complete or by one whose answer was lost.
    let mut committed_unanswered = 0;
    for (job, row) in &rows {
        assert!(row.done, "{job} is not done");
        if completed.contains(job) {
            continue;
        }
        let stored = (row.fence, row.result.clone().unwrap_or_default());
        assert!(
            uncertain
                .iter()
                .any(|(j, fence, result)| j == job && (*fence, result.clone()) == stored),
            "{job} is done with {stored:?}, which no complete attempted"
        );
        committed_unanswered += 1;
    }
    assert_order_table_consistent(&schema);
    eprintln!(
        "postgres restart: {} grants, {} acknowledged completes, {} committed without an \
         answer, {} retryable errors on the way",
        grants.len(),
        completes.len(),
        committed_unanswered,
        errors.len()
    );
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_dropped_connection_is_a_retryable_storage_error_then_works_again() {
    let _server = shared_server();
    let schema = Schema::new("dropped");

    // The library: the call after the drop fails retryably; the next one reconnects.
    let name = format!("{}_lib", schema.name);
    let store = PgStore::connect(&schema.url_named(&name)).unwrap();
    assert!(store.enqueue("j1").unwrap());
    assert_eq!(terminate(&schema, &name), 1);
    let err = store.claim("j1", "a", 0.0, 10.0).unwrap_err();
    assert_eq!(err.code(), "storage");
    assert!(err.is_retryable(), "{err}");
    assert!(
        matches!(
            err,
            Error::Postgres {
                disconnected: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("retry"), "{err}");
    assert_eq!(
        store.claim("j1", "a", 0.0, 10.0).unwrap().granted(),
        Some(1)
    );
    assert_eq!(store.state("j1").unwrap().unwrap().fence, 1);

    // A `leasefence batch` process: an error line, then it serves again on a new connection.
    let name = format!("{}_cli", schema.name);
    let mut child = Command::new(bin())
        .args(["--db", &schema.url_named(&name), "batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |request: Value| -> Value {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    assert_eq!(
        ask(json!({"op": "enqueue", "job": "j2"})),
        json!({"value": true})
    );
    assert_eq!(terminate(&schema, &name), 1);
    let failed = ask(json!({"op": "claim", "job": "j2", "owner": "b", "now": 0, "ttl": 10}));
    assert_eq!(failed["error"]["code"], "storage", "{failed}");
    let message = failed["error"]["message"].as_str().unwrap();
    assert!(message.contains("retry"), "{message}");
    assert_eq!(
        ask(json!({"op": "claim", "job": "j2", "owner": "b", "now": 0, "ttl": 10})),
        json!({"value": 1})
    );
    assert_eq!(
        ask(json!({"op": "state", "job": "j2"}))["value"]["owner"],
        "b"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());

    // A server that cannot be reached at all is a retryable storage error too.
    let err =
        PgStore::connect("postgres://postgres@127.0.0.1:1/postgres?connect_timeout=2").unwrap_err();
    assert_eq!(err.code(), "storage");
    assert!(err.is_retryable(), "{err}");
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn invalid_arguments_are_refused_before_the_server_is_asked() {
    let _server = shared_server();
    let schema = Schema::new("invalid");
    let name = format!("{}_app", schema.name);
    let store = PgStore::connect(&schema.url_named(&name)).unwrap();
    store.enqueue("j").unwrap();
    // With the connection gone, anything that reached the server would fail as `storage`.
    terminate(&schema, &name);
    let invalid: Vec<Error> = vec![
        store.claim("j", "a", 0.0, 0.0).unwrap_err(),
        store.claim("j", "a", f64::NAN, 5.0).unwrap_err(),
        store
            .renew(&Lease::new("j", "a", 1), 0.0, -1.0)
            .unwrap_err(),
        store
            .complete(&Lease::new("j", "a", 1), f64::INFINITY, None)
            .unwrap_err(),
        store.claim_next("a", 0.0, f64::NAN).unwrap_err(),
        store.claim_many("j", &["a", "b"], 0.0, 0.0).unwrap_err(),
        // PostgreSQL text cannot hold U+0000.
        store.enqueue("nul\0id").unwrap_err(),
        store.claim("j", "own\0er", 0.0, 5.0).unwrap_err(),
        store
            .complete(&Lease::new("j", "a", 1), 0.0, Some("res\0ult"))
            .unwrap_err(),
    ];
    for err in &invalid {
        assert_eq!(err.code(), "invalid_argument", "{err}");
    }
    // The first call that does reach the server finds the connection gone.
    assert_eq!(store.state("j").unwrap_err().code(), "storage");
    let row = store.state("j").unwrap().unwrap();
    assert_eq!((row.fence, row.owner, row.done), (0, None, false));
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claim_next_takes_the_contract_order_from_one_index() {
    let _server = shared_server();
    let schema = Schema::new("order");
    let store = leasefence::open(&schema.url).unwrap();
    // Enqueued with plain SQL, as another program would: the trigger numbers them too.
    let mut admin = schema.admin();
    admin
        .batch_execute(
            "INSERT INTO jobs(id) SELECT 'job-' || lpad((20001 - g)::text, 5, '0') \
             FROM generate_series(1, 20000) g; ANALYZE jobs",
        )
        .unwrap();
    // Insertion order, not id order: job-20000 was inserted first.
    let first = store.claim_next("w", 0.0, 10.0).unwrap().unwrap();
    assert_eq!(first.job, "job-20000");
    assert_eq!(
        store.claim_next("w", 0.0, 10.0).unwrap().unwrap().job,
        "job-19999"
    );
    // A released job is back at until 0, tied with the untouched ones: insertion order decides,
    // and it was inserted first.
    assert!(store
        .release(&Lease::new("job-20000", "w", 1))
        .unwrap()
        .is_granted());
    assert_eq!(
        store.claim_next("v", 1.0, 10.0).unwrap().unwrap().job,
        "job-20000"
    );

    // The plan PostgreSQL uses for the prepared statement (generic, as after five runs): an
    // ordered scan of the partial index, no sort, whatever the table size.
    admin
        .batch_execute(
            "SET plan_cache_mode = force_generic_plan; \
             PREPARE next_job(float8) AS SELECT id FROM jobs \
             WHERE done = 0 AND until <= $1 AND fence < 9223372036854775807 \
             ORDER BY until, seq LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED",
        )
        .unwrap();
    let plan: Vec<String> = admin
        .query("EXPLAIN (COSTS OFF) EXECUTE next_job(5)", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("leasefence_next"), "{plan}");
    assert!(!plan.contains("Sort"), "{plan}");
    assert!(!plan.contains("Seq Scan"), "{plan}");
}

/// The `Lease` value from a claim through renew, the fenced writes, fail, release and complete,
/// through `&dyn Leases` on a server (the SQLite run is in `fenced.rs`).
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn the_lease_value_round_trips_on_postgres() {
    let _server = shared_server();
    let schema = Schema::new("lease_value");
    let store = leasefence::open(&schema.url).unwrap();
    support::lease_value::round_trip(store.as_ref());
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn an_exhausted_fence_is_an_error_never_a_wrap() {
    let _server = shared_server();
    let schema = Schema::new("fence");
    let store = leasefence::open(&schema.url).unwrap();
    store.enqueue("old").unwrap();
    schema
        .admin()
        .execute(
            "UPDATE jobs SET fence = 9223372036854775806 WHERE id = $1",
            &[&"old"],
        )
        .unwrap();
    assert_eq!(
        store.claim("old", "a", 0.0, 10.0).unwrap().granted(),
        Some(i64::MAX)
    );
    let err = store.claim("old", "b", 20.0, 10.0).unwrap_err();
    assert!(matches!(err, Error::FenceExhausted { .. }), "{err:?}");
    assert_eq!(err.code(), "storage");
    // claim_next skips it rather than failing.
    assert_eq!(store.claim_next("b", 20.0, 10.0).unwrap(), None);
    let row = store.state("old").unwrap().unwrap();
    assert_eq!((row.fence, row.owner.as_deref()), (i64::MAX, Some("a")));
    // Its holder can still finish it.
    assert!(store
        .complete(&Lease::new("old", "a", i64::MAX), 5.0, Some("r"))
        .unwrap()
        .is_granted());
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn foreign_tables_are_refused_and_contract_tables_adopted() {
    let _server = shared_server();

    for (i, foreign) in [
        "CREATE TABLE jobs(id TEXT PRIMARY KEY, payload INTEGER)",
        "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until DOUBLE PRECISION NOT NULL \
         DEFAULT 0, fence BIGINT NOT NULL DEFAULT 0, result TEXT, done BOOLEAN NOT NULL \
         DEFAULT false)",
        "CREATE VIEW jobs AS SELECT 1 AS id",
    ]
    .iter()
    .enumerate()
    {
        let schema = Schema::new(&format!("foreign{i}"));
        schema.admin().batch_execute(foreign).unwrap();
        let err = PgStore::connect(&schema.url).unwrap_err();
        assert!(
            matches!(err, Error::NotLeasefenceDatabase { .. }),
            "{foreign}: {err:?}"
        );
        let left: i64 = schema
            .admin()
            .query_one(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = current_schema() AND c.relname LIKE 'leasefence%'",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(left, 0, "{foreign}: the schema was written to");
    }

    // A contract table made by someone else, with rows: adopted, its rows numbered in order.
    let schema = Schema::new("adopt");
    schema
        .admin()
        .batch_execute(
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until DOUBLE PRECISION NOT NULL \
             DEFAULT 0, fence BIGINT NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL \
             DEFAULT 0); \
             INSERT INTO jobs(id) VALUES ('c'); INSERT INTO jobs(id) VALUES ('a'); \
             INSERT INTO jobs(id, fence, done, result) VALUES ('x', 3, 1, 'r'); \
             INSERT INTO jobs(id) VALUES ('b')",
        )
        .unwrap();
    let store = PgStore::connect(&schema.url).unwrap();
    let ids: Vec<String> = store.jobs().unwrap().into_iter().map(|r| r.id).collect();
    assert_eq!(ids, ["c", "a", "x", "b"]);
    let mut order = Vec::new();
    while let Some(next) = store.claim_next("w", 0.0, 10.0).unwrap() {
        order.push(next.job);
    }
    assert_eq!(order, ["c", "a", "b"]);
    assert_eq!(
        store.claim("x", "w", 0.0, 5.0).unwrap().reason(),
        Some(&Reason::Done)
    );
    assert_order_table_consistent(&schema);
}

/// A schema of an earlier version kept the library's columns in a side table, `leasefence_order`,
/// updated by a trigger after every write of `jobs`. Opening it moves them into `jobs`: the claim
/// order (queue, priority, insertion), the finish times prune reads and the fence each job
/// started at all survive, new jobs are numbered after the old ones, and the side table and its
/// trigger are gone.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn an_earlier_versions_side_table_is_migrated_into_jobs() {
    let _server = shared_server();
    let schema = Schema::new("migrate");
    schema
        .admin()
        .batch_execute(
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until DOUBLE PRECISION NOT NULL \
             DEFAULT 0, fence BIGINT NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL \
             DEFAULT 0); \
             CREATE TABLE leasefence_order(id TEXT PRIMARY KEY REFERENCES jobs(id) \
                 ON UPDATE CASCADE ON DELETE CASCADE, \
                 seq BIGINT GENERATED BY DEFAULT AS IDENTITY NOT NULL, \
                 until DOUBLE PRECISION NOT NULL, open BOOLEAN NOT NULL, \
                 queue TEXT NOT NULL DEFAULT 'default', priority BIGINT NOT NULL DEFAULT 0, \
                 enqueued DOUBLE PRECISION, finished DOUBLE PRECISION, \
                 base BIGINT NOT NULL DEFAULT 0); \
             CREATE FUNCTION leasefence_track() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RETURN NULL; END $$; \
             CREATE TRIGGER leasefence_track AFTER INSERT OR UPDATE ON jobs \
                 FOR EACH ROW EXECUTE FUNCTION leasefence_track(); \
             INSERT INTO jobs(id, fence) VALUES ('late', 0), ('early', 0), ('urgent', 0), \
                 ('mail', 0), ('restarted', 7); \
             INSERT INTO jobs(id, fence, done, result) VALUES ('old', 2, 1, 'r'), ('newer', 1, 1, 'r'); \
             INSERT INTO leasefence_order(id, seq, until, open, queue, priority, enqueued, \
                 finished, base) VALUES \
                 ('late', 40, 0, true, 'default', 0, 100, NULL, 0), \
                 ('early', 12, 0, true, 'default', 0, 100, NULL, 0), \
                 ('urgent', 90, 0, true, 'default', 5, 100, NULL, 0), \
                 ('mail', 5, 0, true, 'mail', 0, 100, NULL, 0), \
                 ('restarted', 50, 0, true, 'default', 0, 100, NULL, 6), \
                 ('old', 7, 0, false, 'default', 0, 100, 1000, 0), \
                 ('newer', 8, 0, false, 'default', 0, 100, 3000, 0)",
        )
        .unwrap();
    let store = PgStore::connect(&schema.url).unwrap();
    let mut admin = schema.admin();
    let gone: bool = admin
        .query_one(
            "SELECT to_regclass('leasefence_order') IS NULL AND NOT EXISTS (SELECT 1 \
             FROM pg_trigger WHERE tgrelid = 'jobs'::regclass AND tgtype <> 7 AND NOT tgisinternal)",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(gone, "the side table or its after-trigger is still there");
    // A job enqueued now comes after every old one in its queue and priority.
    store.enqueue("new").unwrap();
    let mut order = Vec::new();
    while let Some(next) = store.claim_next("w", 1.0, 10.0).unwrap() {
        order.push(next.job);
    }
    assert_eq!(
        order,
        ["urgent", "mail", "early", "late", "restarted", "new"]
    );
    // The fence the job started at: its attempts count from there.
    assert_eq!(store.inspect("restarted").unwrap().unwrap().attempts, 2);
    // The finish times: prune before 2000 takes the job finished at 1000 only.
    assert_eq!(store.prune(&Prune::finished_before(2000.0)).unwrap(), 1);
    assert!(store.state("old").unwrap().is_none());
    assert!(store.state("newer").unwrap().is_some());
    assert_order_table_consistent(&schema);
    // A job another program finishes by an UPDATE of `done` alone has no finish time: the next
    // prune stamps it with the server's clock, and the one after deletes it.
    admin
        .batch_execute("UPDATE jobs SET done = 1, result = 'by hand' WHERE id = 'new'")
        .unwrap();
    assert_eq!(store.prune(&Prune::finished_before(1e12)).unwrap(), 1);
    assert!(store.state("newer").unwrap().is_none());
    assert!(store.state("new").unwrap().is_some());
    assert_eq!(store.prune(&Prune::finished_before(1e12)).unwrap(), 1);
    assert!(store.state("new").unwrap().is_none());
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn processes_opening_a_new_schema_at_once_create_it_once() {
    let _server = shared_server();
    let schema = Schema::new("fresh");
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(bin())
                .args(["--db", &schema.url, "enqueue", "only-job"])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<(i32, String)> = children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            (
                out.status.code().unwrap(),
                String::from_utf8(out.stdout).unwrap(),
            )
        })
        .collect();
    let inserted = outputs.iter().filter(|(code, _)| *code == 0).count();
    assert_eq!(inserted, 1, "{outputs:?}");
    for (code, out) in &outputs {
        let want = if *code == 0 {
            "{\"value\":true}\n"
        } else {
            "{\"value\":false}\n"
        };
        assert_eq!(out, want);
    }
}

/// A repair at open (of a dropped index and a disabled trigger) while other stores write: every
/// open succeeds, and every write the writers were told is stored is there, in the side table too.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_repair_at_open_while_others_write_loses_nothing() {
    let _server = shared_server();
    let schema = Schema::new("repair_busy");
    PgStore::connect(&schema.url).unwrap();
    let stop = AtomicBool::new(false);
    let written = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for writer in 0..3 {
            let (url, stop, written) = (&schema.url, &stop, &written);
            scope.spawn(move || {
                let store = PgStore::connect(url).unwrap();
                let owner = format!("w{writer}");
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    let job = format!("{owner}-{n}");
                    // A writer may itself be the victim: only what it was told is stored counts.
                    if store.enqueue(&job).is_ok() {
                        written.fetch_add(1, Ordering::SeqCst);
                    }
                    if let Ok(Some(claim)) = store.claim_next(&owner, 0.0, 60.0) {
                        let _ = store.complete(&claim.lease(), 1.0, Some("r"));
                    }
                    n += 1;
                }
            });
        }
        let mut admin = schema.admin();
        for round in 0..20 {
            // Each its own transaction: the two in one would deadlock with the writers too.
            let broken = admin
                .batch_execute("DROP INDEX leasefence_seq")
                .and_then(|()| {
                    admin.batch_execute("ALTER TABLE jobs DISABLE TRIGGER leasefence_track")
                });
            if let Err(err) = broken {
                stop.store(true, Ordering::SeqCst);
                panic!("round {round}: breaking the schema failed: {err}");
            }
            let opened = PgStore::connect(&schema.url)
                .and_then(|store| store.enqueue(&format!("opened-{round}")));
            if let Err(err) = opened {
                stop.store(true, Ordering::SeqCst);
                panic!("round {round}: opening during writes failed: {err}");
            }
            written.fetch_add(1, Ordering::SeqCst);
        }
        stop.store(true, Ordering::SeqCst);
    });
    let mut admin = schema.admin();
    let jobs: i64 = admin
        .query_one("SELECT count(*) FROM jobs", &[])
        .unwrap()
        .get(0);
    assert_eq!(jobs as usize, written.load(Ordering::SeqCst));
    assert_order_table_consistent(&schema);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claim_many_and_the_cli_run_unchanged_on_postgres() {
    let _server = shared_server();
    let schema = Schema::new("cli");
    let cli = |args: &[&str]| -> (i32, String) {
        let out = Command::new(bin())
            .args(["--db", &schema.url])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
        )
    };
    assert_eq!(cli(&["init"]), (0, "{\"value\":null}\n".into()));
    assert_eq!(cli(&["enqueue", "j"]), (0, "{\"value\":true}\n".into()));
    // More owners than claim_many opens connections: still exactly one winner.
    let owners: Vec<String> = (0..40).map(|i| format!("o{i}")).collect();
    let (code, out) = cli(&[
        "claim-many",
        "j",
        "--owner",
        &owners.join(","),
        "--ttl",
        "10",
        "--now",
        "0",
    ]);
    assert_eq!(code, 0);
    let fences: Value = serde_json::from_str::<Value>(&out).unwrap()["value"].clone();
    let fences = fences.as_array().unwrap();
    assert_eq!(fences.len(), 40);
    assert_eq!(
        fences.iter().filter(|f| **f == json!(1)).count(),
        1,
        "{out}"
    );
    assert_eq!(fences.iter().filter(|f| f.is_null()).count(), 39, "{out}");
    let (code, out) = cli(&["claim", "j", "--owner", "late", "--ttl", "5", "--now", "1"]);
    assert_eq!(code, 1);
    assert!(out.contains("\"held\""), "{out}");
    let (code, out) = cli(&[
        "renew", "j", "--owner", "nobody", "--fence", "1", "--ttl", "5", "--now", "2",
    ]);
    assert_eq!(
        (code, out),
        (
            1,
            "{\"value\":false,\"reason\":{\"code\":\"not_owner\"}}\n".into()
        )
    );
    let (code, out) = cli(&["jobs", "--json"]);
    assert_eq!(code, 0);
    let page: Value = serde_json::from_str(out.trim()).unwrap();
    let row = &page["value"]["jobs"][0];
    assert_eq!(row["fence"], 1);
    assert_eq!(row["done"], false);
    let (code, out) = cli(&["claim", "j", "--owner", "x", "--ttl", "0", "--now", "1"]);
    assert_eq!(code, 2, "{out}");
    // A URL the client cannot use is a storage error naming it without its password.
    let out = Command::new(bin())
        .args([
            "--db",
            "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=1",
            "state",
            "j",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("\"storage\"") && !text.contains("hunter2"),
        "{text}"
    );

    // The same store through the trait object `open` returns.
    let store = leasefence::open(&schema.url).unwrap();
    let outcomes = store.claim_many("j", &["a", "b"], 1.0, 5.0).unwrap();
    assert!(outcomes
        .iter()
        .all(|o| matches!(o.reason(), Some(Reason::Held { .. }))));
    assert!(format!("{store:?}").contains("PgStore"));
}

/// The TLS tests' URL: `role` at `host`, in `schema`, with `tls` appended. `scripts/postgres.sh`'s
/// pg_hba.conf lets `lf_tls` in over TLS only and `lf_cert` with a trusted client certificate only.
fn tls_url_as(role: &str, schema: &Schema, host: &str, tls: &str) -> String {
    let port = schema
        .base
        .rsplit_once(':')
        .and_then(|(_, rest)| rest.split('/').next())
        .expect("a port in LEASEFENCE_PG_URL");
    let url = format!(
        "postgres://{role}@{host}:{port}/postgres?options=-csearch_path%3D{}&application_name={role}",
        schema.name
    );
    if tls.is_empty() {
        url
    } else {
        format!("{url}&{tls}")
    }
}

fn tls_url(schema: &Schema, host: &str, tls: &str) -> String {
    tls_url_as("lf_tls", schema, host, tls)
}

/// `scripts/postgres.sh`'s TLS material (`LEASEFENCE_PG_TLS_DIR`): the path of `file` in it.
fn tls_file(file: &str) -> String {
    let dir = std::env::var("LEASEFENCE_PG_TLS_DIR")
        .expect("LEASEFENCE_PG_TLS_DIR is unset: run bash scripts/postgres.sh");
    format!("{dir}/{file}")
}

/// Creates a superuser login role (the TLS tests' roles; pg_hba.conf decides how they get in).
fn create_role(schema: &Schema, role: &str) {
    // Identifiers cannot be bound; these are fixed names.
    schema
        .admin()
        .batch_execute(&format!(
            "DO $$ BEGIN CREATE ROLE {role} LOGIN SUPERUSER; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        ))
        .unwrap();
}

/// Waits until no session of `role` is left, so the next count sees only the next one.
fn wait_for_tls_sessions_to_end(schema: &Schema, role: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while schema
        .admin()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&role],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        assert!(Instant::now() < deadline, "the session did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn tls_follows_libpq_sslmode_and_refuses_the_wrong_server() {
    let (ca, other_ca) = (tls_file("ca.pem"), tls_file("other-ca.pem"));
    let _server = shared_server();
    let schema = Schema::new("tls");
    create_role(&schema, "lf_tls");

    // The server really refuses lf_tls without TLS, and that refusal is final, not "retry".
    let err = PgStore::connect(&tls_url(&schema, "localhost", "sslmode=disable")).unwrap_err();
    assert!(matches!(err, Error::Postgres { .. }), "{err:?}");
    assert!(
        err.to_string().contains("no encryption") || err.to_string().contains("pg_hba"),
        "{err}"
    );
    assert!(
        !err.is_retryable(),
        "a refused login is not worth retrying: {err}"
    );

    // Encrypted sessions: the default (prefer), require, verify-ca by address, verify-full by
    // the certificate's name.
    let ca_param = format!("sslrootcert={ca}");
    let accepted = [
        ("localhost", String::new()),
        ("127.0.0.1", "sslmode=require".to_string()),
        ("127.0.0.1", format!("sslmode=verify-ca&{ca_param}")),
        ("localhost", format!("sslmode=verify-full&{ca_param}")),
        ("localhost", format!("sslmode=require&{ca_param}")),
    ];
    for (i, (host, tls)) in accepted.iter().enumerate() {
        let url = tls_url(&schema, host, tls);
        let store = PgStore::connect(&url).unwrap_or_else(|err| panic!("{url}: {err}"));
        let job = format!("tls-{i}");
        assert!(store.enqueue(&job).unwrap());
        assert_eq!(
            store.claim(&job, "w", 0.0, 10.0).unwrap().granted(),
            Some(1)
        );
        // Seen from the server: this session is encrypted.
        let encrypted: i64 = schema
            .admin()
            .query_one(
                "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
                 WHERE a.application_name = 'lf_tls' AND s.ssl",
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(encrypted, 1, "{url}: the session is not encrypted");
        drop(store);
        wait_for_tls_sessions_to_end(&schema, "lf_tls");
    }

    // The CLI takes the same URL unchanged.
    let url = tls_url(
        &schema,
        "localhost",
        &format!("sslmode=verify-full&{ca_param}"),
    );
    let out = Command::new(bin())
        .args(["--db", &url, "state", "tls-3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"fence\":1"));

    // The wrong server, or no way to know: refused at open, naming the reason, not retryable.
    let missing = schema.base.clone() + "-no-such-ca.pem";
    let refused = [
        // The certificate names localhost, not 127.0.0.1.
        (
            "127.0.0.1",
            format!("sslmode=verify-full&{ca_param}"),
            "name",
        ),
        // Signed by an authority we were not told to trust.
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={other_ca}"),
            "issuer",
        ),
        (
            "localhost",
            format!("sslmode=verify-ca&sslrootcert={other_ca}"),
            "issuer",
        ),
        // libpq: with a root certificate at hand, require checks the chain too.
        (
            "localhost",
            format!("sslmode=require&sslrootcert={other_ca}"),
            "issuer",
        ),
        (
            "localhost",
            format!("sslmode=verify-full&sslrootcert={missing}"),
            "cannot read sslrootcert",
        ),
        (
            "localhost",
            "sslmode=allow".to_string(),
            "sslmode=allow is not supported",
        ),
    ];
    for (host, tls, expected) in refused {
        let url = tls_url(&schema, host, &tls);
        let err = PgStore::connect(&url).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, Error::Open { .. }), "{url}: {err:?}");
        assert!(
            message.to_lowercase().contains(expected),
            "{url}: {message}"
        );
        assert!(!err.is_retryable(), "{url}: {message}");
        assert_eq!(err.code(), "storage");
    }
    // Nothing was written by the refused attempts.
    let rows: i64 = schema
        .admin()
        .query_one("SELECT count(*) FROM jobs", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, accepted.len() as i64);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn client_certificates_log_in_where_the_server_asks_for_them() {
    let _server = shared_server();
    let schema = Schema::new("cert");
    create_role(&schema, "lf_cert");
    let ca = tls_file("ca.pem");
    let verified = format!("sslmode=verify-full&sslrootcert={ca}");
    let identity = |name: &str| {
        format!(
            "sslcert={}&sslkey={}",
            tls_file(&format!("{name}.crt")),
            tls_file(&format!("{name}.key"))
        )
    };

    // With the certificate the server trusts: in, and the server saw that certificate.
    let url = tls_url_as(
        "lf_cert",
        &schema,
        "localhost",
        &format!("{verified}&{}", identity("client")),
    );
    let store = PgStore::connect(&url).unwrap_or_else(|err| panic!("{url}: {err}"));
    assert!(store.enqueue("signed").unwrap());
    assert_eq!(
        store.claim("signed", "w", 0.0, 10.0).unwrap().granted(),
        Some(1)
    );
    let seen: Option<String> = schema
        .admin()
        .query_one(
            "SELECT s.client_dn FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = 'lf_cert'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(seen.as_deref(), Some("/CN=lf_cert"));
    drop(store);
    wait_for_tls_sessions_to_end(&schema, "lf_cert");

    // Without one: the server refuses the login, which is final.
    let err =
        PgStore::connect(&tls_url_as("lf_cert", &schema, "localhost", &verified)).unwrap_err();
    assert!(matches!(err, Error::Postgres { .. }), "{err:?}");
    assert!(err.to_string().contains("certificate"), "{err}");
    assert!(!err.is_retryable(), "{err}");

    // A certificate from an authority the server does not trust, a certificate without its key,
    // a key that is not one, a key of another certificate: refused, naming sslcert/sslkey.
    let other = identity("other-client");
    let cert = tls_file("client.crt");
    let refused = [
        other,
        format!("sslcert={cert}"),
        format!("sslcert={cert}&sslkey={cert}"),
        format!("sslcert={cert}&sslkey={}", tls_file("other-client.key")),
    ];
    for params in refused {
        let url = tls_url_as(
            "lf_cert",
            &schema,
            "localhost",
            &format!("{verified}&{params}"),
        );
        let err = PgStore::connect(&url).unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{params}: {err:?}");
        assert!(
            err.to_string().contains("sslcert") || err.to_string().contains("sslkey"),
            "{params}: {err}"
        );
        assert!(!err.is_retryable(), "{params}: {err}");
    }
    let rows: i64 = schema
        .admin()
        .query_one("SELECT count(*) FROM jobs", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 1, "a refused attempt wrote something");
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_password_login_over_verified_tls_binds_the_channel() {
    let _server = shared_server();
    let schema = Schema::new("scram");
    // A fixed password of this throwaway server; CREATE ROLE takes no bound parameters.
    schema
        .admin()
        .batch_execute(
            "DO $$ BEGIN CREATE ROLE lf_scram LOGIN SUPERUSER PASSWORD 'lf-secret'; \
             EXCEPTION WHEN duplicate_object THEN NULL; END $$",
        )
        .unwrap();
    let verified = format!("sslmode=verify-full&sslrootcert={}", tls_file("ca.pem"));
    let with_password = |password: &str, extra: &str| {
        tls_url_as(
            "lf_scram",
            &schema,
            "localhost",
            &format!("{verified}{extra}"),
        )
        .replacen("lf_scram@", &format!("lf_scram:{password}@"), 1)
    };
    // channel_binding=require: the login succeeds only if SCRAM-SHA-256-PLUS bound it to this
    // TLS session (the server's certificate), which is what stops a relaying impostor.
    let url = with_password("lf-secret", "&channel_binding=require");
    let store = PgStore::connect(&url).unwrap_or_else(|err| panic!("{err}"));
    assert!(!store.url().contains("lf-secret"), "{}", store.url());
    assert!(store.enqueue("scram").unwrap());
    assert_eq!(
        store.claim("scram", "w", 0.0, 10.0).unwrap().granted(),
        Some(1)
    );
    drop(store);

    let err = PgStore::connect(&with_password("wrong", "")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("password authentication failed"),
        "{message}"
    );
    assert!(
        !message.contains("wrong@"),
        "the password leaked: {message}"
    );
    assert!(!err.is_retryable(), "{message}");
}

/// docs/contract.md section 12: `claim_next` skips a row another session holds locked, so it may
/// take a later job, but it never answers none while a claimable job exists: it waits for the
/// locked row instead, and claims it when the lock goes.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claim_next_skips_locked_rows_but_never_answers_none_because_of_a_lock() {
    let _server = shared_server();
    let schema = Schema::new("skiplock");
    let store = leasefence::open(&schema.url).unwrap();
    store.enqueue("first").unwrap();
    store.enqueue("second").unwrap();
    // Another session holds `first` locked: a write in progress (here, one that changes nothing).
    let mut holder = schema.admin();
    let mut tx = holder.transaction().unwrap();
    tx.execute("UPDATE jobs SET until = until WHERE id = 'first'", &[])
        .unwrap();
    // The later job is taken: the locked first one is passed over.
    let claimed = store.claim_next("w1", 0.0, 10.0).unwrap().unwrap();
    assert_eq!(claimed.job, "second");
    // Now the only claimable job is locked: claim_next waits for it, never answers none.
    let (sender, answer) = std::sync::mpsc::channel();
    let url = schema.url.clone();
    let waiter = std::thread::spawn(move || {
        let store = leasefence::open(&url).unwrap();
        sender.send(store.claim_next("w2", 0.0, 10.0)).unwrap();
    });
    assert!(
        answer
            .recv_timeout(std::time::Duration::from_millis(700))
            .is_err(),
        "claim_next answered while the only claimable job was locked"
    );
    tx.rollback().unwrap();
    let got = answer
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("claim_next answers once the lock is gone")
        .unwrap();
    waiter.join().unwrap();
    assert_eq!(
        got.map(|c| (c.job, c.fence)),
        Some(("first".to_string(), 1))
    );
    // Nothing claimable at all: none, at once.
    assert_eq!(store.claim_next("w3", 0.0, 10.0).unwrap(), None);
}

/// Section 7 on PostgreSQL: the side tables are written in the statement that changes the row,
/// and a stale worker's fail records nothing.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn failures_and_dead_marks_are_written_with_their_row() {
    let _server = shared_server();
    let schema = Schema::new("lifecycle");
    let store = leasefence::open(&schema.url).unwrap();
    assert!(store.enqueue_with("j", Some(5.0), Some("input")).unwrap());
    assert_eq!(
        store.claim("j", "a", 0.0, 10.0).unwrap().reason(),
        Some(&leasefence::Reason::Scheduled { until: 5.0 })
    );
    let claimed = store.claim_next("a", 5.0, 10.0).unwrap().unwrap();
    assert_eq!(claimed.payload.as_deref(), Some("input"));
    // A stale fail: refused, nothing recorded.
    assert!(!store
        .fail(&Lease::new("j", "a", 7), 6.0, Some(9.0), Some("x"))
        .unwrap()
        .is_granted());
    let mut admin = schema.admin();
    let failures: i64 = admin
        .query_one("SELECT count(*) FROM leasefence_failures", &[])
        .unwrap()
        .get(0);
    assert_eq!(failures, 0);
    assert!(store
        .fail(&Lease::new("j", "a", 1), 6.0, None, Some("poison"))
        .unwrap()
        .is_granted());
    let row = admin
        .query_one(
            "SELECT j.done, d.fence, f.error FROM jobs j JOIN leasefence_dead d ON d.job = j.id \
             JOIN leasefence_failures f ON f.job = j.id WHERE j.id = 'j'",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, i32>(0),
            row.get::<_, i64>(1),
            row.get::<_, Option<String>>(2)
        ),
        (1, 1, Some("poison".to_string()))
    );
    // Two revivers at once: exactly one wins.
    let url = schema.url.clone();
    let results: Vec<bool> = (0..4)
        .map(|_| {
            let url = url.clone();
            std::thread::spawn(move || {
                leasefence::open(&url)
                    .unwrap()
                    .revive("j", 7.0)
                    .unwrap()
                    .is_granted()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    assert_eq!(results.iter().filter(|&&won| won).count(), 1, "{results:?}");
    assert_eq!(store.claim("j", "b", 7.0, 10.0).unwrap().granted(), Some(2));
    assert_order_table_consistent(&schema);

    // inspect's dead flag: the mark counts only while the row it read is done.
    assert!(store.enqueue("k").unwrap());
    let fence = store.claim("k", "a", 0.0, 10.0).unwrap().granted().unwrap();
    assert!(store
        .fail(&Lease::new("k", "a", fence), 1.0, None, Some("poison"))
        .unwrap()
        .is_granted());
    assert!(store.inspect("k").unwrap().unwrap().dead);
    // Reopened outside the contract (a program that knows only `jobs`): the mark means nothing.
    admin
        .execute("UPDATE jobs SET done = 0 WHERE id = 'k'", &[])
        .unwrap();
    assert!(!store.inspect("k").unwrap().unwrap().dead);
    assert!(!store.inspect("j").unwrap().unwrap().dead);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn fenced_writes_refuse_every_path_to_the_library_tables_and_roll_back() {
    use leasefence::{Error, Finish, Lease, Outcome, PgStore, Statement};
    let _server = shared_server();
    let schema = Schema::new("fenced");
    let store = PgStore::connect(&schema.url).unwrap();
    let mut admin = schema.admin();
    admin
        .batch_execute(
            "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER NOT NULL); INSERT INTO t VALUES ('a', 0);
             CREATE TABLE u(x INTEGER);
             CREATE FUNCTION bump_jobs() RETURNS trigger LANGUAGE plpgsql AS
               $$ BEGIN UPDATE jobs SET fence = fence + 100; RETURN NEW; END $$;
             CREATE TRIGGER u_bumps_jobs AFTER INSERT ON u FOR EACH ROW EXECUTE FUNCTION bump_jobs();
             CREATE FUNCTION sneaky() RETURNS void LANGUAGE sql AS $$ UPDATE jobs SET queue = 'elsewhere' $$;",
        )
        .unwrap();
    store.enqueue("j").unwrap();
    let fence = store
        .claim("j", "me", 0.0, 100.0)
        .unwrap()
        .granted()
        .unwrap();
    let v = |admin: &mut postgres::Client| -> i32 {
        admin.query_one("SELECT v FROM t", &[]).unwrap().get(0)
    };
    let attempts = [
        "INSERT INTO u VALUES (1)",
        "SELECT sneaky()",
        "DO $$ BEGIN EXECUTE 'UPDATE jobs SET owner = ''x'''; END $$",
        "DO $$ BEGIN UPDATE jobs SET done = 1; RAISE EXCEPTION 'undo'; EXCEPTION WHEN OTHERS THEN NULL; END $$",
        "WITH gone AS (DELETE FROM jobs RETURNING id) SELECT count(*) FROM gone",
        "TRUNCATE jobs CASCADE",
        "ALTER TABLE jobs ADD COLUMN extra TEXT",
        "CREATE TEMP TABLE jobs(id TEXT)",
        "CREATE TABLE leasefence_mine(x INTEGER)",
        "SELECT set_config('track_counts', 'off', true)",
        "COMMIT",
        "  /* hidden */ rollback",
        "SET search_path = public",
    ];
    for sql in attempts {
        let list = [
            Statement::new("UPDATE t SET v = v + 1", []),
            Statement::new(sql, []),
        ];
        let result = store.fenced(
            &Lease::new("j", "me", fence),
            1.0,
            &list,
            Finish::Complete(None),
        );
        assert!(
            matches!(result, Err(Error::InvalidArgument { .. })),
            "{sql}: {result:?}"
        );
        assert_eq!(v(&mut admin), 0, "{sql} left a write behind");
    }
    let row = store.state("j").unwrap().unwrap();
    assert_eq!((row.fence, row.done), (fence, false));
    let extra: i64 = admin
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 'jobs' AND column_name = 'extra'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(extra, 0);

    // The closure form: reads and writes in the transaction, its value returned; an error rolls
    // back; a stale lease rolls back with the reason.
    let got = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            2.0,
            Finish::KeepLease,
            |tx| {
                let rows = tx.query_values("SELECT v FROM t WHERE k = $1", &["a".into()])?;
                let v: i32 = rows[0].get(0);
                tx.execute_values("UPDATE t SET v = $1", &[(v + 1).into()])?;
                Ok(v + 1)
            },
        )
        .unwrap();
    assert_eq!(got, Outcome::Granted(1));
    let stale = store
        .fenced_with(
            &Lease::new("j", "me", fence + 1),
            2.0,
            Finish::KeepLease,
            |tx| tx.execute_values("UPDATE t SET v = 50", &[]),
        )
        .unwrap();
    assert_eq!(stale.reason().map(|r| r.code()), Some("stale_fence"));
    let swallowed = store.fenced_with(
        &Lease::new("j", "me", fence),
        2.0,
        Finish::KeepLease,
        |tx| {
            tx.execute_values("UPDATE t SET v = 60", &[])?;
            let _ = tx.execute_values("INSERT INTO t VALUES ('a', 1)", &[]);
            Ok(())
        },
    );
    assert!(
        matches!(swallowed, Err(Error::InvalidArgument { .. })),
        "{swallowed:?}"
    );
    assert_eq!(v(&mut admin), 1);
    // The backend-neutral handle through `&dyn Leases`: rows as `SqlValue`s by the column's type,
    // a type without one refused (and rolled back), a value out.
    let leases: &dyn Leases = &store;
    let got = fenced_value(leases, &Lease::new("j", "me", fence), 2.0, Finish::KeepLease, |tx| {
        let read = tx.query(
            "SELECT k, v, v::int8 AS w, 1.5::float8 AS f, true AS b, NULL::text AS z FROM t WHERE k = $1",
            &["a".into()],
        )?;
        assert_eq!(read.columns, ["k", "v", "w", "f", "b", "z"]);
        assert_eq!(
            read.rows,
            [vec![
                SqlValue::Text("a".into()),
                SqlValue::Integer(1),
                SqlValue::Integer(1),
                SqlValue::Real(1.5),
                SqlValue::Bool(true),
                SqlValue::Null
            ]]
        );
        tx.execute("UPDATE t SET v = v", &[])
    })
    .unwrap();
    assert_eq!(got, Outcome::Granted(1));
    let typed = leases.fenced_with(
        &Lease::new("j", "me", fence),
        2.0,
        Finish::KeepLease,
        &mut |tx| {
            tx.execute("UPDATE t SET v = 80", &[])?;
            tx.query("SELECT 1.5::numeric AS n", &[]).map(drop)
        },
    );
    assert!(
        matches!(&typed, Err(Error::InvalidArgument { message, .. }) if message.contains("::text")),
        "{typed:?}"
    );
    assert_eq!(v(&mut admin), 1);
    // A failing statement is `Error::Statement`, naming its index and the server's message.
    let list = [
        Statement::new("UPDATE t SET v = 70", []),
        Statement::new("INSERT INTO t VALUES ('a', 1)", []),
    ];
    let err = store
        .fenced(&Lease::new("j", "me", fence), 2.0, &list, Finish::KeepLease)
        .unwrap_err();
    assert!(
        matches!(&err, Error::Statement { index: 1, busy: false, message } if message.contains("SQLSTATE 23505")),
        "{err:?}"
    );
    assert_eq!((err.code(), err.is_retryable()), ("storage", false));
    let err = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            2.0,
            Finish::KeepLease,
            |tx| tx.execute_values("SELECT * FROM no_such_table", &[]),
        )
        .unwrap_err();
    assert!(
        matches!(&err, Error::Statement { index: 0, message, .. } if message.contains("42P01")),
        "{err:?}"
    );
    assert_eq!(v(&mut admin), 1);
    // Durability is not the statements' to switch off: the commit runs with it on, and the
    // session's setting is back afterwards.
    let list = [Statement::new(
        "SELECT set_config('synchronous_commit', 'off', false)",
        [],
    )];
    assert!(store
        .fenced(
            &Lease::new("j", "me", fence),
            3.0,
            &list,
            Finish::Complete(Some("r".into()))
        )
        .unwrap()
        .is_granted());
    assert!(store.state("j").unwrap().unwrap().done);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn the_postgres_guard_accepts_the_highest_fence_only() {
    use leasefence::guard::{postgres as guard, Guarded};
    let _server = shared_server();
    let schema = Schema::new("guard");
    let mut client = schema.admin();
    guard::install(&mut client).unwrap();
    client.batch_execute("CREATE TABLE sent(n BIGINT)").unwrap();
    let mut send = |fence: i64| {
        guard::write(&mut client, "mail", fence, |tx| {
            tx.execute("INSERT INTO sent VALUES ($1)", &[&fence])
        })
        .unwrap()
    };
    assert_eq!(send(3), Guarded::Accepted(1));
    assert_eq!(send(3), Guarded::Accepted(1));
    assert_eq!(send(2), Guarded::Refused { current: 3 });
    assert_eq!(send(4), Guarded::Accepted(1));
    let n: i64 = schema
        .admin()
        .query_one("SELECT count(*) FROM sent", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 3);
}

/// A store on a fresh schema with the caller's table `app`, and job `j` leased to `me` (until
/// 100): the setting of the hostile-caller tests of fenced writes.
fn fenced_setup(test: &str) -> (Schema, PgStore, Fence) {
    let schema = Schema::new(test);
    let store = PgStore::connect(&schema.url).unwrap();
    schema
        .admin()
        .batch_execute("CREATE TABLE app(x INTEGER)")
        .unwrap();
    store.enqueue("j").unwrap();
    let fence = store
        .claim("j", "me", 0.0, 100.0)
        .unwrap()
        .granted()
        .unwrap();
    (schema, store, fence)
}

/// One fenced statement on `j`, the lease kept.
fn fenced_one(store: &PgStore, fence: Fence, sql: &str) -> leasefence::Result<Outcome<()>> {
    fenced_list(store, fence, &[sql])
}

/// `sql` as a fenced statement is refused as `invalid_argument`.
fn assert_refused(store: &PgStore, fence: Fence, sql: &str) {
    let result = fenced_one(store, fence, sql);
    assert!(
        matches!(result, Err(Error::InvalidArgument { .. })),
        "{sql}: {result:?}"
    );
}

/// `sqls` as one fenced statement list on job "j", keeping the lease.
fn fenced_list(store: &PgStore, fence: Fence, sqls: &[&str]) -> leasefence::Result<Outcome<()>> {
    use leasefence::{Finish, Statement};
    let statements: Vec<Statement> = sqls.iter().map(|sql| Statement::new(*sql, [])).collect();
    store.fenced(
        &Lease::new("j", "me", fence),
        1.0,
        &statements,
        Finish::KeepLease,
    )
}

/// The settings of the store's own session, as a fenced statement sees them.
fn store_settings(store: &PgStore, fence: Fence) -> [String; 5] {
    use leasefence::Finish;
    let got = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            1.0,
            Finish::KeepLease,
            |tx| {
                let rows = tx.query_values(
                "SELECT current_setting('synchronous_commit'), current_setting('lock_timeout'), \
                 current_setting('search_path'), current_setting('statement_timeout'), \
                 current_user::text",
                &[],
            )?;
                Ok(std::array::from_fn(|i| rows[0].get::<_, String>(i)))
            },
        )
        .unwrap();
    match got {
        Outcome::Granted(settings) => settings,
        other => panic!("{other:?}"),
    }
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn fenced_statements_cannot_change_the_settings_of_the_stores_session() {
    let _server = shared_server();
    let (schema, store, fence) = fenced_setup("fenced_settings");
    let before = store_settings(&store, fence);
    assert_eq!(before[0], "on");
    for sql in [
        "SELECT set_config('synchronous_commit', 'off', false)",
        "SELECT set_config('lock_timeout', '0', false), set_config('statement_timeout', '1h', false)",
        "SELECT set_config('search_path', 'pg_catalog, ' || current_setting('search_path'), false)",
        "DO $$ BEGIN PERFORM set_config('synchronous_commit', 'off', false); END $$",
        "SELECT set_config('synchronous_commit', 'off', true)",
        "SELECT set_config('role', 'pg_monitor', false)",
    ] {
        let result = fenced_one(&store, fence, sql);
        assert!(
            matches!(result, Ok(Outcome::Granted(()))),
            "{sql}: {result:?}"
        );
        let after = store_settings(&store, fence);
        assert_eq!(after, before, "{sql} changed the store's session");
        // The probe of the issue: it divides by zero when durability is off on the session.
        let probe = fenced_one(
            &store,
            fence,
            "SELECT 1/(CASE WHEN current_setting('synchronous_commit')='off' THEN 0 ELSE 1 END)",
        );
        assert!(matches!(probe, Ok(Outcome::Granted(()))), "{sql}: {probe:?}");
    }
    // A refused call leaves nothing behind either.
    use leasefence::{Finish, Statement};
    let refused = fenced_list(
        &store,
        fence,
        &[
            "SELECT set_config('synchronous_commit', 'off', false)",
            "UPDATE jobs SET owner = 'x'",
        ],
    );
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    assert_eq!(store_settings(&store, fence), before);
    // Nor do they reach the library's own write: with triggers switched off for the session,
    // the completion would leave the side table claiming the job is open.
    let done = store.fenced(
        &Lease::new("j", "me", fence),
        1.0,
        &[Statement::new(
            "SELECT set_config('session_replication_role', 'replica', false)",
            [],
        )],
        Finish::Complete(None),
    );
    assert!(matches!(done, Ok(Outcome::Granted(()))), "{done:?}");
    assert_order_table_consistent(&schema);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn fenced_statements_cannot_disable_drop_or_replace_the_librarys_trigger() {
    let _server = shared_server();
    let (schema, store, fence) = fenced_setup("fenced_trigger");
    let attempts = [
        "ALTER TABLE jobs DISABLE TRIGGER leasefence_track",
        "ALTER TABLE jobs DISABLE TRIGGER ALL",
        "DROP TRIGGER leasefence_track ON jobs",
        "CREATE OR REPLACE FUNCTION leasefence_track() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RETURN NULL; END $$",
        "DO $$ BEGIN EXECUTE 'ALTER TABLE jobs DISABLE TRIGGER leasefence_track'; END $$",
        "ALTER FUNCTION leasefence_track() SECURITY DEFINER",
        "CREATE FUNCTION leasefence_mine() RETURNS integer LANGUAGE sql AS $$ SELECT 1 $$",
    ];
    for sql in attempts {
        assert_refused(&store, fence, sql);
    }
    let enabled: String = schema
        .admin()
        .query_one(
            "SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'leasefence_track' \
             AND tgrelid = 'jobs'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(enabled, "O");
    store.enqueue("later").unwrap();
    let next = store.claim_next("w", 1.0, 10.0).unwrap();
    assert_eq!(next.map(|c| c.job), Some("later".to_string()));
    assert_order_table_consistent(&schema);
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn fenced_statements_cannot_plant_indexes_statistics_locks_or_rules() {
    let _server = shared_server();
    let (schema, store, fence) = fenced_setup("fenced_plant");
    let mut admin = schema.admin();
    admin
        .batch_execute(
            "CREATE FUNCTION wipe_jobs() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN DELETE FROM jobs; RETURN NULL; END $$",
        )
        .unwrap();
    let attempts = [
        "CREATE INDEX evil ON jobs(owner)",
        "DO $$ BEGIN EXECUTE 'CREATE INDEX evil ON jobs(owner)'; END $$",
        "ALTER TABLE jobs ALTER COLUMN owner SET STATISTICS 0",
        "ANALYZE jobs",
        "DO $$ BEGIN ANALYZE jobs; END $$",
        "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE",
        "CREATE RULE r AS ON INSERT TO app DO ALSO DELETE FROM jobs",
        "DO $$ BEGIN EXECUTE 'CREATE RULE r AS ON INSERT TO app DO ALSO DELETE FROM jobs'; END $$",
        "CREATE TRIGGER app_wipes AFTER INSERT ON app FOR EACH ROW EXECUTE FUNCTION wipe_jobs()",
        "CREATE STATISTICS evil_stats ON owner, until FROM jobs",
        "COPY jobs TO STDOUT",
        "DEALLOCATE ALL",
        "DO $$ BEGIN EXECUTE 'DEALLOCATE ALL'; END $$",
        "DO $$ BEGIN EXECUTE 'PREPARE s1 AS SELECT 1'; END $$",
        // One of the store's own statements, by name. Not "any one": the statement running this
        // block is in the list too (as the client prepared it), and dropping that harms nobody.
        "DO $$ DECLARE n TEXT; BEGIN SELECT name INTO n FROM pg_prepared_statements \
         WHERE NOT from_sql AND statement NOT LIKE '%DEALLOCATE%' LIMIT 1; \
         EXECUTE format('DEALLOCATE %I', n); END $$",
    ];
    for sql in attempts {
        assert_refused(&store, fence, sql);
        // The store works on after each refusal.
        assert_eq!(
            store.state("j").unwrap().unwrap().fence,
            fence,
            "after {sql}"
        );
    }
    let row = admin
        .query_one(
            "SELECT (SELECT count(*) FROM pg_index WHERE indrelid = 'jobs'::regclass), \
             (SELECT count(*) FROM pg_rewrite WHERE ev_class = 'app'::regclass), \
             (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'app'::regclass), \
             (SELECT count(*) FROM pg_statistic WHERE starelid = 'jobs'::regclass), \
             (SELECT attstattarget FROM pg_attribute WHERE attrelid = 'jobs'::regclass \
              AND attname = 'owner')::integer",
            &[],
        )
        .unwrap();
    let found: (i64, i64, i64, i64, i32) =
        (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
    // Six indexes on `jobs`: its primary key and the library's five (sql/schema.sql).
    assert_eq!(found, (6, 0, 0, 0, -1), "something was planted");
    admin.batch_execute("INSERT INTO app VALUES (1)").unwrap();
    assert_eq!(store.state("j").unwrap().unwrap().fence, fence);

    // Rows a caller keeps from one call and drops in the next are no loss of the store's own
    // statements.
    use leasefence::Finish;
    let kept = store
        .fenced_with(
            &Lease::new("j", "me", fence),
            1.0,
            Finish::KeepLease,
            |tx| tx.query_values("SELECT x FROM app", &[]),
        )
        .unwrap();
    let next = store.fenced_with(
        &Lease::new("j", "me", fence),
        1.0,
        Finish::KeepLease,
        |tx| {
            drop(kept);
            tx.execute_values("INSERT INTO app VALUES (2)", &[])
        },
    );
    assert!(matches!(next, Ok(Outcome::Granted(1))), "{next:?}");
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn fenced_statements_leave_no_advisory_lock_behind() {
    use leasefence::{Finish, Statement};
    let _server = shared_server();
    let (schema, store, fence) = fenced_setup("fenced_advisory");
    let mut admin = schema.admin();
    let mut free = |key: i64| -> bool {
        let got: bool = admin
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .unwrap()
            .get(0);
        if got {
            admin
                .query_one("SELECT pg_advisory_unlock($1)", &[&key])
                .unwrap();
        }
        got
    };
    let granted = fenced_one(&store, fence, "SELECT pg_advisory_lock(1)");
    assert!(matches!(granted, Ok(Outcome::Granted(()))), "{granted:?}");
    assert!(free(1), "the store's session still holds advisory lock 1");
    // Refused and failed calls too: a session lock outlives a rolled-back transaction.
    let refused = fenced_list(
        &store,
        fence,
        &["SELECT pg_advisory_lock(2)", "UPDATE jobs SET owner = 'x'"],
    );
    assert!(
        matches!(refused, Err(Error::InvalidArgument { .. })),
        "{refused:?}"
    );
    assert!(free(2), "a refused call left advisory lock 2 behind");
    let failed = fenced_list(
        &store,
        fence,
        &["SELECT pg_advisory_lock(3)", "SELECT * FROM no_such_table"],
    );
    assert!(failed.is_err(), "{failed:?}");
    assert!(free(3), "a failed call left advisory lock 3 behind");
    let stale = store.fenced(
        &Lease::new("j", "me", fence + 1),
        1.0,
        &[Statement::new("SELECT pg_advisory_lock(4)", [])],
        Finish::KeepLease,
    );
    assert_eq!(
        stale.unwrap().reason().map(|r| r.code()),
        Some("stale_fence")
    );
    assert!(free(4), "a rejected call left advisory lock 4 behind");
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn copy_is_refused_and_the_store_works_on() {
    let _server = shared_server();
    let (_schema, store, fence) = fenced_setup("fenced_copy");
    for sql in [
        "COPY jobs TO STDOUT",
        "  /* x */ copy (SELECT 1) TO STDOUT",
        "COPY app FROM STDIN",
    ] {
        assert_refused(&store, fence, sql);
        assert_eq!(
            store.state("j").unwrap().map(|r| r.fence),
            Some(fence),
            "after {sql}"
        );
        let next = fenced_one(&store, fence, "INSERT INTO app VALUES (1)");
        assert!(
            matches!(next, Ok(Outcome::Granted(()))),
            "after {sql}: {next:?}"
        );
    }
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn opening_repairs_a_disabled_or_replaced_trigger_and_missing_indexes() {
    let _server = shared_server();
    let schema = Schema::new("repair");
    let store = PgStore::connect(&schema.url).unwrap();
    store.enqueue("x").unwrap();
    drop(store);
    let mut admin = schema.admin();
    // A fence floor, so that what the trigger does shows: every job inserted starts at 10.
    admin
        .batch_execute("INSERT INTO leasefence_floor(id, floor) VALUES (1, 10)")
        .unwrap();
    // Opens a store (which repairs), claims the next job, then inserts a job by plain SQL: the
    // repaired trigger starts it at the floor.
    let probes = AtomicUsize::new(0);
    let next = |expect: &str| {
        let store = PgStore::connect(&schema.url).unwrap();
        let got = store.claim_next("w", 0.0, 10.0).unwrap().map(|c| c.job);
        assert_eq!(got.as_deref(), Some(expect));
        let probe = format!("probe-{}", probes.fetch_add(1, Ordering::SeqCst));
        schema
            .admin()
            .execute("INSERT INTO jobs(id, done) VALUES ($1, 1)", &[&probe])
            .unwrap();
        let fence = store.state(&probe).unwrap().unwrap().fence;
        assert_eq!(fence, 10, "after {expect}: the trigger was not repaired");
        assert_order_table_consistent(&schema);
    };
    // Disabled by an administrator, and jobs written meanwhile: one new, one completed.
    admin
        .batch_execute(
            "ALTER TABLE jobs DISABLE TRIGGER leasefence_track; \
             UPDATE jobs SET done = 1 WHERE id = 'x'; INSERT INTO jobs(id) VALUES ('a')",
        )
        .unwrap();
    next("a");
    // Its function replaced by one that lets every row in as it is, below the floor too.
    admin
        .batch_execute(
            "CREATE OR REPLACE FUNCTION leasefence_track() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN RETURN NEW; END $$; INSERT INTO jobs(id) VALUES ('b')",
        )
        .unwrap();
    next("b");
    // Fired only for replicas.
    admin
        .batch_execute(
            "ALTER TABLE jobs ENABLE REPLICA TRIGGER leasefence_track; \
             INSERT INTO jobs(id) VALUES ('c')",
        )
        .unwrap();
    next("c");
    // The indexes dropped.
    admin
        .batch_execute(
            "DROP INDEX leasefence_next; DROP INDEX leasefence_seq; \
             DROP INDEX leasefence_failures_of_job; INSERT INTO jobs(id) VALUES ('d')",
        )
        .unwrap();
    next("d");
    let indexes: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE c.relname IN ('leasefence_next', 'leasefence_seq', 'leasefence_failures_of_job') \
             AND c.relnamespace = current_schema()::regnamespace AND i.indisvalid",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(indexes, 3);
    let enabled: String = admin
        .query_one(
            "SELECT tgenabled::text FROM pg_trigger WHERE tgname = 'leasefence_track' \
             AND tgrelid = 'jobs'::regclass",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(enabled, "O");
}

/// docs/contract.md section 13 on PostgreSQL: a job pruned and enqueued again under its id. With
/// the fence floor the old holder's token is refused and a fence guard elsewhere accepts the new
/// holder; with the floor's row deleted behind the store's back (floor 0, the test-only switch)
/// both go wrong, which is what the floor prevents.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn the_fence_floor_keeps_a_pruned_id_from_reusing_its_fences() {
    use support::retention::{pruned_id_enqueued_again, Seen};
    let _shared = shared_server();
    let schema = Schema::new("floor");
    let store = PgStore::connect(&schema.url).unwrap();
    let seen = pruned_id_enqueued_again(&store, "invoice-7", || {});
    let want = Seen {
        stale_completion_accepted: false,
        new_holder_guarded_write_accepted: true,
        new_fence: 4,
    };
    assert_eq!(seen, want);
    assert_eq!(store.fence_floor().unwrap(), 3);
    // Plain SQL inserting below the floor is raised to it by the trigger.
    let mut admin = schema.admin();
    admin
        .execute("INSERT INTO jobs(id) VALUES ($1)", &[&"plain"])
        .unwrap();
    let fence: i64 = admin
        .query_one("SELECT fence FROM jobs WHERE id = $1", &[&"plain"])
        .unwrap()
        .get(0);
    assert_eq!(fence, 3);
    assert_order_table_consistent(&schema);

    let off = Schema::new("floor_off");
    let store = PgStore::connect(&off.url).unwrap();
    let seen = pruned_id_enqueued_again(&store, "invoice-7", || {
        off.admin()
            .execute("DELETE FROM leasefence_floor", &[])
            .unwrap();
    });
    let broken = Seen {
        stale_completion_accepted: true,
        new_holder_guarded_write_accepted: false,
        new_fence: 1,
    };
    assert_eq!(seen, broken);
}

/// Prune on PostgreSQL: bounded batches, the oldest first, a limit, dead jobs kept on request,
/// open and leased jobs untouched, side rows gone with their jobs; limits refuse what is too big.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn prune_and_limits_on_postgres() {
    let _shared = shared_server();
    let schema = Schema::new("prune");
    let options = leasefence::OpenOptions::new().limits(
        leasefence::Limits::default()
            .payload(64)
            .result(32)
            .error(16),
    );
    let store = PgStore::connect_with(&schema.url, &options).unwrap();
    let n = leasefence::PRUNE_BATCH + 300;
    let jobs: Vec<NewJob> = (0..n)
        .map(|i| NewJob::new(format!("j{i:05}")).payload(format!("p{i}")))
        .collect();
    store.enqueue_many(&jobs[..leasefence::MAX_BATCH]).unwrap();
    store.enqueue_many(&jobs[leasefence::MAX_BATCH..]).unwrap();
    for i in 0..n {
        let claimed = store.claim_next("w", i as f64, 1e6).unwrap().unwrap();
        let lease = claimed.lease();
        let answer = if i % 100 == 0 {
            store
                .fail(&lease, 1000.0 + i as f64, None, Some("bad"))
                .unwrap()
        } else {
            store
                .complete(&lease, 1000.0 + i as f64, Some("r"))
                .unwrap()
        };
        assert!(answer.is_granted());
    }
    store.enqueue("open").unwrap();
    let big = "x".repeat(65);
    let err = store
        .enqueue_job(&NewJob::new("big").payload(big))
        .unwrap_err();
    assert!(err.to_string().contains("65 bytes"), "{err}");
    assert_eq!(store.state("big").unwrap(), None);
    assert_eq!(store.prune(&Prune::finished_before(1010.0)).unwrap(), 10);
    let kept_dead = Prune::finished_before(1e9).keep_dead(true).limit(Some(500));
    assert_eq!(store.prune(&kept_dead).unwrap(), 500);
    assert_eq!(
        store
            .prune(&Prune::finished_before(1e9).keep_dead(true))
            .unwrap(),
        778
    );
    assert!(store.inspect("j00100").unwrap().unwrap().dead);
    assert_eq!(store.prune(&Prune::finished_before(1e9)).unwrap(), 12);
    let mut admin = schema.admin();
    for (table, want) in [
        ("jobs", 1i64),
        ("leasefence_payloads", 0),
        ("leasefence_failures", 0),
        ("leasefence_dead", 0),
    ] {
        let count: i64 = admin
            .query_one(&format!("SELECT count(*) FROM {table}"), &[])
            .unwrap()
            .get(0);
        assert_eq!(count, want, "{table}");
    }
    assert!(store.state("open").unwrap().is_some());
}

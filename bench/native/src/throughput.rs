//! Throughput of one process: a `Worker` at concurrency 1 / 8 / 64 / 256 drains one WAL file of
//! `--jobs` jobs whose handler holds each job `--hold-ms` ms (a stand-in for an I/O-bound
//! handler), with `Worker::run_concurrent`. The concurrencies take turns in every repeat (the
//! order reversed every other repeat), so they share the machine's moments.
//!
//! Each drain runs in a child process of this binary (`throughput-drain`), timed inside the child
//! from the worker's open to its end. When `--strace` names a strace, a second drain of the same
//! kind follows right after, on a fresh file, under `strace -f -c --seccomp-bpf -e
//! trace=fsync,fdatasync`: its syncs per job are the fsync and fdatasync calls that process made,
//! every thread (handlers, heartbeat) included, counted at the system call boundary rather than
//! estimated. The timed drain runs without strace, so tracing costs it nothing. Fills happen in
//! this process, so their syncs are not counted.
//!
//! With `--pg-url` (a PostgreSQL server, e.g. the one `scripts/postgres.sh` starts), every
//! SQLite drain is followed by the same drain on leasefence's PostgreSQL backend, in the same
//! child, on a freshly filled schema; its syncs per job are the server's WAL syncs
//! (`pg_stat_wal.wal_sync`) across the drain (`throughput_pg.rs`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use leasefence::worker::{Worker, WorkerOptions};
use leasefence::{LeaseStore, NewJob, OpenOptions};
use serde_json::{json, Value};

use crate::throughput_pg::PgTarget;
use crate::{done_count, emit, fresh, job_id, progress, remove, Opts, Result};

pub(crate) fn throughput(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let repeats = opts.num("repeats", 3)?;
    let jobs = opts.num("jobs", 2000)?;
    let hold_ms = opts.num("hold-ms", 5)?;
    let levels = opts.list("concurrency", "1,8,64,256")?;
    let strace = opts.text("strace", "");
    let pg_url = opts.text("pg-url", "");
    let mut pg = if pg_url.is_empty() {
        None
    } else {
        Some(PgTarget::connect(&pg_url)?)
    };
    for r in 0..repeats {
        let mut order = levels.clone();
        if r % 2 == 1 {
            order.reverse();
        }
        for &concurrency in &order {
            let path = fresh(&dir, "throughput.db");
            fill(&path, jobs)?;
            let load = crate::processes::load_average();
            let run = drain_checked(&path, &dir, concurrency, hold_ms, jobs, "")?;
            let counted = if strace.is_empty() {
                None
            } else {
                fill(&path, jobs)?;
                Some(drain_checked(
                    &path,
                    &dir,
                    concurrency,
                    hold_ms,
                    jobs,
                    &strace,
                )?)
            };
            let rate = jobs as f64 / run.seconds;
            let syncs_per_job = counted
                .as_ref()
                .and_then(|c| c.syncs)
                .map(|s| s as f64 / jobs as f64);
            emit(
                json!({"section": "throughput", "runtime": "native", "concurrency": concurrency,
                "repeat": r, "jobs": jobs, "hold_ms": hold_ms, "seconds": run.seconds, "rate": rate,
                "syncs_per_job": syncs_per_job,
                "sync_counter": if strace.is_empty() { Value::Null } else { json!("strace") },
                "rate_under_strace": counted.map(|c| jobs as f64 / c.seconds),
                "loadavg": load}),
            );
            progress(
                "throughput",
                r,
                repeats,
                format!(
                    "native concurrency {concurrency:>3}: {rate:>7.0} jobs/s, {} syncs/job",
                    syncs_per_job.map_or("?".into(), |s| format!("{s:.2}"))
                ),
            );
            if let Some(pg) = pg.as_mut() {
                pg_drain(pg, &dir, (r, repeats), concurrency, hold_ms, jobs)?;
            }
        }
    }
    Ok(())
}

/// One drain on PostgreSQL (the same child as on SQLite), its record and progress line.
fn pg_drain(
    pg: &mut PgTarget,
    dir: &Path,
    (r, repeats): (usize, usize),
    concurrency: usize,
    hold_ms: usize,
    jobs: usize,
) -> Result<()> {
    pg.fill(jobs)?;
    let before = pg.settled_wal_syncs()?;
    let load = crate::processes::load_average();
    let run = drain_in_child(pg.target(), dir, concurrency, hold_ms, "")?;
    let after = pg.settled_wal_syncs()?;
    let done = pg.done()?;
    if done != jobs || run.completed != jobs {
        return Err(format!(
            "throughput on PostgreSQL: concurrency {concurrency}: {} completed, {done} done, expected {jobs}",
            run.completed
        )
        .into());
    }
    let rate = jobs as f64 / run.seconds;
    let syncs_per_job = (after - before) as f64 / jobs as f64;
    emit(
        json!({"section": "throughput", "runtime": "postgres", "concurrency": concurrency,
        "repeat": r, "jobs": jobs, "hold_ms": hold_ms, "seconds": run.seconds, "rate": rate,
        "syncs_per_job": syncs_per_job, "sync_counter": "pg_stat_wal.wal_sync",
        "server": format!("PostgreSQL {}", pg.version), "loadavg": load}),
    );
    progress(
        "throughput",
        r,
        repeats,
        format!(
            "postgres concurrency {concurrency:>3}: {rate:>7.0} jobs/s, {syncs_per_job:.2} server WAL syncs/job"
        ),
    );
    Ok(())
}

/// One drain of `path` (filled with `jobs` jobs) in a child, checked to have done every job; the
/// file is removed after.
fn drain_checked(
    path: &Path,
    dir: &Path,
    concurrency: usize,
    hold_ms: usize,
    jobs: usize,
    strace: &str,
) -> Result<Drained> {
    let run = drain_in_child(path, dir, concurrency, hold_ms, strace)?;
    let store = LeaseStore::open(path)?;
    let done = usize::try_from(done_count(&store)?)?;
    drop(store);
    remove(path);
    if done != jobs || run.completed != jobs {
        return Err(format!(
            "throughput: concurrency {concurrency}: {} completed, {done} done, expected {jobs}",
            run.completed
        )
        .into());
    }
    Ok(run)
}

/// A fresh store with `jobs` jobs, enqueued in one `enqueue_many`.
fn fill(path: &Path, jobs: usize) -> Result<()> {
    let store = LeaseStore::open(path)?;
    let new: Vec<NewJob> = (0..jobs).map(|i| NewJob::new(job_id(i))).collect();
    for chunk in new.chunks(leasefence::MAX_BATCH) {
        store.enqueue_many(chunk)?;
    }
    Ok(())
}

struct Drained {
    seconds: f64,
    completed: usize,
    syncs: Option<u64>,
}

fn drain_in_child(
    path: &Path,
    dir: &Path,
    concurrency: usize,
    hold_ms: usize,
    strace: &str,
) -> Result<Drained> {
    let exe = std::env::current_exe()?;
    let counts = dir.join("throughput-strace.txt");
    let _ = std::fs::remove_file(&counts);
    let mut command = if strace.is_empty() {
        Command::new(&exe)
    } else {
        let mut c = Command::new(strace);
        c.args([
            "-f",
            "-c",
            "--seccomp-bpf",
            "-e",
            "trace=fsync,fdatasync",
            "-o",
        ])
        .arg(&counts)
        .arg(&exe);
        c
    };
    let output = command
        .arg("throughput-drain")
        .arg("--db")
        .arg(path)
        .args(["--concurrency", &concurrency.to_string()])
        .args(["--hold-ms", &hold_ms.to_string()])
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "throughput-drain at concurrency {concurrency} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let report: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("throughput-drain answered {:?}: {e}", output.stdout))?;
    let syncs = if strace.is_empty() {
        None
    } else {
        Some(sync_calls(&std::fs::read_to_string(&counts)?)?)
    };
    let _ = std::fs::remove_file(&counts);
    Ok(Drained {
        seconds: report["seconds"]
            .as_f64()
            .ok_or("throughput-drain: no seconds")?,
        completed: usize::try_from(report["completed"].as_u64().unwrap_or(0))?,
        syncs,
    })
}

/// The fsync + fdatasync calls in a `strace -c` summary (rows: % time, seconds, usecs/call,
/// calls, [errors,] syscall). No row for a call means it was never made.
fn sync_calls(summary: &str) -> Result<u64> {
    let mut total = 0;
    for line in summary.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let Some(&name) = fields.last() {
            if (name == "fsync" || name == "fdatasync") && fields.len() >= 5 {
                total += fields[3]
                    .parse::<u64>()
                    .map_err(|_| format!("strace summary: cannot read {line:?}"))?;
            }
        }
    }
    Ok(total)
}

/// One drain (the child): a worker at `--concurrency` on `--db` until it is empty; prints one
/// JSON line with its time and counts.
pub(crate) fn drain(opts: &Opts) -> Result<()> {
    let db = opts.text("db", "");
    let concurrency = opts.num("concurrency", 1)?;
    let hold = Duration::from_millis(u64::try_from(opts.num("hold-ms", 5)?)?);
    let options = WorkerOptions::new("bench")
        .ttl(30.0)
        .idle_poll(Duration::from_millis(10))
        .concurrency(concurrency)
        .until_empty(true);
    let started = Instant::now();
    let mut worker = Worker::open(&db, &OpenOptions::new(), options)?;
    let counts = worker.run_concurrent(|_job| {
        std::thread::sleep(hold);
        Ok(Some("ok".into()))
    })?;
    drop(worker);
    println!(
        "{}",
        json!({"seconds": started.elapsed().as_secs_f64(), "claimed": counts.claimed,
            "completed": counts.completed})
    );
    Ok(())
}

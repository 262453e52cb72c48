//! `leasefence-bench waking`: how soon an idle worker starts a job enqueued by another process,
//! and what idle workers cost (docs/contract.md section 11, waking; docs/decisions/waking.md).
//!
//! For each case, `--workers` worker processes idle with a poll far longer than the run
//! (`--idle 300`): `leasefence work` on an SQLite file (native, inotify), `node
//! waking-child.mjs` on the same kind of file (npm, `fs.watch`), and `leasefence work` on a
//! PostgreSQL schema (`LISTEN/NOTIFY`, with `--pg-url`). First the idle cost, once they have
//! settled (their CPU time unchanged over 2 s): their CPU time (user + system, `/proc/PID/stat`,
//! in clock ticks of 10 ms) across `--idle-secs` seconds of nothing to do. Then `--enqueues` jobs, one at a time from this process, each after the
//! workers have gone idle again: the wake latency of a job is the time its worker claimed it
//! (its lease's `until` minus the workers' ttl, on the same wall clock) minus the time this
//! process began the enqueue, so the enqueue's own commit is counted in.
//!
//! One JSON line per case: `{"section":"waking","case","workers","enqueues","p50_ms","p99_ms",
//! "max_ms","idle_secs","idle_ticks","idle_cpu_ms_per_worker_minute"}`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasefence::worker::wall_clock;
use serde_json::json;

use crate::{Opts, Result};

/// The workers' lease length: a job's claim time is its `until` minus this.
const TTL: f64 = 30.0;

/// The command that starts worker `n` on the target.
type Spawn<'a> = Box<dyn Fn(&str, usize) -> Command + 'a>;

pub(crate) fn waking(opts: &Opts) -> Result<()> {
    let dir = PathBuf::from(opts.text("dir", "target/bench-tmp"));
    std::fs::create_dir_all(&dir)?;
    let workers = opts.num("workers", 8)?;
    let enqueues = opts.num("enqueues", 50)?;
    let idle_secs = opts.num("idle-secs", 60)?;
    let cli = PathBuf::from(opts.text("cli", "target/release/leasefence"));
    let cases = opts.text("cases", "native,npm,postgres");
    for case in cases.split(',') {
        let (target, spawn): (String, Spawn) = match case {
            "native" => {
                let db = fresh_file(&dir, "waking-native.db")?;
                (db, Box::new(|db: &str, n| cli_worker(&cli, db, n)))
            }
            "npm" => {
                let db = fresh_file(&dir, "waking-npm.db")?;
                // A file Node can share: rollback journal, dot-file locks (made so natively).
                drop(
                    leasefence::OpenOptions::new()
                        .journal(leasefence::Journal::Rollback)
                        .locking(leasefence::Locking::Dotfile)
                        .open(&db)?,
                );
                let node = opts.text("node", "node");
                let script = opts.text("node-worker", "tests/node/waking-child.mjs");
                let pkg = std::fs::canonicalize(opts.text("pkg", "target/npm/leasefence"))?;
                (
                    db,
                    Box::new(move |db: &str, n| {
                        let mut cmd = Command::new(&node);
                        cmd.arg(&script)
                            .arg(db)
                            .arg(format!("idle-{n}"))
                            .arg("300")
                            .arg("true")
                            .env("LEASEFENCE_PKG", &pkg);
                        cmd
                    }),
                )
            }
            "postgres" => {
                let Some(url) = opts.0.get("pg-url") else {
                    eprintln!("waking: no --pg-url, the postgres case is left out");
                    continue;
                };
                (
                    fresh_schema(url)?,
                    Box::new(|db: &str, n| cli_worker(&cli, db, n)),
                )
            }
            other => return Err(format!("unknown case {other:?}").into()),
        };
        measure(case, &target, workers, enqueues, idle_secs, &*spawn)?;
    }
    Ok(())
}

fn cli_worker(cli: &Path, db: &str, n: usize) -> Command {
    let mut cmd = Command::new(cli);
    cmd.args([
        "--db", db, "work", "--idle", "300", "--ttl", "30", "--owner",
    ])
    .arg(format!("idle-{n}"))
    .args(["--", "true"]);
    cmd
}

fn fresh_file(dir: &Path, name: &str) -> Result<String> {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    Ok(path.display().to_string())
}

/// A new schema on the server, its URL with that search path.
fn fresh_schema(url: &str) -> Result<String> {
    let mut admin = postgres::Client::connect(url, postgres::NoTls)?;
    // A fixed identifier: no caller text is spliced in.
    admin.batch_execute("DROP SCHEMA IF EXISTS lf_waking CASCADE; CREATE SCHEMA lf_waking")?;
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}options=-csearch_path%3Dlf_waking"))
}

/// User + system CPU time of a process so far, in clock ticks (fields 14 and 15 of proc(5)).
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let after = stat.rfind(')').ok_or("no ')' in /proc/PID/stat")? + 2;
    let fields: Vec<&str> = stat[after..].split(' ').collect();
    Ok(fields[11].parse::<u64>()? + fields[12].parse::<u64>()?)
}

fn measure(
    case: &str,
    target: &str,
    workers: usize,
    enqueues: usize,
    idle_secs: usize,
    spawn: &dyn Fn(&str, usize) -> Command,
) -> Result<()> {
    let store = leasefence::open(Path::new(target))?;
    let mut children: Vec<Child> = Vec::new();
    for n in 0..workers {
        children.push(
            spawn(target, n)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?,
        );
    }
    let result = (|| -> Result<(Vec<f64>, u64)> {
        // Started, connected, found nothing: idle once their CPU time stops growing (a Node
        // worker compiles its wasm first), at most 60 s.
        let total = || -> Result<u64> { children.iter().map(|c| cpu_ticks(c.id())).sum() };
        std::thread::sleep(Duration::from_secs(2));
        let settling = Instant::now();
        let mut last = total()?;
        loop {
            std::thread::sleep(Duration::from_secs(2));
            let now = total()?;
            if now == last || settling.elapsed() > Duration::from_secs(60) {
                break;
            }
            last = now;
        }
        let before = total()?;
        std::thread::sleep(Duration::from_secs(idle_secs as u64));
        let after = total()?;
        let mut latencies = Vec::with_capacity(enqueues);
        for i in 0..enqueues {
            let job = format!("wake-{i}");
            let began = wall_clock();
            store.enqueue(&job)?;
            let waited = Instant::now();
            let state = loop {
                if let Some(state) = store.state(&job)?.filter(|s| s.done) {
                    break state;
                }
                if waited.elapsed() > Duration::from_secs(30) {
                    return Err(format!("{case}: {job} not done within 30 s").into());
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            latencies.push((state.until - TTL - began) * 1000.0);
            // Every worker idle again (the ones woken for nothing too).
            std::thread::sleep(Duration::from_millis(150));
        }
        Ok((latencies, after - before))
    })();
    for child in &mut children {
        // SAFETY: kill(2) on a child of ours that has not been reaped.
        unsafe { libc_kill(child.id() as i32, 15) };
    }
    for child in &mut children {
        let _ = child.wait();
    }
    let (mut latencies, idle_ticks) = result?;
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    let (p50, p99, max) = (at(0.5), at(0.99), at(1.0));
    let per_worker_minute =
        idle_ticks as f64 * 10.0 / workers as f64 / idle_secs.max(1) as f64 * 60.0;
    eprintln!(
        "  waking {case}: {workers} idle workers, {enqueues} enqueues: p50 {p50:.1} ms, p99 {p99:.1} ms, \
         max {max:.1} ms; idle {idle_secs} s: {idle_ticks} ticks in all ({per_worker_minute:.2} ms CPU per worker-minute)"
    );
    println!(
        "{}",
        json!({"section": "waking", "case": case, "workers": workers, "enqueues": enqueues,
               "p50_ms": p50, "p99_ms": p99, "max_ms": max, "idle_secs": idle_secs,
               "idle_ticks": idle_ticks, "idle_cpu_ms_per_worker_minute": per_worker_minute})
    );
    Ok(())
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, signal: i32) -> i32;
}

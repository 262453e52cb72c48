//! 2b. Processes on one file: W worker processes drain one file with claim_next + complete.
//! Natively (this binary, `worker` mode) on a WAL file, three ways: `gated`, leasefence's write
//! gate (the default, `OpenOptions::write_gate(true)`: writers queue in the kernel on
//! `<db>-leasefence-gate`, docs/decisions/write-gate.md); `sleeping`, no gate
//! (`write_gate(false)`), every wait in the busy handler's sleeps; `blocking`, no gate, SQLite's
//! blocking WAL locks on (`sqlite3_setlk_timeout` as the store sets it). The npm package: W Node
//! processes running bench/node/processes-worker.mjs, the same loop through `LeaseStore.open`, on
//! its native engine with the gate (`npm`) or without (`npm-ungated`), or on its wasm engine
//! (`npm-wasm`, a rollback-journal file with the `<db>.lock` dot-file lock). And both on one WAL
//! file: even workers native, odd ones Node, with the gate on both sides (`mixed`) or off
//! (`mixed-ungated`). All cases in one run, taking turns for each W in every repeat, so they see
//! the same machine load. Blocking locks only act in a build of SQLite with
//! `SQLITE_ENABLE_SETLK_TIMEOUT`; every record says whether this one is.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use leasefence::{Locking, OpenOptions};
use serde_json::{json, Value};

use crate::{
    emit, fill, fresh, percentile, progress, remove, store_with_jobs, Opts, Result, BUSY, NOW, TTL,
};

/// What one Node worker process of the `npm` case is taken to need (MB) when deciding whether W
/// of them fit: measured 41 MB private to each (Node 20, the package loaded, the store open; of
/// its 81 MB resident, 41 MB are shared with the others), with room to spare.
const NPM_WORKER_MB: u64 = 60;

/// Whether the linked SQLite was compiled with `SQLITE_ENABLE_SETLK_TIMEOUT`.
pub(crate) fn setlk_compiled() -> bool {
    // SAFETY: a NUL-terminated option name; the call only reads it.
    unsafe { rusqlite::ffi::sqlite3_compileoption_used(c"ENABLE_SETLK_TIMEOUT".as_ptr()) == 1 }
}

/// The load average (1, 5, 15 minutes) from /proc/loadavg, where there is one.
pub(crate) fn load_average() -> Option<Vec<f64>> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace()
        .take(3)
        .map(|v| v.parse().ok())
        .collect()
}

/// Sleeps until the 1-minute load average is below `below`, or `longest` has passed.
fn wait_for_load_below(below: f64, longest: std::time::Duration) {
    let until = Instant::now() + longest;
    while Instant::now() < until {
        match load_average() {
            Some(load) if load.first().is_some_and(|&one| one >= below) => {
                std::thread::sleep(std::time::Duration::from_secs(1));
            }
            _ => return,
        }
    }
}

pub(crate) fn processes(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let repeats = opts.num("repeats", 3)?;
    let jobs = opts.num("jobs", 600)?;
    let worker_counts = opts.list("workers", "1,8,64,256")?;
    // Each case read once, so an unknown one is refused before anything runs.
    let cases: Vec<(String, Fleet)> = opts
        .text("cases", "gated,blocking,sleeping")
        .split(',')
        .map(|c| Ok((c.trim().to_string(), Fleet::of(c.trim())?)))
        .collect::<Result<_>>()?;
    let compiled = setlk_compiled();
    // A quiet machine before each run, where asked: the 1-minute load average below this, waited
    // for up to `quiet-wait-secs` (the load each run started at is in its record either way).
    let quiet_load: Option<f64> = match opts.0.get("quiet-load") {
        Some(text) => Some(
            text.parse()
                .map_err(|_| format!("processes: --quiet-load {text:?} is not a number"))?,
        ),
        None => None,
    };
    let quiet_wait = std::time::Duration::from_secs(opts.num("quiet-wait-secs", 300)? as u64);
    let npm = NpmWorker {
        node: opts.text("node", "node"),
        script: opts.text("npm-worker", "bench/node/processes-worker.mjs"),
    };
    if cases.iter().any(|(_, fleet)| fleet.uses_node()) && !Path::new(&npm.script).is_file() {
        return Err(format!(
            "processes: the npm case's worker script {:?} is missing; run from the repository root or give --npm-worker",
            npm.script
        )
        .into());
    }
    for r in 0..repeats {
        for (k, &workers) in worker_counts.iter().enumerate() {
            let mut order = cases.clone();
            order.rotate_left((k + r) % cases.len());
            for (case, fleet) in &order {
                let fleet = *fleet;
                let node_processes = (0..workers).filter(|&w| fleet.runs_node(w)).count();
                if node_processes > 0 {
                    if let Some(why) = too_little_memory(node_processes) {
                        emit(
                            json!({"section": "processes", "case": case, "workers": workers,
                            "repeat": r, "jobs": jobs, "skipped": why}),
                        );
                        progress(
                            "processes",
                            r,
                            repeats,
                            format!("{case:<8} {workers:>3} processes not run: {why}"),
                        );
                        continue;
                    }
                }
                let path = fresh(&dir, &format!("processes-{case}.db"));
                if fleet == Fleet::NpmWasm {
                    // The file as the wasm engine shares it (dot-file lock, rollback journal),
                    // made natively the documented way; the Node workers open it as it is.
                    let store = OpenOptions::new().locking(Locking::Dotfile).open(&path)?;
                    fill(&store, jobs)?;
                } else {
                    drop(store_with_jobs(&path, jobs)?);
                }
                if let Some(below) = quiet_load {
                    wait_for_load_below(below, quiet_wait);
                }
                let load = load_average();
                let exe = std::env::current_exe()?;
                let run = drain(&path, workers, |w| fleet.command(&exe, &npm, &path, w));
                let run = run?;
                remove(&path);
                if run.latencies_ms.len() != jobs {
                    return Err(format!(
                        "processes: {} cycles done, expected {jobs}",
                        run.latencies_ms.len()
                    )
                    .into());
                }
                let rate = jobs as f64 / run.seconds;
                let (p50, p99) = (
                    percentile(&run.latencies_ms, 0.5),
                    percentile(&run.latencies_ms, 0.99),
                );
                emit(
                    json!({"section": "processes", "case": case, "workers": workers,
                    "repeat": r, "jobs": jobs, "seconds": run.seconds, "rate": rate,
                    "p50_ms": p50, "p99_ms": p99, "max_ms": run.latencies_ms.last(),
                    "errors": run.errors, "setlk_compiled": compiled, "loadavg": load}),
                );
                progress(
                    "processes",
                    r,
                    repeats,
                    format!("{case:<8} {workers:>3} processes {rate:>6.0} jobs/s  p50 {p50:.2} ms  p99 {p99:.2} ms  ({} busy errors)", run.errors),
                );
            }
        }
    }
    Ok(())
}

struct Drained {
    seconds: f64,
    latencies_ms: Vec<f64>,
    errors: u64,
}

struct Worker {
    child: Child,
    output: BufReader<std::process::ChildStdout>,
}

/// The `npm` case's worker process: `node` running the script on the file.
struct NpmWorker {
    node: String,
    script: String,
}

impl NpmWorker {
    fn command(&self, path: &Path, w: usize, engine: &str, gate: bool) -> Command {
        let mut command = Command::new(&self.node);
        command
            .env("LEASEFENCE_ENGINE", engine)
            .arg(&self.script)
            .arg("--db")
            .arg(path)
            .args(["--owner", &format!("w{w}")])
            .args(["--write-gate", if gate { "on" } else { "off" }]);
        command
    }
}

/// Who drains the file in one case: native worker processes with one kind of lock wait, Node
/// processes of the npm package on one engine, or both kinds taking turns by worker number.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fleet {
    /// Native workers: `gated`, `blocking` or `sleeping` (the worker's `--locks`).
    Native(&'static str),
    /// Node workers on the native engine, with or without the write gate.
    Npm { gate: bool },
    /// Node workers on the wasm engine (rollback journal, dot-file lock).
    NpmWasm,
    /// Even workers native (`gated`, or `sleeping` without the gate), odd ones Node on the
    /// native engine with the same choice of gate: one WAL file, default options on each side.
    Mixed { gate: bool },
}

const CASES: &str = "gated, blocking, sleeping, npm, npm-ungated, npm-wasm, mixed or mixed-ungated";

impl Fleet {
    fn of(case: &str) -> Result<Fleet> {
        Ok(match case {
            "gated" => Fleet::Native("gated"),
            "blocking" => Fleet::Native("blocking"),
            "sleeping" => Fleet::Native("sleeping"),
            "npm" => Fleet::Npm { gate: true },
            "npm-ungated" => Fleet::Npm { gate: false },
            "npm-wasm" => Fleet::NpmWasm,
            "mixed" => Fleet::Mixed { gate: true },
            "mixed-ungated" => Fleet::Mixed { gate: false },
            other => return Err(format!("processes: unknown case {other:?}: {CASES}").into()),
        })
    }

    fn uses_node(self) -> bool {
        !matches!(self, Fleet::Native(_))
    }

    /// Whether worker `w` is a Node process (in a mixed fleet, the odd ones).
    fn runs_node(self, w: usize) -> bool {
        match self {
            Fleet::Mixed { .. } => w % 2 == 1,
            fleet => fleet.uses_node(),
        }
    }

    /// Worker `w`'s process.
    fn command(self, exe: &Path, npm: &NpmWorker, path: &Path, w: usize) -> Command {
        let native = |locks: &str| {
            let mut command = Command::new(exe);
            command.args(["worker", "--db"]).arg(path).args([
                "--owner",
                &format!("w{w}"),
                "--locks",
                locks,
            ]);
            command
        };
        match self {
            Fleet::Native(locks) => native(locks),
            Fleet::Npm { gate } => npm.command(path, w, "native", gate),
            Fleet::NpmWasm => npm.command(path, w, "wasm", true),
            Fleet::Mixed { gate } if self.runs_node(w) => npm.command(path, w, "native", gate),
            Fleet::Mixed { gate } => native(if gate { "gated" } else { "sleeping" }),
        }
    }
}

/// Why `workers` Node processes would not fit in the memory available now, or None when they
/// would (or when /proc/meminfo cannot say).
fn too_little_memory(workers: usize) -> Option<String> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let available_kb: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let available_mb = available_kb / 1024;
    let needed_mb = workers as u64 * NPM_WORKER_MB;
    // Leave a fifth of what is free to everything else on the machine.
    (needed_mb > available_mb * 4 / 5).then(|| {
        format!(
            "{workers} Node processes need about {needed_mb} MB ({NPM_WORKER_MB} MB each), {available_mb} MB available"
        )
    })
}

/// Starts `workers` processes (`command(w)` for worker w) on `path`, waits until every one has
/// opened the store, releases them at once and collects their cycles. The time runs from the
/// release to the last finish.
fn drain(path: &Path, workers: usize, command: impl Fn(usize) -> Command) -> Result<Drained> {
    let mut started = Vec::with_capacity(workers);
    for w in 0..workers {
        let mut child = command(w)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start a worker process for {}: {e}", path.display()))?;
        let output = BufReader::new(child.stdout.take().ok_or("worker: no stdout")?);
        started.push(Worker { child, output });
    }
    for worker in &mut started {
        let mut line = String::new();
        worker.output.read_line(&mut line)?;
        if line.trim() != "ready" {
            return Err(format!("worker did not start: {line:?}").into());
        }
    }
    let start = Instant::now();
    for worker in &mut started {
        let stdin = worker.child.stdin.as_mut().ok_or("worker: no stdin")?;
        stdin.write_all(b"go\n")?;
        stdin.flush()?;
    }
    let mut latencies_ms = Vec::new();
    let mut errors = 0;
    let mut seconds: f64 = 0.0;
    for mut worker in started {
        let mut line = String::new();
        worker.output.read_line(&mut line)?;
        let status = worker.child.wait()?;
        let report: Value = serde_json::from_str(&line)
            .map_err(|e| format!("worker ({status}) answered {line:?}: {e}"))?;
        seconds = seconds.max(report["end_s"].as_f64().ok_or("worker: no end_s")?);
        errors += report["errors"].as_u64().unwrap_or(0);
        latencies_ms.extend(
            report["latencies_ms"]
                .as_array()
                .ok_or("worker: no latencies")?
                .iter()
                .filter_map(Value::as_f64),
        );
    }
    // Each worker measured its end from its own release, which came at most a few ms after `start`.
    let seconds = seconds.max(1e-9).min(start.elapsed().as_secs_f64());
    latencies_ms.sort_by(f64::total_cmp);
    Ok(Drained {
        seconds,
        latencies_ms,
        errors,
    })
}

/// One worker process: opens the store (with the write gate for `--locks gated` only), sets
/// SQLite's lock timeout (the busy timeout for `--locks blocking`, 0 otherwise), prints
/// `ready`, waits for a line, then claims and completes until nothing is left; prints one JSON
/// line with its cycles' latencies and its end, in seconds after its release.
pub(crate) fn worker(opts: &Opts) -> Result<()> {
    let db = opts.text("db", "");
    let owner = opts.text("owner", "w");
    let locks = opts.text("locks", "blocking");
    let (gate, lock_timeout_ms) = match locks.as_str() {
        "gated" => (true, 0),
        "blocking" => (false, std::ffi::c_int::try_from(BUSY.as_millis())?),
        "sleeping" => (false, 0),
        other => {
            return Err(format!("worker: --locks {other:?}: gated, blocking or sleeping").into())
        }
    };
    let store = OpenOptions::new()
        .busy_timeout(BUSY)
        .write_gate(gate)
        .open(&db)?;
    // After the store's busy handler, which clears it. SAFETY: the store's open connection,
    // used by this thread alone.
    let rc = unsafe {
        rusqlite::ffi::sqlite3_setlk_timeout(store.connection().handle(), lock_timeout_ms, 0)
    };
    if rc != rusqlite::ffi::SQLITE_OK {
        return Err(format!("sqlite3_setlk_timeout failed ({rc})").into());
    }
    println!("ready");
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go)?;
    let released = Instant::now();
    let mut latencies = Vec::new();
    let mut errors = 0u64;
    loop {
        let began = Instant::now();
        // A storage error (busy past the timeout) decides nothing: count it and retry.
        let claimed = match store.claim_next(&owner, NOW, TTL) {
            Ok(Some(claimed)) => claimed,
            Ok(None) => break,
            Err(_) => {
                errors += 1;
                continue;
            }
        };
        loop {
            match store.complete(&claimed.lease(), NOW + 1.0, Some("ok")) {
                Ok(outcome) if outcome.is_granted() => break,
                Ok(_) => return Err(format!("complete of {} refused", claimed.job).into()),
                Err(_) => errors += 1,
            }
        }
        latencies.push(began.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "{}",
        json!({"errors": errors, "latencies_ms": latencies,
            "end_s": released.elapsed().as_secs_f64()})
    );
    Ok(())
}

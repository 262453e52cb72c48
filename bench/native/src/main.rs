//! The native half of `npm run bench` (see `bench/run.sh`).
//!
//! Every suite writes one JSON object per measurement on standard output (`bench/report.mjs`
//! turns them into docs/bench) and one human line per measurement on standard error. All
//! databases are real files in `--dir`, opened the way leasefence opens them: WAL journal,
//! `synchronous = FULL`, a 10 s busy timeout, so every commit is fsynced.
//!
//! ```text
//! leasefence-bench native     --dir D [--repeats 5] [--cycles 400] [--seed-cycles 150]
//!                             [--python python3] [--seed-bench bench/python/seed_bench.py]
//! leasefence-bench loop       --db FILE [--jobs 1000]   (one drain: claim_next + complete; bench/node/loop.mjs)
//! leasefence-bench contention --dir D [--repeats 5] [--cycles 400] [--threads 1,2,4,8,16,64]
//! leasefence-bench processes --dir D [--repeats 3] [--jobs 600] [--workers 1,8,64,256]
//!                             [--cases blocking,sleeping]
//! leasefence-bench throughput --dir D [--repeats 3] [--jobs 2000] [--hold-ms 5]
//!                             [--concurrency 1,8,64,256] [--strace strace] [--pg-url URL]
//! leasefence-bench scale      --dir D [--repeats 5] [--ops 100] [--sizes 1000,100000,1000000]
//! leasefence-bench profile    --dir D --case store|floor|seed|open [--cycles 200]
//! leasefence-bench waking     --dir D [--workers 8] [--enqueues 50] [--idle-secs 60]
//!                             [--cases native,npm,postgres] [--cli target/release/leasefence]
//!                             [--node node] [--pkg target/npm/leasefence] [--pg-url URL]
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use leasefence::{seed, LeaseStore};
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Value};

mod processes;
mod prune;
mod throughput;
mod throughput_pg;
mod waking;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NOW: f64 = 1_000.0;
const TTL: f64 = 30.0;
/// The store's default busy timeout, given to the floor's connections too.
const BUSY: Duration = Duration::from_secs(10);

fn main() {
    let mut args = std::env::args().skip(1);
    let suite = args.next().unwrap_or_default();
    let opts = match Opts::parse(args) {
        Ok(opts) => opts,
        Err(err) => fail(&err.to_string()),
    };
    let run = match suite.as_str() {
        "native" => native(&opts),
        "contention" => contention(&opts),
        "processes" => processes::processes(&opts),
        "worker" => processes::worker(&opts),
        "throughput" => throughput::throughput(&opts),
        "throughput-drain" => throughput::drain(&opts),
        "scale" => scale(&opts),
        "profile" => profile(&opts),
        "waking" => waking::waking(&opts),
        "loop" => claim_next_loop(&opts),
        "prune" => prune::prune(&opts),
        _ => fail(
            "usage: leasefence-bench native|contention|processes|throughput|scale|profile|waking --dir DIR [--repeats N] ...",
        ),
    };
    if let Err(err) = run {
        fail(&err.to_string());
    }
}

fn fail(message: &str) -> ! {
    eprintln!("leasefence-bench: {message}");
    std::process::exit(1);
}

/// `--key value` options.
struct Opts(HashMap<String, String>);

impl Opts {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Self> {
        let mut map = HashMap::new();
        while let Some(key) = args.next() {
            let Some(name) = key.strip_prefix("--") else {
                return Err(format!("expected --option, got {key:?}").into());
            };
            let value = args.next().ok_or(format!("--{name} needs a value"))?;
            map.insert(name.to_string(), value);
        }
        Ok(Opts(map))
    }

    fn text(&self, key: &str, default: &str) -> String {
        self.0.get(key).cloned().unwrap_or_else(|| default.into())
    }

    fn num(&self, key: &str, default: usize) -> Result<usize> {
        match self.0.get(key) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{key} must be a whole number, got {v:?}").into()),
        }
    }

    fn list(&self, key: &str, default: &str) -> Result<Vec<usize>> {
        self.text(key, default)
            .split(',')
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|_| format!("--{key}: {v:?} is not a whole number").into())
            })
            .collect()
    }

    fn dir(&self) -> Result<PathBuf> {
        let dir = PathBuf::from(self.0.get("dir").ok_or("--dir is required")?);
        std::fs::create_dir_all(&dir)?;
        Ok(dir)
    }
}

/// One measurement: a JSON line for the report.
fn emit(record: Value) {
    println!("{record}");
}

/// A new, empty database path (older files of the same name and their journals removed).
fn fresh(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm", "-journal", "-leasefence-gate"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
    path
}

fn remove(path: &Path) {
    fresh(
        path.parent().unwrap_or(Path::new(".")),
        &path.file_name().unwrap_or_default().to_string_lossy(),
    );
}

/// The floor's connection: the flags, journal, durability and busy timeout leasefence uses.
fn floor_connection(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(format!("floor: journal_mode is {mode}, not wal").into());
    }
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

fn create_counter(path: &Path) -> Result<()> {
    let conn = floor_connection(path)?;
    conn.execute_batch(
        "CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL); \
         INSERT INTO counter VALUES (1, 0);",
    )?;
    Ok(())
}

const FLOOR_SQL: &str = "UPDATE counter SET n = n + 1 WHERE id = 1";

fn counter_value(path: &Path) -> Result<i64> {
    Ok(floor_connection(path)?.query_row("SELECT n FROM counter", [], |r| r.get(0))?)
}

/// `(journal_mode, synchronous)` as the connection reports them.
fn durability(conn: &Connection) -> Result<(String, i64)> {
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    Ok((mode.to_lowercase(), sync))
}

fn job_id(i: usize) -> String {
    format!("job-{i}")
}

/// Opens a store on a fresh file and enqueues `jobs` jobs in one transaction.
fn store_with_jobs(path: &Path, jobs: usize) -> Result<LeaseStore> {
    let store = LeaseStore::open(path)?;
    fill(&store, jobs)?;
    Ok(store)
}

/// Enqueues `jobs` jobs in one transaction.
fn fill(store: &LeaseStore, jobs: usize) -> Result<()> {
    store.connection().execute_batch("BEGIN IMMEDIATE")?;
    for i in 0..jobs {
        store.enqueue(&job_id(i))?;
    }
    store.connection().execute_batch("COMMIT")?;
    Ok(())
}

fn done_count(store: &LeaseStore) -> Result<i64> {
    Ok(store
        .connection()
        .query_row("SELECT count(*) FROM jobs WHERE done = 1", [], |r| r.get(0))?)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Nearest-rank percentile of sorted samples.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn progress(section: &str, repeat: usize, repeats: usize, text: String) {
    eprintln!("  [{section} {}/{repeats}] {text}", repeat + 1);
}

// ------------------------------------------------------------------------------------------
/// One drain of `--jobs` fresh jobs on `--db` by one worker, claim_next + complete per job, the
/// library's defaults (the W = 1 loop the npm package's native engine is measured against, one
/// process each, on the same disk): prints `{"jobs": N, "secs": S}`.
fn claim_next_loop(opts: &Opts) -> Result<()> {
    let db = PathBuf::from(opts.0.get("db").ok_or("--db is required")?);
    let jobs = opts.num("jobs", 1000)?;
    let store = store_with_jobs(&db, jobs)?;
    let start = Instant::now();
    while let Some(claimed) = store.claim_next("worker", NOW, TTL)? {
        if !store
            .complete(&claimed.lease(), NOW + 1.0, Some("ok"))?
            .is_granted()
        {
            return Err("loop: complete refused".into());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    check_done(&store, jobs)?;
    println!("{}", json!({"jobs": jobs, "secs": secs}));
    Ok(())
}

// 1. Native: claim-then-complete cycles against the floor and the Python seed.

fn floor_cycles(path: &Path, cycles: usize) -> Result<Duration> {
    create_counter(path)?;
    let took = floor_block(&floor_connection(path)?, cycles)?;
    check_counter(path, cycles)?;
    Ok(took)
}

/// `cycles` floor cycles: each two single-statement write transactions, like claim + complete.
fn floor_block(conn: &Connection, cycles: usize) -> Result<Duration> {
    let mut stmt = conn.prepare_cached(FLOOR_SQL)?;
    let start = Instant::now();
    for _ in 0..cycles {
        stmt.execute([])?;
        stmt.execute([])?;
    }
    Ok(start.elapsed())
}

/// Proves that every floor transaction wrote: the counter moved once per transaction.
fn check_counter(path: &Path, cycles: usize) -> Result<()> {
    let n = counter_value(path)?;
    if n != 2 * cycles as i64 {
        return Err(format!("floor: counter is {n}, expected {}", 2 * cycles).into());
    }
    Ok(())
}

fn store_cycles(path: &Path, cycles: usize) -> Result<Duration> {
    let store = store_with_jobs(path, cycles)?;
    let took = store_block(&store, 0..cycles)?;
    check_done(&store, cycles)?;
    Ok(took)
}

/// claim + complete of each job in `jobs`, on the store's one connection.
fn store_block(store: &LeaseStore, jobs: std::ops::Range<usize>) -> Result<Duration> {
    let ids: Vec<String> = jobs.map(job_id).collect();
    let start = Instant::now();
    for job in &ids {
        let lease = store
            .claim(job, "worker", NOW, TTL)?
            .lease(job, "worker")
            .ok_or("store: claim refused")?;
        if !store.complete(&lease, NOW + 1.0, Some("ok"))?.is_granted() {
            return Err("store: complete refused".into());
        }
    }
    Ok(start.elapsed())
}

fn check_done(store: &LeaseStore, cycles: usize) -> Result<()> {
    let done = done_count(store)?;
    if done != cycles as i64 {
        return Err(format!("{done} jobs done, expected {cycles}").into());
    }
    Ok(())
}

fn seed_cycles(path: &Path, cycles: usize) -> Result<Duration> {
    drop(store_with_jobs(path, cycles)?);
    let took = seed_block(path, 0..cycles)?;
    check_done(&LeaseStore::open(path)?, cycles)?;
    Ok(took)
}

/// claim + complete through `leasefence::seed`: every call opens its own connection.
fn seed_block(path: &Path, jobs: std::ops::Range<usize>) -> Result<Duration> {
    let ids: Vec<String> = jobs.map(job_id).collect();
    let start = Instant::now();
    for job in &ids {
        let fence = seed::claim(path, job, "worker", NOW, TTL)?.ok_or("seed: claim refused")?;
        if !seed::complete(path, job, "worker", fence, NOW + 1.0, Some("ok"))? {
            return Err("seed: complete refused".into());
        }
    }
    Ok(start.elapsed())
}

/// Runs `bench/python/seed_bench.py`, which drives `tests/interop/seed.py`; returns its JSON.
fn python(opts: &Opts, args: &[&str]) -> Result<Value> {
    let python = opts.text("python", "python3");
    let script = opts.text("seed-bench", "bench/python/seed_bench.py");
    let out = Command::new(&python).arg(&script).args(args).output()?;
    if !out.status.success() {
        return Err(format!(
            "{python} {script} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// A long-running `seed_bench.py serve`, so its blocks interleave with ours in time.
struct PythonSeed {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl PythonSeed {
    fn start(opts: &Opts) -> Result<Self> {
        let mut child = Command::new(opts.text("python", "python3"))
            .arg(opts.text("seed-bench", "bench/python/seed_bench.py"))
            .arg("serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        let input = child.stdin.take().ok_or("python: no stdin")?;
        let output = std::io::BufReader::new(child.stdout.take().ok_or("python: no stdout")?);
        Ok(PythonSeed {
            child,
            input,
            output,
        })
    }

    /// claim + complete of `jobs` through the seed module; the time Python measured.
    fn block(&mut self, path: &Path, jobs: std::ops::Range<usize>) -> Result<Duration> {
        use std::io::{BufRead, Write};
        let command = json!({"op": "cycles", "db": path, "start": jobs.start, "count": jobs.len()});
        writeln!(self.input, "{command}")?;
        self.input.flush()?;
        let mut line = String::new();
        self.output.read_line(&mut line)?;
        let answer: Value =
            serde_json::from_str(&line).map_err(|_| format!("python seed answered {line:?}"))?;
        let secs = answer["seconds"].as_f64().ok_or("python: no seconds")?;
        Ok(Duration::from_secs_f64(secs))
    }
}

impl Drop for PythonSeed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn native(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let repeats = opts.num("repeats", 5)?;
    let blocks = opts.num("blocks", 40)?;
    let cycles = opts.num("cycles", 400)?.div_ceil(blocks) * blocks;
    let seed_n = opts.num("seed-cycles", 160)?.div_ceil(blocks) * blocks;

    // What each side really runs with, stated in the report.
    let probe = store_with_jobs(&fresh(&dir, "probe.db"), 0)?;
    let (store_mode, store_sync) = durability(probe.connection())?;
    drop(probe);
    let floor_probe = fresh(&dir, "probe-floor.db");
    let (floor_mode, floor_sync) = durability(&floor_connection(&floor_probe)?)?;
    remove(&floor_probe);
    let py_probe = fresh(&dir, "probe.db");
    drop(store_with_jobs(&py_probe, 0)?);
    let py = python(opts, &["settings", "--db", &py_probe.to_string_lossy()])?;
    remove(&py_probe);
    let sqlite_version = rusqlite::version();
    emit(json!({"section": "settings", "case": "native",
        "store": {"journal_mode": store_mode, "synchronous": store_sync, "sqlite": sqlite_version},
        "floor": {"journal_mode": floor_mode, "synchronous": floor_sync, "sqlite": sqlite_version},
        "python": py}));
    eprintln!(
        "  settings: store {store_mode}/synchronous={store_sync}, floor {floor_mode}/synchronous={floor_sync}, \
         python {}/synchronous={} (SQLite {} here, {} in Python)",
        py["journal_mode"].as_str().unwrap_or("?"),
        py["synchronous"],
        sqlite_version,
        py["sqlite"].as_str().unwrap_or("?")
    );

    let mut python_seed = PythonSeed::start(opts)?;
    // seed-held / python-held: the same seed-style calls while another connection keeps the
    // file open (as any long-running process sharing the file would), so that no call's
    // connection is the last one: closing it then neither checkpoints nor deletes the WAL.
    let cases = [
        "floor",
        "store",
        "seed",
        "python",
        "seed-held",
        "python-held",
    ];
    for r in 0..repeats {
        let floor_path = fresh(&dir, "native-floor.db");
        create_counter(&floor_path)?;
        let floor = floor_connection(&floor_path)?;
        let store_path = fresh(&dir, "native-store.db");
        let store = store_with_jobs(&store_path, cycles)?;
        let mut paths = vec![floor_path.clone(), store_path.clone()];
        for case in &cases[2..] {
            let path = fresh(&dir, &format!("native-{case}.db"));
            drop(store_with_jobs(&path, seed_n)?);
            paths.push(path);
        }
        let holders = [floor_connection(&paths[4])?, floor_connection(&paths[5])?];
        let mut took = [Duration::ZERO; 6];
        let (per, seed_per) = (cycles / blocks, seed_n / blocks);
        // Pairs, each measured on its own: the seed-style paths create and delete the WAL on
        // every call, and ext4 makes the next fsync (whoever calls it) pay for that metadata, so
        // they must not run right before the floor or the store. Within a pair, short blocks
        // take turns in alternating order (A B, B A, ...), so both sample the same moments of a
        // disk that others share, and each follows the other equally often.
        for (a, b_) in [(0, 1), (2, 3), (4, 5)] {
            for b in 0..blocks {
                let order = if (b + r) % 2 == 0 { [a, b_] } else { [b_, a] };
                for i in order {
                    let jobs = b * seed_per..(b + 1) * seed_per;
                    took[i] += match cases[i] {
                        "floor" => floor_block(&floor, per)?,
                        "store" => store_block(&store, b * per..(b + 1) * per)?,
                        "seed" | "seed-held" => seed_block(&paths[i], jobs)?,
                        _ => python_seed.block(&paths[i], jobs)?,
                    };
                }
            }
        }
        drop(holders);
        drop(floor);
        check_counter(&floor_path, cycles)?;
        check_done(&store, cycles)?;
        drop(store);
        for path in &paths[2..] {
            check_done(&LeaseStore::open(path)?, seed_n)?;
        }
        for path in &paths {
            remove(path);
        }
        for (i, case) in cases.iter().enumerate() {
            let n = if i < 2 { cycles } else { seed_n };
            let case = *case;
            let secs = took[i].as_secs_f64();
            let rate = n as f64 / secs;
            emit(
                json!({"section": "native", "case": case, "repeat": r, "cycles": n,
                "seconds": secs, "rate": rate}),
            );
            progress(
                "native",
                r,
                repeats,
                format!("{case:<11} {rate:>7.0} cycles/s  ({:.3} ms/cycle, {n} cycles in {blocks} blocks)", 1e3 / rate),
            );
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// 2. Contention: threads claiming and completing over a shared set of jobs.

struct Run {
    seconds: f64,
    latencies_ms: Vec<f64>,
}

/// Starts `threads` workers, each with its own connection made by `open`, releases them at
/// once, and has them share `cycles` cycles of `work`. Returns the wall time from the release
/// to the last finish and every cycle's latency.
fn race<C, O, W>(threads: usize, cycles: usize, open: O, work: W) -> Result<Run>
where
    O: Fn(usize) -> Result<C> + Sync,
    W: Fn(&C, usize) -> Result<()> + Sync,
{
    let barrier = Barrier::new(threads + 1);
    let left = AtomicI64::new(cycles as i64);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (barrier, left, open, work) = (&barrier, &left, &open, &work);
                scope.spawn(move || -> Result<Vec<f64>> {
                    let conn = open(t);
                    barrier.wait();
                    let conn = conn?;
                    let mut lat = Vec::new();
                    while left.fetch_sub(1, Ordering::Relaxed) > 0 {
                        let start = Instant::now();
                        work(&conn, t)?;
                        lat.push(ms(start.elapsed()));
                    }
                    Ok(lat)
                })
            })
            .collect();
        barrier.wait();
        let start = Instant::now();
        let mut latencies_ms = Vec::with_capacity(cycles);
        let mut first_err = None;
        for handle in handles {
            match handle.join().map_err(|_| "a worker thread panicked")? {
                Ok(lat) => latencies_ms.extend(lat),
                Err(err) => first_err = first_err.or(Some(err)),
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        if let Some(err) = first_err {
            return Err(err);
        }
        latencies_ms.sort_by(f64::total_cmp);
        Ok(Run {
            seconds,
            latencies_ms,
        })
    })
}

fn store_race(path: &Path, threads: usize, cycles: usize) -> Result<Run> {
    let main = store_with_jobs(path, cycles)?;
    let run = race(
        threads,
        cycles,
        |_| Ok(LeaseStore::open(path)?),
        |store, t| {
            let owner = format!("w{t}");
            let claimed = store
                .claim_next(&owner, NOW, TTL)?
                .ok_or("contention: nothing left to claim")?;
            if !store
                .complete(&claimed.lease(), NOW + 1.0, Some("ok"))?
                .is_granted()
            {
                return Err(format!("contention: complete of {} refused", claimed.job).into());
            }
            Ok(())
        },
    )?;
    let done = done_count(&main)?;
    if done != cycles as i64 {
        return Err(format!("contention: {done} jobs done, expected {cycles}").into());
    }
    Ok(run)
}

/// A comparison, not leasefence as shipped: the same race with the store's busy handler
/// (jittered sleeps growing from 50 us to 2 ms) replaced by constant short sleeps, through
/// `store.connection()`, to show how the waiting policy shapes throughput under contention.
fn store_race_short_sleeps(path: &Path, threads: usize, cycles: usize) -> Result<Run> {
    extern "C" fn short_sleep(
        _: *mut std::ffi::c_void,
        attempt: std::ffi::c_int,
    ) -> std::ffi::c_int {
        // 50-225 us, varied so that waiters do not wake in lockstep; gives up after ~10 s.
        std::thread::sleep(Duration::from_micros(50 + (attempt as u64 % 8) * 25));
        (attempt < 80_000) as std::ffi::c_int
    }
    let main = store_with_jobs(path, cycles)?;
    let run = race(
        threads,
        cycles,
        |_| {
            let store = LeaseStore::open(path)?;
            // SAFETY: the handle is this store's open connection, used only by this thread;
            // the handler is a plain function that ignores its (null) argument.
            let rc = unsafe {
                rusqlite::ffi::sqlite3_busy_handler(
                    store.connection().handle(),
                    Some(short_sleep),
                    std::ptr::null_mut(),
                )
            };
            if rc != 0 {
                return Err(format!("sqlite3_busy_handler failed ({rc})").into());
            }
            Ok(store)
        },
        |store, t| {
            let owner = format!("w{t}");
            let claimed = store
                .claim_next(&owner, NOW, TTL)?
                .ok_or("contention: nothing left to claim")?;
            if !store
                .complete(&claimed.lease(), NOW + 1.0, Some("ok"))?
                .is_granted()
            {
                return Err(format!("contention: complete of {} refused", claimed.job).into());
            }
            Ok(())
        },
    )?;
    check_done(&main, cycles)?;
    Ok(run)
}

fn floor_race(path: &Path, threads: usize, cycles: usize) -> Result<Run> {
    create_counter(path)?;
    let run = race(
        threads,
        cycles,
        |_| floor_connection(path),
        |conn, _| {
            let mut stmt = conn.prepare_cached(FLOOR_SQL)?;
            stmt.execute([])?;
            stmt.execute([])?;
            Ok(())
        },
    )?;
    let n = counter_value(path)?;
    if n != 2 * cycles as i64 {
        return Err(format!("floor race: counter is {n}, expected {}", 2 * cycles).into());
    }
    Ok(run)
}

fn contention(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let repeats = opts.num("repeats", 5)?;
    let cycles = opts.num("cycles", 400)?;
    let thread_counts = opts.list("threads", "1,2,4,8,16,64")?;
    let owners_n = opts.num("owners", 64)?;
    let cases: Vec<String> = opts
        .text("cases", "store,floor")
        .split(',')
        .map(|c| c.trim().to_string())
        .collect();
    for r in 0..repeats {
        for (k, &threads) in thread_counts.iter().enumerate() {
            // Rotate the order so no case always runs first.
            let mut order = cases.clone();
            order.rotate_left((k + r) % cases.len());
            for case in &order {
                let case = case.as_str();
                let path = fresh(&dir, &format!("contention-{case}.db"));
                let run = match case {
                    "store" => store_race(&path, threads, cycles)?,
                    "store-short-sleeps" => store_race_short_sleeps(&path, threads, cycles)?,
                    "floor" => floor_race(&path, threads, cycles)?,
                    other => return Err(format!("contention: unknown case {other:?}").into()),
                };
                remove(&path);
                let rate = cycles as f64 / run.seconds;
                let (p50, p99) = (
                    percentile(&run.latencies_ms, 0.5),
                    percentile(&run.latencies_ms, 0.99),
                );
                emit(
                    json!({"section": "contention", "case": case, "threads": threads, "repeat": r,
                    "cycles": cycles, "seconds": run.seconds, "rate": rate, "p50_ms": p50,
                    "p99_ms": p99, "max_ms": run.latencies_ms.last()}),
                );
                progress(
                    "contention",
                    r,
                    repeats,
                    format!("{case:<5} {threads:>2} threads {rate:>7.0} cycles/s  p50 {p50:.2} ms  p99 {p99:.2} ms"),
                );
            }
        }
        // claim_many: every owner on its own thread and connection, on a fresh job.
        let owners: Vec<String> = (0..owners_n).map(|i| format!("owner-{i}")).collect();
        let owner_refs: Vec<&str> = owners.iter().map(String::as_str).collect();
        for case in if r % 2 == 0 {
            ["store", "python"]
        } else {
            ["python", "store"]
        } {
            let path = fresh(&dir, &format!("claim-many-{case}.db"));
            drop(store_with_jobs(&path, 1)?);
            let (secs, winners) = match case {
                "store" => {
                    let store = LeaseStore::open(&path)?;
                    let start = Instant::now();
                    let outcomes = store.claim_many("job-0", &owner_refs, NOW, TTL)?;
                    let secs = start.elapsed().as_secs_f64();
                    (secs, outcomes.iter().filter(|o| o.is_granted()).count())
                }
                _ => {
                    let out = python(
                        opts,
                        &[
                            "claim_many",
                            "--db",
                            &path.to_string_lossy(),
                            "--owners",
                            &owners_n.to_string(),
                        ],
                    )?;
                    let winners = out["winners"].as_u64().ok_or("python: no winners")? as usize;
                    (
                        out["seconds"].as_f64().ok_or("python: no seconds")?,
                        winners,
                    )
                }
            };
            let state = LeaseStore::open(&path)?
                .state("job-0")?
                .ok_or("claim_many: job gone")?;
            remove(&path);
            if winners != 1 || state.fence != 1 {
                return Err(format!(
                    "claim_many ({case}): {winners} winners and fence {}; exactly one winner expected",
                    state.fence
                )
                .into());
            }
            emit(
                json!({"section": "claim_many", "case": case, "owners": owners_n, "repeat": r,
                "seconds": secs, "winners": winners}),
            );
            progress(
                "claim_many",
                r,
                repeats,
                format!(
                    "{case:<6} {owners_n} owners  {:.1} ms, {winners} winner",
                    secs * 1e3
                ),
            );
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// 3. Scale: claim_next and claim per-op cost at growing table sizes.

/// A permutation of `0..n` (a multiplicative step coprime with n), deterministic.
fn scattered(n: usize) -> impl Iterator<Item = usize> {
    let mut step = (n as f64 * 0.618_033_988_75) as usize | 1;
    while gcd(step, n) != 1 {
        step += 2;
    }
    (0..n).map(move |i| (i * step + 7) % n)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn scale(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let repeats = opts.num("repeats", 5)?;
    let ops = opts.num("ops", 100)?;
    let sizes = opts.list("sizes", "1000,100000,1000000")?;
    let mut stores = Vec::new();
    for &size in &sizes {
        if size < 2 * ops * repeats {
            return Err(
                format!("scale: {size} jobs is too few for {ops} ops x {repeats} repeats").into(),
            );
        }
        let path = fresh(&dir, &format!("scale-{size}.db"));
        let store = LeaseStore::open(&path)?;
        // Populated in one transaction with one raw INSERT through the store's connection.
        let start = Instant::now();
        store.connection().execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
             INSERT INTO jobs(id) SELECT 'job-' || i FROM n",
            [size as i64],
        )?;
        let fill = start.elapsed().as_secs_f64();
        store
            .connection()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        let plan = query_plan(&store)?;
        let bytes = std::fs::metadata(&path)?.len();
        emit(
            json!({"section": "scale_setup", "jobs": size, "fill_seconds": fill, "bytes": bytes,
            "claim_next_plan": plan}),
        );
        eprintln!(
            "  [scale] {size} jobs inserted in {fill:.2} s ({:.1} MB); claim_next plan: {plan}",
            bytes as f64 / 1e6
        );
        // claim takes distinct jobs from the upper half; claim_next takes from the front.
        let targets: Vec<String> = scattered(size / 2)
            .map(|i| job_id(size / 2 + i))
            .take(ops * repeats)
            .collect();
        // The same number of jobs, nine in ten enqueued for later (`run_at` far ahead, as
        // `enqueue_with` stores it): claim_next must find the claimable tenth as fast.
        let delayed_path = fresh(&dir, &format!("scale-delayed-{size}.db"));
        let delayed = LeaseStore::open(&delayed_path)?;
        delayed.connection().execute(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?1) \
             INSERT INTO jobs(id, until) SELECT 'job-' || i, \
             CASE WHEN i % 10 = 0 THEN 0 ELSE ?2 + 1e6 + i END FROM n",
            rusqlite::params![size as i64, NOW],
        )?;
        delayed
            .connection()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        // Section 11: the same number of jobs in 4 queues (q0..q3) and 3 priorities (0..2), where
        // every other job of the top priority is leased far ahead: claim_next must pass over
        // them by index probes, not by walking them.
        let queued = LeaseStore::open(fresh(&dir, &format!("scale-queues-{size}.db")))?;
        queued.connection().execute_batch(&format!(
            "BEGIN;
             WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {size})
             INSERT INTO jobs(id, owner, until, fence) SELECT 'job-' || i,
                CASE WHEN (i / 4) % 3 = 2 AND i % 2 = 1 THEN 'holder' END,
                CASE WHEN (i / 4) % 3 = 2 AND i % 2 = 1 THEN {far} ELSE 0 END,
                CASE WHEN (i / 4) % 3 = 2 AND i % 2 = 1 THEN 1 ELSE 0 END FROM n;
             UPDATE leasefence_order SET queue = 'q' || ((seq - 1) % 4),
                priority = ((seq - 1) / 4) % 3;
             COMMIT;",
            far = NOW + 1e6
        ))?;
        queued
            .connection()
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        stores.push((size, path, store, targets, delayed, queued));
    }
    let one_queue: &[&str] = &["q2"];
    let two_queues: &[&str] = &["q1", "q3"];
    for r in 0..repeats {
        for op in [
            "claim_next",
            "claim_next_delayed",
            "claim",
            "claim_next_queues_all",
            "claim_next_queues_one",
            "claim_next_queues_two",
        ] {
            // One op on each size in turn, so every size samples the same moments of the disk.
            let mut lat = vec![Vec::with_capacity(ops); stores.len()];
            for i in 0..ops {
                for k in 0..stores.len() {
                    let k = (k + i + r) % stores.len();
                    let (size, _, store, targets, delayed, queued) = &stores[k];
                    let t = Instant::now();
                    let granted = match op {
                        "claim_next" => store.claim_next("scaler", NOW, TTL)?.is_some(),
                        "claim_next_queues_all"
                        | "claim_next_queues_one"
                        | "claim_next_queues_two" => {
                            let queues = match op {
                                "claim_next_queues_one" => Some(one_queue),
                                "claim_next_queues_two" => Some(two_queues),
                                _ => None,
                            };
                            match queued.claim_next_in(queues, "scaler", NOW, TTL)? {
                                // Given back untimed, as for claim_next_delayed. The claim is
                                // of a top-priority job, except in q1 and q3, whose top
                                // priority is all leased: there the claim passes to priority 1.
                                Some(claimed) => {
                                    lat[k].push(ms(t.elapsed()));
                                    let report = queued.inspect(&claimed.job)?.ok_or("gone")?;
                                    let want = if op == "claim_next_queues_two" { 1 } else { 2 };
                                    if report.priority != want
                                        || queues
                                            .is_some_and(|q| !q.contains(&report.queue.as_str()))
                                    {
                                        return Err(format!(
                                            "scale: {op} claimed {} of {} priority {}",
                                            claimed.job, report.queue, report.priority
                                        )
                                        .into());
                                    }
                                    let _ = queued.release(&claimed.lease())?;
                                    continue;
                                }
                                None => false,
                            }
                        }
                        "claim_next_delayed" => match delayed.claim_next("scaler", NOW, TTL)? {
                            // Given back untimed, so a small table never runs out of the tenth
                            // that is claimable.
                            Some(claimed) => {
                                lat[k].push(ms(t.elapsed()));
                                let _ = delayed.release(&claimed.lease())?;
                                continue;
                            }
                            None => false,
                        },
                        _ => store
                            .claim(&targets[r * ops + i], "scaler", NOW, TTL)?
                            .is_granted(),
                    };
                    lat[k].push(ms(t.elapsed()));
                    if !granted {
                        return Err(format!("scale: {op} at {size} jobs was refused").into());
                    }
                }
            }
            for (k, (size, ..)) in stores.iter().enumerate() {
                let lat = &mut lat[k];
                let mean = lat.iter().sum::<f64>() / ops as f64;
                lat.sort_by(f64::total_cmp);
                let p50 = percentile(lat, 0.5);
                emit(
                    json!({"section": "scale", "case": op, "jobs": size, "repeat": r, "ops": ops,
                    "ms_per_op": mean, "p50_ms": p50, "p99_ms": percentile(lat, 0.99)}),
                );
                progress(
                    "scale",
                    r,
                    repeats,
                    format!("{op:<10} {size:>8} jobs  p50 {p50:.3} ms/op (mean {mean:.3})"),
                );
            }
        }
    }
    for (size, path, store, _, delayed, queued) in stores {
        drop((store, delayed, queued));
        remove(&path);
        remove(&dir.join(format!("scale-delayed-{size}.db")));
        remove(&dir.join(format!("scale-queues-{size}.db")));
    }
    Ok(())
}

fn query_plan(store: &LeaseStore) -> Result<String> {
    // claim_next's probe of one (queue, priority): its first claimable job.
    let mut stmt = store.connection().prepare(
        "EXPLAIN QUERY PLAN SELECT until, seq, job FROM leasefence_order INDEXED BY leasefence_next \
         WHERE open = 1 AND queue = 'default' AND priority = 0 AND until <= 1 \
         ORDER BY until, seq LIMIT 1",
    )?;
    let rows = stmt.query_map([], |r| r.get::<_, String>(3))?;
    Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?.join("; "))
}

// ------------------------------------------------------------------------------------------
// Profiling: one workload, nothing else, for callgrind.

fn profile(opts: &Opts) -> Result<()> {
    let dir = opts.dir()?;
    let cycles = opts.num("cycles", 200)?;
    let case = opts.text("case", "store");
    let path = fresh(&dir, &format!("profile-{case}.db"));
    let took = match case.as_str() {
        "floor" => floor_cycles(&path, cycles)?,
        "store" => store_cycles(&path, cycles)?,
        "seed" => seed_cycles(&path, cycles)?,
        "open" => {
            drop(store_with_jobs(&path, 1)?);
            let start = Instant::now();
            for _ in 0..cycles {
                drop(LeaseStore::open(&path)?);
            }
            start.elapsed()
        }
        "claim-many" => {
            // claim_many with 64 owners on `cycles` fresh jobs.
            let store = store_with_jobs(&path, cycles)?;
            let owners: Vec<String> = (0..64).map(|i| format!("owner-{i}")).collect();
            let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
            let start = Instant::now();
            for i in 0..cycles {
                let won = store.claim_many(&job_id(i), &owners, NOW, TTL)?;
                if won.iter().filter(|o| o.is_granted()).count() != 1 {
                    return Err("claim_many: not exactly one winner".into());
                }
            }
            start.elapsed()
        }
        "open-64" => {
            // What claim_many does before its barrier: 64 threads each opening a store.
            drop(store_with_jobs(&path, 1)?);
            let start = Instant::now();
            for _ in 0..cycles {
                std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..64)
                        .map(|_| scope.spawn(|| LeaseStore::open(&path)))
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| {
                            h.join()
                                .map_err(|_| "panicked")?
                                .map(drop)
                                .map_err(Into::into)
                        })
                        .collect::<Result<Vec<()>>>()
                })?;
            }
            start.elapsed()
        }
        other => return Err(format!("profile: unknown case {other:?}").into()),
    };
    remove(&path);
    eprintln!(
        "  profile {case}: {cycles} cycles in {:.3} s",
        took.as_secs_f64()
    );
    Ok(())
}

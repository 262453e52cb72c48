//! leasefence on PostgreSQL next to leasefence on an SQLite file, measured in the same run on the
//! same machine and disk, through the same [`Leases`] trait (`leasefence::open`), written to
//! `docs/bench/postgres.md`.
//!
//! ```text
//! bash scripts/postgres.sh cargo run --release -p leasefence-pg-bench -- \
//!     [--seconds 3] [--repeats 3] [--threads 1,2,4,8,16,64] [--sizes 1000,1000000] \
//!     [--dir target/bench-pg] [--out docs/bench/postgres.md] \
//!     [--sections single,drain,floor,latency] [--floor-workers 1,8,64] [--floor-jobs 30000]
//! ```
//!
//! A run of some sections only (`--sections floor`) writes `<dir>/postgres-<sections>.md` unless
//! `--out` says otherwise, so that it never replaces the page of the full run with a part of it.
//!
//! Needs `LEASEFENCE_PG_URL` (scripts/postgres.sh starts a throwaway server and sets it). Every
//! measurement gets a fresh PostgreSQL schema and a fresh SQLite file (in `--dir`, on the
//! repository's disk, so both commit to the same device with a real flush): PostgreSQL with
//! `synchronous_commit = on`, SQLite in WAL mode with `synchronous = FULL`, leasefence's
//! defaults. After loading a queue, both are checkpointed (PostgreSQL also vacuumed and
//! analyzed) so that no background flush of the load lands in a measurement. Throughputs are the
//! median of `--repeats` runs, each on a fresh schema or file, with the slowest and fastest.
//!
//! 1. One worker, `claim` + `complete` on named jobs: cycles/s and per-cycle latency.
//! 2. Contention: N workers (threads, one store and connection each) draining one queue with
//!    `claim_next` + `complete`: cycles/s per N.
//! 3. Next to the plain floor (issue 39): W workers draining one queue, leasefence's
//!    `claim_next` + `complete` against two plain prepared statements (`FOR UPDATE SKIP
//!    LOCKED`), interleaved per repeat, with the ratio per repeat. `--sections floor` runs it
//!    alone.
//! 4. `claim_next` latency on a queue of 1k and of 1M jobs, and the plan PostgreSQL uses.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use leasefence::{LeaseStore, Leases};
use postgres::NoTls;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const NOW: f64 = 1_000.0;
const TTL: f64 = 600.0;

/// Every section, in the order they run.
const ALL_SECTIONS: [&str; 4] = ["single", "drain", "latency", "floor"];

struct Opts {
    seconds: f64,
    repeats: usize,
    threads: Vec<usize>,
    sizes: Vec<usize>,
    dir: PathBuf,
    /// Where the page goes: `--out`, else docs/bench/postgres.md for a run of every section and
    /// `<dir>/postgres-<sections>.md` for a run of some.
    out: PathBuf,
    /// Which sections run: single, drain, latency, floor.
    sections: Vec<String>,
    /// The worker counts of the floor section (leasefence next to the plain floor).
    floor_workers: Vec<usize>,
    /// The queue each floor-section run drains (jobs enqueued before the clock starts).
    floor_jobs: usize,
}

impl Opts {
    fn parse() -> Result<Opts> {
        let mut opts = Opts {
            seconds: 3.0,
            repeats: 3,
            threads: vec![1, 2, 4, 8, 16, 64],
            sizes: vec![1_000, 1_000_000],
            dir: PathBuf::from("target/bench-pg"),
            out: PathBuf::new(),
            sections: ALL_SECTIONS.map(String::from).to_vec(),
            floor_workers: vec![1, 8, 64],
            floor_jobs: 30_000,
        };
        let mut out = None;
        let mut args = std::env::args().skip(1);
        while let Some(key) = args.next() {
            let value = args.next().ok_or(format!("{key} needs a value"))?;
            let list = |v: &str| -> Result<Vec<usize>> {
                v.split(',')
                    .map(|n| Ok(n.trim().parse::<usize>()?))
                    .collect()
            };
            match key.as_str() {
                "--seconds" => opts.seconds = value.parse()?,
                "--repeats" => opts.repeats = value.parse::<usize>()?.max(1),
                "--threads" => opts.threads = list(&value)?,
                "--sizes" => opts.sizes = list(&value)?,
                "--dir" => opts.dir = PathBuf::from(value),
                "--out" => out = Some(PathBuf::from(value)),
                "--sections" => opts.sections = value.split(',').map(String::from).collect(),
                "--floor-workers" => opts.floor_workers = list(&value)?,
                "--floor-jobs" => opts.floor_jobs = value.parse()?,
                other => return Err(format!("unknown option {other}").into()),
            }
        }
        if let Some(unknown) = opts
            .sections
            .iter()
            .find(|s| !ALL_SECTIONS.contains(&s.as_str()))
        {
            return Err(format!(
                "--sections: no section `{unknown}`; the sections are {}",
                ALL_SECTIONS.join(", ")
            )
            .into());
        }
        let every = ALL_SECTIONS
            .iter()
            .all(|s| opts.sections.iter().any(|given| given == s));
        opts.out = out.unwrap_or_else(|| {
            if every {
                PathBuf::from("docs/bench/postgres.md")
            } else {
                opts.dir
                    .join(format!("postgres-{}.md", opts.sections.join("-")))
            }
        });
        Ok(opts)
    }
}

/// Where one measurement runs: a fresh PostgreSQL schema or a fresh SQLite file.
enum Fresh {
    Pg {
        base: String,
        schema: String,
        /// The store's URL (with the run's `sslmode`).
        url: String,
        /// The same schema over plain TCP, for set-up and inspection with the raw client.
        plain: String,
    },
    Sqlite {
        path: PathBuf,
    },
}

impl Fresh {
    /// A fresh schema; the store's URL gets `tls` (`sslmode=...`) on top of `base`.
    fn pg(base: &str, name: &str, tls: &str) -> Result<Fresh> {
        let schema = format!("lfbench_{name}_{}", std::process::id());
        let mut admin = postgres::Client::connect(base, NoTls)?;
        admin.batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"
        ))?;
        let separator = if base.contains('?') { '&' } else { '?' };
        let in_schema = format!("{base}{separator}options=-csearch_path%3D{schema}");
        Ok(Fresh::Pg {
            plain: format!("{in_schema}&{PLAIN}"),
            url: format!("{in_schema}&{tls}"),
            base: base.into(),
            schema,
        })
    }

    fn sqlite(dir: &Path, name: &str) -> Result<Fresh> {
        let path = dir.join(format!("{name}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        Ok(Fresh::Sqlite { path })
    }

    /// What `leasefence::open` takes.
    fn target(&self) -> String {
        match self {
            Fresh::Pg { url, .. } => url.clone(),
            Fresh::Sqlite { path } => path.display().to_string(),
        }
    }

    fn open(&self) -> Result<Box<dyn Leases>> {
        Ok(leasefence::open(self.target())?)
    }

    /// Enqueues `job-00000001` .. `job-N` in one transaction (setup, not measured).
    fn fill(&self, n: usize) -> Result<()> {
        drop(self.open()?); // creates the schema the leasefence way
        match self {
            Fresh::Pg { plain, .. } => {
                let mut client = postgres::Client::connect(plain, NoTls)?;
                client.execute(
                    "INSERT INTO jobs(id) SELECT 'job-' || lpad(g::text, 8, '0') \
                     FROM generate_series(1, $1::bigint) g",
                    &[&(n as i64)],
                )?;
                client.batch_execute("VACUUM ANALYZE jobs")?;
                // Needs superuser (the throwaway server's `postgres` is one); best effort.
                let _ = client.batch_execute("CHECKPOINT");
            }
            Fresh::Sqlite { path } => {
                let store = LeaseStore::open(path)?;
                let conn = store.connection();
                conn.execute_batch("BEGIN")?;
                {
                    let mut insert = conn.prepare("INSERT INTO jobs(id) VALUES (?1)")?;
                    for i in 1..=n {
                        insert.execute([format!("job-{i:08}")])?;
                    }
                }
                conn.execute_batch("COMMIT; ANALYZE")?;
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
            }
        }
        Ok(())
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        match self {
            Fresh::Pg { base, schema, .. } => {
                if let Ok(mut admin) = postgres::Client::connect(base, NoTls) {
                    let _ = admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
                }
            }
            Fresh::Sqlite { path } => {
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
                }
            }
        }
    }
}

struct Latencies(Vec<Duration>);

impl Latencies {
    fn percentile(&mut self, p: f64) -> Duration {
        self.0.sort();
        if self.0.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.0.len() - 1) as f64 * p).round() as usize;
        self.0[i]
    }
}

/// Median, lowest and highest of some runs' rates.
fn spread(rates: &mut [f64]) -> (f64, f64, f64) {
    rates.sort_by(f64::total_cmp);
    let median = rates[rates.len() / 2];
    (median, rates[0], rates[rates.len() - 1])
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// 1. One worker, claim + complete on named jobs, for `seconds`.
fn single(fresh: &Fresh, seconds: f64) -> Result<(f64, Latencies)> {
    let queue = 100_000;
    fresh.fill(queue)?;
    let store = fresh.open()?;
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut latencies = Vec::new();
    for i in 1..=queue {
        let job = format!("job-{i:08}");
        let t = Instant::now();
        let lease = store
            .claim(&job, "w", NOW, TTL)?
            .lease(&job, "w")
            .ok_or("claim refused")?;
        let done = store.complete(&lease, NOW, Some("result"))?;
        if !done.is_granted() {
            return Err(format!("complete refused: {done:?}").into());
        }
        latencies.push(t.elapsed());
        if Instant::now() >= deadline {
            break;
        }
    }
    let rate = latencies.len() as f64 / started.elapsed().as_secs_f64();
    Ok((rate, Latencies(latencies)))
}

/// 2. `workers` threads, each with its own store, drain one queue with claim_next + complete.
fn drain(fresh: &Fresh, workers: usize, seconds: f64) -> Result<(f64, u64)> {
    fresh.fill(100_000)?;
    drain_filled(fresh, workers, seconds)
}

/// `workers` threads of leasefence (`claim_next` + `complete`, each with its own store) on a
/// queue already filled: cycles/s and the calls that failed.
fn drain_filled(fresh: &Fresh, workers: usize, seconds: f64) -> Result<(f64, u64)> {
    run_workers(workers, seconds, |w| {
        let store = fresh.open()?;
        let owner = format!("w{w}");
        Ok(Box::new(move || {
            let Some(next) = store.claim_next(&owner, NOW, TTL)? else {
                return Ok(false); // drained
            };
            let done = store.complete(&next.lease(), NOW, Some("r"))?;
            if !done.is_granted() {
                return Err(format!("complete refused: {done:?}").into());
            }
            Ok(true)
        }))
    })
}

/// One worker's cycle: `Ok(true)` when it completed a job, `Ok(false)` when the queue is empty.
type Cycle<'a> = Box<dyn FnMut() -> Result<bool> + Send + 'a>;

/// Runs `workers` threads, each with the cycle `make` gives it (connected before the clock
/// starts), for `seconds` or until the queue is empty: cycles/s over the time they ran, and
/// the cycles that failed.
fn run_workers<'a>(
    workers: usize,
    seconds: f64,
    make: impl Fn(usize) -> Result<Cycle<'a>> + Sync,
) -> Result<(f64, u64)> {
    let barrier = Barrier::new(workers + 1);
    let cycles = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let running = AtomicU64::new(workers as u64);
    let (cycles_at_end, elapsed) = std::thread::scope(|scope| -> Result<(u64, Duration)> {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let (barrier, cycles, errors, stop, running, make) =
                    (&barrier, &cycles, &errors, &stop, &running, &make);
                scope.spawn(move || -> Result<()> {
                    let cycle = make(w);
                    barrier.wait();
                    let mut cycle = cycle?;
                    while !stop.load(Ordering::Relaxed) {
                        match cycle() {
                            Ok(true) => {
                                cycles.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(false) => break,
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                    running.fetch_sub(1, Ordering::Relaxed);
                    Ok(())
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let deadline = started + Duration::from_secs_f64(seconds);
        // Until the time is up or every worker found the queue empty.
        while Instant::now() < deadline && running.load(Ordering::Relaxed) > 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
        stop.store(true, Ordering::Relaxed);
        let counted = cycles.load(Ordering::Relaxed);
        let elapsed = started.elapsed();
        for handle in handles {
            handle.join().map_err(|_| "a worker panicked")??;
        }
        Ok((counted, elapsed))
    })?;
    let rate = cycles_at_end as f64 / elapsed.as_secs_f64();
    Ok((rate, errors.load(Ordering::Relaxed)))
}

/// The plain floor's table, in a fresh schema next to leasefence's: the contract's columns and
/// an insertion number, with the one partial index its claim needs.
const FLOOR_SCHEMA: &str = "CREATE TABLE floor_jobs(id TEXT PRIMARY KEY, \
    seq BIGINT GENERATED ALWAYS AS IDENTITY, owner TEXT, \
    until DOUBLE PRECISION NOT NULL DEFAULT 0, fence BIGINT NOT NULL DEFAULT 0, result TEXT, \
    done INTEGER NOT NULL DEFAULT 0); \
    CREATE INDEX floor_next ON floor_jobs(until, seq) WHERE done = 0";

/// The floor's claim: one statement, the next free job by (until, insertion) under
/// `FOR UPDATE SKIP LOCKED`, claimed with its fence incremented. $1 owner, $2 until, $3 now.
const FLOOR_CLAIM: &str = "UPDATE floor_jobs SET owner = $1, until = $2, fence = fence + 1 \
    WHERE id = (SELECT id FROM floor_jobs WHERE done = 0 AND until <= $3 \
                ORDER BY until, seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
    RETURNING id, fence";

/// The floor's complete: fenced by owner and fence, nothing read on refusal.
const FLOOR_COMPLETE: &str = "UPDATE floor_jobs SET result = $4, done = 1 \
    WHERE id = $1 AND owner = $2 AND fence = $3";

/// Fills the floor's table with `n` jobs (untimed), vacuumed and analyzed as leasefence's are.
fn floor_fill(fresh: &Fresh, n: usize) -> Result<()> {
    let Fresh::Pg { plain, .. } = fresh else {
        return Err("the floor runs on PostgreSQL only".into());
    };
    let mut client = postgres::Client::connect(plain, NoTls)?;
    client.batch_execute(FLOOR_SCHEMA)?;
    client.execute(
        "INSERT INTO floor_jobs(id) SELECT 'job-' || lpad(g::text, 8, '0') \
         FROM generate_series(1, $1::bigint) g",
        &[&(n as i64)],
    )?;
    client.batch_execute("VACUUM ANALYZE floor_jobs")?;
    let _ = client.batch_execute("CHECKPOINT");
    Ok(())
}

/// `workers` threads of the plain floor (autocommit, both statements prepared once per
/// connection) on its filled table: cycles/s and the cycles that failed.
fn floor_drain(fresh: &Fresh, workers: usize, seconds: f64) -> Result<(f64, u64)> {
    let Fresh::Pg { plain, .. } = fresh else {
        return Err("the floor runs on PostgreSQL only".into());
    };
    run_workers(workers, seconds, |w| {
        let mut client = postgres::Client::connect(plain, NoTls)?;
        let claim = client.prepare(FLOOR_CLAIM)?;
        let complete = client.prepare(FLOOR_COMPLETE)?;
        let owner = format!("w{w}");
        Ok(Box::new(move || {
            let Some(row) = client.query_opt(&claim, &[&owner, &(NOW + TTL), &NOW])? else {
                return Ok(false); // drained
            };
            let (id, fence): (String, i64) = (row.get(0), row.get(1));
            let done = client.execute(&complete, &[&id, &owner, &fence, &"r"])?;
            if done != 1 {
                return Err(format!("the floor's complete of {id} matched {done} rows").into());
            }
            Ok(true)
        }))
    })
}

/// 3. claim_next latency on a queue of `size` jobs: 2,000 calls (each takes a job off it).
fn claim_next_latency(fresh: &Fresh, size: usize) -> Result<Latencies> {
    fresh.fill(size)?;
    let store = fresh.open()?;
    // Warm up (and let PostgreSQL settle on its generic plan after five runs).
    for _ in 0..20 {
        store.claim_next("w", NOW, TTL)?;
    }
    let mut latencies = Vec::new();
    for _ in 0..2_000.min(size - 20) {
        let t = Instant::now();
        store
            .claim_next("w", NOW, TTL)?
            .ok_or("the queue ran dry")?;
        latencies.push(t.elapsed());
    }
    Ok(Latencies(latencies))
}

/// The plan PostgreSQL uses for claim_next's pick (generic, as for the prepared statement).
fn pg_plan(fresh: &Fresh) -> Result<String> {
    let Fresh::Pg { plain, .. } = fresh else {
        return Ok(String::new());
    };
    let mut client = postgres::Client::connect(plain, NoTls)?;
    client.batch_execute(
        "SET plan_cache_mode = force_generic_plan; \
         PREPARE next_job(float8) AS SELECT id FROM jobs \
         WHERE done = 0 AND until <= $1 AND fence < 9223372036854775807 \
         ORDER BY until, seq LIMIT 1 FOR NO KEY UPDATE SKIP LOCKED",
    )?;
    let rows = client.query("EXPLAIN (COSTS OFF) EXECUTE next_job(1000)", &[])?;
    Ok(rows
        .iter()
        .map(|row| row.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join("\n"))
}

fn shell(command: &str) -> String {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .unwrap_or_default()
}

fn main() {
    if let Err(err) = run() {
        eprintln!("leasefence-pg-bench: {err}");
        std::process::exit(1);
    }
}

/// The line of `--out` from which on the file is written by hand (the profile of issue 39): a
/// new run replaces what is above it and keeps the rest.
const KEPT_BY_HAND: &str = "<!-- Written by hand from here on: the bench keeps it. -->";

/// Plain TCP, the figures' baseline (the test server offers TLS, which `prefer` would take).
const PLAIN: &str = "sslmode=disable";
/// The "PostgreSQL, TLS" row: encrypted, as a fleet across machines would connect (the
/// certificate check happens once per connection, so `require` costs what `verify-full` does).
const TLS: &str = "sslmode=require";

fn run() -> Result<()> {
    let opts = Opts::parse()?;
    let base = std::env::var("LEASEFENCE_PG_URL").map_err(|_| {
        "LEASEFENCE_PG_URL is unset; run me as: bash scripts/postgres.sh cargo run --release \
         -p leasefence-pg-bench"
    })?;
    std::fs::create_dir_all(&opts.dir)?;
    let pg_version: String = postgres::Client::connect(&base, NoTls)?
        .query_one("SHOW server_version", &[])?
        .get(0);
    let mut md = String::new();
    let line = |md: &mut String, text: String| {
        eprintln!("{text}");
        md.push_str(&text);
        md.push('\n');
    };
    line(
        &mut md,
        "# leasefence on PostgreSQL, next to the SQLite file".into(),
    );
    line(&mut md, String::new());
    line(
        &mut md,
        format!(
            "Generated by `bash scripts/postgres.sh cargo run --release -p leasefence-pg-bench` \
             (bench/postgres) on {}: {} CPU(s), {}. PostgreSQL {pg_version} with the server's \
             defaults (fsync on, `synchronous_commit = on`), over plain TCP on 127.0.0.1 (one \
             row over TLS, `sslmode=require`); SQLite {} \
             on a file on the same disk (WAL, `synchronous = FULL`). Both through the same \
             `Leases` trait (`leasefence::open`), every commit durable. {} s per run, {} \
             run(s) per figure, each on a fresh schema or file.",
            shell("date -u +%Y-%m-%d"),
            shell("nproc"),
            shell("uname -sm"),
            rusqlite::version(),
            opts.seconds,
            opts.repeats
        ),
    );

    if opts.sections.iter().any(|s| s == "single") {
        line(&mut md, String::new());
        line(&mut md, "## One worker: claim + complete".into());
        line(&mut md, String::new());
        line(
            &mut md,
            "One store, `claim(job)` then `complete(job)` on a fresh job each cycle (two commits \
             per cycle). \"PostgreSQL, TLS\" is the same over an encrypted connection: what \
             encryption adds per statement once connected."
                .into(),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            "| backend | cycles/s (median) | slowest–fastest run | p50 cycle | p99 cycle |".into(),
        );
        line(&mut md, "|---|---:|---:|---:|---:|".into());
        for name in ["PostgreSQL", "PostgreSQL, TLS", "SQLite file"] {
            let mut rates = Vec::new();
            let mut all = Vec::new();
            for r in 0..opts.repeats {
                let fresh = match name {
                    "PostgreSQL" => Fresh::pg(&base, &format!("single{r}"), PLAIN)?,
                    "PostgreSQL, TLS" => Fresh::pg(&base, &format!("single_tls{r}"), TLS)?,
                    _ => Fresh::sqlite(&opts.dir, &format!("single{r}"))?,
                };
                let (rate, lat) = single(&fresh, opts.seconds)?;
                rates.push(rate);
                all.extend(lat.0);
            }
            let mut lat = Latencies(all);
            let (p50, p99) = (lat.percentile(0.5), lat.percentile(0.99));
            let (median, low, high) = spread(&mut rates);
            line(
                &mut md,
                format!(
                    "| {name} | {median:.0} | {low:.0}–{high:.0} | {} | {} |",
                    ms(p50),
                    ms(p99)
                ),
            );
        }
    }
    if opts.sections.iter().any(|s| s == "drain") {
        line(&mut md, String::new());
        line(
            &mut md,
            "## Contention: N workers draining one queue".into(),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            "N threads, each with its own store and connection, loop `claim_next` + `complete` on \
             one queue of 100,000 jobs; cycles/s for all of them together, median of the runs \
             (slowest–fastest). Errors are calls that failed (busy, deadlock), over all runs; none \
             are expected."
                .into(),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            "| workers | PostgreSQL cycles/s | SQLite cycles/s | PostgreSQL / SQLite | errors (pg, sqlite) |"
                .into(),
        );
        line(&mut md, "|---:|---:|---:|---:|---:|".into());
        for &workers in &opts.threads {
            let (mut pg_rates, mut lite_rates) = (Vec::new(), Vec::new());
            let (mut pg_errors, mut lite_errors) = (0, 0);
            for r in 0..opts.repeats {
                let pg = Fresh::pg(&base, &format!("drain{workers}_{r}"), PLAIN)?;
                let (rate, errors) = drain(&pg, workers, opts.seconds)?;
                drop(pg);
                pg_rates.push(rate);
                pg_errors += errors;
                let lite = Fresh::sqlite(&opts.dir, &format!("drain{workers}_{r}"))?;
                let (rate, errors) = drain(&lite, workers, opts.seconds)?;
                drop(lite);
                lite_rates.push(rate);
                lite_errors += errors;
            }
            let (pg, pg_low, pg_high) = spread(&mut pg_rates);
            let (lite, lite_low, lite_high) = spread(&mut lite_rates);
            line(
                &mut md,
                format!(
                    "| {workers} | {pg:.0} ({pg_low:.0}–{pg_high:.0}) | {lite:.0} \
                     ({lite_low:.0}–{lite_high:.0}) | {:.2}x | {pg_errors}, {lite_errors} |",
                    pg / lite
                ),
            );
        }
    }
    if opts.sections.iter().any(|s| s == "floor") {
        line(&mut md, String::new());
        line(
            &mut md,
            "## Next to the plain floor: W workers draining one queue".into(),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            format!(
                "W threads, each with its own connection, drain one queue of {} jobs \
                 (enqueued untimed, then vacuumed and analyzed) for {} s: leasefence through \
                 `Leases` (`claim_next` + `complete`, one store each), and the plain floor, two \
                 prepared statements in autocommit on a table of the contract's columns with \
                 one partial index: `UPDATE ... WHERE id = (SELECT ... ORDER BY until, seq \
                 LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, fence`, then `UPDATE ... SET \
                 done = 1 WHERE id AND owner AND fence`. Both on the same server, each run on a \
                 fresh schema, the two systems' runs interleaved (the order alternates per \
                 repeat). Ratio: leasefence over the floor in the same repeat, median \
                 (min–max) over {} repeat(s).",
                opts.floor_jobs, opts.seconds, opts.repeats
            ),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            "| W | leasefence jobs/s | floor jobs/s | leasefence / floor | errors (leasefence, floor) |"
                .into(),
        );
        line(&mut md, "|---:|---:|---:|---:|---:|".into());
        for &workers in &opts.floor_workers {
            let (mut lf_rates, mut floor_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
            let (mut lf_errors, mut floor_errors) = (0, 0);
            for r in 0..opts.repeats {
                let mut lf = 0.0;
                let mut floor = 0.0;
                // Alternate which system goes first, so neither always meets a warmer server.
                for first in [r % 2 == 0, r % 2 != 0] {
                    if first {
                        let fresh = Fresh::pg(&base, &format!("lf{workers}_{r}"), PLAIN)?;
                        fresh.fill(opts.floor_jobs)?;
                        let (rate, errors) = drain_filled(&fresh, workers, opts.seconds)?;
                        (lf, lf_errors) = (rate, lf_errors + errors);
                    } else {
                        let fresh = Fresh::pg(&base, &format!("floor{workers}_{r}"), PLAIN)?;
                        floor_fill(&fresh, opts.floor_jobs)?;
                        let (rate, errors) = floor_drain(&fresh, workers, opts.seconds)?;
                        (floor, floor_errors) = (rate, floor_errors + errors);
                    }
                }
                eprintln!("  W={workers} repeat {r}: leasefence {lf:.0}, floor {floor:.0} jobs/s");
                lf_rates.push(lf);
                floor_rates.push(floor);
                ratios.push(lf / floor);
            }
            let (lf, lf_low, lf_high) = spread(&mut lf_rates);
            let (floor, floor_low, floor_high) = spread(&mut floor_rates);
            let (ratio, ratio_low, ratio_high) = spread(&mut ratios);
            line(
                &mut md,
                format!(
                    "| {workers} | {lf:.0} ({lf_low:.0}–{lf_high:.0}) | {floor:.0} \
                     ({floor_low:.0}–{floor_high:.0}) | **{ratio:.2}x** \
                     ({ratio_low:.2}–{ratio_high:.2}) | {lf_errors}, {floor_errors} |"
                ),
            );
        }
    }
    if opts.sections.iter().any(|s| s == "latency") {
        line(&mut md, String::new());
        line(&mut md, "## claim_next on a million jobs".into());
        line(&mut md, String::new());
        line(
            &mut md,
            "One store, 2,000 `claim_next` calls in a row (after 20 warm-up calls) on a queue of \
             that many fresh jobs, all tied at `until = 0`, so the pick is decided by insertion \
             order: the case a sort would make linear."
                .into(),
        );
        line(&mut md, String::new());
        line(
            &mut md,
            "| jobs | PostgreSQL p50 | PostgreSQL p99 | SQLite p50 | SQLite p99 |".into(),
        );
        line(&mut md, "|---:|---:|---:|---:|---:|".into());
        let mut plan = String::new();
        for &size in &opts.sizes {
            let pg = Fresh::pg(&base, &format!("next{size}"), PLAIN)?;
            let mut pg_lat = claim_next_latency(&pg, size)?;
            if size == *opts.sizes.iter().max().unwrap() {
                plan = pg_plan(&pg)?;
            }
            drop(pg);
            let lite = Fresh::sqlite(&opts.dir, &format!("next{size}"))?;
            let mut lite_lat = claim_next_latency(&lite, size)?;
            drop(lite);
            line(
                &mut md,
                format!(
                    "| {size} | {} | {} | {} | {} |",
                    ms(pg_lat.percentile(0.5)),
                    ms(pg_lat.percentile(0.99)),
                    ms(lite_lat.percentile(0.5)),
                    ms(lite_lat.percentile(0.99)),
                ),
            );
        }
        line(&mut md, String::new());
        line(
            &mut md,
            format!(
                "The plan PostgreSQL uses for the pick at {} jobs (generic, as for the prepared \
                 statement): an ordered scan of the partial index `leasefence_next`, no sort.",
                opts.sizes.iter().max().unwrap()
            ),
        );
        line(&mut md, String::new());
        line(&mut md, format!("```text\n{plan}\n```"));
    }
    if let Some(parent) = opts.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    // The profile and notes written by hand after the generated tables stay as they are.
    if let Ok(previous) = std::fs::read_to_string(&opts.out) {
        if let Some(at) = previous.find(KEPT_BY_HAND) {
            md.push('\n');
            md.push_str(&previous[at..]);
        }
    }
    std::fs::write(&opts.out, md)?;
    eprintln!("wrote {}", opts.out.display());
    Ok(())
}

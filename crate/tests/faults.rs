#![cfg(not(target_arch = "wasm32"))]
//! Power loss and I/O faults on native files, tested the way SQLite tests itself: through a VFS
//! that forgets what was never synced and fails the calls it is told to (`support/fault_vfs.rs`).
//!
//! - Power loss: worker threads in a child process (this test binary, run again) enqueue, claim,
//!   renew, complete and release on one file and log every acknowledged answer; the VFS cuts the
//!   power at a random moment and kills the process; the file is reopened as a new process
//!   would, and checked: `PRAGMA integrity_check`, every acknowledged answer still in the store,
//!   no fence handed out twice for its job. Several cuts per trial, each on the recovered file.
//! - I/O errors: the Nth read, write, sync or truncate fails (an I/O error, or "disk full" for a
//!   write); the call must fail with a `storage` error having changed nothing, and once the fault
//!   clears the store works on.
//!
//! `FAULT_TRIALS=2000 cargo test -p leasefence --test faults -- --nocapture` for the long form
//! (the default is a short run for `npm test`; `FAULT_SEED=N` for other choices).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use leasefence::{Error, Fence, Journal, Lease, LeaseStore, OpenOptions, Outcome};
use support::fault_vfs::{self, Fault, Kind, Loss};
use support::rng::Rng;

// ---------------------------------------------------------------------------------------------
// Acknowledged answers and their checks

/// One answer a worker received and acted on.
#[derive(Debug, Clone, PartialEq)]
enum Ack {
    Enqueue {
        job: String,
    },
    Claim {
        job: String,
        fence: Fence,
    },
    Renew {
        job: String,
        fence: Fence,
        until: f64,
    },
    Complete {
        job: String,
        fence: Fence,
        result: String,
    },
    Release {
        job: String,
        fence: Fence,
    },
    /// `fail`: released to retry at `retry_at`, or dead (`None`); `error` has no spaces.
    Fail {
        job: String,
        fence: Fence,
        retry_at: Option<f64>,
        error: String,
    },
}

impl Ack {
    fn line(&self) -> String {
        match self {
            Ack::Enqueue { job } => format!("enqueue {job}\n"),
            Ack::Claim { job, fence } => format!("claim {job} {fence}\n"),
            // {:?} of an f64 prints it exactly (shortest round-trip form).
            Ack::Renew { job, fence, until } => format!("renew {job} {fence} {until:?}\n"),
            Ack::Complete { job, fence, result } => format!("complete {job} {fence} {result}\n"),
            Ack::Release { job, fence } => format!("release {job} {fence}\n"),
            Ack::Fail {
                job,
                fence,
                retry_at,
                error,
            } => match retry_at {
                Some(at) => format!("fail {job} {fence} {error} {at:?}\n"),
                None => format!("fail {job} {fence} {error}\n"),
            },
        }
    }

    fn parse(line: &str) -> Option<Ack> {
        let words: Vec<&str> = line.split(' ').collect();
        let job = || words.get(1).map(|w| w.to_string());
        let fence = || words.get(2)?.parse().ok();
        Some(match *words.first()? {
            "enqueue" => Ack::Enqueue { job: job()? },
            "claim" => Ack::Claim {
                job: job()?,
                fence: fence()?,
            },
            "renew" => Ack::Renew {
                job: job()?,
                fence: fence()?,
                until: words.get(3)?.parse().ok()?,
            },
            "complete" => Ack::Complete {
                job: job()?,
                fence: fence()?,
                result: words.get(3)?.to_string(),
            },
            "release" => Ack::Release {
                job: job()?,
                fence: fence()?,
            },
            "fail" => Ack::Fail {
                job: job()?,
                fence: fence()?,
                error: words.get(3)?.to_string(),
                retry_at: match words.get(4) {
                    Some(at) => Some(at.parse().ok()?),
                    None => None,
                },
            },
            _ => return None,
        })
    }

    fn job(&self) -> &str {
        match self {
            Ack::Enqueue { job }
            | Ack::Claim { job, .. }
            | Ack::Renew { job, .. }
            | Ack::Complete { job, .. }
            | Ack::Release { job, .. }
            | Ack::Fail { job, .. } => job,
        }
    }
}

/// The acknowledged answers the store no longer reflects (each described), and the fences
/// acknowledged twice for one job.
fn check_acks(store: &LeaseStore, acks: &[Ack]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut fences: BTreeSet<(String, Fence)> = BTreeSet::new();
    for ack in acks {
        if let Ack::Claim { job, fence } = ack {
            if !fences.insert((job.clone(), *fence)) {
                problems.push(format!("fence {fence} of {job} was handed out twice"));
            }
        }
        let row = store.state(ack.job()).expect("state");
        let kept = match (&row, ack) {
            (None, _) => false,
            (Some(_), Ack::Enqueue { .. }) => true,
            (Some(row), Ack::Claim { fence, .. }) => row.fence >= *fence,
            (Some(row), Ack::Renew { fence, until, .. }) => {
                row.fence > *fence || row.done || row.owner.is_none() || row.until >= *until
            }
            (Some(row), Ack::Complete { fence, result, .. }) => {
                row.done && row.fence == *fence && row.result.as_deref() == Some(result)
            }
            (Some(row), Ack::Release { fence, .. }) => row.fence > *fence || row.owner.is_none(),
            (
                Some(row),
                Ack::Fail {
                    fence,
                    retry_at,
                    error,
                    ..
                },
            ) => {
                // The failure is on record with its fence, and the job waits or is dead.
                let recorded = store
                    .inspect(ack.job())
                    .expect("inspect")
                    .is_some_and(|seen| {
                        seen.failures
                            .iter()
                            .any(|f| f.fence == *fence && f.error.as_deref() == Some(error))
                    });
                let after = match retry_at {
                    Some(at) => {
                        row.fence > *fence || (row.owner.is_none() && !row.done && row.until == *at)
                    }
                    None => row.fence > *fence || (row.done && row.result.is_none()),
                };
                recorded && after
            }
        };
        if !kept {
            problems.push(format!("acknowledged {ack:?}, the store has {row:?}"));
        }
    }
    problems
}

fn integrity(store: &LeaseStore) -> String {
    store
        .connection()
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .expect("integrity_check runs")
}

/// Opens the file as a new process would: the default VFS, the store's own set-up.
fn reopen(db: &Path, journal: Journal) -> LeaseStore {
    OpenOptions::new()
        .journal(journal)
        .open(db)
        .unwrap_or_else(|e| panic!("reopening {} failed: {e}", db.display()))
}

/// Opens a store on the fault-injecting VFS, set up as `LeaseStore::open` sets up a file (the
/// journal mode first, then `from_connection` sets `synchronous` and the schema).
fn open_faulty(db: &Path, journal: Journal) -> leasefence::Result<LeaseStore> {
    let conn = fault_vfs::open_connection(db).map_err(|e| Error::Open {
        path: db.display().to_string(),
        problem: e.to_string(),
    })?;
    let mode = match journal {
        Journal::Wal => "WAL",
        _ => "DELETE",
    };
    conn.query_row(&format!("PRAGMA journal_mode = {mode}"), [], |_| Ok(()))
        .map_err(|e| Error::Open {
            path: db.display().to_string(),
            problem: e.to_string(),
        })?;
    // A checkpoint every few pages instead of every 1000: the checkpoint's writes, syncs and
    // truncate then happen in every trial, as they do all the time in a long-running store.
    conn.pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES)
        .map_err(|e| Error::Open {
            path: db.display().to_string(),
            problem: e.to_string(),
        })?;
    LeaseStore::from_connection(conn, &db.display().to_string())
}

const CHECKPOINT_PAGES: i64 = 6;

/// `FAULT_SEED` varies the choices of a run (the default is the same run every time).
fn seeded(seed: u64) -> u64 {
    let extra: u64 = std::env::var("FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    seed ^ extra.wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn trials(short: usize) -> usize {
    std::env::var("FAULT_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(short)
}

/// Where the trial files go: tmpfs when there is one (the VFS models the disk, so real fsyncs
/// would only slow the trials down).
fn scratch_dir() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::tempdir_in(shm) {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------------------------
// The workload: one step of one worker

const RENEW_TTL: f64 = 8.0;

struct Worker {
    owner: String,
    held: Vec<(String, Fence)>,
    made: u64,
    prefix: String,
}

impl Worker {
    fn new(prefix: &str, owner: &str) -> Self {
        Worker {
            owner: owner.to_string(),
            held: Vec::new(),
            made: 0,
            prefix: prefix.to_string(),
        }
    }

    /// One operation; the acknowledgement if the store granted it.
    fn step(
        &mut self,
        store: &LeaseStore,
        rng: &mut Rng,
        clock: &AtomicU64,
    ) -> leasefence::Result<Option<Ack>> {
        let now = clock.fetch_add(1, Ordering::SeqCst) as f64;
        let ttl = 2.0 + rng.below(6) as f64;
        let choice = if self.held.is_empty() {
            rng.below(5)
        } else {
            rng.below(12) // 9: release, 10 and 11: fail
        };
        match choice {
            0 | 1 => {
                self.made += 1;
                let job = format!("{}-{}-{}", self.prefix, self.owner, self.made);
                Ok(store.enqueue(&job)?.then_some(Ack::Enqueue { job }))
            }
            2 | 3 => Ok(store.claim_next(&self.owner, now, ttl)?.map(|claimed| {
                self.held.push((claimed.job.clone(), claimed.fence));
                Ack::Claim {
                    job: claimed.job,
                    fence: claimed.fence,
                }
            })),
            4 => {
                clock.fetch_add(5, Ordering::SeqCst); // a stall: some leases run out
                Ok(None)
            }
            5 | 6 => {
                let (job, fence) = self.held[rng.below(self.held.len() as u64) as usize].clone();
                // Longer than any claim's ttl: a later renew of a lease never shortens it, so an
                // acknowledged lease end is a lower bound of what the store must keep.
                let ttl = RENEW_TTL;
                match store.renew(&Lease::new(&job, &self.owner, fence), now, ttl)? {
                    Outcome::Granted(()) => Ok(Some(Ack::Renew {
                        job,
                        fence,
                        until: now + ttl,
                    })),
                    Outcome::Rejected(_) => {
                        self.held.retain(|(j, _)| j != &job);
                        Ok(None)
                    }
                }
            }
            7 | 8 => {
                let (job, fence) = self.held.remove(rng.below(self.held.len() as u64) as usize);
                let result = format!("done-by-{}-{fence}", self.owner);
                match store.complete(&Lease::new(&job, &self.owner, fence), now, Some(&result)) {
                    Ok(Outcome::Granted(())) => Ok(Some(Ack::Complete { job, fence, result })),
                    Ok(Outcome::Rejected(_)) => Ok(None),
                    Err(e) => {
                        self.held.push((job, fence));
                        Err(e)
                    }
                }
            }
            10 | 11 => {
                let (job, fence) = self.held.remove(rng.below(self.held.len() as u64) as usize);
                let retry_at = (choice == 10).then_some(now + 3.0);
                let error = format!("failed-by-{}-{fence}", self.owner);
                match store.fail(
                    &Lease::new(&job, &self.owner, fence),
                    now,
                    retry_at,
                    Some(&error),
                ) {
                    Ok(Outcome::Granted(())) => Ok(Some(Ack::Fail {
                        job,
                        fence,
                        retry_at,
                        error,
                    })),
                    Ok(Outcome::Rejected(_)) => Ok(None),
                    Err(e) => {
                        self.held.push((job, fence));
                        Err(e)
                    }
                }
            }
            _ => {
                let (job, fence) = self.held.remove(rng.below(self.held.len() as u64) as usize);
                match store.release(&Lease::new(&job, &self.owner, fence)) {
                    Ok(Outcome::Granted(())) => Ok(Some(Ack::Release { job, fence })),
                    Ok(Outcome::Rejected(_)) => Ok(None),
                    Err(e) => {
                        self.held.push((job, fence));
                        Err(e)
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Power loss: the child process

fn workers() -> usize {
    std::env::var("FAULT_WORKERS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(3)
}
const STEPS_PER_WORKER: usize = 12;

fn journal_from(text: &str) -> Journal {
    if text == "rollback" {
        Journal::Rollback
    } else {
        Journal::Wal
    }
}

/// The child side of the power-loss trials: runs only when the parent started it.
#[test]
fn power_loss_child() {
    let Ok(db) = std::env::var("FAULT_CHILD_DB") else {
        return;
    };
    let db = PathBuf::from(db);
    let var = |name: &str| std::env::var(name).unwrap();
    let journal = journal_from(&var("FAULT_JOURNAL"));
    let seed: u64 = var("FAULT_SEED").parse().unwrap();
    let cut: u64 = var("FAULT_CUT").parse().unwrap();
    let loss = match var("FAULT_LOSS").as_str() {
        "torn" => Loss::Torn { seed },
        _ => Loss::Forget,
    };
    let round = var("FAULT_ROUND");
    let clock = AtomicU64::new(var("FAULT_CLOCK").parse().unwrap());
    fault_vfs::register(db.parent().unwrap());
    if cut > 0 {
        fault_vfs::cut_power_at(cut, loss);
    }
    let acks = Mutex::new(
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(var("FAULT_ACKS"))
            .unwrap(),
    );
    // Opened one after the other: the first creates the file, the others find it.
    let stores: Vec<LeaseStore> = (0..workers())
        .map(|_| open_faulty(&db, journal).expect("open on the faulty VFS"))
        .collect();
    std::thread::scope(|scope| {
        for (w, store) in stores.into_iter().enumerate() {
            let (clock, acks, round) = (&clock, &acks, &round);
            scope.spawn(move || {
                let mut worker = Worker::new(&format!("r{round}"), &format!("w{w}"));
                let mut rng = Rng(seed.wrapping_mul(31).wrapping_add(w as u64 + 1) | 1);
                for _ in 0..STEPS_PER_WORKER {
                    if let Some(ack) = worker
                        .step(&store, &mut rng, clock)
                        .expect("no I/O errors here")
                    {
                        // One write per answer, before the worker acts on it.
                        acks.lock()
                            .unwrap()
                            .write_all(ack.line().as_bytes())
                            .unwrap();
                    }
                }
            });
        }
    });
    std::fs::write(
        var("FAULT_ACKS") + ".events",
        fault_vfs::events().to_string(),
    )
    .unwrap();
}

struct RoundResult {
    acks: Vec<Ack>,
    cut: bool,
    events: Option<u64>,
}

/// Which program a power-loss round runs in.
#[derive(Debug, Clone, Copy)]
enum Child<'a> {
    /// This test binary again (`power_loss_child`): the Rust library on threads.
    Rust,
    /// Node running the npm package (the directory) on its native engine, whose addon was built
    /// with the fault VFS inside (feature `addon-faults`): `support/node_fault_child.cjs`.
    Node(&'a Path),
}

/// The Node child's script.
fn node_child_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/node_fault_child.cjs")
}

/// The command that starts a Node child on `package` with the fault VFS watching `root`.
fn node_command(package: &Path, root: &Path) -> Command {
    let mut command = Command::new("node");
    command
        .arg(node_child_script())
        .env("LEASEFENCE_PKG", package)
        .env("LEASEFENCE_ENGINE", "native")
        .env("LEASEFENCE_FAULT_ROOT", root);
    command
}

/// Runs a Node child of the in-process modes (`io`, `failed-sync`) to its end and answers the
/// JSON line it printed last; a child that failed fails the test with its output.
fn node_summary(command: &mut Command) -> serde_json::Value {
    let output = command.output().expect("start node");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Node child failed ({:?}): {stdout}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default()).expect("a JSON summary")
}

fn run_child(
    child: Child,
    db: &Path,
    journal: Journal,
    loss: &str,
    seed: u64,
    cut: u64,
    round: usize,
) -> RoundResult {
    // Outside the root (the cut rewrites the root), one directory per child.
    let log_dir = tempfile::tempdir().unwrap();
    let acks_path = log_dir.path().join("acks.txt");
    let events_path = PathBuf::from(format!("{}.events", acks_path.display()));
    let mut command = match child {
        Child::Rust => {
            let mut command = Command::new(std::env::current_exe().unwrap());
            command.args([
                "power_loss_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ]);
            command
        }
        Child::Node(package) => {
            // The addon opens with the library's defaults: WAL.
            assert_eq!(
                journal,
                Journal::Wal,
                "the Node child runs the native engine"
            );
            let mut command = node_command(package, db.parent().unwrap());
            command
                .env("FAULT_MODE", "power")
                .env("LEASEFENCE_FAULT_CUT", cut.to_string())
                .env("LEASEFENCE_FAULT_LOSS", loss)
                .env("LEASEFENCE_FAULT_SEED", seed.to_string())
                .env("LEASEFENCE_FAULT_EVENTS", &events_path);
            command
        }
    };
    let output = command
        .env("FAULT_CHILD_DB", db)
        .env(
            "FAULT_JOURNAL",
            if journal == Journal::Wal {
                "wal"
            } else {
                "rollback"
            },
        )
        .env("FAULT_SEED", seed.to_string())
        .env("FAULT_CUT", cut.to_string())
        .env("FAULT_LOSS", loss)
        .env("FAULT_ROUND", round.to_string())
        .env("FAULT_CLOCK", (round as u64 * 1_000).to_string())
        .env("FAULT_ACKS", &acks_path)
        .output()
        .expect("start the child");
    use std::os::unix::process::ExitStatusExt;
    let killed = output.status.signal() == Some(libc::SIGKILL);
    assert!(
        killed || output.status.success(),
        "child failed ({:?}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let acks = std::fs::read_to_string(&acks_path)
        .unwrap_or_default()
        .lines()
        .filter_map(Ack::parse)
        .collect();
    let events = std::fs::read_to_string(&events_path)
        .ok()
        .and_then(|e| e.parse().ok());
    RoundResult {
        acks,
        cut: killed,
        events,
    }
}

const ROUNDS: usize = 3;

/// Runs `trials` trials of `ROUNDS` cuts each; prints and returns (cuts, acks checked, lost).
fn power_loss_trials(
    child: Child,
    journal: Journal,
    loss: &str,
    trials: usize,
    base_seed: u64,
) -> (usize, usize, Vec<String>) {
    // A run without a cut tells how many mutating calls a round makes.
    let calibration = scratch_dir();
    let whole = run_child(
        child,
        &calibration.path().join("count.db"),
        journal,
        loss,
        base_seed,
        0,
        0,
    );
    let events = whole.events.expect("an uncut run reports its events");
    assert!(events > 20, "only {events} mutating calls in a whole round");
    let mut rng = Rng(seeded(base_seed) | 1);
    let (mut cuts, mut checked, mut lost) = (0, 0, Vec::new());
    for trial in 0..trials {
        let dir = scratch_dir();
        let db = dir.path().join("power.db");
        let mut all_acks: Vec<Ack> = Vec::new();
        for round in 0..ROUNDS {
            // Mostly inside the run, sometimes past its end (a round that finishes uncut).
            let cut = 1 + rng.below(events + events / 10);
            let seed = rng.next();
            let result = run_child(child, &db, journal, loss, seed, cut, round);
            cuts += usize::from(result.cut);
            all_acks.extend(result.acks);
            if !db.exists() {
                assert!(
                    all_acks.is_empty(),
                    "trial {trial}: the file is gone after {} answers",
                    all_acks.len()
                );
                continue;
            }
            let store = reopen(&db, journal);
            assert_eq!(
                integrity(&store),
                "ok",
                "trial {trial} round {round} (cut at {cut})"
            );
            checked += all_acks.len();
            for problem in check_acks(&store, &all_acks) {
                lost.push(format!(
                    "{journal:?}/{loss} trial {trial} round {round} cut {cut}: {problem}"
                ));
            }
        }
        // The store works on: a fresh job's first claim is fence 1, claim_next finds work.
        if db.exists() {
            let store = reopen(&db, journal);
            assert!(store.enqueue("after").unwrap());
            assert_eq!(
                store.claim("after", "z", 1e9, 5.0).unwrap().granted(),
                Some(1)
            );
        }
    }
    let who = match child {
        Child::Rust => "Rust threads",
        Child::Node(_) => "Node, native engine",
    };
    println!(
        "power loss ({who}, {journal:?}, {loss}): {trials} trials x {ROUNDS} rounds, {cuts} cuts \
         over ~{events} mutating calls a round, {checked} acknowledged answers checked, {} lost",
        lost.len()
    );
    (cuts, checked, lost)
}

fn assert_nothing_lost(journal: Journal, loss: &str, short: usize, seed: u64) {
    assert_nothing_lost_in(Child::Rust, journal, loss, short, seed);
}

fn assert_nothing_lost_in(child: Child, journal: Journal, loss: &str, short: usize, seed: u64) {
    let (cuts, checked, lost) = power_loss_trials(child, journal, loss, trials(short), seed);
    assert!(
        cuts > 0 && checked > 0,
        "no cut happened or nothing was checked"
    );
    assert!(
        lost.is_empty(),
        "{} acknowledged answers lost, e.g.:\n{}",
        lost.len(),
        lost[..lost.len().min(5)].join("\n")
    );
}

#[test]
fn power_loss_wal_forgets_unsynced_writes() {
    assert_nothing_lost(Journal::Wal, "forget", 15, 0x5eed_0001);
}

#[test]
fn power_loss_wal_torn_writes() {
    assert_nothing_lost(Journal::Wal, "torn", 15, 0x5eed_0002);
}

#[test]
fn power_loss_rollback_forgets_unsynced_writes() {
    assert_nothing_lost(Journal::Rollback, "forget", 15, 0x5eed_0003);
}

#[test]
fn power_loss_rollback_torn_writes() {
    assert_nothing_lost(Journal::Rollback, "torn", 15, 0x5eed_0004);
}

// ---------------------------------------------------------------------------------------------
// The same trials on the npm package's native engine: Node processes, the addon's file

/// The npm package whose addon has the fault VFS inside (feature `addon-faults`), when this run
/// was given one: tests/node/native-faults.test.mjs builds it and runs the `node_` tests with
/// `LEASEFENCE_FAULT_PACKAGE` set. Without it they say so and check nothing.
fn node_fault_package() -> Option<PathBuf> {
    let package = PathBuf::from(std::env::var_os("LEASEFENCE_FAULT_PACKAGE")?);
    assert!(
        package.join("package.json").is_file(),
        "LEASEFENCE_FAULT_PACKAGE={} is no npm package directory",
        package.display()
    );
    Some(package)
}

fn skipped_without_node() {
    println!(
        "skipped: no LEASEFENCE_FAULT_PACKAGE (tests/node/native-faults.test.mjs runs these with \
         an addon built with the fault VFS)"
    );
}

#[test]
fn node_power_loss_forgets_unsynced_writes() {
    let Some(package) = node_fault_package() else {
        return skipped_without_node();
    };
    assert_nothing_lost_in(
        Child::Node(&package),
        Journal::Wal,
        "forget",
        8,
        0x5eed_0101,
    );
}

#[test]
fn node_power_loss_torn_writes() {
    let Some(package) = node_fault_package() else {
        return skipped_without_node();
    };
    assert_nothing_lost_in(Child::Node(&package), Journal::Wal, "torn", 8, 0x5eed_0102);
}

/// The I/O-error trials of `io_error_trials`, run by the Node child (it arms the faults through
/// the addon, checks each failed step there), then each trial's file checked here as a new
/// process opens it: integrity, and every acknowledged answer kept.
#[test]
fn node_io_errors() {
    let Some(package) = node_fault_package() else {
        return skipped_without_node();
    };
    let root = scratch_dir();
    let logs = tempfile::tempdir().unwrap();
    let acks_path = logs.path().join("acks.txt");
    let trials = trials(10);
    let summary = node_summary(
        node_command(&package, root.path())
            .env("FAULT_MODE", "io")
            .env("FAULT_SEED", seeded(0x10e3).to_string())
            .env("FAULT_IO_TRIALS", trials.to_string())
            .env("FAULT_ACKS", &acks_path),
    );
    assert!(
        summary["errors"].as_u64() > Some(0),
        "no injected fault ever surfaced: {summary}"
    );
    let mut acks: BTreeMap<usize, Vec<Ack>> = BTreeMap::new();
    for line in std::fs::read_to_string(&acks_path)
        .unwrap_or_default()
        .lines()
    {
        let (trial, ack) = line.split_once(' ').expect("trial, then the answer");
        let ack = Ack::parse(ack).unwrap_or_else(|| panic!("unreadable answer {line:?}"));
        acks.entry(trial.parse().unwrap()).or_default().push(ack);
    }
    let (mut checked, mut lost) = (0, Vec::new());
    for trial in 0..trials {
        let store = reopen(&root.path().join(format!("io-{trial}.db")), Journal::Wal);
        assert_eq!(integrity(&store), "ok", "trial {trial}");
        let acks = acks.remove(&trial).unwrap_or_default();
        checked += acks.len();
        lost.extend(
            check_acks(&store, &acks)
                .into_iter()
                .map(|p| format!("trial {trial}: {p}")),
        );
    }
    println!(
        "I/O errors (Node, native engine, Wal): {summary}, {checked} acknowledged answers \
         checked, {} lost",
        lost.len()
    );
    assert!(checked > 0, "no answer was acknowledged");
    assert!(lost.is_empty(), "lost: {:?}", &lost[..lost.len().min(5)]);
}

/// `failed_sync_then_crash` with a Node process on the addon: the child fails each of a
/// complete's commit syncs in turn and copies the files as a crash would leave them; here the
/// copies are opened as a new process would. The same pins: all or nothing, never half; WAL keeps
/// a failed commit's frames (so after a crash the failed call may turn out done); the live store's
/// next commit overwrites them.
#[test]
fn node_failed_sync_then_crash() {
    let Some(package) = node_fault_package() else {
        return skipped_without_node();
    };
    let root = scratch_dir();
    let copies = tempfile::tempdir().unwrap();
    let cases = node_summary(
        node_command(&package, root.path())
            .env("FAULT_MODE", "failed-sync")
            .env("FAULT_COPIES", copies.path()),
    );
    let mut seen = BTreeMap::new();
    for case in cases.as_array().expect("one entry per sync") {
        let nth = case["nth"].as_u64().unwrap();
        if !case["failed"].as_bool().unwrap() {
            continue;
        }
        let fence = case["fence"].as_u64().unwrap() as Fence;
        let copy = |name: &str| copies.path().join(format!("{nth}-{name}/copy.db"));
        let after_crash = reopen(&copy("failed"), Journal::Wal);
        assert_eq!(integrity(&after_crash), "ok", "sync {nth}");
        let row = after_crash.state("j").unwrap().unwrap();
        assert!(
            row.fence == fence && row.result.as_deref() == row.done.then_some("r"),
            "sync {nth}: half applied: {row:?}"
        );
        seen.insert(nth, row.done);
        let later = reopen(&copy("after"), Journal::Wal)
            .state("j")
            .unwrap()
            .unwrap();
        assert_eq!(later.result.as_deref(), Some("r2"), "sync {nth}");
    }
    println!(
        "Node, native engine: a complete whose sync failed, found done after a crash: {seen:?}"
    );
    assert_eq!(
        seen.get(&1),
        Some(&true),
        "WAL keeps the failed commit's frames: {cases}"
    );
}

// ---------------------------------------------------------------------------------------------
// I/O errors, in this process

/// The in-process tests share the one fault model of the process: one at a time.
static IN_PROCESS: Mutex<()> = Mutex::new(());

#[derive(Default, Debug)]
struct IoSummary {
    trials: usize,
    steps: usize,
    /// Failures returned by the VFS, by kind and code.
    fired: BTreeMap<(Kind, i32), usize>,
    /// Operations that failed with a `storage` error.
    errors: usize,
    /// Operations during which a failure fired and that still succeeded (SQLite recovered).
    absorbed: usize,
    acks: usize,
    lost: Vec<String>,
}

fn sqlite_code(err: &Error) -> Option<i32> {
    match err {
        Error::Storage { source, .. } => source.extended_code(),
        _ => None,
    }
}

fn random_fault(rng: &mut Rng) -> Fault {
    let kind = Kind::ALL[rng.below(4) as usize];
    let code = if kind == Kind::Write && rng.below(2) == 0 {
        rusqlite::ffi::SQLITE_FULL
    } else {
        kind.io_error()
    };
    Fault {
        kind,
        nth: 1 + rng.below(6),
        code,
        persistent: rng.below(4) == 0,
    }
}

/// Two workers on two connections of the faulty VFS; before most steps a fault is armed. Every
/// failed step must be a `storage` error, leave every row as it was (read by a third connection
/// on the default VFS), and the next step without a fault must succeed.
fn io_error_trials(journal: Journal, trials: usize, seed: u64) -> IoSummary {
    let _serial = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    let mut rng = Rng(seeded(seed) | 1);
    let mut summary = IoSummary::default();
    const STEPS: usize = 40;
    for trial in 0..trials {
        let dir = scratch_dir();
        let db = dir.path().join("io.db");
        fault_vfs::register(dir.path());
        let stores = [
            open_faulty(&db, journal).unwrap(),
            open_faulty(&db, journal).unwrap(),
        ];
        let observer = reopen(&db, journal);
        let mut workers = [
            Worker::new(&format!("t{trial}"), "a"),
            Worker::new(&format!("t{trial}"), "b"),
        ];
        let clock = AtomicU64::new(0);
        let mut acks = Vec::new();
        let mut must_succeed = false;
        for step in 0..STEPS {
            let who = rng.below(2) as usize;
            let fault = (!must_succeed && rng.below(3) != 0).then(|| random_fault(&mut rng));
            if let Some(fault) = fault {
                fault_vfs::arm(fault);
            }
            let before = observer.jobs().unwrap();
            let result = workers[who].step(&stores[who], &mut rng, &clock);
            fault_vfs::clear_faults();
            let fired = fault_vfs::take_fired();
            for (kind, code) in &fired {
                *summary.fired.entry((*kind, *code)).or_default() += 1;
            }
            summary.steps += 1;
            match result {
                Ok(ack) => {
                    summary.absorbed += usize::from(!fired.is_empty());
                    acks.extend(ack);
                    must_succeed = false;
                }
                Err(err) => {
                    let context = format!(
                        "{journal:?} trial {trial} step {step} ({fault:?}, fired {fired:?}): {err}"
                    );
                    assert!(
                        !must_succeed,
                        "the store did not work on after the fault cleared: {context}"
                    );
                    assert!(
                        !fired.is_empty(),
                        "an error with no fault injected: {context}"
                    );
                    assert_eq!(err.code(), "storage", "{context}");
                    let code = sqlite_code(&err)
                        .unwrap_or_else(|| panic!("not an SQLite storage error: {context}"));
                    assert!(
                        (code & 0xff) == rusqlite::ffi::SQLITE_IOERR
                            || code == rusqlite::ffi::SQLITE_FULL,
                        "an unexpected code {code}: {context}"
                    );
                    if code == rusqlite::ffi::SQLITE_FULL {
                        assert!(err.to_string().contains("full"), "{context}");
                    }
                    assert_eq!(observer.jobs().unwrap(), before, "half-applied: {context}");
                    summary.errors += 1;
                    must_succeed = true;
                }
            }
        }
        drop(stores);
        drop(observer);
        // Reopened as a new process would.
        let store = reopen(&db, journal);
        assert_eq!(integrity(&store), "ok", "{journal:?} trial {trial}");
        summary.acks += acks.len();
        summary.lost.extend(
            check_acks(&store, &acks)
                .into_iter()
                .map(|p| format!("{journal:?} trial {trial}: {p}")),
        );
        summary.trials += 1;
    }
    println!(
        "I/O errors ({journal:?}): {} trials, {} steps, failures injected {:?}, {} storage errors, \
         {} absorbed by SQLite, {} acknowledged answers checked, {} lost",
        summary.trials, summary.steps, summary.fired, summary.errors, summary.absorbed, summary.acks,
        summary.lost.len()
    );
    summary
}

fn assert_io_errors_clean(journal: Journal, short: usize, seed: u64) {
    let summary = io_error_trials(journal, trials(short), seed);
    assert!(
        summary.errors > 0,
        "no injected fault ever surfaced: {summary:?}"
    );
    assert!(
        summary.lost.is_empty(),
        "lost: {:?}",
        &summary.lost[..summary.lost.len().min(5)]
    );
}

#[test]
fn io_errors_wal() {
    assert_io_errors_clean(Journal::Wal, 25, 0x10e1);
}

#[test]
fn io_errors_rollback() {
    assert_io_errors_clean(Journal::Rollback, 25, 0x10e2);
}

/// What a crash right after a failed sync leaves: the files as the operating system holds them
/// (copied while the failed connection is still open), opened as a new process would.
fn crash_copy(db: &Path, into: &Path) -> PathBuf {
    let copy = into.join("copy.db");
    for suffix in ["", "-wal", "-journal"] {
        let from = PathBuf::from(format!("{}{suffix}", db.display()));
        if from.exists() {
            std::fs::copy(&from, format!("{}{suffix}", copy.display())).unwrap();
        }
    }
    copy
}

/// A failed sync during a commit: the call fails with a `storage` error and the change is not
/// visible, but its bytes were written. On the rollback journal the next opener rolls them back
/// (the journal is still there); in WAL mode the frames stay in the WAL, and if the process
/// dies before another commit overwrites them, the next opener recovers them: the failed call
/// turns out done. Pinned here (the README and the contract say so): the fate of a call whose
/// sync failed is known only by reading the store after a restart.
#[test]
fn failed_sync_then_crash() {
    let _serial = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    let mut seen = BTreeMap::new();
    for journal in [Journal::Wal, Journal::Rollback] {
        for nth in 1..=4 {
            let dir = scratch_dir();
            let db = dir.path().join("s.db");
            fault_vfs::register(dir.path());
            let store = open_faulty(&db, journal).unwrap();
            store.enqueue("j").unwrap();
            let fence = store.claim("j", "a", 0.0, 10.0).unwrap().granted().unwrap();
            fault_vfs::arm(Fault {
                kind: Kind::Sync,
                nth,
                code: Kind::Sync.io_error(),
                persistent: false,
            });
            let answer = store.complete(&Lease::new("j", "a", fence), 1.0, Some("r"));
            fault_vfs::clear_faults();
            let fired = fault_vfs::take_fired();
            if fired.is_empty() || answer.is_ok() {
                // The commit has fewer syncs than nth, or the sync that failed was the
                // automatic checkpoint's, after the commit (SQLite ignores that failure).
                assert!(answer.unwrap().is_granted());
                continue;
            }
            let err = answer.unwrap_err();
            assert_eq!(err.code(), "storage");
            assert!(
                !store.state("j").unwrap().unwrap().done,
                "a failed complete is visible"
            );
            let other = tempfile::tempdir().unwrap();
            let after_crash = reopen(&crash_copy(&db, other.path()), journal);
            assert_eq!(integrity(&after_crash), "ok");
            let row = after_crash.state("j").unwrap().unwrap();
            // All or nothing, never half: done with this fence and result, or as before.
            assert!(
                row.fence == fence && row.result.as_deref() == row.done.then_some("r"),
                "{row:?}"
            );
            seen.insert((format!("{journal:?}"), nth), row.done);
            // The live store works on, and its next commit overwrites what the failed one left.
            assert!(store
                .complete(&Lease::new("j", "a", fence), 2.0, Some("r2"))
                .unwrap()
                .is_granted());
            let other = tempfile::tempdir().unwrap();
            let row = reopen(&crash_copy(&db, other.path()), journal)
                .state("j")
                .unwrap()
                .unwrap();
            assert_eq!(row.result.as_deref(), Some("r2"));
        }
    }
    println!("a complete whose sync failed, found done after a crash: {seen:?}");
    assert_eq!(
        seen.get(&("Wal".to_string(), 1)),
        Some(&true),
        "WAL keeps the failed commit's frames"
    );
    assert!(
        seen.iter()
            .filter(|((j, _), _)| j == "Rollback")
            .all(|(_, done)| !done),
        "the rollback journal undoes a commit whose sync failed"
    );
}

// ---------------------------------------------------------------------------------------------
// A real full disk

/// A small tmpfs, mounted for one test and unmounted (lazily, in case something still holds a
/// file) when dropped. `None` where mounting is not allowed (not root, no mount namespace).
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(kib: u64) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={kib}k,mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .ok()?;
        status.success().then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Fills a 1 MiB tmpfs with jobs until a write fails, then checks the error, the file, and that
/// work resumes once space is freed.
fn fill_the_disk(journal: Journal) {
    let Some(disk) = SmallDisk::mount(1024) else {
        println!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let db = disk.path().join("queue.db");
    // Room to free later: what an operator deletes when the disk is full.
    let ballast = disk.path().join("ballast");
    std::fs::write(&ballast, vec![0u8; 512 * 1024]).unwrap();
    let store = reopen(&db, journal);
    let result = "r".repeat(3000);
    let mut acks = Vec::new();
    let mut failed = None;
    for k in 0..10_000 {
        let job = format!("job-{k}");
        let before = store.jobs().unwrap();
        let attempt = (|| -> leasefence::Result<()> {
            if store.enqueue(&job)? {
                acks.push(Ack::Enqueue { job: job.clone() });
            }
            let fence = store
                .claim(&job, "w", k as f64, 10.0)?
                .granted()
                .expect("claimable");
            acks.push(Ack::Claim {
                job: job.clone(),
                fence,
            });
            assert!(store
                .complete(&Lease::new(&job, "w", fence), k as f64, Some(&result))?
                .is_granted());
            acks.push(Ack::Complete {
                job: job.clone(),
                fence,
                result: result.clone(),
            });
            Ok(())
        })();
        if let Err(err) = attempt {
            // Each call is all or nothing: the rows are those of the acknowledged calls.
            let rows = store.jobs().unwrap();
            assert!(
                rows.len() == before.len() || rows.len() == before.len() + 1,
                "{rows:?}"
            );
            failed = Some((k, job, err));
            break;
        }
    }
    let (k, job, err) = failed.expect("the disk never filled");
    let message = err.to_string();
    println!("{journal:?}: the disk filled after {k} jobs: {message}");
    assert_eq!(err.code(), "storage");
    assert_eq!(
        sqlite_code(&err),
        Some(rusqlite::ffi::SQLITE_FULL),
        "{message}"
    );
    assert!(
        message.contains("disk holding the database is full") && message.contains("free space"),
        "{message}"
    );
    assert_eq!(integrity(&store), "ok");
    assert!(check_acks(&store, &acks).is_empty());
    // Still full: a call that fails, fails the same way and changes nothing. Each call on its
    // own: a small enqueue may still fit where the claim's writes do not.
    for call in ["enqueue", "claim_next"] {
        let before = store.jobs().unwrap();
        let answer = match call {
            "enqueue" => store.enqueue("one-more").map(drop),
            _ => store.claim_next("w", 1e6, 10.0).map(drop),
        };
        if let Err(again) = answer {
            assert_eq!(
                sqlite_code(&again),
                Some(rusqlite::ffi::SQLITE_FULL),
                "{call}: {again}"
            );
            assert_eq!(store.jobs().unwrap(), before, "{call} changed something");
        }
    }
    // Space freed: the job that failed and more go through, on the same store.
    std::fs::remove_file(&ballast).unwrap();
    store.enqueue(&job).unwrap();
    let row = store.state(&job).unwrap().unwrap();
    if !row.done {
        let fence = store
            .claim(&job, "w", 1e6 + 1.0, 10.0)
            .unwrap()
            .granted()
            .unwrap();
        assert!(store
            .complete(&Lease::new(&job, "w", fence), 1e6 + 1.0, Some("after"))
            .unwrap()
            .is_granted());
    }
    for extra in 0..5 {
        let job = format!("after-{extra}");
        assert!(store.enqueue(&job).unwrap());
        let fence = store
            .claim(&job, "w", 2e6, 10.0)
            .unwrap()
            .granted()
            .unwrap();
        assert!(store
            .complete(&Lease::new(&job, "w", fence), 2e6, Some("ok"))
            .unwrap()
            .is_granted());
        acks.push(Ack::Complete {
            job,
            fence,
            result: "ok".into(),
        });
    }
    drop(store);
    let store = reopen(&db, journal);
    assert_eq!(integrity(&store), "ok");
    let lost = check_acks(&store, &acks);
    assert!(lost.is_empty(), "{lost:?}");
}

#[test]
fn a_full_disk_wal() {
    fill_the_disk(Journal::Wal);
}

#[test]
fn a_full_disk_rollback() {
    fill_the_disk(Journal::Rollback);
}

#![cfg(target_os = "linux")]
//! The write gate (docs/decisions/write-gate.md) with real processes on one WAL file: each child
//! is this test binary run again (`gate_child`, with `LEASEFENCE_GATE_CHILD` set).
//!
//! - Gated and ungated processes and a plain rusqlite writer on one file: every job handed out
//!   once, nothing lost (busy answers there are retried and reported, not failures: liveness is
//!   the other tests' business).
//! - A process SIGKILLed while it holds the gate blocks nobody: the kernel drops its lock.
//! - A SIGSTOPped holder inside its write makes gated writers answer busy at their busy timeout,
//!   not hang; after SIGCONT everything proceeds. One stopped holding the gate outside a write,
//!   or waiting in the queue, or holding its tail, holds up nobody for good.
//! - The gate is in force (a held gate holds gated writers back, never ungated ones) and wakes a
//!   waiter when it is released; no gate beside rollback-journal or dot-file-locked files.

mod support;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use leasefence::{Finish, Journal, LeaseStore, Locking, OpenOptions};

const CHILD: &str = "LEASEFENCE_GATE_CHILD";

fn gate_path(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-leasefence-gate");
    name.into()
}

fn store(db: &Path, timeout_ms: u64, gate: bool) -> LeaseStore {
    OpenOptions::new()
        .busy_timeout(Duration::from_millis(timeout_ms))
        .write_gate(gate)
        .open(db)
        .unwrap()
}

fn with_jobs(db: &Path, jobs: &[String]) {
    let store = store(db, 10_000, true);
    for job in jobs {
        assert!(store.enqueue(job).unwrap());
    }
}

/// The child's side: `drain DB OWNER TIMEOUT_MS GATE` claims and completes until nothing is left,
/// printing `claimed JOB FENCE`, `error MESSAGE` (then retrying) and `end`; `hold DB` claims the
/// job `hold`, prints `holding` from inside a fenced write (the gate and SQLite's write lock
/// held), and commits when a line arrives on stdin.
#[test]
fn gate_child() {
    let Ok(spec) = std::env::var(CHILD) else {
        return;
    };
    let args: Vec<&str> = spec.split('\u{1f}').collect();
    let db = Path::new(args[1]);
    let mut out = std::io::stdout().lock();
    match args[0] {
        "drain" => {
            let (owner, timeout_ms, gate) = (args[2], args[3].parse().unwrap(), args[4] == "1");
            let store = store(db, timeout_ms, gate);
            // Start together: `ready`, then wait for a line.
            writeln!(out, "ready").unwrap();
            out.flush().unwrap();
            std::io::stdin()
                .lock()
                .read_line(&mut String::new())
                .unwrap();
            loop {
                let claimed = match store.claim_next(owner, 1.0, 1e6) {
                    Ok(Some(claimed)) => claimed,
                    Ok(None) => break,
                    Err(err) => {
                        writeln!(out, "{} {err}", answer_word(&err)).unwrap();
                        out.flush().unwrap();
                        continue;
                    }
                };
                writeln!(out, "claimed {} {}", claimed.job, claimed.fence).unwrap();
                out.flush().unwrap();
                let lease = claimed.lease();
                loop {
                    match store.complete(&lease, 2.0, Some(owner)) {
                        Ok(done) => {
                            assert!(done.is_granted(), "{done:?}");
                            break;
                        }
                        Err(err) => writeln!(out, "{} {err}", answer_word(&err)).unwrap(),
                    }
                }
            }
            // How many gate helper threads this process has parked now (named by gate.rs).
            let parked = std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter(|task| {
                    let comm = task.as_ref().unwrap().path().join("comm");
                    std::fs::read_to_string(comm).unwrap_or_default().trim() == "leasefence-gate"
                })
                .count();
            writeln!(out, "parked {parked}").unwrap();
            writeln!(out, "end").unwrap();
        }
        "hold" => {
            let store = store(db, 10_000, true);
            let lease = store
                .claim("hold", "holder", 1.0, 1e6)
                .unwrap()
                .lease("hold", "holder")
                .unwrap();
            let held = store
                .fenced_with(&lease, 1.5, Finish::Complete(None), |_| {
                    writeln!(out, "holding").unwrap();
                    out.flush().unwrap();
                    let mut line = String::new();
                    std::io::stdin().lock().read_line(&mut line).unwrap();
                    Ok(())
                })
                .unwrap();
            assert!(held.is_granted());
            writeln!(out, "released").unwrap();
        }
        other => panic!("unknown child mode {other}"),
    }
    out.flush().unwrap();
}

/// How a drainer's line names a failed call: `busy` for an answer worth retrying (the lock was
/// held past the busy timeout: a matter of liveness), `error` for anything else (a defect).
fn answer_word(err: &leasefence::Error) -> &'static str {
    if err.is_retryable() {
        "busy"
    } else {
        "error"
    }
}

/// A child process, SIGKILLed when dropped (a stopped one too), so a failing test leaves none.
struct Proc {
    child: Child,
    input: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    fn spawn(args: &[&str]) -> Proc {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "gate_child", "--nocapture", "--test-threads=1"])
            .env(CHILD, args.join("\u{1f}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let input = child.stdin.take();
        let output: ChildStdout = child.stdout.take().unwrap();
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(output).lines() {
                let Ok(line) = line else { break };
                // The harness prints "test gate_child ... " with no newline before our first line.
                let line = line.trim_start_matches("test gate_child ... ").to_owned();
                // The harness prints "running 1 test" and such; ours are the known words.
                let ours = [
                    "claimed ", "error ", "busy ", "end", "holding", "released", "ready", "parked ",
                ];
                if ours.iter().any(|w| line.starts_with(w)) && send.send(line).is_err() {
                    break;
                }
            }
        });
        Proc {
            child,
            input,
            lines,
        }
    }

    /// A drainer, not yet started: [`go`](Proc::go) starts it.
    fn drain(db: &Path, owner: &str, timeout_ms: u64, gate: bool) -> Proc {
        let timeout = timeout_ms.to_string();
        let gate = if gate { "1" } else { "0" };
        Proc::spawn(&["drain", db.to_str().unwrap(), owner, &timeout, gate])
    }

    /// Waits for a drainer's `ready`, then lets it start.
    fn go(&mut self) {
        let ready = self.line(Duration::from_secs(60));
        assert_eq!(ready.as_deref(), Some("ready"));
        self.say("go");
    }

    /// The next line, waiting at most `limit`.
    fn line(&self, limit: Duration) -> Option<String> {
        self.lines.recv_timeout(limit).ok()
    }

    /// Every line up to `end` (within `limit`), then the exit.
    fn lines_to_end(&mut self, limit: Duration) -> Vec<String> {
        let deadline = Instant::now() + limit;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line == "end" => break,
                Ok(line) => lines.push(line),
                Err(_) => panic!("no end within {limit:?}; lines so far: {lines:?}"),
            }
        }
        assert!(self.child.wait().unwrap().success());
        lines
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill(2) on our own child's pid.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as libc::pid_t, signal) },
            0
        );
    }

    fn say(&mut self, line: &str) {
        let input = self.input.as_mut().unwrap();
        writeln!(input, "{line}").unwrap();
        input.flush().unwrap();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Fails when a drainer's lines report a failed call, busy answers included.
fn assert_no_errors(owner: &str, lines: &[String]) {
    let errors: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("error ") || l.starts_with("busy "))
        .collect();
    assert!(errors.is_empty(), "{owner}: {errors:?}");
}

/// Fails when a drainer's lines report an error other than a busy answer (which it retried).
fn assert_no_defects(owner: &str, lines: &[String]) {
    let errors: Vec<_> = lines.iter().filter(|l| l.starts_with("error ")).collect();
    assert!(errors.is_empty(), "{owner}: {errors:?}");
}

/// How many times a drainer's call answered busy (and was retried).
fn busy_answers(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.starts_with("busy ")).count()
}

/// How many jobs a drainer's lines say it claimed.
fn claimed(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.starts_with("claimed ")).count()
}

/// A fresh WAL file in a temporary directory with `count` jobs, `job-000` on.
fn queue_of(count: usize) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let jobs: Vec<String> = (0..count).map(|i| format!("job-{i:03}")).collect();
    with_jobs(&db, &jobs);
    (dir, db, jobs)
}

/// Claims each drainer made, by job: (owner, fence); errors are collected apart.
fn tally(claims: &mut BTreeMap<String, Vec<(String, i64)>>, owner: &str, lines: &[String]) {
    for line in lines {
        let mut words = line.split(' ');
        if words.next() == Some("claimed") {
            let job = words.next().unwrap().to_owned();
            let fence: i64 = words.next().unwrap().parse().unwrap();
            claims
                .entry(job)
                .or_default()
                .push((owner.to_owned(), fence));
        }
    }
}

/// An exclusive OFD lock on bytes `start..start + len` of the gate's side file (`len` 0: to its
/// end), taken by the test itself (the kernel treats it as any other holder: another open file
/// description).
fn lock_gate_file(db: &Path, start: i64, len: i64) -> Result<File, std::io::Error> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(gate_path(db))?;
    // SAFETY: plain integers; l_pid must be 0 for OFD locks.
    let mut region: libc::flock = unsafe { std::mem::zeroed() };
    region.l_type = libc::F_WRLCK as libc::c_short;
    region.l_whence = libc::SEEK_SET as libc::c_short;
    region.l_start = start;
    region.l_len = len;
    // SAFETY: an open descriptor and a live `flock`.
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut region) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

/// The whole side file locked, as a writer of the gate's first version holds it.
fn take_gate(db: &Path) -> Result<File, std::io::Error> {
    lock_gate_file(db, 0, 0)
}

fn assert_busy_at(result: leasefence::Result<impl std::fmt::Debug>, began: Instant, timeout: u64) {
    let waited = began.elapsed();
    let err = result.expect_err("a write went through a held gate");
    assert!(err.is_retryable(), "not a busy error: {err}");
    assert!(
        waited >= Duration::from_millis(timeout * 9 / 10),
        "gave up after {waited:?}, before the {timeout} ms busy timeout: {err}"
    );
    assert!(
        waited < Duration::from_millis(timeout + 3_000),
        "gave up only after {waited:?}, long past the {timeout} ms busy timeout"
    );
}

/// Safety in a mix of gated processes, ungated ones and a plain rusqlite writer: every job handed
/// out exactly once (fence 1), every result its claimer's, no write of the plain writer lost.
/// Liveness is not this test's: beside ungated writers a gated call may wait past its busy
/// timeout; such answers are retried, counted and printed, never a failure here (the gate's
/// fairness and its bounded waits have tests of their own below).
#[test]
fn gated_and_ungated_writers_hand_each_job_out_once() {
    let (_dir, db, jobs) = queue_of(240);
    let plain = rusqlite::Connection::open(&db).unwrap();
    plain.busy_timeout(Duration::from_secs(10)).unwrap();
    plain
        .execute_batch("CREATE TABLE tally(n INTEGER); INSERT INTO tally VALUES (0)")
        .unwrap();
    assert!(gate_path(&db).exists(), "no gate beside a WAL file");

    let mut procs: Vec<(String, bool, Proc)> = (0..8)
        .map(|i| {
            let gated = i < 6;
            let owner = format!("{}{i}", if gated { "gated" } else { "plain" });
            let proc = Proc::drain(&db, &owner, 3_000, gated);
            (owner, gated, proc)
        })
        .collect();
    for (_, _, proc) in &mut procs {
        let ready = proc.line(Duration::from_secs(60));
        assert_eq!(ready.as_deref(), Some("ready"));
    }
    for (_, _, proc) in &mut procs {
        proc.say("go");
    }
    // A writer that knows nothing of the gate, meanwhile: SQLite's lock alone excludes it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let plain_writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut commits, mut busy) = (0i64, 0usize);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || commits < 20 {
                match plain.execute_batch("BEGIN IMMEDIATE; UPDATE tally SET n = n + 1; COMMIT") {
                    Ok(()) => commits += 1,
                    Err(rusqlite::Error::SqliteFailure(e, _))
                        if e.code == rusqlite::ErrorCode::DatabaseBusy =>
                    {
                        busy += 1;
                        if !plain.is_autocommit() {
                            plain.execute_batch("ROLLBACK").unwrap();
                        }
                    }
                    Err(err) => panic!("the plain writer failed: {err}"),
                }
            }
            (plain, commits, busy)
        })
    };
    let mut claims = BTreeMap::new();
    let (mut by_gated, mut by_ungated) = (0, 0);
    let (mut busy_gated, mut busy_ungated) = (0, 0);
    for (owner, gated, proc) in &mut procs {
        let lines = proc.lines_to_end(Duration::from_secs(120));
        assert_no_defects(owner, &lines);
        tally(&mut claims, owner, &lines);
        if *gated {
            by_gated += claimed(&lines);
            busy_gated += busy_answers(&lines);
        } else {
            by_ungated += claimed(&lines);
            busy_ungated += busy_answers(&lines);
        }
    }
    for job in &jobs {
        let got = claims.get(job).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(got.len(), 1, "{job} handed out {got:?}");
        assert_eq!(got[0].1, 1, "{job}: {got:?}");
    }
    assert_eq!(claims.len(), jobs.len());
    // How the run went, for whoever reads the output: the gated ones queue among themselves
    // while each ungated process polls SQLite's lock on its own and takes it again right after
    // its commit, so the gated ones as a group usually get 5-15% of the jobs.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (plain, commits, busy_plain) = plain_writer.join().unwrap();
    println!(
        "jobs claimed: gated {by_gated}, ungated {by_ungated}; busy answers retried: gated \
         {busy_gated}, ungated {busy_ungated}, plain writer {busy_plain} ({commits} commits)"
    );
    let n: i64 = plain
        .query_row("SELECT n FROM tally", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, commits);
    let store = LeaseStore::open(&db).unwrap();
    for row in store.jobs().unwrap() {
        assert!(row.done, "{} not done", row.id);
        assert_eq!(row.result, row.owner, "{}", row.id);
    }
}

/// The gate's own order: gated processes alone, started together, each get a fair share of the
/// jobs. (Beside ungated writers the gated ones as a group get few turns, see above; that test
/// checks correctness in the mix, this one the gate's order.)
#[test]
fn gated_writers_alone_share_the_jobs_fairly() {
    const WRITERS: usize = 6;
    let (_dir, db, jobs) = queue_of(240);
    let mut procs: Vec<(String, Proc)> = (0..WRITERS)
        .map(|i| {
            let owner = format!("gated{i}");
            let proc = Proc::drain(&db, &owner, 3_000, true);
            (owner, proc)
        })
        .collect();
    for (_, proc) in &mut procs {
        let ready = proc.line(Duration::from_secs(60));
        assert_eq!(ready.as_deref(), Some("ready"));
    }
    for (_, proc) in &mut procs {
        proc.say("go");
    }
    let mut claims = BTreeMap::new();
    let mut shares = Vec::new();
    for (owner, proc) in &mut procs {
        let lines = proc.lines_to_end(Duration::from_secs(120));
        assert_no_errors(owner, &lines);
        tally(&mut claims, owner, &lines);
        shares.push((owner.clone(), claimed(&lines)));
    }
    assert_eq!(claims.len(), jobs.len());
    assert!(claims.values().all(|c| c.len() == 1), "{claims:?}");
    // The queue serves tickets in order, so each writer gets about a sixth (40). A gate whose
    // freed lock any writer could take (as a plain lock does) let a writer that had just let go
    // take it again before the woken waiters ran: 3 runs in 10 had writers below 20, one with
    // two writers taking 232 of the 240.
    let fair = jobs.len() / WRITERS;
    assert!(
        shares.iter().all(|(_, got)| *got >= fair / 2),
        "shares {shares:?}, fair share {fair}"
    );
}

/// One byte of the gate's side file locked by the test itself: `at` 0 is the queue's tail, 1 the
/// gate's own lock (as a process stopped while taking a ticket, or in the middle of its write,
/// holds them).
fn hold_gate_byte(db: &Path, at: i64) -> File {
    lock_gate_file(db, at, 1).unwrap()
}

/// A process stopped while it waits in the queue (SIGSTOP, a debugger) holds its place, and a
/// first-come, first-served queue would keep everyone behind it waiting until it runs again.
/// The writers behind it see the gate stand still and free, and go ahead of it.
#[test]
fn a_sigstopped_waiter_does_not_hold_up_the_queue() {
    let (_dir, db, jobs) = queue_of(100);
    // The first drainer queues behind a writer (the test) and is stopped there, in the queue.
    let writer = hold_gate_byte(&db, 1);
    let mut stopped = Proc::drain(&db, "stopped", 10_000, true);
    stopped.go();
    std::thread::sleep(Duration::from_millis(300));
    stopped.signal(libc::SIGSTOP);
    // Every thread stopped before the writer lets go: a thread woken by the release before the
    // stop reached it would take the gate and be a stopped holder, which nobody can go ahead of.
    support::stopped::wait_stopped(stopped.child.id());
    drop(writer);
    // The second joins behind the stopped one and still drains every job.
    let mut second = Proc::drain(&db, "second", 10_000, true);
    second.go();
    let lines = second.lines_to_end(Duration::from_secs(60));
    assert_no_errors("second", &lines);
    let mut claims = BTreeMap::new();
    tally(&mut claims, "second", &lines);
    assert_eq!(
        claims.len(),
        jobs.len(),
        "the second drainer did not get every job"
    );
    // Resumed, the first finds its turn and nothing left.
    stopped.signal(libc::SIGCONT);
    let lines = stopped.lines_to_end(Duration::from_secs(60));
    assert!(lines.iter().all(|l| l.starts_with("parked ")), "{lines:?}");
    let store = LeaseStore::open(&db).unwrap();
    assert!(store.jobs().unwrap().iter().all(|row| row.done));
}

/// One gated drainer empties the queue of `jobs` with no error, each job once, and reports one
/// parked helper thread at its end.
fn drain_alone_parking_one(db: &Path, jobs: &[String]) {
    let mut drainer = Proc::drain(db, "drainer", 10_000, true);
    drainer.go();
    let lines = drainer.lines_to_end(Duration::from_secs(60));
    assert_no_errors("drainer", &lines);
    let mut claims = BTreeMap::new();
    tally(&mut claims, "drainer", &lines);
    assert_eq!(claims.len(), jobs.len());
    assert_eq!(
        lines.last().map(String::as_str),
        Some("parked 1"),
        "{lines:?}"
    );
}

/// A process stopped in the microseconds it holds the queue's tail lets nobody take a ticket. A
/// writer goes ahead once; after that its store writes behind SQLite's lock alone until the tail
/// frees, and does not park a helper thread at every write.
#[test]
fn a_tail_held_by_a_stopped_process_parks_one_helper_per_store() {
    let (_dir, db, jobs) = queue_of(40);
    let tail = hold_gate_byte(&db, 0);
    // 80 writes (a claim and a completion each): one helper still waits for the tail.
    drain_alone_parking_one(&db, &jobs);
    drop(tail);
}

/// A process stopped holding the gate's own lock but not SQLite's (between the gate and
/// `BEGIN IMMEDIATE`, or after its commit, before it lets the gate go) would hold up every gated
/// writer of the file until it runs again, where without a gate nobody waits. Gated writers see
/// the held gate stand still and write behind SQLite's lock alone: every job drained, no busy
/// error, and one parked helper for the whole run.
#[test]
fn a_gate_held_outside_a_write_holds_up_nobody() {
    let (_dir, db, jobs) = queue_of(40);
    let held = hold_gate_byte(&db, 1);
    // 80 writes: the first waited for the gate (its helper still does), the rest did not queue.
    drain_alone_parking_one(&db, &jobs);
    drop(held);
    // Once the gate is let go, gated writers queue at it again (and pass it: the count moves).
    let passes = || {
        let mut bytes = [0u8; 8];
        std::os::unix::fs::FileExt::read_at(&File::open(gate_path(&db)).unwrap(), &mut bytes, 8)
            .unwrap();
        u64::from_le_bytes(bytes)
    };
    let before = passes();
    let store = store(&db, 10_000, true);
    assert!(store.enqueue("after").unwrap());
    assert_eq!(
        passes(),
        before + 1,
        "the write after the release skipped the gate"
    );
}

#[test]
fn a_sigkilled_gate_holder_blocks_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut jobs: Vec<String> = (0..20).map(|i| format!("job-{i:02}")).collect();
    jobs.push("hold".into());
    with_jobs(&db, &jobs);
    let holder = Proc::spawn(&["hold", db.to_str().unwrap()]);
    assert_eq!(
        holder.line(Duration::from_secs(30)).as_deref(),
        Some("holding")
    );
    let refused = take_gate(&db).expect_err("the holder does not hold the gate");
    assert_eq!(refused.raw_os_error(), Some(libc::EAGAIN), "{refused}");

    // A writer gives up at its timeout, leaving its wait at the gate behind.
    let waiter = store(&db, 300, true);
    let began = Instant::now();
    assert_busy_at(waiter.claim_next("waiter", 2.0, 1e6), began, 300);

    holder.signal(libc::SIGKILL);
    drop(holder);
    // The kernel dropped the dead holder's gate (and SQLite's lock): the same store, then other
    // processes, write at once.
    let began = Instant::now();
    let claimed = waiter.claim_next("waiter", 2.0, 1e6).unwrap().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(2),
        "{:?}",
        began.elapsed()
    );
    let lease = claimed.lease();
    assert!(waiter
        .complete(&lease, 3.0, Some("w"))
        .unwrap()
        .is_granted());
    let mut drainers: Vec<Proc> = (0..3)
        .map(|i| Proc::drain(&db, &format!("d{i}"), 2_000, true))
        .collect();
    drainers.iter_mut().for_each(Proc::go);
    let mut claims = BTreeMap::new();
    for (i, proc) in drainers.iter_mut().enumerate() {
        let lines = proc.lines_to_end(Duration::from_secs(60));
        assert!(
            !lines.iter().any(|l| l.starts_with("error")),
            "d{i}: {lines:?}"
        );
        tally(&mut claims, &format!("d{i}"), &lines);
    }
    // Every job but the killed holder's: once each, the waiter's first one included.
    assert_eq!(claims.len() + 1, jobs.len() - 1, "{claims:?}");
    assert!(!claims.contains_key(&claimed.job));
    assert!(claims.values().all(|c| c.len() == 1), "{claims:?}");
    take_gate(&db).expect("the gate is free once every writer is gone");
}

#[test]
fn a_sigstopped_holder_makes_gated_writers_busy_at_their_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let mut jobs: Vec<String> = (0..30).map(|i| format!("job-{i:02}")).collect();
    jobs.push("hold".into());
    with_jobs(&db, &jobs);
    let mut holder = Proc::spawn(&["hold", db.to_str().unwrap()]);
    assert_eq!(
        holder.line(Duration::from_secs(30)).as_deref(),
        Some("holding")
    );
    holder.signal(libc::SIGSTOP);

    // Two writers of this process (each its own store, so its own gate descriptor) and a
    // gated process: each answers busy at its timeout, and goes on answering, never hangs.
    let (send, answers) = mpsc::channel();
    for t in 0..2 {
        let (db, send) = (db.clone(), send.clone());
        std::thread::spawn(move || {
            let store = store(&db, 400, true);
            for _ in 0..2 {
                let began = Instant::now();
                let result = store.claim_next(&format!("t{t}"), 2.0, 1e6);
                send.send((result.map(|c| c.map(|c| c.job)), began))
                    .unwrap();
            }
        });
    }
    let mut drainer = Proc::drain(&db, "d", 400, true);
    drainer.go();
    for _ in 0..4 {
        let (result, began) = answers
            .recv_timeout(Duration::from_secs(15))
            .expect("a writer hung behind the stopped holder, past its busy timeout");
        assert_busy_at(result, began, 400);
    }
    for _ in 0..2 {
        let line = drainer
            .line(Duration::from_secs(15))
            .expect("the process hung");
        assert!(line.starts_with("busy "), "{line}");
        assert!(line.contains("busy") || line.contains("locked"), "{line}");
    }

    holder.signal(libc::SIGCONT);
    holder.say("go");
    assert_eq!(
        holder.line(Duration::from_secs(30)).as_deref(),
        Some("released")
    );
    let lines = drainer.lines_to_end(Duration::from_secs(60));
    let mut claims = BTreeMap::new();
    tally(&mut claims, "d", &lines);
    assert_eq!(claims.len(), jobs.len() - 1, "{lines:?}");
    let store = LeaseStore::open(&db).unwrap();
    assert!(store.jobs().unwrap().iter().all(|row| row.done));
}

#[test]
fn a_held_gate_holds_back_gated_writers_only_and_wakes_them() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let gated = store(&db, 300, true);
    let ungated = store(&db, 300, false);
    let plain = rusqlite::Connection::open(&db).unwrap();
    assert!(gated.enqueue("a").unwrap());

    let held = take_gate(&db).expect("the gate is free between writes");
    // SQLite's lock is free: writers without the gate go through at once.
    assert!(ungated.enqueue("c").unwrap());
    plain
        .execute("INSERT INTO jobs(id) VALUES (?1)", ["d"])
        .unwrap();
    // A gated writer waits at the gate, and when nobody passes it for a quarter of its busy
    // timeout (its holder is stopped outside SQLite's lock, or slow), writes behind SQLite's
    // lock alone instead of answering busy.
    let began = Instant::now();
    assert!(gated.enqueue("b").unwrap());
    assert!(
        began.elapsed() >= Duration::from_millis(70),
        "did not wait at the held gate: {:?}",
        began.elapsed()
    );

    // A waiter (10 s timeout) goes on as soon as the gate is released.
    let patient = db.clone();
    let waiter = std::thread::spawn(move || {
        let store = store(&patient, 10_000, true);
        let began = Instant::now();
        let enqueued = store.enqueue("e").unwrap();
        (enqueued, began.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    drop(held);
    let (enqueued, waited) = waiter.join().unwrap();
    assert!(enqueued);
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_secs(5),
        "waited {waited:?}"
    );
    assert_eq!(gated.jobs().unwrap().len(), 5);

    // No gate where it does not apply: the rollback journal, dot-file locking, or turned off.
    for (name, options) in [
        (
            "rollback.db",
            OpenOptions::new()
                .write_gate(true)
                .journal(Journal::Rollback),
        ),
        (
            "dotfile.db",
            OpenOptions::new()
                .write_gate(true)
                .locking(Locking::Dotfile),
        ),
        ("off.db", OpenOptions::new().write_gate(false)),
    ] {
        let path = dir.path().join(name);
        let store = options.open(&path).unwrap();
        assert!(store.enqueue("x").unwrap());
        assert!(!gate_path(&path).exists(), "{name}: a gate file appeared");
    }
    // And a gate by default.
    let path = dir.path().join("default.db");
    assert!(leasefence::open(&path).unwrap().enqueue("x").unwrap());
    assert!(gate_path(&path).exists(), "no gate by default");
}

#![cfg(target_os = "linux")]
//! `leasefence work --concurrency N -- CMD` as real processes on a real SQLite file, in real
//! time: of four commands running at once, one SIGSTOPs itself past its lease; its job alone is
//! lost and taken over by another `work`, its late completion is refused (the job is done by then), and the other three
//! complete while it is still stopped.

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use leasefence::worker::wall_clock;
use leasefence::{JobState, LeaseStore};
use serde_json::Value;
use support::cli_bin::{bin, work_counters};

/// The command of every job. Job `job-2` on its first attempt stops itself; once continued (or
/// terminated by its worker) it tries to complete the job with its old fence.
const COMMAND: &str = r#"
if [ "$LEASEFENCE_JOB" = job-2 ] && [ "$LEASEFENCE_FENCE" = 1 ]; then
  late() {
    "$LF_BIN" --db "$LEASEFENCE_DB" complete "$LEASEFENCE_JOB" --owner "$LEASEFENCE_OWNER" \
      --fence "$LEASEFENCE_FENCE" --result late > "$LF_LATE.tmp" 2>&1
    mv "$LF_LATE.tmp" "$LF_LATE"
    exit 0
  }
  trap late TERM
  echo $$ > "$LF_PID.tmp" && mv "$LF_PID.tmp" "$LF_PID"
  kill -STOP $$
  late
fi
sleep 0.3
printf 'done %s by %s' "$LEASEFENCE_JOB" "$LEASEFENCE_OWNER"
"#;

fn work(db: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--db")
        .arg(db)
        .arg("work")
        .args(args)
        .args(["--", "sh", "-c", COMMAND])
        .env("LF_BIN", bin())
        .env("LF_LATE", dir.join("late.json"))
        .env("LF_PID", dir.join("victim.pid"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits until `ready` holds for the jobs' states, for at most `within`.
fn wait_for(store: &LeaseStore, within: Duration, what: &str, ready: impl Fn(&[JobState]) -> bool) {
    let start = Instant::now();
    loop {
        let jobs = store.jobs().unwrap();
        if ready(&jobs) {
            return;
        }
        assert!(
            start.elapsed() < within,
            "{what} within {within:?}: {jobs:?}"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn wait_for_file(path: &Path, within: Duration) -> String {
    let start = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return text;
        }
        assert!(
            start.elapsed() < within,
            "{} did not appear",
            path.display()
        );
        thread::sleep(Duration::from_millis(5));
    }
}

/// Kills the processes a failed test would leave behind (the first `work`, the stopped command).
struct KillOnDrop(Vec<libc::pid_t>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if thread::panicking() {
            for &pid in &self.0 {
                // SAFETY: kill(2) on processes this test started.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

#[test]
fn of_four_commands_at_once_the_sigstopped_ones_job_alone_is_lost_and_taken_over() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = LeaseStore::open(&db).unwrap();
    for i in 0..4 {
        store.enqueue(&format!("job-{i}")).unwrap();
    }
    // Renewals stop one second after the claim, so the stopped command's lease ends; --grace
    // lets it live on, stopped, long after its worker gave it up.
    let first = work(
        &db,
        dir.path(),
        &[
            "--concurrency",
            "4",
            "--ttl",
            "1",
            "--max-run-time",
            "1",
            "--grace",
            "60",
            "--until-empty",
            "--owner",
            "w1",
        ],
    )
    .spawn()
    .unwrap();
    let mut leftovers = KillOnDrop(vec![first.id() as libc::pid_t]);
    let victim: libc::pid_t =
        wait_for_file(&dir.path().join("victim.pid"), Duration::from_secs(20))
            .trim()
            .parse()
            .unwrap();
    leftovers.0.push(victim);
    wait_for(
        &store,
        Duration::from_secs(20),
        "the other three jobs done",
        |jobs| jobs.iter().filter(|j| j.id != "job-2").all(|j| j.done),
    );
    wait_for(
        &store,
        Duration::from_secs(20),
        "job-2's lease ended",
        |jobs| {
            let j = jobs.iter().find(|j| j.id == "job-2").unwrap();
            j.fence == 1 && !j.done && j.until < wall_clock()
        },
    );
    let second = work(
        &db,
        dir.path(),
        &["--ttl", "30", "--until-empty", "--owner", "w2"],
    )
    .output()
    .unwrap();
    assert!(second.status.success(), "{second:?}");
    let taken = work_counters(&second);
    assert_eq!(
        (taken["claimed"].as_u64(), taken["completed"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(
        !std::path::Path::new(&dir.path().join("late.json")).exists(),
        "the stopped command ran on before it was continued"
    );
    // SAFETY: kill(2) on the stopped command's pid, which its worker has not reaped yet (it
    // waits for it to exit).
    assert_eq!(unsafe { libc::kill(victim, libc::SIGCONT) }, 0);
    let late = wait_for_file(&dir.path().join("late.json"), Duration::from_secs(20));
    let late: Value = serde_json::from_str(late.trim()).unwrap_or_else(|e| panic!("{e}: {late}"));
    assert_eq!(late["value"], Value::Bool(false), "{late}");
    // The newer holder completed the job: a completion for it now is refused as `done`.
    assert_eq!(late["reason"]["code"], "done", "{late}");

    let first = first.wait_with_output().unwrap();
    assert!(first.status.success(), "{first:?}");
    let counts = work_counters(&first);
    let count = |name: &str| counts[name].as_u64().unwrap();
    assert_eq!(
        (
            count("claimed"),
            count("completed"),
            count("leases_lost"),
            count("failed")
        ),
        (4, 3, 1, 0),
        "{counts}"
    );
    for job in store.jobs().unwrap() {
        assert!(job.done, "{job:?}");
        if job.id == "job-2" {
            assert_eq!(
                (job.fence, job.result.as_deref()),
                (2, Some("done job-2 by w2"))
            );
        } else {
            assert_eq!(job.fence, 1);
            assert_eq!(job.result, Some(format!("done {} by w1", job.id)));
        }
    }
}

#[test]
fn a_concurrency_out_of_range_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    LeaseStore::open(&db).unwrap().enqueue("job").unwrap();
    for bad in ["0", "1025", "many"] {
        let output = work(&db, dir.path(), &["--concurrency", bad, "--until-empty"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("concurrency"), "{stderr}");
    }
    let job = LeaseStore::open(&db)
        .unwrap()
        .state("job")
        .unwrap()
        .unwrap();
    assert_eq!((job.fence, job.done), (0, false));
}

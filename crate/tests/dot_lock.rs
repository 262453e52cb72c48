#![cfg(target_os = "linux")]
//! Native dot-file locking (`Locking::Dotfile`) with owner records: a native process killed while
//! it holds `<db>.lock` does not block the next opener, which proves the owner dead and breaks the
//! lock by itself; a live holder's lock is never broken.
//!
//! The holder is this test binary run again as a child (`holder_process`, ignored unless run on
//! purpose): it opens the file through the library, takes the write lock with `BEGIN IMMEDIATE`,
//! writes, and either sleeps until it is killed or commits after a while.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use leasefence::{Locking, OpenOptions};

fn dotfile(busy_ms: u64) -> OpenOptions {
    OpenOptions::new()
        .locking(Locking::Dotfile)
        .busy_timeout(Duration::from_millis(busy_ms))
}

/// The child's side: holds the lock of `HOLDER_DB` in a write transaction, says "holding", then
/// commits after `HOLDER_COMMIT_MS` (or sleeps until it is killed).
#[test]
#[ignore = "the holder process of the other tests, run by them"]
fn holder_process() {
    let db = std::env::var("HOLDER_DB").expect("HOLDER_DB names the database");
    let store = dotfile(10_000).open(&db).unwrap();
    let conn = store.connection();
    conn.execute_batch("BEGIN IMMEDIATE; UPDATE jobs SET result = 'half-written' WHERE id = 'job'")
        .unwrap();
    println!("holding");
    let hold = std::env::var("HOLDER_COMMIT_MS")
        .ok()
        .and_then(|ms| ms.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(600));
    std::thread::sleep(hold);
    conn.execute_batch("UPDATE jobs SET result = 'committed' WHERE id = 'job'; COMMIT")
        .unwrap();
    drop(store);
    println!("released");
}

/// Starts a holder of `db` and waits until it holds the lock.
fn start_holder(db: &Path, commit_after: Option<Duration>) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "holder_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--quiet",
        ])
        .env("HOLDER_DB", db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(after) = commit_after {
        command.env("HOLDER_COMMIT_MS", after.as_millis().to_string());
    }
    let mut child = command
        .spawn()
        .expect("the test binary runs again as the holder");
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    while line.trim() != "holding" {
        line.clear();
        assert_ne!(
            stdout.read_line(&mut line).unwrap(),
            0,
            "the holder ended before it took the lock"
        );
    }
    // Keep reading, so the holder never blocks on a full pipe.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    child
}

fn lock_of(db: &Path) -> std::path::PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".lock");
    name.into()
}

/// Files beside the database that the lock protocol made: break mutexes and temp files.
fn debris(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains(".lock."))
        .collect()
}

fn rounds() -> usize {
    std::env::var("DOTLOCK_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(3)
}

#[test]
fn a_killed_native_holders_lock_is_broken_by_the_next_native_opener() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("killed.db");
    let lock = lock_of(&db);
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    let rounds = rounds();
    let mut recovered = 0;
    let mut times = Vec::new();
    for round in 0..rounds {
        let mut holder = start_holder(&db, None);
        assert!(lock.exists(), "round {round}: the holder has no lock");
        // Alive: the next opener waits for it and gives up, and the lock stays.
        let err = dotfile(200)
            .open(&db)
            .and_then(|s| s.state("job"))
            .unwrap_err();
        assert!(err.is_retryable(), "round {round}: {err}");
        assert!(
            lock.exists(),
            "round {round}: a live holder's lock was broken"
        );

        holder.kill().unwrap();
        holder.wait().unwrap();
        let killed = Instant::now();
        // The next opener breaks it by itself (no `leasefence unlock`), rolls the killed
        // transaction back and commits.
        let committed = dotfile(5_000).open(&db).and_then(|store| {
            let row = store.state("job")?.expect("the job is there");
            assert_eq!(row.result, None, "round {round}: the killed write was kept");
            store.enqueue(&format!("after-{round}"))
        });
        match committed {
            Ok(true) => {
                recovered += 1;
                times.push(killed.elapsed());
            }
            other => panic!("round {round}: the next opener did not get through: {other:?}"),
        }
        assert!(
            !lock.exists(),
            "round {round}: the lock outlived its holders"
        );
        assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
    }
    times.sort();
    eprintln!(
        "native recovery: {recovered} of {rounds} killed holders; time from the kill to the \
         next opener's first commit: median {:?}, max {:?}",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

#[test]
fn a_live_native_holders_lock_is_never_broken_the_next_opener_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("live.db");
    let lock = lock_of(&db);
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    let hold = Duration::from_millis(1_500);
    let mut holder = start_holder(&db, Some(hold));
    let started = Instant::now();
    // The lock names its owner, the holder's process, so that others can tell whether it lives.
    let record = std::fs::read_to_string(&lock).expect("the lock is a file with a record");
    assert!(
        record.contains(&format!("\npid={}\n", holder.id())),
        "{record}"
    );
    // A second opener waits for the holder's commit, then goes on and sees it.
    let store = dotfile(20_000).open(&db).unwrap();
    let row = store.state("job").unwrap().unwrap();
    let waited = started.elapsed();
    assert_eq!(row.result.as_deref(), Some("committed"));
    assert!(
        waited >= hold - Duration::from_millis(300),
        "the second opener did not wait for the holder: {waited:?}"
    );
    assert!(store.enqueue("second").unwrap());
    assert!(holder.wait().unwrap().success());
    drop(store);
    assert!(!lock.exists());
    assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
}

#[test]
fn a_lock_left_with_an_empty_record_by_a_power_loss_is_broken() {
    // The link reached the disk, the record did not: no live holder ever publishes that.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("power.db");
    let lock = lock_of(&db);
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    for torn in [&b""[..], b"leasefence-dotlock v1\npid=4", &[0u8; 128]] {
        std::fs::write(&lock, torn).unwrap();
        let store = dotfile(2_000).open(&db).unwrap();
        assert!(store.enqueue("after").is_ok(), "{torn:?}");
        drop(store);
        assert!(!lock.exists(), "{torn:?}");
    }
    assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
}

#[test]
fn a_record_is_judged_by_its_process_a_reused_pid_is_dead_another_hosts_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("records.db");
    let lock = lock_of(&db);
    dotfile(10_000).open(&db).unwrap().enqueue("job").unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let my_start = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .to_string();
    // The kernel's host name, which gethostname(2) and Node's os.hostname() both read.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let record = |pid: u32, start: &str, host: &str| {
        format!(
            "leasefence-dotlock v1\npid={pid}\nstart={start}\nhost={host}\nthread=0\nboot={}\nnonce={pid}-00000000000000cd-1\n",
            boot.trim()
        )
    };
    let me = std::process::id();
    // This process's pid with another start time: the pid was reused, its owner is gone.
    std::fs::write(&lock, record(me, "1", host)).unwrap();
    let store = dotfile(2_000).open(&db).unwrap();
    assert!(store.enqueue("after-reuse").unwrap());
    drop(store);
    assert!(!lock.exists(), "a reused pid's lock was kept");

    // This very process, with its real start time: alive, so the opener waits and gives up.
    // A process of another host (a network file system) cannot be checked: alive too.
    for (what, text) in [
        ("a live process's record", record(me, &my_start, host)),
        ("another host's record", record(me, "1", "some-other-host")),
    ] {
        std::fs::write(&lock, &text).unwrap();
        let err = dotfile(300)
            .open(&db)
            .and_then(|s| s.state("job"))
            .unwrap_err();
        assert!(err.is_retryable(), "{what}: {err}");
        assert_eq!(std::fs::read_to_string(&lock).unwrap(), text, "{what}");
        std::fs::remove_file(&lock).unwrap();
    }
    assert!(debris(dir.path()).is_empty(), "{:?}", debris(dir.path()));
}

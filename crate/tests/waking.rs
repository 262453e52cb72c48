#![cfg(target_os = "linux")]
//! Waking instead of polling (docs/contract.md section 11): `leasefence work` processes idle
//! with a 10 s poll interval on a real SQLite file (inotify) or PostgreSQL server
//! (`LISTEN/NOTIFY`); a job enqueued by another process starts well within the poll, a delayed
//! job starts when it falls due (the store's `next_due`), and the idle workers burn no CPU
//! meanwhile (their own commits, which write the file too, do not make them spin). Real
//! processes, real time; the 50 ms p99 is measured by the benchmark (`bench/run.sh waking`),
//! not asserted here.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use leasefence::worker::wall_clock;
use support::cli_bin::bin;
#[cfg(feature = "postgres")]
use support::pg_schema::PgSchema;

/// Idle workers' poll interval: far longer than anything this test waits for.
const POLL: &str = "10";

fn idle_worker(db: &Path, n: usize) -> Child {
    Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(["work", "--idle", POLL, "--owner"])
        .arg(format!("idle-{n}"))
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// CPU time of a process so far (user + system), in clock ticks (`/proc/PID/stat`).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // After the command name in parentheses: state is the first field, utime the 12th, stime
    // the 13th (fields 14 and 15 of proc(5)).
    let rest: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap()
}

/// Seconds from now until `job` is done, waiting at most `within`.
fn until_done(store: &dyn leasefence::Leases, job: &str, within: Duration) -> f64 {
    let start = Instant::now();
    loop {
        if store.state(job).unwrap().is_some_and(|s| s.done) {
            return start.elapsed().as_secs_f64();
        }
        assert!(
            start.elapsed() < within,
            "{job} was not done within {within:?}"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

fn idle_workers_wake(db: &Path) {
    let store = leasefence::open(db).unwrap();
    let mut workers: Vec<Child> = (0..4).map(|n| idle_worker(db, n)).collect();
    // Each starts, finds nothing and goes to sleep.
    thread::sleep(Duration::from_millis(700));

    // An enqueue from this process wakes them: far sooner than their 10 s poll.
    store.enqueue("now").unwrap();
    let took = until_done(&*store, "now", Duration::from_secs(15));
    eprintln!("a job enqueued while 4 workers idle was done after {took:.3} s");
    assert!(
        took < 2.0,
        "done after {took:.3} s: the workers were not woken"
    );

    // A delayed job starts when it falls due: the enqueue wakes them, and they sleep until its
    // `until` (next_due), not until their poll.
    store
        .enqueue_with("later", Some(wall_clock() + 1.0), None)
        .unwrap();
    let took = until_done(&*store, "later", Duration::from_secs(15));
    eprintln!("a job due in 1 s was done after {took:.3} s");
    assert!(
        (0.9..2.5).contains(&took),
        "done after {took:.3} s, due after 1 s"
    );

    // Idle, they use no CPU: their own commits (the claims and completions above wrote the file)
    // do not keep waking them.
    thread::sleep(Duration::from_secs(1));
    let before: u64 = workers.iter().map(|w| cpu_ticks(w.id())).sum();
    thread::sleep(Duration::from_secs(2));
    let after: u64 = workers.iter().map(|w| cpu_ticks(w.id())).sum();
    eprintln!("4 idle workers used {} clock ticks in 2 s", after - before);
    assert!(
        after - before <= 4,
        "idle workers used {} ticks in 2 s",
        after - before
    );

    for worker in &mut workers {
        // SAFETY: kill(2) on a child of ours that has not been reaped.
        unsafe { libc::kill(worker.id() as libc::pid_t, libc::SIGTERM) };
    }
    for worker in &mut workers {
        let status = worker.wait().unwrap();
        assert!(status.success(), "a worker ended with {status}");
    }
}

#[test]
fn sqlite_idle_workers_are_woken_by_an_enqueue_and_sleep_until_the_next_due_job() {
    let dir = tempfile::tempdir().unwrap();
    idle_workers_wake(&dir.path().join("q.db"));
}

#[test]
fn sqlite_rollback_journal_an_idle_worker_is_woken_too() {
    use leasefence::worker::{Worker, WorkerOptions};
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    // A rollback journal: a commit writes the database file and deletes `-journal`.
    let options = leasefence::OpenOptions::new().journal(leasefence::Journal::Rollback);
    let store = options.open(&db).unwrap();
    let worker_options = WorkerOptions::new("idle").idle_poll(Duration::from_secs(10));
    let mut worker = Worker::open(&db, &options, worker_options).unwrap();
    let stop = worker.stop_handle();
    let running = thread::spawn(move || worker.run(|_job| Ok(None)));
    thread::sleep(Duration::from_millis(500));
    store.enqueue("now").unwrap();
    let took = until_done(&store, "now", Duration::from_secs(15));
    assert!(
        took < 2.0,
        "done after {took:.3} s: the worker was not woken"
    );
    stop.stop();
    let counters = running.join().unwrap().unwrap();
    assert_eq!(counters.completed, 1);
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_idle_workers_are_woken_by_an_enqueue_and_sleep_until_the_next_due_job() {
    let schema = PgSchema::new("waking");
    idle_workers_wake(Path::new(&schema.url));
}

#[cfg(feature = "postgres")]
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn postgres_a_watch_hears_the_enqueues_and_revives_of_its_queues_only() {
    use leasefence::NewJob;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex};
    let schema = PgSchema::new("waking_watch");
    let store = leasefence::open(&schema.url).unwrap();
    let listen = |queues: Option<&[&str]>| {
        let (tx, rx) = mpsc::channel::<()>();
        let tx = Mutex::new(tx);
        let watch = store
            .watch(
                queues,
                Arc::new(move || {
                    let _ = tx.lock().unwrap().send(());
                }),
            )
            .unwrap()
            .expect("PostgreSQL always watches");
        (watch, rx)
    };
    let (_mail, mail) = listen(Some(&["mail"]));
    let (every_watch, every) = listen(None);
    let heard = |rx: &mpsc::Receiver<()>| {
        let got = rx.recv_timeout(Duration::from_secs(3)).is_ok();
        while rx.try_recv().is_ok() {}
        got
    };
    let silent = |rx: &mpsc::Receiver<()>| rx.recv_timeout(Duration::from_millis(300)).is_err();

    store
        .enqueue_job(&NewJob::new("invoice").queue("billing"))
        .unwrap();
    assert!(heard(&every), "every queue's channel: a billing enqueue");
    assert!(silent(&mail), "the mail channel heard a billing enqueue");

    store
        .enqueue_job(&NewJob::new("hello").queue("mail"))
        .unwrap();
    assert!(heard(&mail) && heard(&every));
    store
        .enqueue_many(&[NewJob::new("a").queue("mail"), NewJob::new("b").queue("x")])
        .unwrap();
    assert!(heard(&mail) && heard(&every));
    // An enqueue of an existing id inserts nothing and notifies nobody.
    store
        .enqueue_job(&NewJob::new("hello").queue("mail"))
        .unwrap();
    assert!(silent(&mail));

    // A revive makes a dead job claimable: the workers of its queue hear it.
    let now = wall_clock();
    let claimed = store
        .claim_next_in(Some(&["mail"]), "me", now, 30.0)
        .unwrap()
        .unwrap();
    assert!(store
        .fail(&claimed.lease(), now, None, Some("dead"))
        .unwrap()
        .is_granted());
    while mail.try_recv().is_ok() {}
    assert!(store.revive(&claimed.job, now).unwrap().is_granted());
    assert!(heard(&mail), "a revive was not heard");

    // A release makes the job claimable at once, a failure's retry at its retry time: both wake
    // the workers of its queue (who then claim it, or sleep until the retry time). A refused
    // release frees nothing and notifies nobody.
    let claimed = store
        .claim_next_in(Some(&["mail"]), "me", now, 30.0)
        .unwrap()
        .unwrap();
    while mail.try_recv().is_ok() {}
    let mut stale = claimed.lease();
    stale.fence -= 1;
    assert!(!store.release(&stale).unwrap().is_granted());
    assert!(silent(&mail), "a refused release was heard");
    assert!(store.release(&claimed.lease()).unwrap().is_granted());
    assert!(heard(&mail), "a release was not heard");
    let claimed = store
        .claim_next_in(Some(&["mail"]), "me", now, 30.0)
        .unwrap()
        .unwrap();
    while mail.try_recv().is_ok() {}
    assert!(store
        .fail(&claimed.lease(), now, Some(now + 60.0), Some("later"))
        .unwrap()
        .is_granted());
    assert!(heard(&mail), "a failure's retry was not heard");

    // next_due: the earliest until of an open job of the queues.
    store
        .enqueue_job(&NewJob::new("later").queue("late").run_at(now + 500.0))
        .unwrap();
    assert_eq!(
        store.next_due_in(Some(&["late"])).unwrap(),
        Some(now + 500.0)
    );
    assert_eq!(store.next_due_in(Some(&["none"])).unwrap(), None);
    assert_eq!(store.next_due_in(None).unwrap(), Some(0.0));
    // ... by index probes: with many jobs and fresh statistics, the plan reads no table whole
    // and sorts nothing.
    for chunk in 0..8 {
        let jobs: Vec<NewJob> = (0..1000)
            .map(|i| {
                NewJob::new(format!("bulk-{chunk}-{i}"))
                    .queue(["mail", "late", "x"][i % 3])
                    .priority((i % 4) as i64)
                    .run_at(now + i as f64)
            })
            .collect();
        store.enqueue_many(&jobs).unwrap();
    }
    let mut client = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    client.batch_execute("ANALYZE jobs").unwrap();
    let sql = include_str!("../src/postgres/sql/next_due.sql");
    for queues in [Some(vec!["mail", "late"]), None] {
        let plan: Vec<String> = client
            .query(&format!("EXPLAIN {sql}"), &[&queues])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(!plan.contains("Seq Scan"), "{plan}");
        assert!(!plan.contains("Sort"), "{plan}");
        assert!(
            plan.contains("leasefence_queued") || plan.contains("leasefence_next"),
            "{plan}"
        );
    }

    // Dropping a watch ends its listening connection at once, not at the listener's next look
    // (30 s): its last statement was the LISTEN on every queue's channel of this schema.
    let every_channel: String = client
        .query_one(
            include_str!("../src/postgres/sql/channels.sql"),
            &[&vec![""]],
        )
        .unwrap()
        .get(0);
    let listening = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE query = $1",
                &[&format!("LISTEN {every_channel}")],
            )
            .unwrap()
            .get(0)
    };
    assert_eq!(listening(&mut client), 1);
    drop(every_watch);
    let dropped_at = std::time::Instant::now();
    while listening(&mut client) > 0 {
        assert!(
            dropped_at.elapsed() < Duration::from_secs(5),
            "the dropped watch still listens after 5 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#![cfg(not(target_arch = "wasm32"))]
//! The shared store's group commit (issue 23): many threads on one `SharedStore`, on real files,
//! counted in syncs through the fault VFS (support/fault_vfs.rs). Every answer is the contract's,
//! operations really share commits, a lone one commits at once, a failing operation fails alone,
//! a failing commit fails its whole group and nothing of it (a SIGKILL: shared_store_crash.rs).
//! The contract vectors and the property model run through it in vectors.rs and properties.rs.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use leasefence::{Error, Finish, Lease, LeaseStore, Leases, SharedStore, Statement};
use support::commits::{store_counting_commits, syncs};
use support::fault_vfs::{self, Fault, Kind};
use support::jobs::enqueue_jobs;

/// The fault VFS watches one directory per process: the tests that use it take turns.
static FAULT_VFS: Mutex<()> = Mutex::new(());

const THREADS: usize = 16;
const CYCLES: usize = 200;

/// `cycles` claim_next + complete pairs for `owner`; the leases it completed.
fn work(store: &dyn Leases, owner: &str, cycles: usize) -> Vec<Lease> {
    (0..cycles)
        .map(|_| {
            let claimed = store
                .claim_next(owner, 1.0, 1e6)
                .unwrap()
                .expect("a job is left for every cycle");
            let lease = claimed.lease();
            let result = format!("{owner}/{}", lease.fence);
            assert!(store
                .complete(&lease, 2.0, Some(&result))
                .unwrap()
                .is_granted());
            lease
        })
        .collect()
}

#[test]
fn many_threads_get_the_contracts_answers_and_share_commits() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    fault_vfs::register(dir.path());
    let store = SharedStore::new(store_counting_commits(&db));
    let ids = enqueue_jobs(&store, "job", THREADS * CYCLES);
    // A disk's flush time, so the grouping does not depend on this machine's file system (on
    // tmpfs a sync costs nothing, and commits have little to share).
    fault_vfs::set_sync_delay(Duration::from_millis(2));
    let before = syncs();
    let done: Vec<(String, Vec<Lease>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let store = store.clone();
                scope.spawn(move || {
                    let owner = format!("w{t}");
                    let leases = work(&store, &owner, CYCLES);
                    (owner, leases)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let commits = syncs() - before;
    let operations = (THREADS * CYCLES * 2) as u64;
    println!("{operations} operations, {commits} syncs");

    // Every job claimed and completed exactly once, by the thread that was told so.
    let mut by_job = BTreeMap::new();
    for (owner, leases) in &done {
        for lease in leases {
            assert_eq!(lease.fence, 1, "{} was claimed twice", lease.job);
            assert!(
                by_job.insert(lease.job.clone(), owner.clone()).is_none(),
                "{} was done twice",
                lease.job
            );
        }
    }
    assert_eq!(by_job.keys().cloned().collect::<Vec<_>>(), ids);
    drop(store);
    let reopened = LeaseStore::open(&db).unwrap();
    for row in reopened.jobs().unwrap() {
        assert!(row.done, "{} is not done", row.id);
        assert_eq!(row.result, Some(format!("{}/1", by_job[&row.id])));
    }
    // Grouped: far fewer commits than operations (one each would be `operations`).
    assert!(
        commits * 4 < operations,
        "{commits} syncs for {operations} operations: the commits were not grouped"
    );
}

/// Batch operations (a group inside the group, one more savepoint level) and reads, from many
/// threads at once: every job done once, every answer the contract's.
#[test]
fn batches_and_reads_share_groups_too() {
    use leasefence::LeaseCompletion;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    let store = SharedStore::open(&db).unwrap();
    let ids = enqueue_jobs(&store, "job", 800);
    let done: Vec<Vec<String>> = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let store = store.clone();
                scope.spawn(move || {
                    for _ in 0..50 {
                        let counts = store.stats(1.0).unwrap();
                        assert_eq!(store.jobs().unwrap().len(), 800, "{counts:?}");
                    }
                })
            })
            .collect();
        let workers: Vec<_> = (0..4)
            .map(|t| {
                let store = store.clone();
                scope.spawn(move || {
                    let owner = format!("w{t}");
                    let mut mine = Vec::new();
                    loop {
                        let claimed = store.claim_next_many(&owner, 8, 1.0, 1e6).unwrap();
                        if claimed.is_empty() {
                            return mine;
                        }
                        let completions: Vec<_> = claimed
                            .iter()
                            .map(|c| LeaseCompletion::new(c.lease(), Some(owner.as_str())))
                            .collect();
                        let answers = store.complete_many(&completions, 2.0).unwrap();
                        assert!(answers.iter().all(|a| a.is_granted()), "{answers:?}");
                        mine.extend(claimed.into_iter().map(|c| c.job));
                    }
                })
            })
            .collect();
        readers.into_iter().for_each(|r| r.join().unwrap());
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let mut all: Vec<String> = done.concat();
    all.sort();
    assert_eq!(all, ids, "every job done exactly once");
    let reopened = LeaseStore::open(&db).unwrap();
    assert!(reopened
        .jobs()
        .unwrap()
        .iter()
        .all(|row| row.done && row.fence == 1));
}

#[test]
fn a_lone_caller_commits_at_once() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    let count = |shared: bool| {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("q.db");
        fault_vfs::register(dir.path());
        let plain = store_counting_commits(&db);
        enqueue_jobs(&plain, "job", CYCLES);
        // Both stores stay open until counted: closing checkpoints, which syncs.
        let store: Box<dyn Leases> = if shared {
            Box::new(SharedStore::new(plain))
        } else {
            Box::new(plain)
        };
        let before = syncs();
        work(&*store, "me", CYCLES);
        syncs() - before
    };
    let (plain, shared) = (count(false), count(true));
    println!("{CYCLES} cycles alone: {plain} syncs on a LeaseStore, {shared} on a SharedStore");
    // Each operation committed on its own, as on a plain store: nothing waited to be grouped.
    assert_eq!(plain, (CYCLES * 2) as u64);
    assert_eq!(shared, plain);
}

/// Holds the shared store's lead: a fenced write whose closure waits until `release` is sent, so
/// that whatever is queued meanwhile forms the next group.
fn hold_the_lead(
    store: &SharedStore,
    lease: Lease,
) -> (
    mpsc::Sender<()>,
    std::thread::JoinHandle<leasefence::Result<leasefence::Outcome<()>>>,
) {
    let (release, wait) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel::<()>();
    let store = store.clone();
    let holder = std::thread::spawn(move || {
        store.fenced_with(&lease, 1.0, Finish::KeepLease, &mut |tx| {
            tx.execute("UPDATE t SET v = v + 1", &[])?;
            started.send(()).unwrap();
            wait.recv().unwrap();
            Ok(())
        })
    });
    running.recv().unwrap();
    (release, holder)
}

fn wait_for_pending(store: &SharedStore, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.pending() < count {
        assert!(Instant::now() < deadline, "the operations never queued");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A store on the fault VFS with table `t` (one row, v = 0) and `jobs` jobs claimed by `w0`,
/// `w1`, ... at 0 for 100 s, plus a job `held` claimed by `holder`.
fn store_with_claims(db: &Path, jobs: usize) -> (SharedStore, Vec<Lease>, Lease) {
    let plain = store_counting_commits(db);
    plain
        .connection()
        .execute_batch(
            "CREATE TABLE t(k TEXT PRIMARY KEY, v INTEGER); INSERT INTO t VALUES ('a', 0);",
        )
        .unwrap();
    let store = SharedStore::new(plain);
    let claim = |job: &str, owner: &str| {
        store.enqueue(job).unwrap();
        store
            .claim(job, owner, 0.0, 100.0)
            .unwrap()
            .lease(job, owner)
            .unwrap()
    };
    let leases = (0..jobs)
        .map(|i| claim(&format!("j{i}"), &format!("w{i}")))
        .collect();
    let held = claim("held", "holder");
    (store, leases, held)
}

fn complete_on_threads(
    store: &SharedStore,
    leases: &[Lease],
) -> Vec<std::thread::JoinHandle<leasefence::Result<leasefence::Outcome<()>>>> {
    leases
        .iter()
        .map(|lease| {
            let (store, lease) = (store.clone(), lease.clone());
            std::thread::spawn(move || store.complete(&lease, 1.0, Some("ok")))
        })
        .collect()
}

#[test]
fn a_failing_operation_fails_alone_in_its_group() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    fault_vfs::register(dir.path());
    let (store, leases, held) = store_with_claims(&db, 6);
    let (release, holder) = hold_the_lead(&store, held);
    let (first, rest) = leases.split_at(3);
    let mut completions = complete_on_threads(&store, first);
    // The fenced write of w3 breaks the primary key of `t` after a good update: its statement
    // fails, in the middle of its neighbours' completions.
    wait_for_pending(&store, 3);
    let failing = {
        let (store, lease) = (store.clone(), rest[0].clone());
        std::thread::spawn(move || {
            let statements = [
                Statement::new("UPDATE t SET v = v + 100", []),
                Statement::new("INSERT INTO t VALUES ('a', 1)", []),
            ];
            store.fenced(&lease, 1.0, &statements, Finish::Complete(None))
        })
    };
    wait_for_pending(&store, 4);
    completions.extend(complete_on_threads(&store, &rest[1..]));
    wait_for_pending(&store, 6);
    let before = syncs();
    release.send(()).unwrap();
    assert!(holder.join().unwrap().unwrap().is_granted());
    let failed = failing.join().unwrap();
    assert!(
        matches!(failed, Err(Error::Statement { index: 1, .. })),
        "{failed:?}"
    );
    for completion in completions {
        assert!(completion.join().unwrap().unwrap().is_granted());
    }
    // The holder's group and the group of six: two commits.
    assert_eq!(syncs() - before, 2);
    drop(store);
    let reopened = LeaseStore::open(&db).unwrap();
    for lease in first.iter().chain(&rest[1..]) {
        assert!(reopened.state(&lease.job).unwrap().unwrap().done);
    }
    assert!(!reopened.state(&rest[0].job).unwrap().unwrap().done);
    let v: i64 = reopened
        .connection()
        .query_row("SELECT v FROM t WHERE k = 'a'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, 1, "only the holder's update is applied");
}

#[test]
fn a_failing_commit_fails_every_operation_of_its_group() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    fault_vfs::register(dir.path());
    let (store, leases, held) = store_with_claims(&db, 5);
    let (release, holder) = hold_the_lead(&store, held);
    let completions = complete_on_threads(&store, &leases);
    wait_for_pending(&store, leases.len());
    // The holder's commit is the first sync; the group of five commits with the second.
    fault_vfs::take_fired();
    fault_vfs::arm(Fault {
        kind: Kind::Sync,
        nth: 2,
        code: rusqlite::ffi::SQLITE_IOERR_FSYNC,
        persistent: false,
    });
    release.send(()).unwrap();
    assert!(holder.join().unwrap().unwrap().is_granted());
    for completion in completions {
        match completion.join().unwrap() {
            Err(Error::Storage { source, .. }) => {
                assert_eq!(
                    source.extended_code(),
                    Some(rusqlite::ffi::SQLITE_IOERR_FSYNC)
                );
            }
            other => panic!("expected the commit's storage error, got {other:?}"),
        }
    }
    fault_vfs::clear_faults();
    assert_eq!(
        fault_vfs::take_fired(),
        [(Kind::Sync, rusqlite::ffi::SQLITE_IOERR_FSYNC)]
    );
    // The store goes on, and nothing of the failed group was applied.
    for lease in &leases {
        assert!(!store.state(&lease.job).unwrap().unwrap().done);
    }
    drop(store);
    let reopened = LeaseStore::open(&db).unwrap();
    for lease in &leases {
        let row = reopened.state(&lease.job).unwrap().unwrap();
        assert!(!row.done, "{} completed in a failed commit", lease.job);
        assert!(reopened
            .complete(lease, 1.5, Some("retry"))
            .unwrap()
            .is_granted());
    }
}

#[test]
fn a_call_from_inside_its_own_fenced_closure_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = SharedStore::open(dir.path().join("q.db")).unwrap();
    store.enqueue("j").unwrap();
    let lease = store
        .claim("j", "me", 0.0, 10.0)
        .unwrap()
        .lease("j", "me")
        .unwrap();
    let mut inner = None;
    let outer = store.fenced_with(&lease, 1.0, Finish::KeepLease, &mut |_tx| {
        inner = Some(store.state("j"));
        Ok(())
    });
    assert!(outer.unwrap().is_granted());
    assert!(
        matches!(
            inner,
            Some(Err(Error::InvalidArgument {
                argument: "store",
                ..
            }))
        ),
        "{inner:?}"
    );
}

/// A fenced closure that panics in the group it leads: the panic is its caller's, its group's
/// other operations get an error and are not applied, and the store goes on. The closure's caller
/// queued after the others and still led the next group: a borrowed closure gets the lead first.
#[test]
fn a_panicking_fenced_closure_fails_its_group_and_the_store_goes_on() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("q.db");
    fault_vfs::register(dir.path());
    let (store, leases, held) = store_with_claims(&db, 4);
    let (release, holder) = hold_the_lead(&store, held);
    let completions = complete_on_threads(&store, &leases[1..]);
    wait_for_pending(&store, 3);
    let panicking = {
        let (store, lease) = (store.clone(), leases[0].clone());
        std::thread::spawn(move || {
            store.fenced_with(&lease, 1.0, Finish::KeepLease, &mut |_tx| {
                panic!("the closure breaks");
            })
        })
    };
    wait_for_pending(&store, 4);
    release.send(()).unwrap();
    assert!(holder.join().unwrap().unwrap().is_granted());
    assert!(
        panicking.join().is_err(),
        "the closure's panic is its caller's"
    );
    for completion in completions {
        let answer = completion.join().unwrap();
        assert!(matches!(answer, Err(Error::Internal { .. })), "{answer:?}");
    }
    for lease in &leases[1..] {
        assert!(!store.state(&lease.job).unwrap().unwrap().done);
        assert!(store.complete(lease, 1.5, None).unwrap().is_granted());
    }
}

/// The measurement of the report (not a check; run by hand, on a quiet machine if possible):
/// `cargo test -p leasefence --test shared_store measure_group_commit -- --ignored --nocapture`.
/// 1, 8 and 64 threads doing claim_next + complete on one `SharedStore`, then the same threads
/// each on its own `LeaseStore` connection to the same file; both on the fault VFS (which only
/// counts here, and serializes the file I/O of all connections), WAL, default checkpoints.
#[test]
#[ignore]
fn measure_group_commit() {
    let _serial = FAULT_VFS.lock().unwrap_or_else(|p| p.into_inner());
    const JOBS: usize = 3072;
    let open = |db: &Path| {
        let conn = fault_vfs::open_connection(db).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        LeaseStore::from_connection(conn, &db.display().to_string()).unwrap()
    };
    for threads in [1, 8, 64] {
        for shared in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("q.db");
            fault_vfs::register(dir.path());
            let first = open(&db);
            enqueue_jobs(&first, "job", JOBS);
            let one = SharedStore::new(first);
            let stores: Vec<Box<dyn Leases>> = (0..threads)
                .map(|_| -> Box<dyn Leases> {
                    if shared {
                        Box::new(one.clone())
                    } else {
                        Box::new(open(&db))
                    }
                })
                .collect();
            let before = syncs();
            let started = Instant::now();
            std::thread::scope(|scope| {
                for (t, store) in stores.into_iter().enumerate() {
                    scope.spawn(move || work(&*store, &format!("w{t}"), JOBS / threads));
                }
            });
            let seconds = started.elapsed().as_secs_f64();
            let synced = syncs() - before;
            println!(
                "{threads:>2} threads, {:<27} {:>7.0} jobs/s, {:.3} syncs/job",
                if shared {
                    "one SharedStore:"
                } else {
                    "a LeaseStore per thread:"
                },
                JOBS as f64 / seconds,
                synced as f64 / JOBS as f64
            );
        }
    }
}

/// A store opened by the library keeps SQLite's statement journals in memory (`temp_store =
/// MEMORY`): a group runs each operation in a savepoint, and with the default SQLite writes what
/// each savepoint must undo to an anonymous temporary file (33 writes per group of a Node worker
/// at 64 in flight, docs/bench/peers.md).
#[test]
fn a_stores_statement_journals_stay_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    let temp_store: i64 = store
        .connection()
        .query_row("PRAGMA temp_store", [], |row| row.get(0))
        .unwrap();
    assert_eq!(temp_store, 2, "2 is MEMORY");
}

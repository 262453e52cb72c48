#![cfg(all(feature = "postgres", not(target_arch = "wasm32")))]
//! The batch operations on a PostgreSQL server, beyond the cases `batch_ops.rs` runs on both
//! backends: what only a server with other sessions can show. `#[ignore]`d: `bash
//! scripts/postgres.sh` runs them with a server in `LEASEFENCE_PG_URL`.
//!
//! - `claim_next_many` passes over a job another transaction holds locked, but waits for it rather
//!   than answer fewer jobs, whether the locked job comes after the ones it claimed or before;
//! - two claimers holding jobs and waiting for the same locked one do not deadlock;
//! - claimers on their own connections draining one queue, while another transaction holds some
//!   of its jobs locked: every job claimed once, and no call answers fewer than it asked for while
//!   a claimable job remains;
//! - U+0000 in any item refuses the whole call before the server is asked;
//! - the plan of `claim_next_many` reads only the jobs it claims.

mod support;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use leasefence::{
    ClaimedJob, Finish, Lease, LeaseCompletion, Leases, NewJob, OpenOptions, PgStore, Statement,
    WorkerRound,
};
use postgres::NoTls;
use support::pg_schema::PgSchema;

/// How long a test waits before it concludes that a call is blocked.
const BLOCKED: Duration = Duration::from_millis(700);

fn admin(schema: &PgSchema) -> postgres::Client {
    postgres::Client::connect(&schema.url, NoTls).unwrap()
}

/// The plan of `EXECUTE execute` (a statement the test prepared), one line per node.
fn plan_of(admin: &mut postgres::Client, execute: &str) -> String {
    let lines: Vec<String> = admin
        .query(&format!("EXPLAIN (COSTS OFF) EXECUTE {execute}"), &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    lines.join("\n")
}

fn jobs_of(claimed: &[ClaimedJob]) -> Vec<&str> {
    claimed.iter().map(|c| c.job.as_str()).collect()
}

/// `claim_next_many(owner, n)` on a store of its own in a thread, answering on the channel.
fn claim_in_thread(
    url: &str,
    owner: &'static str,
    n: usize,
) -> (
    mpsc::Receiver<leasefence::Result<Vec<ClaimedJob>>>,
    std::thread::JoinHandle<()>,
) {
    let (sender, answer) = mpsc::channel();
    let url = url.to_string();
    let thread = std::thread::spawn(move || {
        let store = PgStore::connect(&url).unwrap();
        sender
            .send(store.claim_next_many(owner, n, 0.0, 10.0))
            .unwrap();
    });
    (answer, thread)
}

/// A locked job is passed over, then waited for: the call answers all `n` once the lock is gone.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claim_next_many_waits_for_a_locked_job_rather_than_answer_fewer() {
    // The locked job last in order (the claimer waits holding the others), then first (the
    // claimer must let go of what it holds and wait holding nothing).
    for (locked, expected) in [
        ("third", ["first", "second", "third"]),
        ("first", ["first", "second", "third"]),
    ] {
        let schema = PgSchema::new("batch_locked");
        let store = PgStore::connect(&schema.url).unwrap();
        store
            .enqueue_many(&["first", "second", "third"].map(NewJob::new))
            .unwrap();
        // Another session holds the job locked: a write in progress that changes nothing.
        let mut holder = admin(&schema);
        let mut tx = holder.transaction().unwrap();
        tx.execute("UPDATE jobs SET until = until WHERE id = $1", &[&locked])
            .unwrap();
        // Two jobs are free: two are claimed at once, the locked one passed over.
        let two = store.claim_next_many("w1", 2, 0.0, 10.0).unwrap();
        let free: Vec<&str> = expected.into_iter().filter(|j| *j != locked).collect();
        assert_eq!(jobs_of(&two), free);
        store
            .release(&two[0].lease())
            .unwrap()
            .granted()
            .expect("released");
        store
            .release(&two[1].lease())
            .unwrap()
            .granted()
            .expect("released");
        // Three wanted, one of them locked: the call waits for the lock.
        let (answer, thread) = claim_in_thread(&schema.url, "w2", 3);
        assert!(
            answer.recv_timeout(BLOCKED).is_err(),
            "claim_next_many answered while {locked} was locked"
        );
        tx.rollback().unwrap();
        let got = answer
            .recv_timeout(Duration::from_secs(10))
            .expect("claim_next_many answers once the lock is gone")
            .unwrap();
        thread.join().unwrap();
        // In claim_next's order: when the locked job comes first, the call started again with
        // it once its writer was gone.
        assert_eq!(jobs_of(&got), expected, "locked {locked}");
        let fences: BTreeMap<&str, i64> = got.iter().map(|c| (c.job.as_str(), c.fence)).collect();
        assert_eq!(
            fences[locked], 1,
            "the locked job claimed for the first time"
        );
        assert!(store
            .claim_next_many("w3", 5, 0.0, 10.0)
            .unwrap()
            .is_empty());
    }
}

/// A worker's round (`complete_then_claim`) writes its completions and its claim in one
/// transaction, one commit: every row it wrote carries the same transaction id (`xmin`).
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_worker_round_writes_its_completions_and_its_claim_in_one_transaction() {
    let schema = PgSchema::new("batch_round");
    let store = PgStore::connect(&schema.url).unwrap();
    store
        .enqueue_many(&["a", "b", "c", "d"].map(NewJob::new))
        .unwrap();
    let held = store.claim_next_many("w", 2, 0.0, 30.0).unwrap();
    let done: Vec<LeaseCompletion> = held
        .iter()
        .map(|c| LeaseCompletion::new(c.lease(), Some("ok")))
        .collect();
    let answer = store
        .complete_then_claim(&WorkerRound {
            completions: &done,
            queues: None,
            owner: "w",
            claim: 2,
            now: 1.0,
            ttl: 30.0,
        })
        .unwrap();
    assert!(
        answer.completed.iter().all(|a| a.is_granted()),
        "{answer:?}"
    );
    assert_eq!(jobs_of(answer.claimed.as_ref().unwrap()), ["c", "d"]);
    let writers: Vec<(String, String)> = admin(&schema)
        .query("SELECT id, xmin::text FROM jobs ORDER BY id", &[])
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let first = &writers[0].1;
    assert!(
        writers.iter().all(|(_, xmin)| xmin == first),
        "the round's four rows written by one transaction: {writers:?}"
    );
}

/// A round whose claim fails once its completions are written (here it waits for a job another
/// session holds locked, longer than the store's busy timeout) answers the claim's error and
/// keeps the completions: they are written in a transaction of their own.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_round_whose_claim_fails_still_writes_its_completions() {
    let schema = PgSchema::new("batch_round_fails");
    let options = OpenOptions::new().busy_timeout(Duration::from_millis(300));
    let store = PgStore::connect_with(&schema.url, &options).unwrap();
    store.enqueue_many(&["a", "b"].map(NewJob::new)).unwrap();
    let a = store
        .claim("a", "w", 0.0, 30.0)
        .unwrap()
        .lease("a", "w")
        .unwrap();
    // Another session holds "b" locked: the claim passes over it, then waits for it.
    let mut holder = admin(&schema);
    let mut tx = holder.transaction().unwrap();
    tx.execute("UPDATE jobs SET until = until WHERE id = 'b'", &[])
        .unwrap();
    let done = [LeaseCompletion::new(a, Some("ok"))];
    let answer = store
        .complete_then_claim(&WorkerRound {
            completions: &done,
            queues: None,
            owner: "w",
            claim: 1,
            now: 1.0,
            ttl: 30.0,
        })
        .unwrap();
    tx.rollback().unwrap();
    assert!(answer.completed[0].is_granted(), "{answer:?}");
    let err = answer
        .claimed
        .expect_err("the claim waited past the busy timeout");
    assert!(err.is_retryable(), "{err}");
    let a = store.state("a").unwrap().unwrap();
    assert_eq!((a.done, a.result.as_deref()), (true, Some("ok")));
    assert_eq!(
        store.state("b").unwrap().unwrap().owner,
        None,
        "b never claimed"
    );
    // The store works on.
    assert_eq!(
        jobs_of(&store.claim_next_many("w", 1, 2.0, 30.0).unwrap()),
        ["b"]
    );
}

/// Two claimers that each hold jobs and want the job another session holds locked: when the lock
/// goes, neither may end up waiting for a job the other holds (a deadlock, which the server
/// would break after a second by failing one of them).
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claimers_waiting_for_one_locked_job_do_not_deadlock() {
    let schema = PgSchema::new("batch_deadlock");
    let store = PgStore::connect(&schema.url).unwrap();
    let ids = ["j1", "j2", "j3", "j4"];
    store.enqueue_many(&ids.map(NewJob::new)).unwrap();
    let (mut first_holder, mut last_holder) = (admin(&schema), admin(&schema));
    let mut holds_first = first_holder.transaction().unwrap();
    holds_first
        .execute("UPDATE jobs SET until = until WHERE id = 'j1'", &[])
        .unwrap();
    let mut holds_last = last_holder.transaction().unwrap();
    holds_last
        .execute("UPDATE jobs SET until = until WHERE id = 'j4'", &[])
        .unwrap();
    // x takes j2 and j3, then wants j1; once j4 is free, y takes it, then wants j1 too.
    let (x, x_thread) = claim_in_thread(&schema.url, "x", 4);
    std::thread::sleep(BLOCKED);
    holds_last.rollback().unwrap();
    let (y, y_thread) = claim_in_thread(&schema.url, "y", 4);
    std::thread::sleep(BLOCKED);
    assert!(
        x.try_recv().is_err() && y.try_recv().is_err(),
        "both wait for j1"
    );
    holds_first.rollback().unwrap();
    let mut claimed: Vec<String> = Vec::new();
    for (name, answer) in [("x", x), ("y", y)] {
        let got = answer
            .recv_timeout(Duration::from_secs(10))
            .expect("an answer once j1 is free")
            .unwrap_or_else(|err| panic!("{name} failed: {err}"));
        claimed.extend(got.into_iter().map(|c| c.job));
    }
    x_thread.join().unwrap();
    y_thread.join().unwrap();
    claimed.sort();
    assert_eq!(claimed, ids, "every job claimed once");
}

/// Claimers on their own connections drain one queue with `claim_next_many` of different sizes
/// while another transaction holds some jobs locked, then lets them go.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claimers_on_many_connections_take_every_job_once_and_never_answer_short_while_jobs_remain() {
    const JOBS: usize = 300;
    const SIZES: [usize; 5] = [1, 3, 8, 20, 64];
    let schema = PgSchema::new("batch_drain");
    let store = PgStore::connect(&schema.url).unwrap();
    let ids: Vec<String> = (0..JOBS).map(|i| format!("job-{i:03}")).collect();
    let jobs: Vec<NewJob> = ids
        .iter()
        .map(|id| NewJob::new(id.as_str()).payload(format!("payload of {id}")))
        .collect();
    assert!(store
        .enqueue_many(&jobs)
        .unwrap()
        .iter()
        .all(|&added| added));

    // Some jobs locked by a transaction that will not claim them, early ones among them.
    let mut holder = admin(&schema);
    let mut tx = holder.transaction().unwrap();
    let locked: Vec<&String> = ids.iter().skip(2).step_by(29).collect();
    for id in &locked {
        tx.execute("UPDATE jobs SET until = until WHERE id = $1", &[id])
            .unwrap();
    }

    let start = Arc::new(Barrier::new(SIZES.len() + 1));
    let claimers: Vec<_> = SIZES
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let url = schema.url.clone();
            let start = Arc::clone(&start);
            std::thread::spawn(move || {
                let store = PgStore::connect(&url).unwrap();
                let owner = format!("claimer-{i}");
                let mut claimed: Vec<ClaimedJob> = Vec::new();
                start.wait();
                loop {
                    let got = store.claim_next_many(&owner, n, 0.0, 1000.0).unwrap();
                    let short = got.len() < n;
                    claimed.extend(got);
                    if short {
                        // Fewer than asked for: no job may be claimable now, locked or not.
                        let queued = store.stats(0.0).unwrap().queued;
                        assert_eq!(
                            queued, 0,
                            "{owner} asked for {n} and got fewer while {queued} jobs were claimable"
                        );
                        return claimed;
                    }
                }
            })
        })
        .collect();
    start.wait();
    std::thread::sleep(Duration::from_millis(300));
    tx.rollback().unwrap();

    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for claimer in claimers {
        for job in claimer.join().expect("a claimer failed") {
            assert_eq!(job.fence, 1, "{} claimed more than once", job.job);
            assert_eq!(
                job.payload.as_deref(),
                Some(format!("payload of {}", job.job).as_str())
            );
            let previous = owners.insert(job.job.clone(), job.owner.clone());
            assert!(previous.is_none(), "{} handed out twice", job.job);
        }
    }
    assert_eq!(owners.len(), JOBS, "every job claimed");
    for row in store.jobs().unwrap() {
        assert_eq!(row.fence, 1, "{}", row.id);
        assert_eq!(row.owner.as_ref(), owners.get(&row.id), "{}", row.id);
    }
    for id in locked {
        assert!(owners.contains_key(id), "the locked {id} was claimed");
    }
}

/// PostgreSQL `text` cannot hold U+0000: one such item refuses the whole call before the server
/// is asked (the connection is gone; anything sent would fail as `storage`).
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn a_nul_in_any_item_refuses_the_call_before_the_server_is_asked() {
    let schema = PgSchema::new("batch_nul");
    let application = format!("lf_batch_nul_{}", std::process::id());
    let store =
        PgStore::connect(&format!("{}&application_name={application}", schema.url)).unwrap();
    store.enqueue("j").unwrap();
    let before = store.jobs().unwrap();
    let mut admin = admin(&schema);
    admin
        .query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap();
    while admin
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
            &[&application],
        )
        .unwrap()
        .get::<_, i64>(0)
        > 0
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let good = Lease::new("j", "a", 1);
    let refusals = [
        store
            .enqueue_many(&[NewJob::new("ok"), NewJob::new("n\0l")])
            .map(drop),
        store
            .enqueue_many(&[NewJob::new("ok"), NewJob::new("p").payload("p\0")])
            .map(drop),
        store.claim_next_many("own\0er", 2, 0.0, 5.0).map(drop),
        store
            .renew_many(&[good.clone(), Lease::new("j\0", "a", 1)], 0.0, 5.0)
            .map(drop),
        store
            .renew_many(&[good.clone(), Lease::new("j", "a\0", 1)], 0.0, 5.0)
            .map(drop),
        store
            .complete_many(
                &[
                    LeaseCompletion::new(good.clone(), None),
                    LeaseCompletion::new(good, Some("r\0")),
                ],
                0.0,
            )
            .map(drop),
    ];
    for refusal in refusals {
        let err = refusal.unwrap_err();
        assert_eq!(err.code(), "invalid_argument", "{err}");
        assert!(err.to_string().contains("U+0000"), "{err}");
    }
    // The first call that does reach the server finds the connection gone.
    assert_eq!(store.jobs().unwrap_err().code(), "storage");
    assert_eq!(store.jobs().unwrap(), before);
}

/// The plan PostgreSQL uses for `claim_next_many`'s statement (generic, as after five runs), on
/// jobs spread over 4 queues and 3 priorities, for every queue and for two named ones: the
/// claimable jobs from the partial index of (queue, priority, until, seq), each claimed and its
/// payload read by key; no scan of a whole table, whatever the queue's length.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn claim_next_many_reads_only_the_jobs_it_claims() {
    let schema = PgSchema::new("batch_plan");
    let store = PgStore::connect(&schema.url).unwrap();
    let mut admin = admin(&schema);
    admin
        .batch_execute(
            "INSERT INTO jobs(id) SELECT 'job-' || lpad(g::text, 5, '0') \
             FROM generate_series(1, 20000) g; \
             INSERT INTO leasefence_payloads(job, payload) SELECT id, 'p' FROM jobs; \
             UPDATE jobs SET queue = 'q' || (seq % 4), priority = seq % 3; \
             ANALYZE jobs; ANALYZE leasefence_payloads; \
             SET plan_cache_mode = force_generic_plan",
        )
        .unwrap();
    // The statements as the store prepares them: the candidates, then the claim or the peek.
    let candidates = include_str!("../src/postgres/sql/candidates.sql");
    admin
        .batch_execute(&format!(
            "PREPARE next_jobs(float8, text[], int8, text, float8, int8) AS {candidates}{}; \
             PREPARE peek(float8, text[], int8) AS {candidates}{}",
            include_str!("../src/postgres/sql/claim_next_many.sql"),
            include_str!("../src/postgres/sql/peek_next.sql")
        ))
        .unwrap();
    for queues in ["NULL", "'{q1,q2}'"] {
        for (execute, reads_jobs) in [
            (format!("next_jobs(5, {queues}, 96, 'w', 10, 64)"), true),
            (format!("peek(5, {queues}, 1)"), false),
        ] {
            let plan = plan_of(&mut admin, &execute);
            assert!(plan.contains("leasefence_queued"), "{plan}");
            assert_eq!(plan.contains("jobs_pkey"), reads_jobs, "{plan}");
            assert!(!plan.contains("Seq Scan"), "{plan}");
        }
    }
    // And the statement the store prepared claims in the contract's order: priority 2 first
    // (seq 2, 5, 8, ...), then by insertion.
    let got = store.claim_next_many("w", 3, 0.0, 10.0).unwrap();
    assert_eq!(jobs_of(&got), ["job-00002", "job-00005", "job-00008"]);
    let got = store
        .claim_next_many_in(Some(&["q0"]), "w", 2, 0.0, 10.0)
        .unwrap();
    // q0: seq divisible by 4; priority 2 means seq % 3 == 2: 8, 20, ...
    assert_eq!(jobs_of(&got), ["job-00020", "job-00032"]);
    assert!(got.iter().all(|c| c.payload.as_deref() == Some("p")));

    // The store's session compiles nothing (jit = off, session.rs): the planner prices these
    // statements above jit_above_cost, and compiling cost more than running them. Read from the
    // store's own session by a fenced statement.
    admin
        .batch_execute("CREATE TABLE seen(setting TEXT)")
        .unwrap();
    let lease = Lease::new(got[0].job.as_str(), "w", got[0].fence);
    let read = [Statement::new(
        "INSERT INTO seen SELECT current_setting('jit')",
        [],
    )];
    assert!(store
        .fenced(&lease, 1.0, &read, Finish::KeepLease)
        .unwrap()
        .is_granted());
    let seen: String = admin
        .query_one("SELECT setting FROM seen", &[])
        .unwrap()
        .get(0);
    assert_eq!(seen, "off");
}

/// The batch statements on a table with no statistics yet (a queue filled and drained before
/// autovacuum's first ANALYZE, as every benchmark and many a fresh deployment does), in their
/// generic plans: `claim_next_many` writes the rows it locked by their key, and `complete_many` /
/// `renew_many` read a refused lease's row by its key. Neither scans the open jobs by `until` or
/// reads the whole table: before, the claim filtered a bitmap scan of every open job (3.8-5.4
/// ms for 25 of 4,000 jobs, now 1.0), and the writes read every job.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
fn batch_statements_probe_by_key_without_statistics() {
    let schema = PgSchema::new("batch_plan_fresh");
    let _store = PgStore::connect(&schema.url).unwrap();
    let mut admin = admin(&schema);
    admin
        .batch_execute(
            "ALTER TABLE jobs SET (autovacuum_enabled = false); \
             INSERT INTO jobs(id) SELECT 'job-' || lpad(g::text, 5, '0') \
             FROM generate_series(1, 2000) g; \
             UPDATE jobs SET owner = 'w', until = 100, fence = 1 WHERE seq % 2 = 0; \
             SET plan_cache_mode = force_generic_plan",
        )
        .unwrap();
    let stats: i64 = admin
        .query_one(
            "SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() \
             AND tablename = 'jobs'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(stats, 0, "the table must have no statistics for this test");
    let candidates = include_str!("../src/postgres/sql/candidates.sql");
    admin
        .batch_execute(&format!(
            "PREPARE next_jobs(float8, text[], int8, text, float8, int8) AS {candidates}{}; \
             PREPARE complete(text[], text[], int8[], text[], float8) AS {}; \
             PREPARE renew(text[], text[], int8[], float8, float8) AS {}",
            include_str!("../src/postgres/sql/claim_next_many.sql"),
            include_str!("../src/postgres/sql/complete_many.sql"),
            include_str!("../src/postgres/sql/renew_many.sql"),
        ))
        .unwrap();
    let leases = "'{job-00002,job-00004}', '{w,w}', '{1,1}'";
    for execute in [
        "next_jobs(5, NULL, 96, 'w', 10, 64)".to_string(),
        format!("complete({leases}, '{{NULL,NULL}}', 5)"),
        format!("renew({leases}, 5, 50)"),
    ] {
        let plan = plan_of(&mut admin, &execute);
        assert!(!plan.contains("Seq Scan on jobs"), "{execute}:\n{plan}");
        if execute.starts_with("next_jobs") {
            // The claim reads the open jobs through leasefence_queued and the rest by key.
            assert!(!plan.contains("leasefence_next"), "{execute}:\n{plan}");
            assert!(!plan.contains("Bitmap"), "{execute}:\n{plan}");
        }
    }
}

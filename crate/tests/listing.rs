//! `list_jobs` and `queue_stats` (what the dashboard reads) against the slow, obvious answer:
//! every job's `inspect`, filtered and sorted here. Every state, queue filter and page size is
//! paged through to the end on SQLite (and, `#[ignore]`d, on PostgreSQL); cursors that do not
//! belong are refused; the SQLite statements read through their indexes (query plans).
#![cfg(not(target_arch = "wasm32"))]

mod support;

use leasefence::{Error, JobQuery, JobStatus, Lease, LeaseStore, Leases, NewJob};

/// The time the listings are read at.
const NOW: f64 = 100.0;

/// A store with jobs in every state, in two queues, with priorities, failures, equal `until`s
/// (the insertion order decides) and a dead job revived and dead again.
fn fill(store: &dyn Leases) {
    for i in 0..40i64 {
        let queue = if i % 3 == 0 { "mail" } else { "default" };
        let mut job = NewJob::new(format!("job-{i:02}"))
            .queue(queue)
            .priority(i % 4);
        if i % 7 == 0 {
            job = job.run_at(150.0 + (i % 2) as f64); // scheduled, two share an until
        }
        assert!(store.enqueue_job(&job).unwrap());
    }
    // Leased (until 130 or 140, several equal), done, failed for good, failed with a retry.
    for i in (1..40i64).filter(|i| i % 7 != 0) {
        let id = format!("job-{i:02}");
        let fence = store
            .claim(
                &id,
                &format!("w{}", i % 5),
                90.0,
                if i % 2 == 0 { 40.0 } else { 50.0 },
            )
            .unwrap()
            .granted()
            .expect("claimable");
        let lease = Lease::new(id.clone(), format!("w{}", i % 5), fence);
        match i % 6 {
            0 | 1 => assert!(store
                .complete(&lease, 95.0, Some("ok"))
                .unwrap()
                .is_granted()),
            2 => assert!(store
                .fail(&lease, 95.0, None, Some("boom"))
                .unwrap()
                .is_granted()),
            3 => assert!(store
                .fail(&lease, 95.0, Some(120.0), Some("again"))
                .unwrap()
                .is_granted()),
            4 if i < 20 => assert!(store.release(&lease).unwrap().is_granted()),
            _ => {} // stays leased
        }
    }
    // A dead job revived, claimed and failed for good again: one dead mark, two failures.
    assert!(store.revive("job-02", 96.0).unwrap().is_granted());
    let fence = store
        .claim("job-02", "w9", 96.0, 10.0)
        .unwrap()
        .granted()
        .unwrap();
    let lease = Lease::new("job-02", "w9", fence);
    assert!(store
        .fail(&lease, 97.0, None, Some("boom again"))
        .unwrap()
        .is_granted());
}

/// What a listing must answer, from `inspect` of every job: `(id, status, queue, priority,
/// failures, until)` in the query's order.
fn expected(store: &dyn Leases, status: Option<JobStatus>, queue: Option<&str>) -> Vec<String> {
    let mut rows = Vec::new();
    for (insertion, job) in store.jobs().unwrap().into_iter().enumerate() {
        let report = store.inspect(&job.id).unwrap().unwrap();
        let at = JobStatus::at(&report.state, report.dead, NOW);
        if status.is_some_and(|s| s != at) || queue.is_some_and(|q| q != report.queue) {
            continue;
        }
        rows.push((insertion, report, at));
    }
    if status.is_some_and(|s| {
        matches!(
            s,
            JobStatus::Queued | JobStatus::Scheduled | JobStatus::Leased
        )
    }) {
        rows.sort_by(|a, b| {
            a.1.state
                .until
                .total_cmp(&b.1.state.until)
                .then(a.0.cmp(&b.0))
        });
    } else {
        rows.reverse();
    }
    rows.into_iter()
        .map(|(_, r, at)| {
            format!(
                "{} {} {} {} {} {}",
                r.state.id,
                at.as_str(),
                r.queue,
                r.priority,
                r.failures.len(),
                r.state.until
            )
        })
        .collect()
}

/// Every page of a listing, followed to the end.
fn listed(
    store: &dyn Leases,
    status: Option<JobStatus>,
    queue: Option<&str>,
    limit: usize,
) -> Vec<String> {
    let mut query = JobQuery::new().limit(limit);
    query.status = status;
    query.queue = queue.map(str::to_owned);
    let mut all = Vec::new();
    for _ in 0..200 {
        let page = store.list_jobs(&query, NOW).unwrap();
        assert!(page.jobs.len() <= limit);
        for job in &page.jobs {
            all.push(format!(
                "{} {} {} {} {} {}",
                job.state.id,
                job.status.as_str(),
                job.queue,
                job.priority,
                job.failures,
                job.state.until
            ));
        }
        match page.next {
            Some(next) => {
                assert_eq!(page.jobs.len(), limit, "a page before the last is full");
                query.after = Some(next);
            }
            None => return all,
        }
    }
    panic!("the listing never ended");
}

fn check_listings(store: &dyn Leases) {
    let mut seen = 0;
    for status in [None].into_iter().chain(JobStatus::ALL.map(Some)) {
        for queue in [None, Some("default"), Some("mail"), Some("none")] {
            let want = expected(store, status, queue);
            if queue.is_none() && status.is_some() {
                assert!(!want.is_empty(), "the data has jobs in state {status:?}");
                seen += want.len();
            }
            for limit in [1, 3, 1000] {
                assert_eq!(
                    listed(store, status, queue, limit),
                    want,
                    "{status:?} {queue:?} limit {limit}"
                );
            }
        }
    }
    assert_eq!(seen, 40, "every job in exactly one state");
}

fn check_queue_stats(store: &dyn Leases) {
    let queues = store.queue_stats(NOW).unwrap();
    let names: Vec<&str> = queues.iter().map(|q| q.queue.as_str()).collect();
    assert_eq!(names, ["default", "mail"]);
    for q in &queues {
        assert_eq!(
            q.counts,
            store.stats_in(Some(&q.queue), NOW).unwrap(),
            "{}",
            q.queue
        );
    }
    assert!(queues
        .iter()
        .any(|q| q.counts.dead > 0 && q.counts.done > 0));
}

fn check_refusals(store: &dyn Leases) {
    let first = store.list_jobs(&JobQuery::new().limit(1), NOW).unwrap();
    let newest = first.next.expect("more than one job");
    let leased = store
        .list_jobs(&JobQuery::new().status(JobStatus::Leased).limit(1), NOW)
        .unwrap()
        .next
        .expect("more than one leased job");
    let refused = |query: JobQuery, argument: &str| match store.list_jobs(&query, NOW) {
        Err(Error::InvalidArgument { argument: a, .. }) => assert_eq!(a, argument),
        other => panic!("{query:?}: {other:?}"),
    };
    // A cursor of the other order, a made-up one, a bad limit, a bad queue name, a bad time.
    refused(
        JobQuery::new()
            .status(JobStatus::Queued)
            .after(newest.clone()),
        "after",
    );
    refused(
        JobQuery::new()
            .status(JobStatus::Done)
            .after(leased.clone()),
        "after",
    );
    refused(JobQuery::new().after("page-2"), "after");
    refused(JobQuery::new().limit(0), "limit");
    refused(JobQuery::new().limit(leasefence::MAX_PAGE + 1), "limit");
    refused(JobQuery::new().queue(""), "queue");
    assert!(store.list_jobs(&JobQuery::new(), f64::NAN).is_err());
    assert!(store.queue_stats(f64::INFINITY).is_err());
    // A cursor of the same order is taken, whichever state of that order gave it.
    assert!(store
        .list_jobs(&JobQuery::new().status(JobStatus::Dead).after(newest), NOW)
        .is_ok());
}

#[test]
fn pages_match_every_jobs_inspect_on_sqlite() {
    let store = LeaseStore::open_in_memory().unwrap();
    fill(&store);
    check_listings(&store);
    check_queue_stats(&store);
    check_refusals(&store);
}

#[test]
fn the_group_committing_handle_lists_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("list.db");
    let store = leasefence::SharedStore::open(&path).unwrap();
    fill(&store);
    check_listings(&store);
    check_queue_stats(&store);
}

/// The SQLite statements read through their indexes: the plan of each names its index (or the
/// primary key) and sorts nothing but the dead marks.
#[test]
fn sqlite_listings_read_through_indexes() {
    let store = LeaseStore::open_in_memory().unwrap();
    fill(&store);
    let plan = |sql: &str| -> String {
        let conn = store.connection();
        let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let count = stmt.parameter_count();
        let rows = stmt
            .query_map(
                rusqlite::params_from_iter(std::iter::repeat_n(rusqlite::types::Null, count)),
                |row| row.get::<_, String>(3),
            )
            .unwrap()
            .collect::<rusqlite::Result<Vec<_>>>()
            .unwrap();
        rows.join("\n")
    };
    let by_until = plan(include_str!("../src/sqlite/sql/list_by_until.sql"));
    assert!(
        by_until.contains("USING INDEX leasefence_claimable (until>? AND until<?)"),
        "{by_until}"
    );
    assert!(!by_until.contains("TEMP B-TREE"), "{by_until}");
    let newest = plan(include_str!("../src/sqlite/sql/list_newest.sql"));
    assert!(
        newest.contains("SEARCH o USING INTEGER PRIMARY KEY (rowid<?)"),
        "{newest}"
    );
    assert!(!newest.contains("TEMP B-TREE"), "{newest}");
    let dead = plan(include_str!("../src/sqlite/sql/list_dead.sql"));
    assert!(dead.starts_with("SCAN d"), "{dead}");
    assert!(
        !dead.contains("SCAN o") && !dead.contains("SCAN j"),
        "{dead}"
    );
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test listing -- --ignored"]
#[cfg(feature = "postgres")]
fn pages_match_every_jobs_inspect_on_postgres() {
    let schema = support::pg_schema::PgSchema::new("listing");
    let store = leasefence::PgStore::connect(&schema.url).unwrap();
    fill(&store);
    check_listings(&store);
    check_queue_stats(&store);
    check_refusals(&store);
}

fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// The oldest waiting job by the store's own stamp: a job enqueued without a run time waits from
/// its enqueue (the store's clock), a delayed one from its run time, one whose lease lapsed from
/// the lease's end; leased and future jobs do not wait.
fn check_oldest_waiting(store: &dyn Leases, tag: &str) {
    let queue = format!("waits{tag}");
    let before = wall();
    store
        .enqueue_job(&NewJob::new(format!("plain{tag}")).queue(&queue))
        .unwrap();
    let after = wall();
    let later = after + 3600.0;
    store
        .enqueue_job(
            &NewJob::new(format!("delayed{tag}"))
                .queue(&queue)
                .run_at(later),
        )
        .unwrap();
    let mine = |now: f64| {
        let all = store.oldest_waiting(now).unwrap();
        all.into_iter().find(|w| w.queue == queue).map(|w| w.since)
    };
    // Clocks of one machine (and a local server): a little leeway for their reading.
    let since = mine(after + 1.0).expect("the plain job waits");
    assert!(
        since >= before - 0.5 && since <= after + 0.5,
        "enqueued between {before} and {after}, waits since {since}"
    );
    // The plain job leased (until later + 10): only the delayed one waits, from its run time.
    assert!(store
        .claim(&format!("plain{tag}"), "w", later - 100.0, 110.0)
        .unwrap()
        .is_granted());
    assert_eq!(
        mine(later - 50.0),
        None,
        "a leased and a future job do not wait"
    );
    assert_eq!(mine(later + 5.0), Some(later));
    // The lease lapses at later + 10: the plain job waits from then, the delayed one still longer.
    assert_eq!(mine(later + 20.0), Some(later));
    let taken = store
        .claim(&format!("delayed{tag}"), "v", later + 20.0, 100.0)
        .unwrap();
    assert!(taken.is_granted());
    assert_eq!(
        mine(later + 21.0),
        Some(later + 10.0),
        "the lapsed lease's end"
    );
}

#[test]
fn the_oldest_waiting_job_counts_from_its_enqueue_time_on_sqlite() {
    let store = LeaseStore::open_in_memory().unwrap();
    check_oldest_waiting(&store, "");
}

#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test listing -- --ignored"]
#[cfg(feature = "postgres")]
fn the_oldest_waiting_job_counts_from_its_enqueue_time_on_postgres() {
    let schema = support::pg_schema::PgSchema::new("oldest_waiting");
    let store = leasefence::PgStore::connect(&schema.url).unwrap();
    check_oldest_waiting(&store, "");
}

/// A file from before the enqueue stamp (no `enqueued` column, the old insert trigger) gains both
/// at its next open: its open jobs count from the upgrade, new ones from their enqueue.
#[test]
fn a_file_from_before_the_enqueue_stamp_is_brought_up_to_date() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    {
        let store = LeaseStore::open(&db).unwrap();
        store.enqueue("old").unwrap();
        store
            .connection()
            .execute_batch(
                "DROP TRIGGER leasefence_order_insert;
                 ALTER TABLE leasefence_order DROP COLUMN enqueued;
                 CREATE TRIGGER leasefence_order_insert AFTER INSERT ON jobs WHEN NEW.id IS NOT NULL
                 BEGIN
                     INSERT OR REPLACE INTO leasefence_order(job, until, open)
                     VALUES (NEW.id, NEW.until, NEW.done = 0 AND NEW.fence < 9223372036854775807);
                 END;",
            )
            .unwrap();
    }
    let upgraded = wall();
    let store = LeaseStore::open(&db).unwrap();
    let since = store.oldest_waiting(upgraded + 1.0).unwrap()[0].since;
    assert!(
        (since - upgraded).abs() < 1.0,
        "the old job counts from the upgrade ({upgraded}), not {since}"
    );
    let trigger: String = store
        .connection()
        .query_row(
            "SELECT sql FROM sqlite_schema WHERE name = 'leasefence_order_insert'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert!(trigger.contains("enqueued"), "{trigger}");
    store
        .enqueue_job(&NewJob::new("new").queue("fresh"))
        .unwrap();
    let fresh = store.oldest_waiting(wall() + 1.0).unwrap();
    assert!(fresh
        .iter()
        .any(|w| w.queue == "fresh" && w.since >= upgraded - 0.5));
}

/// The same on PostgreSQL: a schema without the stamp (the column dropped) gains it again (its
/// open jobs count from the upgrade) and new jobs get the server's clock.
#[test]
#[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh cargo test -p leasefence --test listing -- --ignored"]
#[cfg(feature = "postgres")]
fn a_postgres_schema_from_before_the_enqueue_stamp_is_brought_up_to_date() {
    let schema = support::pg_schema::PgSchema::new("enqueue_stamp");
    {
        let store = leasefence::PgStore::connect(&schema.url).unwrap();
        store.enqueue("old").unwrap();
    }
    let mut client = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
    client
        .batch_execute("ALTER TABLE jobs DROP COLUMN enqueued")
        .unwrap();
    let upgraded = wall();
    let store = leasefence::PgStore::connect(&schema.url).unwrap();
    let since = store.oldest_waiting(upgraded + 1.0).unwrap()[0].since;
    assert!(
        (since - upgraded).abs() < 1.0,
        "the old job counts from the upgrade ({upgraded}), not {since}"
    );
    store
        .enqueue_job(&NewJob::new("new").queue("fresh"))
        .unwrap();
    let before_new = wall();
    let fresh = store.oldest_waiting(before_new + 1.0).unwrap();
    let new_since = fresh.iter().find(|w| w.queue == "fresh").unwrap().since;
    assert!(
        new_since > since,
        "a new job is stamped at its own enqueue ({new_since} > {since})"
    );
}

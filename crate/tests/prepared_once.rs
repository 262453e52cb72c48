#![cfg(not(target_arch = "wasm32"))]
//! A store prepares each of its statements once per connection. SQLite re-prepares a cached
//! statement when a bound value its planner looked at changes (reprepare-on-bind), and it did so
//! for the claim's probes of `leasefence_next` on nearly every claim: parsing and planning them
//! again was about half the CPU time of a claim of 16 jobs. And a statement pushed out of the
//! connection's statement cache (rusqlite's default holds 16) is prepared again at its next use.
//! The store turns on SQLite's query planner stability guarantee and makes room in the cache, on
//! every connection it sets up (crate/src/sqlite/setup.rs); its transaction-control statements
//! come from the cache too (crate/src/sqlite/write_tx.rs).

use std::collections::BTreeMap;

use leasefence::{LeaseCompletion, LeaseStore, NewJob};
use rusqlite::ffi;

/// Every statement the connection holds prepared (its SQL) and how often SQLite prepared it
/// again.
fn prepared(store: &LeaseStore) -> BTreeMap<String, i32> {
    let mut found = BTreeMap::new();
    // SAFETY: the handle is the store's open connection, used on this thread only; the loop only
    // reads the statements' status and SQL, which the connection owns until it closes.
    unsafe {
        let db = store.connection().handle();
        let mut stmt = ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
        while !stmt.is_null() {
            let again = ffi::sqlite3_stmt_status(stmt, ffi::SQLITE_STMTSTATUS_REPREPARE, 0);
            let sql = std::ffi::CStr::from_ptr(ffi::sqlite3_sql(stmt)).to_string_lossy();
            *found.entry(sql.into_owned()).or_default() += again;
            stmt = ffi::sqlite3_next_stmt(db, stmt);
        }
    }
    found
}

/// One round of a worker's hot path at `now`, with values that change at every call: claims one
/// and many (every queue, and named queues, over three priorities), completions one and many,
/// renews, failures with a retry, releases, the failures read before a retry, the counts.
fn round(store: &LeaseStore, now: f64) {
    let claimed = store.claim_next_many("w", 8, now, 30.0).unwrap();
    assert_eq!(claimed.len(), 8, "the queue still has jobs");
    let completions: Vec<LeaseCompletion> = claimed
        .iter()
        .map(|c| LeaseCompletion::new(c.lease(), Some("ok")))
        .collect();
    let answers = store.complete_many(&completions, now + 0.1).unwrap();
    assert!(answers.iter().all(|a| a.is_granted()));
    let one = store.claim_next("w", now + 0.2, 30.0).unwrap().unwrap();
    assert!(store
        .renew(&one.lease(), now + 0.3, 30.0)
        .unwrap()
        .is_granted());
    assert!(store
        .fail(&one.lease(), now + 0.4, Some(now + 0.5), Some("again"))
        .unwrap()
        .is_granted());
    assert!(store.inspect(&one.job).unwrap().is_some());
    let named = store
        .claim_next_in(Some(&["pdf"]), "w", now + 0.6, 30.0)
        .unwrap()
        .unwrap();
    assert!(store.release(&named.lease()).unwrap().is_granted());
    let last = store
        .claim_next_in(Some(&["mail", "pdf"]), "w", now + 0.7, 30.0)
        .unwrap()
        .unwrap();
    assert!(store
        .complete(&last.lease(), now + 0.8, Some("ok"))
        .unwrap()
        .is_granted());
    store.stats(now + 0.9).unwrap();
}

/// Runs the rounds on `store` and checks that after the first (which prepares everything, and
/// may see the schema the open just wrote) no statement was prepared again or left the cache.
fn assert_prepared_once(store: &LeaseStore) {
    let jobs: Vec<NewJob> = (0..600)
        .map(|i| {
            NewJob::new(format!("job-{i}"))
                .queue(["mail", "pdf"][i % 2])
                .priority((i % 3) as i64)
        })
        .collect();
    store.enqueue_many(&jobs).unwrap();
    round(store, 100.0);
    let warm = prepared(store);
    assert!(
        warm.len() > 16,
        "the rounds use more statements than rusqlite's default cache holds: {}",
        warm.len()
    );
    for control in [
        "BEGIN IMMEDIATE",
        "COMMIT",
        "SAVEPOINT leasefence_op",
        "RELEASE leasefence_op",
    ] {
        assert!(
            warm.contains_key(control),
            "`{control}` runs from the cache, not parsed at every transaction"
        );
    }
    for i in 1..25 {
        round(store, 100.0 + f64::from(i) * 0.37);
    }
    let after = prepared(store);
    let evicted: Vec<_> = warm
        .keys()
        .filter(|sql| !after.contains_key(*sql))
        .collect();
    assert!(
        evicted.is_empty(),
        "statements pushed out of the cache: {evicted:#?}"
    );
    let again: Vec<_> = after
        .iter()
        .filter(|(sql, n)| warm.get(*sql).is_some_and(|before| *n > before))
        .map(|(sql, n)| (sql.lines().next().unwrap_or_default(), n - warm[sql]))
        .collect();
    assert!(
        again.is_empty(),
        "statements SQLite prepared again (times): {again:#?}"
    );
}

#[test]
fn a_stores_statements_are_prepared_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = LeaseStore::open(dir.path().join("q.db")).unwrap();
    assert_prepared_once(&store);
}

#[test]
fn a_connection_the_caller_opened_gets_the_same_statement_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("q.db")).unwrap();
    let store = LeaseStore::from_connection(conn, "q.db").unwrap();
    assert_prepared_once(&store);
}

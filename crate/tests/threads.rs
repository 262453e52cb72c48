#![cfg(not(target_arch = "wasm32"))]
//! Concurrency on real threads, each with its own connection, on one real SQLite file.
//!
//! Two properties of the contract (SPEC section 2) are checked here under contention:
//!
//! - `claim_many` (seed and `LeaseStore`): on a claimable job exactly one owner gets a fence, and
//!   it is the next fence; on a held job nobody does.
//! - A mixed workload of claims, `claim_next`, renewals, releases and completes, on a shared
//!   logical clock with short leases, where some workers deliberately stall past their lease:
//!   no fence is handed out twice, fences grow in real-time order, at most one complete per job
//!   succeeds, a stale complete is always refused and never changes the stored result, and the
//!   final rows match exactly what the successful operations did.

mod support;

use std::path::Path;
use std::time::Instant;

use leasefence::{seed, Fence, LeaseStore, Outcome, Reason};
use support::workload::{self, EPOCHS, JOBS};

#[test]
fn claim_many_has_exactly_one_winner_per_round() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("claim_many.db");
    seed::init_db(&db).unwrap();
    let store = LeaseStore::open(&db).unwrap();
    let owner_names: Vec<String> = (0..32).map(|i| format!("owner-{i:02}")).collect();
    let owners: Vec<&str> = owner_names.iter().map(String::as_str).collect();
    let ttl = 10.0;

    for round in 0..20 {
        let use_seed = round % 2 == 0;
        let job = format!("round-{round}");
        assert!(seed::enqueue(&db, &job).unwrap());
        let now = f64::from(round) * 100.0;

        // Runs claim_many through the seed module or the store, as plain Option<Fence>s.
        let run = |now: f64| -> Vec<Option<Fence>> {
            if use_seed {
                seed::claim_many(&db, &job, &owners, now, ttl).unwrap()
            } else {
                store
                    .claim_many(&job, &owners, now, ttl)
                    .unwrap()
                    .into_iter()
                    .map(Outcome::granted)
                    .collect()
            }
        };

        // Fresh job: exactly one fence, and it is 1.
        let got = run(now);
        assert_eq!(got.len(), owners.len());
        let winners: Vec<usize> = (0..got.len()).filter(|&i| got[i].is_some()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {got:?}");
        let winner = winners[0];
        assert_eq!(got[winner], Some(1), "round {round}");
        let row = seed::state(&db, &job).unwrap().unwrap();
        assert_eq!(row.owner.as_deref(), Some(owners[winner]), "round {round}");
        assert_eq!((row.fence, row.until, row.done), (1, now + ttl, false));

        // Now held (until > now): nobody wins, nothing changes.
        let held = run(now + ttl / 2.0);
        assert!(held.iter().all(Option::is_none), "round {round}: {held:?}");
        assert_eq!(seed::state(&db, &job).unwrap().unwrap(), row);

        // The lease's end is claimable again: exactly one winner, fence 2 (never a reused 1).
        let again = run(now + ttl);
        let winners: Vec<usize> = (0..again.len()).filter(|&i| again[i].is_some()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {again:?}");
        assert_eq!(again[winners[0]], Some(2), "round {round}");
        let row = seed::state(&db, &job).unwrap().unwrap();
        assert_eq!(row.owner.as_deref(), Some(owners[winners[0]]));
        assert_eq!(row.fence, 2);

        // The store's typed answers agree: a held claim says who holds it.
        if !use_seed {
            let outcomes = store
                .claim_many(&job, &owners[..4], now + ttl + 1.0, ttl)
                .unwrap();
            for outcome in outcomes {
                assert_eq!(
                    outcome,
                    Outcome::Rejected(Reason::Held {
                        owner: Some(owners[winners[0]].to_string()),
                        until: now + 2.0 * ttl,
                    })
                );
            }
        }
    }
}

/// How many threads (one `LeaseStore` each) share the file.
const THREADS: usize = 8;

#[test]
fn threads_with_stalls_never_break_fencing() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("threads.db");
    let tally = workload::run(&db, THREADS, |db: &Path| LeaseStore::open(db).unwrap());
    eprintln!(
        "threads: {EPOCHS} runs x {THREADS} threads x {JOBS} jobs in {:?}: {tally:?}",
        started.elapsed()
    );
    tally.assert_exercised(50, &["stale_fence", "expired", "done", "not_owner"]);
    workload::assert_integrity(&db);
}

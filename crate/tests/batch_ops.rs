//! The batch operations (docs/contract.md section 10) on SQLite: each answers exactly as its
//! single operations would in list order, in one transaction (one commit's syncs whatever the
//! list's length), and a bad list or a failing item changes nothing.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use leasefence::{Error, Lease, LeaseCompletion, LeaseStore, NewJob, Outcome, MAX_BATCH};
use support::fault_vfs;

fn store() -> LeaseStore {
    LeaseStore::open_in_memory().unwrap()
}

fn some_jobs() -> Vec<NewJob> {
    vec![
        NewJob::new("a"),
        NewJob::new("b").run_at(50.0).payload("p-b"),
        NewJob::new("c").payload("p-c"),
        NewJob::new("a").payload("ignored"),
        NewJob::new("d").run_at(5.0),
        NewJob::new("e"),
    ]
}

#[test]
fn enqueue_many_answers_as_successive_enqueues() {
    let (batch, single) = (store(), store());
    let answers = batch.enqueue_many(&some_jobs()).unwrap();
    let expected: Vec<bool> = some_jobs()
        .iter()
        .map(|j| {
            single
                .enqueue_with(&j.job, j.run_at, j.payload.as_deref())
                .unwrap()
        })
        .collect();
    assert_eq!(answers, expected);
    assert_eq!(answers, [true, true, true, false, true, true]);
    assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
    for job in ["a", "b", "c"] {
        assert_eq!(
            batch.inspect(job).unwrap().unwrap().payload,
            single.inspect(job).unwrap().unwrap().payload
        );
    }
}

#[test]
fn claim_next_many_equals_n_claim_next_calls() {
    for n in [1, 2, 3, 10] {
        let (batch, single) = (store(), store());
        batch.enqueue_many(&some_jobs()).unwrap();
        single.enqueue_many(&some_jobs()).unwrap();
        let claimed = batch.claim_next_many("me", n, 10.0, 30.0).unwrap();
        let mut expected = Vec::new();
        while expected.len() < n {
            match single.claim_next("me", 10.0, 30.0).unwrap() {
                Some(job) => expected.push(job),
                None => break,
            }
        }
        assert_eq!(claimed, expected, "n = {n}");
        assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
    }
    // At 10.0 "b" (run_at 50) is not claimable: four jobs are.
    let s = store();
    s.enqueue_many(&some_jobs()).unwrap();
    let order: Vec<String> = s
        .claim_next_many("me", 10, 10.0, 30.0)
        .unwrap()
        .into_iter()
        .map(|c| c.job)
        .collect();
    assert_eq!(
        order,
        ["a", "c", "e", "d"],
        "smallest until, then earliest enqueued"
    );
    assert!(s.claim_next_many("me", 10, 10.0, 30.0).unwrap().is_empty());
}

/// Leases in every state a renew or complete can meet: held, stale, expired, missing, another
/// owner's, and one listed twice.
fn mixed_leases(s: &LeaseStore) -> Vec<Lease> {
    s.enqueue_many(&["a", "b", "c", "d"].map(NewJob::new))
        .unwrap();
    let a = s
        .claim("a", "me", 0.0, 100.0)
        .unwrap()
        .lease("a", "me")
        .unwrap();
    let b_old = s
        .claim("b", "me", 0.0, 1.0)
        .unwrap()
        .lease("b", "me")
        .unwrap();
    assert!(s.claim("b", "other", 2.0, 100.0).unwrap().is_granted());
    let c = s
        .claim("c", "me", 0.0, 3.0)
        .unwrap()
        .lease("c", "me")
        .unwrap();
    assert!(s.claim("d", "other", 0.0, 100.0).unwrap().is_granted());
    vec![
        a.clone(),
        b_old,
        c,
        Lease::new("missing", "me", 1),
        Lease::new("d", "me", 1),
        a,
    ]
}

#[test]
fn renew_many_answers_as_successive_renews() {
    let (batch, single) = (store(), store());
    let leases = mixed_leases(&batch);
    mixed_leases(&single);
    let answers = batch.renew_many(&leases, 10.0, 30.0).unwrap();
    let expected: Vec<Outcome<()>> = leases
        .iter()
        .map(|l| single.renew(l, 10.0, 30.0).unwrap())
        .collect();
    assert_eq!(answers, expected);
    let codes: Vec<&str> = answers
        .iter()
        .map(|a| a.reason().map_or("granted", |r| r.code()))
        .collect();
    assert_eq!(
        codes,
        [
            "granted",
            "stale_fence",
            "expired",
            "not_found",
            "not_owner",
            "granted"
        ]
    );
    assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
}

#[test]
fn complete_many_answers_as_successive_completes() {
    let (batch, single) = (store(), store());
    let leases = mixed_leases(&batch);
    mixed_leases(&single);
    let completions: Vec<LeaseCompletion> = leases
        .iter()
        .enumerate()
        .map(|(i, l)| LeaseCompletion::new(l.clone(), Some(&format!("r{i}"))))
        .collect();
    let answers = batch.complete_many(&completions, 2.5).unwrap();
    let expected: Vec<Outcome<()>> = completions
        .iter()
        .map(|c| single.complete(&c.lease, 2.5, c.result.as_deref()).unwrap())
        .collect();
    assert_eq!(answers, expected);
    // The second completion of "a" meets the job done by the first.
    assert_eq!(answers[5].reason().map(|r| r.code()), Some("done"));
    assert_eq!(
        batch.state("a").unwrap().unwrap().result.as_deref(),
        Some("r0")
    );
    assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
}

#[test]
fn a_bad_list_is_refused_whole_and_changes_nothing() {
    let s = store();
    s.enqueue_many(&[NewJob::new("held")]).unwrap();
    let lease = s
        .claim("held", "me", 0.0, 10.0)
        .unwrap()
        .lease("held", "me")
        .unwrap();
    let before = s.jobs().unwrap();

    let too_many: Vec<NewJob> = (0..=MAX_BATCH)
        .map(|i| NewJob::new(format!("j{i}")))
        .collect();
    let err = s.enqueue_many(&too_many).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                argument: "jobs",
                ..
            }
        ),
        "{err:?}"
    );
    let bad_time = [NewJob::new("x"), NewJob::new("y").run_at(f64::INFINITY)];
    assert!(matches!(
        s.enqueue_many(&bad_time),
        Err(Error::InvalidArgument {
            argument: "run_at",
            ..
        })
    ));
    for n in [0, MAX_BATCH + 1] {
        assert!(matches!(
            s.claim_next_many("me", n, 0.0, 10.0),
            Err(Error::InvalidArgument { argument: "n", .. })
        ));
    }
    assert!(matches!(
        s.claim_next_many("me", 1, 0.0, -1.0),
        Err(Error::InvalidArgument {
            argument: "ttl",
            ..
        })
    ));
    let many_leases = vec![lease.clone(); MAX_BATCH + 1];
    assert!(matches!(
        s.renew_many(&many_leases, 1.0, 10.0),
        Err(Error::InvalidArgument {
            argument: "leases",
            ..
        })
    ));
    assert!(matches!(
        s.renew_many(std::slice::from_ref(&lease), f64::NAN, 10.0),
        Err(Error::InvalidArgument {
            argument: "now",
            ..
        })
    ));
    assert!(matches!(
        s.complete_many(&[LeaseCompletion::new(lease, None)], f64::NAN),
        Err(Error::InvalidArgument {
            argument: "now",
            ..
        })
    ));
    assert_eq!(s.jobs().unwrap(), before);
}

#[test]
fn an_item_failing_in_storage_fails_the_whole_batch_and_applies_nothing() {
    let s = store();
    s.connection()
        .execute_batch(
            "CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs WHEN NEW.id = 'poison'
             BEGIN SELECT RAISE(ABORT, 'poison refused'); END;",
        )
        .unwrap();
    let jobs = ["first", "second", "poison", "last"].map(NewJob::new);
    let err = s.enqueue_many(&jobs).unwrap_err();
    assert!(err.to_string().contains("poison refused"), "{err}");
    assert!(s.jobs().unwrap().is_empty(), "nothing of the batch applied");
    // The connection is usable afterwards, and outside a transaction.
    assert_eq!(s.enqueue_many(&jobs[..2]).unwrap(), [true, true]);
    assert!(s.connection().is_autocommit());
}

#[test]
fn a_batch_costs_the_syncs_of_one_operation_whatever_its_length() {
    let dir = tempfile::tempdir().unwrap();
    fault_vfs::register(dir.path());
    let conn = fault_vfs::open_connection(&dir.path().join("q.db")).unwrap();
    let s = LeaseStore::from_connection(conn, "q.db").unwrap();
    let syncs = || fault_vfs::calls()[2];

    let at = syncs();
    s.enqueue("one").unwrap();
    let one = syncs() - at;
    assert!(one >= 1, "a commit syncs");

    let jobs: Vec<NewJob> = (0..500).map(|i| NewJob::new(format!("j{i}"))).collect();
    let at = syncs();
    assert!(s.enqueue_many(&jobs).unwrap().iter().all(|&added| added));
    assert_eq!(syncs() - at, one, "500 enqueues in one commit");

    let at = syncs();
    let claimed = s.claim_next_many("me", 300, 0.0, 60.0).unwrap();
    assert_eq!(claimed.len(), 300);
    assert_eq!(syncs() - at, one, "300 claims in one commit");

    let leases: Vec<Lease> = claimed.iter().map(|c| c.lease()).collect();
    let at = syncs();
    s.renew_many(&leases, 1.0, 60.0).unwrap();
    let done: Vec<LeaseCompletion> = leases
        .into_iter()
        .map(|l| LeaseCompletion::new(l, None))
        .collect();
    s.complete_many(&done, 2.0).unwrap();
    assert_eq!(
        syncs() - at,
        2 * one,
        "renew_many and complete_many: one commit each"
    );
}

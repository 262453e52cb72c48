//! The batch operations (docs/contract.md section 10) on SQLite and on PostgreSQL: each answers
//! exactly as its single operations would in list order, in one transaction (on SQLite, one
//! commit's syncs whatever the list's length), and a bad list or a failing item changes nothing.
//!
//! Every shared case runs on an in-memory SQLite store and, `#[ignore]`d, on a schema of its own
//! on a PostgreSQL server (`bash scripts/postgres.sh` runs those with `--ignored`). PostgreSQL
//! adds its own: U+0000 refused before the server is asked, and claimers on several connections
//! draining one queue while another transaction holds some of its rows locked.

#![cfg(not(target_arch = "wasm32"))]

mod support;

use std::ops::Deref;

use leasefence::{
    Error, Lease, LeaseCompletion, LeaseStore, Leases, NewJob, Outcome, WorkerRound, MAX_BATCH,
};
use support::fault_vfs;
#[cfg(feature = "postgres")]
use support::pg_schema::PgSchema;

/// A fresh, empty store of the backend under test, and what keeps it alive.
enum Store {
    Sqlite(LeaseStore),
    /// The store first, so that its connection closes before the schema is dropped.
    #[cfg(feature = "postgres")]
    Postgres(Box<leasefence::PgStore>, PgSchema),
}

impl Deref for Store {
    type Target = dyn Leases;

    fn deref(&self) -> &(dyn Leases + 'static) {
        match self {
            Store::Sqlite(store) => store,
            #[cfg(feature = "postgres")]
            Store::Postgres(store, _) => store.as_ref(),
        }
    }
}

/// What the failing-item case makes fail, as a trigger of the backend: inserting job `poison`,
/// any write of job `cursed`, storing the result `poison`, and renewing a lease to the end it
/// already has (the second renewal of one lease in one call).
impl Store {
    fn install_refusals(&self) {
        match self {
            Store::Sqlite(store) => store
                .connection()
                .execute_batch(
                    "CREATE TRIGGER refuse_poison BEFORE INSERT ON jobs WHEN NEW.id = 'poison'
                     BEGIN SELECT RAISE(ABORT, 'poison refused'); END;
                     CREATE TRIGGER refuse_cursed BEFORE UPDATE ON jobs WHEN NEW.id = 'cursed'
                     BEGIN SELECT RAISE(ABORT, 'cursed refused'); END;
                     CREATE TRIGGER refuse_result BEFORE UPDATE ON jobs WHEN NEW.result = 'poison'
                     BEGIN SELECT RAISE(ABORT, 'poison result refused'); END;
                     CREATE TRIGGER refuse_standstill BEFORE UPDATE ON jobs
                     WHEN OLD.owner IS NOT NULL AND NEW.owner = OLD.owner
                      AND NEW.fence = OLD.fence AND NEW.until = OLD.until AND NEW.done = 0
                     BEGIN SELECT RAISE(ABORT, 'standstill refused'); END;",
                )
                .unwrap(),
            #[cfg(feature = "postgres")]
            Store::Postgres(_, schema) => {
                let mut admin = postgres::Client::connect(&schema.url, postgres::NoTls).unwrap();
                admin
                    .batch_execute(
                        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
                           IF TG_OP = 'INSERT' AND NEW.id = 'poison' THEN
                             RAISE EXCEPTION 'poison refused'; END IF;
                           IF TG_OP = 'UPDATE' AND NEW.id = 'cursed' THEN
                             RAISE EXCEPTION 'cursed refused'; END IF;
                           IF TG_OP = 'UPDATE' AND NEW.result = 'poison' THEN
                             RAISE EXCEPTION 'poison result refused'; END IF;
                           IF TG_OP = 'UPDATE' AND OLD.owner IS NOT NULL
                              AND NEW.owner = OLD.owner AND NEW.fence = OLD.fence
                              AND NEW.until = OLD.until AND NEW.done = 0 THEN
                             RAISE EXCEPTION 'standstill refused'; END IF;
                           RETURN NEW; END $$;
                         CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON jobs
                         FOR EACH ROW EXECUTE FUNCTION refuse();",
                    )
                    .unwrap();
            }
        }
    }
}

fn sqlite() -> Store {
    Store::Sqlite(LeaseStore::open_in_memory().unwrap())
}

#[cfg(feature = "postgres")]
fn postgres() -> Store {
    let schema = PgSchema::new("batch_ops");
    let store = Box::new(leasefence::PgStore::connect(&schema.url).unwrap());
    Store::Postgres(store, schema)
}

/// Each shared case as an SQLite test and an `#[ignore]`d PostgreSQL test.
macro_rules! on_both_backends {
    ($($case:ident => $on_postgres:ident),* $(,)?) => {$(
        #[test]
        fn $case() {
            cases::$case(&sqlite);
        }

        #[cfg(feature = "postgres")]
        #[test]
        #[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh runs it"]
        fn $on_postgres() {
            cases::$case(&postgres);
        }
    )*};
}

on_both_backends! {
    enqueue_many_answers_as_successive_enqueues => postgres_enqueue_many_answers_as_successive_enqueues,
    claim_next_many_equals_n_claim_next_calls => postgres_claim_next_many_equals_n_claim_next_calls,
    renew_many_answers_as_successive_renews => postgres_renew_many_answers_as_successive_renews,
    complete_many_answers_as_successive_completes => postgres_complete_many_answers_as_successive_completes,
    a_bad_list_is_refused_whole_and_changes_nothing => postgres_a_bad_list_is_refused_whole_and_changes_nothing,
    an_item_failing_in_storage_fails_the_whole_batch_and_applies_nothing => postgres_an_item_failing_in_storage_fails_the_whole_batch_and_applies_nothing,
    a_worker_round_answers_as_complete_many_then_claim_next_many => postgres_a_worker_round_answers_as_complete_many_then_claim_next_many,
}

mod cases {
    use super::*;

    pub type Fresh<'a> = &'a dyn Fn() -> Store;

    pub fn some_jobs() -> Vec<NewJob> {
        vec![
            NewJob::new("a"),
            NewJob::new("b").run_at(50.0).payload("p-b"),
            NewJob::new("c").payload("p-c"),
            NewJob::new("a").payload("ignored"),
            NewJob::new("d").run_at(5.0),
            NewJob::new("e"),
        ]
    }

    pub fn enqueue_many_answers_as_successive_enqueues(fresh: Fresh) {
        let (batch, single) = (fresh(), fresh());
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
        // Ids that exist already, and one listed twice after them: false, nothing changed.
        let again = [
            NewJob::new("e").payload("x"),
            NewJob::new("f"),
            NewJob::new("f"),
        ];
        assert_eq!(batch.enqueue_many(&again).unwrap(), [false, true, false]);
        assert_eq!(batch.inspect("e").unwrap().unwrap().payload, None);
        assert_eq!(batch.enqueue_many(&[]).unwrap(), Vec::<bool>::new());
    }

    pub fn claim_next_many_equals_n_claim_next_calls(fresh: Fresh) {
        for n in [1, 2, 3, 10] {
            let (batch, single) = (fresh(), fresh());
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
        let s = fresh();
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
    pub fn mixed_leases(s: &dyn Leases) -> Vec<Lease> {
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

    pub fn renew_many_answers_as_successive_renews(fresh: Fresh) {
        let (batch, single) = (fresh(), fresh());
        let leases = mixed_leases(&*batch);
        mixed_leases(&*single);
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
        assert_eq!(batch.renew_many(&[], 10.0, 30.0).unwrap(), []);
        // One lease listed many times, between others: renewed each time, as by as many renews.
        let mut repeated = vec![leases[0].clone(); 40];
        repeated.insert(20, leases[1].clone());
        repeated.push(leases[2].clone());
        let answers = batch.renew_many(&repeated, 11.0, 30.0).unwrap();
        let expected: Vec<Outcome<()>> = repeated
            .iter()
            .map(|l| single.renew(l, 11.0, 30.0).unwrap())
            .collect();
        assert_eq!(answers, expected);
        assert_eq!(answers.iter().filter(|a| a.is_granted()).count(), 40);
        assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
    }

    pub fn complete_many_answers_as_successive_completes(fresh: Fresh) {
        let (batch, single) = (fresh(), fresh());
        let leases = mixed_leases(&*batch);
        mixed_leases(&*single);
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
        assert_eq!(batch.complete_many(&[], 2.5).unwrap(), []);
        // A lease completed three times in one list: the first result stays, the others meet
        // the job done.
        let (batch, single) = (fresh(), fresh());
        let lease = mixed_leases(&*batch).swap_remove(0);
        mixed_leases(&*single);
        let thrice: Vec<LeaseCompletion> = ["first", "second", "third"]
            .iter()
            .map(|r| LeaseCompletion::new(lease.clone(), Some(r)))
            .collect();
        let answers = batch.complete_many(&thrice, 2.5).unwrap();
        let expected: Vec<Outcome<()>> = thrice
            .iter()
            .map(|c| single.complete(&c.lease, 2.5, c.result.as_deref()).unwrap())
            .collect();
        assert_eq!(answers, expected);
        assert_eq!(
            batch.state(&lease.job).unwrap().unwrap().result.as_deref(),
            Some("first")
        );
        assert_eq!(batch.jobs().unwrap(), single.jobs().unwrap());
    }

    pub fn a_bad_list_is_refused_whole_and_changes_nothing(fresh: Fresh) {
        let s = fresh();
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
        let many_completions = vec![LeaseCompletion::new(lease.clone(), None); MAX_BATCH + 1];
        assert!(matches!(
            s.complete_many(&many_completions, 1.0),
            Err(Error::InvalidArgument {
                argument: "leases",
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

    /// One item failing in storage (a trigger's error, see [`Store::install_refusals`]) fails
    /// the call: the error is returned and no item of the list is applied, whichever item failed
    /// and however far the call had got.
    pub fn an_item_failing_in_storage_fails_the_whole_batch_and_applies_nothing(fresh: Fresh) {
        let s = fresh();
        s.install_refusals();
        let message = |err: Error| err.to_string();

        let jobs = ["first", "second", "poison", "last"].map(NewJob::new);
        let err = message(s.enqueue_many(&jobs).unwrap_err());
        assert!(err.contains("poison refused"), "{err}");
        assert!(s.jobs().unwrap().is_empty(), "nothing of the batch applied");

        let jobs = ["a", "b", "cursed", "c"].map(NewJob::new);
        assert_eq!(s.enqueue_many(&jobs).unwrap(), [true; 4]);
        let unclaimed = s.jobs().unwrap();
        // The third claim fails: the first two are not applied either.
        let err = message(s.claim_next_many("me", 4, 0.0, 30.0).unwrap_err());
        assert!(err.contains("cursed refused"), "{err}");
        assert_eq!(s.jobs().unwrap(), unclaimed);

        let a = s
            .claim("a", "me", 0.0, 30.0)
            .unwrap()
            .lease("a", "me")
            .unwrap();
        let b = s
            .claim("b", "me", 0.0, 30.0)
            .unwrap()
            .lease("b", "me")
            .unwrap();
        let held = s.jobs().unwrap();
        let done = [
            LeaseCompletion::new(a.clone(), Some("ok")),
            LeaseCompletion::new(b.clone(), Some("poison")),
        ];
        let err = message(s.complete_many(&done, 1.0).unwrap_err());
        assert!(err.contains("poison result refused"), "{err}");
        assert_eq!(s.jobs().unwrap(), held);
        // The second renewal of `a` (to the end the first gave it) fails after both first
        // renewals were made: neither stays.
        let err = message(
            s.renew_many(&[a.clone(), b.clone(), a.clone()], 1.0, 30.0)
                .unwrap_err(),
        );
        assert!(err.contains("standstill refused"), "{err}");
        assert_eq!(s.jobs().unwrap(), held);

        // The store works on.
        assert_eq!(s.enqueue_many(&jobs[..1]).unwrap(), [false]);
        let renewed = s.renew_many(&[a, b], 1.0, 30.0).unwrap();
        assert!(renewed.iter().all(|r| r.is_granted()), "{renewed:?}");
    }

    /// A worker's round (`complete_then_claim`) answers what `complete_many` and then
    /// `claim_next_many_in` answer on a store in the same state, and leaves the same rows; a
    /// claim refused for its count still lets the completions stand; completions refused whole
    /// (bad arguments, an item failing in storage) leave everything as it was, the claim unmade.
    pub fn a_worker_round_answers_as_complete_many_then_claim_next_many(fresh: Fresh) {
        let (round, calls) = (fresh(), fresh());
        let more = [
            NewJob::new("e"),
            NewJob::new("f").payload("p-f"),
            NewJob::new("g").run_at(50.0),
            NewJob::new("h"),
        ];
        let leases = mixed_leases(&*round);
        mixed_leases(&*calls);
        for s in [&round, &calls] {
            s.enqueue_many(&more).unwrap();
        }
        let completions: Vec<LeaseCompletion> = leases
            .iter()
            .enumerate()
            .map(|(i, l)| LeaseCompletion::new(l.clone(), Some(&format!("r{i}"))))
            .collect();
        // Four wanted at 2.5: e, f and h are claimable (g waits for 50, b and d are held).
        let answer = round
            .complete_then_claim(&round_of(&completions, 4, 2.5))
            .unwrap();
        let completed = calls.complete_many(&completions, 2.5).unwrap();
        let claimed = calls.claim_next_many_in(None, "me", 4, 2.5, 30.0).unwrap();
        assert_eq!(answer.completed, completed);
        assert_eq!(answer.claimed.unwrap(), claimed);
        assert_eq!(
            claimed.iter().map(|c| c.job.as_str()).collect::<Vec<_>>(),
            ["e", "f", "h"]
        );
        assert_eq!(round.jobs().unwrap(), calls.jobs().unwrap());

        // A claim of no job is refused; the completion it came with is written all the same.
        let s = fresh();
        let done = [LeaseCompletion::new(x_held(&s), Some("ok"))];
        let answer = s.complete_then_claim(&round_of(&done, 0, 1.0)).unwrap();
        assert_eq!(answer.completed, [Outcome::Granted(())]);
        assert!(
            matches!(
                answer.claimed,
                Err(Error::InvalidArgument { argument: "n", .. })
            ),
            "{:?}",
            answer.claimed
        );
        assert_eq!(s.state("x").unwrap().unwrap().result.as_deref(), Some("ok"));
        assert_eq!(
            s.state("y").unwrap().unwrap().owner,
            None,
            "nothing claimed"
        );

        // Completions refused whole: nothing written, nothing claimed.
        let s = fresh();
        s.install_refusals();
        let x = x_held(&s);
        let before = s.jobs().unwrap();
        let poison = [LeaseCompletion::new(x.clone(), Some("poison"))];
        let err = s
            .complete_then_claim(&round_of(&poison, 2, 1.0))
            .unwrap_err()
            .to_string();
        assert!(err.contains("poison result refused"), "{err}");
        assert_eq!(s.jobs().unwrap(), before);
        let ok = [LeaseCompletion::new(x, Some("ok"))];
        assert!(matches!(
            s.complete_then_claim(&round_of(&ok, 2, f64::NAN)),
            Err(Error::InvalidArgument {
                argument: "now",
                ..
            })
        ));
        assert_eq!(s.jobs().unwrap(), before);
    }

    /// A round of `me` (every queue, leases of 30 s): `completions`, then a claim of `claim`.
    fn round_of(completions: &[LeaseCompletion], claim: usize, now: f64) -> WorkerRound<'_> {
        WorkerRound {
            completions,
            queues: None,
            owner: "me",
            claim,
            now,
            ttl: 30.0,
        }
    }

    /// Jobs `x` and `y` in `s`, `x` claimed by `me` at 0 for 30 s: its lease.
    fn x_held(s: &Store) -> Lease {
        s.enqueue_many(&[NewJob::new("x"), NewJob::new("y")])
            .unwrap();
        s.claim("x", "me", 0.0, 30.0)
            .unwrap()
            .lease("x", "me")
            .unwrap()
    }
}

#[test]
fn a_failed_sqlite_batch_leaves_the_connection_outside_a_transaction() {
    let s = sqlite();
    s.install_refusals();
    assert!(s.enqueue_many(&["ok", "poison"].map(NewJob::new)).is_err());
    let Store::Sqlite(store) = &s else {
        unreachable!("an SQLite store")
    };
    assert!(store.connection().is_autocommit());
    assert!(store.jobs().unwrap().is_empty());
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

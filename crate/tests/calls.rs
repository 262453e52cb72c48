#![cfg(not(target_arch = "wasm32"))]
//! `Leases::execute` is the one way in: every typed method of the trait makes exactly one call,
//! the one of its own name, and answers what the call's reply holds; a reply of the wrong shape
//! is an error, never a panic; a call made owned for another thread is the same call.

use std::borrow::Cow;
use std::sync::Mutex;

use leasefence::{
    Call, Finish, JobQuery, Lease, LeaseCompletion, LeaseStore, Leases, NewJob, Outcome, Prune,
    Queues, Reply, Result, Schedule, Statement, WorkerBeat, WorkerRound,
};

mod support;

use support::wrapped::{Intercept, Wrapped};

/// Notes the name of every call a real store runs, and can answer one call name with the wrong
/// reply.
#[derive(Debug, Default)]
struct Noting {
    calls: Mutex<Vec<&'static str>>,
    wrong_reply_for: Option<&'static str>,
}

impl Intercept for Noting {
    fn execute(&self, _: &dyn Leases, store: &LeaseStore, call: Call<'_>) -> Result<Reply> {
        self.calls.lock().unwrap().push(call.name());
        if self.wrong_reply_for == Some(call.name()) {
            return Ok(Reply::Pruned(7));
        }
        store.execute(call)
    }
}

/// A store in memory whose calls are noted.
fn noting() -> Wrapped<Noting> {
    Wrapped {
        store: LeaseStore::open_in_memory().unwrap(),
        intercept: Noting::default(),
    }
}

/// The names of the calls noted since the last look.
fn taken(store: &Wrapped<Noting>) -> Vec<&'static str> {
    std::mem::take(&mut *store.intercept.calls.lock().unwrap())
}

/// Runs one typed method on `store` and checks it made exactly the call `name`.
macro_rules! makes {
    ($store:expr, $name:literal, $method:expr) => {{
        let _ = $method.unwrap();
        assert_eq!(taken(&$store), [$name], "the typed method for {}", $name);
    }};
}

#[test]
fn each_typed_method_makes_one_call_of_its_own_name() {
    let s = noting();
    let lease = Lease::new("a", "w", 1);
    let other = Lease::new("d", "x", 1);
    let round = WorkerRound {
        completions: &[],
        queues: Some(&["q"]),
        owner: "w",
        claim: 1,
        now: 1.0,
        ttl: 30.0,
    };
    let beat = WorkerBeat::new("w", "host", 1, 0.0);
    makes!(s, "init", s.init());
    makes!(s, "enqueue", s.enqueue("a"));
    makes!(s, "enqueue", s.enqueue_with("b", Some(5.0), Some("p")));
    makes!(s, "enqueue", s.enqueue_job(&NewJob::new("c").queue("q")));
    makes!(s, "enqueue_many", s.enqueue_many(&[NewJob::new("d")]));
    makes!(
        s,
        "enqueue_many",
        s.enqueue_many_with(&[NewJob::new("e")], &[])
    );
    makes!(s, "state", s.state("a"));
    makes!(s, "jobs", s.jobs());
    makes!(s, "claim", s.claim("a", "w", 0.0, 30.0));
    makes!(s, "claim_many", s.claim_many("d", &["x", "y"], 0.0, 30.0));
    makes!(s, "claim_next", s.claim_next("w", 0.0, 30.0));
    makes!(
        s,
        "claim_next",
        s.claim_next_in(Some(&["q"]), "w", 0.0, 30.0)
    );
    makes!(s, "claim_next_many", s.claim_next_many("w", 2, 0.0, 30.0));
    makes!(s, "renew", s.renew(&lease, 1.0, 30.0));
    makes!(s, "renew_many", s.renew_many(&[], 1.0, 30.0));
    makes!(s, "heartbeat", s.heartbeat(&beat, &[], 1.0, 30.0));
    makes!(s, "complete", s.complete(&lease, 2.0, None));
    makes!(s, "complete_many", s.complete_many(&[], 2.0));
    makes!(s, "complete_then_claim", s.complete_then_claim(&round));
    makes!(s, "fail", s.fail(&other, 2.0, None, None));
    makes!(s, "release", s.release(&other));
    makes!(s, "revive", s.revive("d", 3.0));
    makes!(s, "fenced", s.fenced(&lease, 3.0, &[], Finish::KeepLease));
    makes!(s, "inspect", s.inspect("a"));
    makes!(s, "stats", s.stats(3.0));
    makes!(s, "stats", s.stats_in(Some("q"), 3.0));
    makes!(s, "list_jobs", s.list_jobs(&JobQuery::new(), 3.0));
    makes!(s, "queue_stats", s.queue_stats(3.0));
    makes!(s, "oldest_waiting", s.oldest_waiting(3.0));
    makes!(s, "list_workers", s.list_workers(3.0));
    makes!(s, "prune", s.prune(&Prune::finished_before(0.0)));
    makes!(s, "fence_floor", s.fence_floor());
    makes!(s, "schedule", s.schedule(&Schedule::new("t", "* * * * *")));
    makes!(s, "unschedule", s.unschedule("t"));
    makes!(s, "schedules", s.schedules());
    makes!(s, "enqueue_due", s.enqueue_due(3.0));
    makes!(s, "next_due", s.next_due_in(None));
}

#[test]
fn a_reply_of_the_wrong_shape_is_an_internal_error_naming_the_call() {
    let mut store = noting();
    store.intercept.wrong_reply_for = Some("claim");
    store.enqueue("a").unwrap();
    let err = store.claim("a", "w", 0.0, 30.0).unwrap_err();
    assert!(matches!(err, leasefence::Error::Internal { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("claim") && text.contains("Pruned"), "{text}");
    // Nothing was claimed: the wrong reply came instead of the store's.
    assert_eq!(store.state("a").unwrap().unwrap().fence, 0);
}

#[test]
fn a_call_made_owned_is_the_same_call_and_answers_the_same() {
    let lease = Lease::new("a", "w", 1);
    let completions = [LeaseCompletion::new(lease.clone(), Some("r"))];
    let statements = [Statement::new("SELECT 1", [])];
    let borrowed = [
        Call::Complete {
            lease: Cow::Borrowed(&lease),
            now: 1.0,
            result: Some("r".into()),
        },
        Call::CompleteThenClaim {
            completions: Cow::Borrowed(&completions),
            queues: Queues::of(Some(&["q", "r"])),
            owner: "w".into(),
            claim: 2,
            now: 1.0,
            ttl: 30.0,
        },
        Call::Fenced {
            lease: Cow::Borrowed(&lease),
            now: 1.0,
            statements: Cow::Borrowed(&statements),
            finish: Finish::Complete(Some("r".into())),
        },
        Call::ClaimMany {
            job: "a".into(),
            owners: vec!["w".into(), "v".into()],
            now: 1.0,
            ttl: 30.0,
        },
    ];
    for call in borrowed {
        let owned: Call<'static> = call.clone().into_owned();
        assert_eq!(owned, call);
        assert_eq!(owned.name(), call.name());
    }

    // Run on a thread of its own, as the shared store's leader runs it, it answers as at home.
    let store = LeaseStore::open_in_memory().unwrap();
    assert!(store.enqueue("a").unwrap());
    let job = String::from("a");
    let call = Call::Claim {
        job: job.as_str().into(),
        owner: "w".into(),
        now: 0.0,
        ttl: 30.0,
    }
    .into_owned();
    drop(job);
    let reply = std::thread::spawn(move || store.execute(call).unwrap())
        .join()
        .unwrap();
    assert!(
        matches!(reply, Reply::Fence(Outcome::Granted(1))),
        "{reply:?}"
    );
}

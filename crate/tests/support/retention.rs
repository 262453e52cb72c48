//! The fence floor's story (docs/contract.md section 13), run on any backend: a job pruned and
//! enqueued again under the same id, the old holder and a fence guard elsewhere. With the floor
//! every stale write is refused and the new holder's write accepted; `floor_off` (the test-only
//! switch: it drops the floor's trigger behind the store's back) shows what the floor prevents.

use leasefence::guard::{Guarded, SqliteGuard};
use leasefence::{Leases, Prune};

/// What the story saw: whether the old holder's stale completion was accepted, and whether the
/// guard accepted the new holder's write.
#[derive(Debug, PartialEq)]
pub struct Seen {
    pub stale_completion_accepted: bool,
    pub new_holder_guarded_write_accepted: bool,
    pub new_fence: i64,
}

/// Worker `w` claims `job` three times (two leases lapse), the third claim completes and writes
/// through the guard with fence 3; then the job is pruned and enqueued again, and `w` (the same
/// owner name, as a restarted worker has) claims it anew. `floor_off` runs after the prune.
pub fn pruned_id_enqueued_again(leases: &dyn Leases, job: &str, floor_off: impl FnOnce()) -> Seen {
    let guard =
        SqliteGuard::from_connection(rusqlite::Connection::open_in_memory().unwrap()).unwrap();
    leases.enqueue(job).unwrap();
    // Two leases lapse; the third claim finishes the job, writing through the guard.
    for (i, now) in [0.0, 20.0, 40.0].into_iter().enumerate() {
        let fence = leases.claim(job, "w", now, 10.0).unwrap().granted();
        assert_eq!(fence, Some(i as i64 + 1));
    }
    let stale = leasefence::Lease::new(job, "w", 1);
    let last = leasefence::Lease::new(job, "w", 3);
    assert!(guard
        .write(job, last.fence, |_| Ok(()))
        .unwrap()
        .is_accepted());
    assert!(leases
        .complete(&last, 41.0, Some("done"))
        .unwrap()
        .is_granted());
    assert_eq!(leases.prune(&Prune::finished_before(100.0)).unwrap(), 1);
    assert_eq!(leases.state(job).unwrap(), None);
    floor_off();
    assert!(leases.enqueue(job).unwrap());
    let new_fence = leases
        .claim(job, "w", 200.0, 10.0)
        .unwrap()
        .granted()
        .unwrap();
    // The old holder of fence 1 wakes up and completes with the same owner name.
    let stale_completion_accepted = leases
        .complete(&stale, 201.0, Some("stale"))
        .unwrap()
        .is_granted();
    let new_holder_guarded_write_accepted = matches!(
        guard.write(job, new_fence, |_| Ok(())).unwrap(),
        Guarded::Accepted(())
    );
    Seen {
        stale_completion_accepted,
        new_holder_guarded_write_accepted,
        new_fence,
    }
}

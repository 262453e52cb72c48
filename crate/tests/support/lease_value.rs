//! The `Lease` value through `&dyn Leases`, the same on every backend: the lease a claim grants
//! (by `claim` and by `claim_next`) is what renew, the fenced writes, fail, release and complete
//! take, and a lease that is not the current one is refused with the contract's reason.

use leasefence::{fenced_value, Finish, Lease, Leases, Outcome, Reason};

/// Runs the round trip on `store`, which holds no job whose id starts with `lease-value-`.
pub fn round_trip(store: &dyn Leases) {
    store.enqueue("lease-value-1").unwrap();
    let claimed = store.claim("lease-value-1", "a", 0.0, 10.0).unwrap();
    let lease = claimed.lease("lease-value-1", "a").unwrap();
    assert_eq!(lease, Lease::new("lease-value-1", "a", 1));
    let refused = store.claim("lease-value-1", "b", 1.0, 10.0).unwrap();
    assert_eq!(refused.lease("lease-value-1", "b"), None);

    assert_eq!(
        store.renew(&lease, 1.0, 20.0).unwrap(),
        Outcome::Granted(())
    );
    assert_eq!(store.state("lease-value-1").unwrap().unwrap().until, 21.0);

    // Another owner, or another fence, is not this lease.
    let other_owner = Lease {
        owner: "b".into(),
        ..lease.clone()
    };
    assert_eq!(
        store.renew(&other_owner, 2.0, 10.0).unwrap(),
        Outcome::Rejected(Reason::NotOwner)
    );
    let later_fence = Lease::new(lease.job.as_str(), "a", lease.fence + 1);
    assert_eq!(
        store.complete(&later_fence, 2.0, Some("x")).unwrap(),
        Outcome::Rejected(Reason::StaleFence { current: 1 })
    );

    let read = fenced_value(store, &lease, 3.0, Finish::KeepLease, |_| Ok(7)).unwrap();
    assert_eq!(read, Outcome::Granted(7));
    assert_eq!(
        store.complete(&lease, 4.0, Some("done")).unwrap(),
        Outcome::Granted(())
    );
    let row = store.state("lease-value-1").unwrap().unwrap();
    assert_eq!((row.done, row.result.as_deref()), (true, Some("done")));
    assert_eq!(
        store.release(&lease).unwrap(),
        Outcome::Rejected(Reason::Done)
    );

    // claim_next hands out the lease with the claiming owner.
    store.enqueue("lease-value-2").unwrap();
    let next = store.claim_next("w", 10.0, 10.0).unwrap().unwrap();
    assert_eq!(
        (next.job.as_str(), next.owner.as_str()),
        ("lease-value-2", "w")
    );
    let first = next.lease();
    assert_eq!(first, Lease::new("lease-value-2", "w", 1));
    assert_eq!(
        store.fail(&first, 11.0, Some(30.0), Some("retry")).unwrap(),
        Outcome::Granted(())
    );
    let retry = store.claim_next("v", 30.0, 10.0).unwrap().unwrap().lease();
    assert_eq!(retry, Lease::new("lease-value-2", "v", 2));
    // The failed attempt's lease is stale now, for every operation that takes a lease.
    let stale = Outcome::Rejected(Reason::StaleFence { current: 2 });
    assert_eq!(store.renew(&first, 31.0, 10.0).unwrap(), stale);
    assert_eq!(store.release(&first).unwrap(), stale);
    assert_eq!(
        store
            .fenced(&first, 31.0, &[], Finish::Complete(None))
            .unwrap(),
        stale
    );
    assert_eq!(
        store
            .fenced_with(
                &retry,
                32.0,
                Finish::Complete(Some("v".into())),
                &mut |_| Ok(())
            )
            .unwrap(),
        Outcome::Granted(())
    );
    let row = store.state("lease-value-2").unwrap().unwrap();
    assert_eq!((row.owner.as_deref(), row.fence), (Some("v"), 2));
    assert_eq!(row.result.as_deref(), Some("v"));
}

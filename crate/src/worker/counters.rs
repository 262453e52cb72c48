//! The shared, atomically counted form of [`Counters`] (the type itself is the registry's:
//! `crate::registry`, as every runtime's beat carries it).

use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::registry::Counters;

#[derive(Default)]
pub(crate) struct SharedCounters {
    pub(super) claimed: AtomicU64,
    pub(super) completed: AtomicU64,
    pub(super) failed: AtomicU64,
    pub(super) dead: AtomicU64,
    pub(super) leases_lost: AtomicU64,
    pub(super) stale_writes_refused: AtomicU64,
    pub(super) renewals: AtomicU64,
}

impl SharedCounters {
    pub(crate) fn add(&self, counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> Counters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Counters {
            claimed: get(&self.claimed),
            completed: get(&self.completed),
            failed: get(&self.failed),
            dead: get(&self.dead),
            leases_lost: get(&self.leases_lost),
            stale_writes_refused: get(&self.stale_writes_refused),
            renewals: get(&self.renewals),
        }
    }
}

//! What a worker did: [`Counters`], and their shared, atomically counted form.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

/// What a worker did (docs/contract.md section 9). Serialized as one JSON object with these
/// field names (`leasefence work` prints it at exit).
///
/// ```
/// let counts = leasefence::worker::Counters::default();
/// assert_eq!(serde_json::to_string(&counts).unwrap(),
///   r#"{"claimed":0,"completed":0,"failed":0,"dead":0,"leases_lost":0,"stale_writes_refused":0,"renewals":0}"#);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Jobs claimed.
    pub claimed: u64,
    /// Jobs completed with the handler's result.
    pub completed: u64,
    /// Failures recorded with a retry time.
    pub failed: u64,
    /// Jobs made dead: the last attempt failed, or claimed past the maximum.
    pub dead: u64,
    /// Leases lost while the handler ran (its result discarded), or found lost at the write.
    pub leases_lost: u64,
    /// Writes (complete, fail) the store refused because the lease was no longer current.
    pub stale_writes_refused: u64,
    /// Renews granted.
    pub renewals: u64,
}

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

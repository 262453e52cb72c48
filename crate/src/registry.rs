//! The worker registry: each worker runtime records itself in the store (owner, host, process,
//! start, last beat, its counters) with the same transaction that renews its leases
//! ([`Leases::heartbeat`](crate::Leases::heartbeat)), so being seen costs no sync of its own
//! while it holds jobs. A row is alive while its last beat's `ttl` lasts, like a lease; a worker
//! that stops says so in its last beat; rows gone for [`WORKER_PRUNE_AFTER`] seconds are deleted
//! by the next beat of any worker. [`Leases::list_workers`](crate::Leases::list_workers) reads
//! them with what each holds.

use serde::Serialize;

use crate::outcome::Fence;

/// How long (seconds) a worker's row stays after the worker went (its beat ran out, or it said it
/// stopped) before a beat of any worker deletes it.
pub const WORKER_PRUNE_AFTER: f64 = 3600.0;

/// The most leases [`WorkerInfo::holding`] lists for one worker (`held` counts them all).
pub const MAX_HOLDING_SHOWN: usize = 100;

/// What a worker did (docs/contract.md section 9). Serialized as one JSON object with these
/// field names (`leasefence work` prints it at exit; the registry stores it with each beat).
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

impl Counters {
    /// The counters with their names, in the order of the struct (what the stores' columns and
    /// the metrics list).
    ///
    /// ```
    /// let c = leasefence::worker::Counters { claimed: 2, ..Default::default() };
    /// assert_eq!(c.named()[0], ("claimed", 2));
    /// ```
    pub fn named(&self) -> [(&'static str, u64); 7] {
        [
            ("claimed", self.claimed),
            ("completed", self.completed),
            ("failed", self.failed),
            ("dead", self.dead),
            ("leases_lost", self.leases_lost),
            ("stale_writes_refused", self.stale_writes_refused),
            ("renewals", self.renewals),
        ]
    }
}

/// One beat of a worker: who it is and what it counted so far. The store sets the row's last
/// beat to the `now` of the call and keeps it alive until `now + ttl`.
///
/// ```
/// use leasefence::{Leases, LeaseStore, WorkerBeat};
/// let store = LeaseStore::open_in_memory()?;
/// let beat = WorkerBeat::new("worker-1", "host-a", 42, 100.0);
/// store.heartbeat(&beat, &[], 110.0, 30.0)?;
/// let workers = store.list_workers(120.0)?;
/// assert_eq!((workers[0].owner.as_str(), workers[0].alive), ("worker-1", true));
/// assert!(!store.list_workers(141.0)?[0].alive);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerBeat {
    /// The owner the worker claims with (one per worker).
    pub owner: String,
    /// The machine it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// When it started (Unix seconds).
    pub started: f64,
    /// This is its last beat: it stops (the row shows it gone at once).
    pub stopping: bool,
    /// What it did so far (the totals, not the change since the last beat: a beat sent twice
    /// counts once).
    pub counters: Counters,
}

impl WorkerBeat {
    /// A beat of a worker that did nothing yet.
    ///
    /// ```
    /// let beat = leasefence::WorkerBeat::new("w", "h", 1, 0.0);
    /// assert!(!beat.stopping);
    /// ```
    pub fn new(owner: impl Into<String>, host: impl Into<String>, pid: u32, started: f64) -> Self {
        WorkerBeat {
            owner: owner.into(),
            host: host.into(),
            pid,
            started,
            stopping: false,
            counters: Counters::default(),
        }
    }
}

/// A lease a worker holds, as [`WorkerInfo::holding`] lists it.
///
/// ```
/// let held = leasefence::HeldLease { job: "a".into(), fence: 1, until: 30.0 };
/// assert_eq!(held.fence, 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeldLease {
    /// The job.
    pub job: String,
    /// The lease's fence.
    pub fence: Fence,
    /// When the lease ends unless renewed.
    pub until: f64,
}

/// A worker's row as [`Leases::list_workers`](crate::Leases::list_workers) reads it at `now`.
///
/// ```
/// use leasefence::{Leases, LeaseStore, NewJob, WorkerBeat};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue_many(&[NewJob::new("a")])?;
/// store.claim_next("w", 0.0, 30.0)?;
/// store.heartbeat(&WorkerBeat::new("w", "h", 7, 0.0), &[], 1.0, 30.0)?;
/// let w = &store.list_workers(2.0)?[0];
/// assert_eq!((w.held, w.holding[0].job.as_str()), (1, "a"));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerInfo {
    /// The owner it claims with.
    pub owner: String,
    /// The machine it runs on.
    pub host: String,
    /// Its process id.
    pub pid: u32,
    /// When it started.
    pub started: f64,
    /// Its last beat.
    pub last_seen: f64,
    /// When it counts as gone unless it beats again.
    pub until: f64,
    /// When it said it stopped, if it did.
    pub stopped: Option<f64>,
    /// Whether it is alive at `now`: it has not stopped and its last beat's `ttl` lasts.
    pub alive: bool,
    /// Its counters at its last beat.
    pub counters: Counters,
    /// How many live leases its owner holds at `now`.
    pub held: u64,
    /// Those leases, soonest to end first (at most [`MAX_HOLDING_SHOWN`]).
    pub holding: Vec<HeldLease>,
}

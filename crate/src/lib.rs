//! # leasefence
//!
//! Leases with fencing tokens on SQLite: a stale worker can never overwrite a newer worker's
//! result.
//!
//! Worker A claims a job and stalls; its lease expires; worker B claims the job and completes it;
//! A wakes up and writes its result over B's. No lease length prevents that, because A cannot
//! know that it stalled. What prevents it is a check *by the store, at the moment of the write*:
//! every claim hands out a fence (a generation number that only grows), and every write must
//! present the current owner and fence. The store checks them inside the same transaction that
//! writes, so a stale token is refused no matter what the worker believes.
//!
//! ```
//! use leasefence::{LeaseStore, Reason};
//!
//! let store = LeaseStore::open_in_memory()?;
//! store.enqueue("resize-photo-7")?;
//! let a = store.claim("resize-photo-7", "A", 0.0, 10.0)?.lease("resize-photo-7", "A").unwrap(); // fence 1
//! let b = store.claim("resize-photo-7", "B", 11.0, 10.0)?.granted().unwrap(); // A expired: fence 2
//! let late = store.complete(&a, 12.0, Some("A's thumbnail"))?;
//! assert_eq!(late.reason(), Some(&Reason::StaleFence { current: b }));
//! # Ok::<(), leasefence::Error>(())
//! ```
//!
//! [`Leases`] is the contract as a trait, implemented by [`LeaseStore`] (SQLite) and, with the
//! `postgres` feature (on by default, native only), by `PgStore` on a PostgreSQL server; `open`
//! picks the backend from its argument (a file path, or a `postgres://` URL). The contract itself
//! is stated in `docs/contract.md`; the layout of the source is in `src/README.md`. Natively,
//! `SharedStore` is one SQLite file shared by many threads of a process, their operations
//! committed together (one sync for many).
//!
//! Limits: the clock is the caller's (`now` is passed in; callers sharing a database must agree
//! on it). A fence protects writes to *this* store only: any other system a worker writes to must
//! check the same token itself, or be idempotent. One SQLite file serves the workers of one
//! machine; it is not a distributed queue. Workers on several machines share a PostgreSQL server.

#![deny(missing_docs)]
// The component (WASI) runs a subset: the worker runtime, the Node file protocol and POSIX paths stay out.
#![cfg_attr(target_os = "wasi", allow(dead_code))]

mod async_leases;
mod batch;
mod call;
mod error;
pub mod guard;
mod lease;
mod leases;
mod listing;
mod options;
mod outcome;
pub mod protocol;
mod registry;
mod retention;
mod rules;
mod schedule;
mod sqlite;
mod wake;

mod open;
#[cfg(pg)]
mod postgres;
#[cfg(not(web))]
mod race;
#[cfg(not(web))]
pub mod seed;
#[cfg(native)]
pub mod worker;
// The dot-file lock of files shared with Node: one protocol for Node and native, and its owner
// record.
#[cfg(any(native, feature = "node"))]
mod dot_lock;
#[cfg(any(native, feature = "node"))]
mod lock_record;
#[cfg(target_os = "linux")]
mod stale_lock;

#[cfg(all(feature = "addon", not(web)))]
mod addon;
#[cfg(all(feature = "component", target_os = "wasi"))]
mod component;
#[cfg(any(web, feature = "addon"))]
mod js;
#[cfg(web)]
mod wasm;
#[cfg(web)]
pub use wasm::{check_arguments, WasmStore};

pub use batch::{LeaseCompletion, NewJob, RoundAnswer, WorkerRound, MAX_BATCH};
pub use call::{Call, Queues, Reply};
#[cfg(pg)]
pub use error::PostgresError;
pub use error::{Error, ErrorCode, Result, SqliteError};
pub use lease::Lease;
pub use leases::{fenced_value, Leases};
pub use listing::{JobPage, JobQuery, JobStatus, JobSummary, QueueCounts, QueueWaiting, MAX_PAGE};
pub use open::{is_postgres_url, target_label};
pub use options::{Journal, Locking, OpenOptions};
pub use outcome::{ClaimedJob, Failure, Fence, Inspection, JobCounts, JobState, Outcome, Reason};
pub use registry::{
    Counters, HeldLease, WorkerBeat, WorkerInfo, MAX_HOLDING_SHOWN, WORKER_PRUNE_AFTER,
};
pub use retention::{Prune, PRUNE_BATCH};
pub use rules::fenced::{FencedHandle, Finish, Rows, SqlValue, Statement};
pub use rules::{Limits, DEFAULT_QUEUE, MAX_FAILURE_RECORDS, MAX_QUEUES};
pub use schedule::{Missed, Schedule, StoredSchedule, MAX_MISSED_SLOTS};
pub use sqlite::{FencedTx, LeaseStore};
pub use wake::{Wakeup, Watch};
#[cfg(not(web))]
pub use {
    open::{open, open_with},
    rules::MAX_CLAIM_MANY_OWNERS,
    sqlite::SharedStore,
};

#[cfg(all(feature = "postgres", not(web)))]
pub use postgres::{PgFencedTx, PgStore, CLAIM_MANY_CONNECTIONS};
#[cfg(target_os = "linux")]
pub use stale_lock::{clear_stale_lock, LockCheck};

#[cfg(doctest)]
mod private_surface;

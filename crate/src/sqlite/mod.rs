//! The SQLite backend, on every target: [`LeaseStore`] on one connection. Native builds open
//! files themselves (`file.rs`) and race `claim_many` on threads (`claim_many.rs`); the wasm
//! builds bring their own connection (Node `fs`, OPFS) and share the rest.
//!
//! - `store.rs`: [`LeaseStore`] and its public methods;
//! - `exclusive.rs`: a file one Node process owns alone (WAL without shared memory): the header
//!   test, entering and leaving the mode, and the recovery of a WAL its owner left;
//! - `setup.rs`: what every connection gets before use (busy handler, journal, `synchronous`);
//! - `schema.rs`: the read-only check of a file and the creation of the table (`sql/schema.sql`);
//! - `ops.rs`: the contract's statements and transactions (`sql/*.sql`);
//! - `lifecycle.rs`: delays, failures and dead jobs (`fail`, `revive`, `inspect`, `stats`);
//! - `registry.rs`: the worker registry (`leasefence_workers`): beats with renewals, the rows;
//! - `next_due.rs`: when an idle worker looks again unless woken (index probes only);
//! - `watch.rs`: the file-system notifications that wake it (Linux inotify);
//! - `write_tx.rs`: one operation's transaction, a savepoint inside a group; `Group`;
//! - `schedule.rs`: recurring jobs (`leasefence_schedules`, `enqueue_due`);
//! - `batch.rs`: the batch operations, each one `Group`;
//! - `leases.rs`: [`Leases`](crate::Leases) for [`LeaseStore`];
//! - `fenced/`: fenced writes, the caller's statements under SQLite's authorizer;
//! - `shared.rs`: [`SharedStore`], one writer for many threads, their operations committed
//!   together (group commit);
//! - `gate.rs`: the write gate, a kernel queue in front of SQLite's write lock (Linux files);
//! - `file.rs`, `claim_many.rs`, `shared.rs`: native only.

mod batch;
#[cfg(not(web))]
mod claim_many;
#[cfg(any(feature = "node", not(web)))]
pub(crate) mod exclusive;
mod fenced;
#[cfg(not(web))]
mod file;
#[cfg(target_os = "linux")]
pub(crate) mod gate;
mod leases;
mod lifecycle;
mod listing;
pub(crate) mod next_due;
mod ops;
mod registry;
mod retention;
mod schedule;
mod schema;
mod setup;
#[cfg(not(web))]
mod shared;
mod store;
#[cfg(target_os = "linux")]
pub(crate) mod watch;
pub(crate) mod write_tx;

#[cfg(not(web))]
pub(crate) use claim_many::claim_many_on;
pub use fenced::FencedTx;
#[cfg(any(web, feature = "addon"))]
pub(crate) use fenced::{run_protected, Protected};
// The JavaScript engines re-create the fenced handle for each statement a callback runs.
#[cfg(any(web, feature = "addon"))]
pub(crate) use fenced::Refusal;
#[cfg(not(web))]
pub(crate) use file::refuse_non_file;
#[cfg(any(web, feature = "addon"))]
pub(crate) use ops::immediate as immediate_tx;
#[cfg(not(web))]
pub use shared::SharedStore;
pub use store::LeaseStore;

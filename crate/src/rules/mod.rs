//! The contract's rules, backend-neutral: what every backend checks and decides the same way,
//! with no SQL and no storage in it (no rusqlite, no PostgreSQL client). Backends build on this
//! leaf; it imports nothing of the crate but the answer types and the error.
//!
//! - [`window`]: the time and ttl checks, done once, giving a [`LeaseWindow`] the backends take
//!   instead of checking again;
//! - [`reasons`]: the reason order of docs/contract.md section 3 for a refused operation;
//! - [`columns`]: the `jobs` column spec and the one comparer both backends check a table with;
//! - `batch`: the batch operations' list and item checks;
//! - `owners`: how many owners one `claim_many` may race (native only: the wasm builds have no
//!   threads);
//! - `queues`: queue names, queue lists and the claim rank of section 11;
//! - `schedule`: recurring jobs' cron patterns, time zones and due slots (section 11);
//! - `fenced`: the statements of fenced writes, and which tables they may not write;
//! - `limits`: the largest payload, result and error text a store accepts (section 13);
//! - `fenced_tx`: the order of a fenced transaction, over each backend's steps;
//! - [`target`]: whether an `open` target names a PostgreSQL server, and its label (no password);
//! - `path_kind`: the refusal of a database path that is not a regular file;
//! - `worker`: the worker runtime's rules (backoff, attempts, renew timing), shared with the
//!   JavaScript runtime through the wasm builds.

pub(crate) mod batch;
pub(crate) mod columns;
pub(crate) mod fenced;
pub(crate) mod fenced_tx;
pub(crate) mod limits;
pub(crate) mod listing;
#[cfg(any(not(web), pg))]
pub(crate) mod owners;
pub(crate) mod path_kind;
pub(crate) mod queues;
pub(crate) mod reasons;
pub(crate) mod registry;
pub(crate) mod schedule;
pub(crate) mod target;
pub(crate) mod window;
pub(crate) mod worker;

pub use limits::{Limits, MAX_FAILURE_RECORDS};
#[cfg(not(web))]
pub(crate) use owners::check_owner_count;
#[cfg(any(not(web), pg))]
pub(crate) use owners::claim_many_window;
#[cfg(not(web))]
pub use owners::MAX_CLAIM_MANY_OWNERS;
pub use queues::{DEFAULT_QUEUE, MAX_QUEUES};
pub(crate) use reasons::{
    unexplained, why_claim_refused, why_revive_refused, why_write_refused, ClaimRefusal, LeaseRow,
};
pub(crate) use window::{check_now, check_time, lease_end, LeaseWindow};

/// A job's attempts so far: its claims since the fence it started at (`base`, the fence floor
/// when it was enqueued; docs/contract.md section 13).
pub(crate) fn attempts(
    fence: crate::outcome::Fence,
    base: crate::outcome::Fence,
) -> crate::outcome::Fence {
    fence.saturating_sub(base).max(0)
}

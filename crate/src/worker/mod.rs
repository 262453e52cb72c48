//! The worker runtime (docs/contract.md section 9): a loop over `claim_next` that runs a handler
//! on each job, renews the lease while it runs, tells the handler the moment the lease is lost,
//! completes or fails the job, and counts what happened. Native only; on any [`Leases`](crate::Leases) (an
//! SQLite file or a PostgreSQL server).
//!
//! ```
//! use leasefence::worker::{Worker, WorkerOptions};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let db = dir.path().join("queue.db");
//! let store = leasefence::open(&db)?;
//! store.enqueue_with("resize-7", None, Some("photo-7.jpg"))?;
//!
//! let options = WorkerOptions::new("worker-1").ttl(30.0).until_empty(true);
//! let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), options)?;
//! let counts = worker.run(|job| {
//!     job.token.checkpoint()?; // "still alive", and "stop if the lease is gone"
//!     Ok(Some(format!("thumbnail of {}", job.payload.as_deref().unwrap_or("?"))))
//! })?;
//! assert_eq!((counts.claimed, counts.completed), (1, 1));
//! assert_eq!(store.state("resize-7")?.unwrap().result.as_deref(), Some("thumbnail of photo-7.jpg"));
//! # Ok::<(), leasefence::Error>(())
//! ```
//!
//! A handler that also writes tables of your own in the same database hands them back with its
//! result through [`Worker::run_fenced`] and a [`Completion`]: they commit in the transaction that
//! completes the job, or not at all.
//!
//! # Several handlers at once
//!
//! [`WorkerOptions::concurrency`] lets one worker run up to `n` handlers at once, given to
//! [`Worker::run_concurrent`] or [`Worker::run_fenced_concurrent`] (the handler is called from
//! several threads, so it is `Fn + Sync`). The caller's thread claims with one `claim_next_many`
//! as slots free up and writes the outcomes; a pool of `n` threads runs the handlers; the
//! heartbeat renews the leases due together with one `renew_many`. Each job keeps its own lease
//! and token: a lost lease cancels its job alone. The plain completions that finished together
//! share one `complete_many`; a [`Completion`] with statements is its own transaction, and a
//! failure its own `fail`. A job is counted once what wrote it committed.
//!
//! # Who keeps the lease alive: the heartbeat trade-off
//!
//! Renewing from the handler's own thread means a hung handler loses its lease (good: the job
//! goes to another worker) but so does a busy one that cannot get to the renew in time (a
//! CPU-bound step, a long blocking call). Renewing from a separate thread keeps a busy handler's
//! lease, but also a hung one's, forever: the job is then blocked and nobody is told. With
//! fencing, losing a lease costs duplicate work but never corrupts (the late worker's writes are
//! refused); keeping a lease for a dead handler costs the job. So the safe side is "a handler
//! that shows no life loses its lease", and the runtime splits the two concerns:
//!
//! - The renews, their retries on a busy database and the watch on the lease's end run on a
//!   heartbeat thread with its own connection, so they never wait on the handler and a slow
//!   handler never makes a renew late.
//! - Whether to renew is decided by a [`Liveness`] rule. The default, [`Liveness::Progress`],
//!   renews only while the handler has shown progress ([`CancelToken::checkpoint`], or its start)
//!   within the last `ttl`: a handler that stops calling it keeps its lease for one to two
//!   `ttl`s, then loses it, is told, and the job is retried elsewhere. A handler that cannot
//!   checkpoint picks [`Liveness::MaxRunTime`] (renew until a bound) or
//!   [`Liveness::Unbounded`] (renew while it runs: a busy handler keeps its lease, a hung one
//!   too).
//!
//! The token needs no thread to notice the end of a lease: it compares the lease's end with the
//! clock on every look, so a worker that was suspended (SIGSTOP, a VM pause) sees it cancelled
//! on its first look after waking, before anything it would write.
//!
//! # Attempts
//!
//! A job's attempt is its fence (every claim is one). A handler's error on attempt `n` fails the
//! job with `retry_at = now + backoff(n)`, or makes it dead when `n >= max_attempts`. A job
//! claimed at an attempt past `max_attempts` whose previous attempt recorded no failure (its
//! holders lost their leases or crashed: a poison job that kills its worker) is made dead at
//! once, without running the handler, with the cause recorded. A job brought back with
//! `revive` keeps its fence; its previous attempt has the failure that made it dead recorded, so
//! it gets one more attempt.

mod attempt;
mod backoff;
mod clock;
mod concurrent;
mod counters;
mod handler;
mod heartbeat;
mod options;
mod runner;
mod stop;
mod token;

pub use backoff::Backoff;
pub use clock::{wall_clock, ManualClock};
pub use counters::Counters;
pub use handler::{Completion, CompletionResult, HandlerResult, Job};
pub use options::{Liveness, Retention, WorkerOptions, MAX_CONCURRENCY};
pub use runner::{Opener, Worker};
pub use stop::StopHandle;
pub use token::{CancelReason, CancelToken, Cancelled};

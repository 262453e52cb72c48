//! [`PgStore`]: the contract of docs/contract.md sections 2 and 3 on a PostgreSQL server (feature
//! `postgres`, native builds only).
//!
//! # Storage
//!
//! The `jobs` table starts with the contract's six columns:
//!
//! ```sql
//! jobs(id TEXT PRIMARY KEY, owner TEXT, until DOUBLE PRECISION NOT NULL DEFAULT 0,
//!      fence BIGINT NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0, ...)
//! ```
//!
//! - `until` is `DOUBLE PRECISION`, the same IEEE double as SQLite's `REAL` and Rust's `f64`, so
//!   lease ends compare exactly as on SQLite.
//! - `fence` is `BIGINT` (`i64`). Claims only match `fence < 9223372036854775807`, so the fence
//!   never wraps; a job whose fence is exhausted is reported as
//!   [`Error::FenceExhausted`](crate::Error::FenceExhausted), as on SQLite.
//! - `done` is `INTEGER` 0/1, not `BOOLEAN`: it is the contract's column as written
//!   (docs/contract.md section 1 and the seed's `done = 0` / `done = 1`), so SQL written against
//!   the SQLite table, by us or by anyone following the contract, runs unchanged here
//!   (`WHERE done = 0` would be a type error on a `BOOLEAN`). JSON and [`JobState::done`] show it
//!   as a boolean either way.
//!
//! After the six come the library's own columns (`sql/schema.sql`): `queue`, `priority`, `seq` (an
//! identity: the insertion order `claim_next` needs, which the SQLite table gets from its rowid),
//! `enqueued`, `finished` and `base`. The SQLite file keeps them in a side table, because other
//! SQLite programs share that file and section 1 of the contract allows no extra column there; on
//! PostgreSQL they sit in `jobs` itself, so that a claim or a completion writes one row of one
//! table and no trigger runs on updates (docs/decisions/postgres-jobs-columns.md: a side table kept
//! by a trigger cost 40% of the throughput). Each has a default, so plain SQL from other programs
//! (`INSERT INTO jobs(id) VALUES (...)`) is a valid enqueue; a `BEFORE INSERT` trigger starts every
//! inserted job at the fence floor of section 13, whoever inserts it. One partial index,
//! `leasefence_queued ON jobs(queue, priority, until, seq) WHERE done = 0`, yields each queue's
//! claimable jobs in the contract's order, so `claim_next` is logarithmic even on a million fresh
//! jobs tied at `until = 0`. A schema of an earlier version, with its side table
//! `leasefence_order`, is migrated at the next open.
//!
//! # Concurrency under READ COMMITTED
//!
//! Every operation runs as single-statement transactions (autocommit) at the server's default
//! isolation. Each decision is ONE conditional `UPDATE`: PostgreSQL locks the row and re-checks
//! the `WHERE` clause on its newest committed version before writing, so two claims of one job
//! can never both match, and the fence is incremented under the row lock. When the `UPDATE`
//! matches no row, the reason is read afterwards with a fresh snapshot; a rejection changes
//! nothing, so a reason read then is a true answer at that moment. If that row no longer explains
//! the refusal (the lease was released in between, say), the operation is simply tried again.
//! Reasons come out in the same priority order as on SQLite (`not_found`, `done`, `held`,
//! `stale_fence`, `not_owner`, `expired`).
//!
//! `claim_next` tries its candidates in claim order, each job's row by key in a subquery with
//! `FOR NO KEY UPDATE SKIP LOCKED`, so workers never queue behind a row another worker is
//! claiming: each takes the next free one (why the statement has this shape, and why the
//! sessions keep generic plans: docs/decisions/postgres-claim-statement.md). When every candidate
//! is momentarily locked by others, it looks further once, then waits for the first claimable
//! job with a plain `claim` of it (one row lock at a time, so waiting claimers cannot deadlock)
//! instead of answering "nothing claimable", so `None` means there was no claimable job. Over
//! every queue, when one (queue, priority) pair holds every open job, a plainer statement runs
//! first (`sql/claim_one_bucket.sql`): that pair's first free job by until and insertion, which
//! is then the contract's order; it falls through to the above when it finds none.
//!
//! The batch operations (section 10, `many.rs`) are each one transaction,
//! one statement over the whole list where they can be (`unnest(...) WITH ORDINALITY`).
//! `claim_next_many` keeps `claim_next`'s rule while it holds the jobs it already claimed: it waits
//! only for a job inserted after every one it holds, and otherwise rolls back and starts again
//! with that wait, so waiting claimers still cannot deadlock. No other writer waits for a
//! claimable row while holding another: `renew_many` and `complete_many` lock only rows whose
//! lease is live (their `WHERE` fails on a claimable row before any wait), single operations hold
//! one row at a time, and a fenced write holds only its own job's row.
//!
//! # Durability and connections
//!
//! Every commit waits for its WAL flush: the session runs with `synchronous_commit = on`, the
//! server default (switched back on if the server defaults to `off`), so a fence, once returned,
//! survives a server crash and is never handed out again. A dropped connection (server restart,
//! `pg_terminate_backend`, network) is an [`Error::Postgres`](crate::Error) with code `storage`,
//! `disconnected: true` and a message saying to retry; the store connects again on the next call.
//! Every statement with data in it uses bound parameters.
//!
//! Limits: PostgreSQL `text` cannot hold U+0000, so ids, owners and results containing it are
//! rejected as invalid arguments; a job id must fit a b-tree index entry (about 2.7 kB after
//! compression).
//!
//! # TLS
//!
//! `sslmode` and `sslrootcert` in the URL mean what they mean to libpq and `psql` (see
//! [`tls`](self::tls) for the table): `prefer` by default; `verify-full` with
//! `sslrootcert=/path/to/ca.pem` checks that the server is the one the URL names, which is what a
//! fleet reaching its database across a network wants. A certificate the client refuses is an
//! [`Error::Open`](crate::Error::Open) naming the reason, not a retryable error.
//!
//! # Layout
//!
//! - `operations.rs` (every client's): each operation's checks, then its statements (`ops.rs`,
//!   `many.rs`, `recurring.rs`, `reads.rs`) on a connection the client lends;
//! - `store.rs`: [`PgStore`], its connect options, and the contract ([`Leases`]) as
//!   `operations.rs` has it;
//! - `batch.rs`: `enqueue_in`, enqueue in the caller's own transaction (section 11);
//! - `fenced/`: fenced writes, and how writes to the library's tables are refused;
//! - `guard.rs`: the fence guard's statements (`guard::postgres` natively, Node's `FenceGuard`);
//! - `library_tables.rs`: the readings that tell whether a fenced write's statements touched the
//!   library's tables or left the session changed, and their comparison, for every client;
//! - `session.rs`: one live connection, its set-up and prepared statements, reconnecting;
//! - `schema.rs`: the check of an existing schema and its creation (`sql/*.sql`);
//! - `listing.rs`: what a dashboard reads: a page of jobs, every queue's counts, each queue's
//!   oldest waiting job, each from one read-only snapshot;
//! - `registry.rs`: the worker registry: a beat after the renewals, the rows with their leases;
//! - `failure.rs`: a client error as this crate's [`Error`](crate::Error), classified once there;
//! - `tls.rs`: libpq's `sslmode` and `sslrootcert` on rustls.

// The core, for every client: the statements and the operations over a `Wire`.
pub(crate) mod checks;
pub(crate) mod guard;
pub(crate) mod library_tables;
pub(crate) mod many;
pub(crate) mod operations;
pub(crate) mod ops;
pub(crate) mod reads;
pub(crate) mod recurring;
pub(crate) mod schema;
pub(crate) mod tls_settings;
pub(crate) mod wire;

// The native client (the `postgres` crate) and what is built on it.
#[cfg(not(web))]
mod batch;
#[cfg(not(web))]
mod failure;
#[cfg(not(web))]
mod fenced;
#[cfg(not(web))]
mod listen;
#[cfg(not(web))]
pub(crate) mod native_wire;
#[cfg(not(web))]
mod session;
#[cfg(not(web))]
mod store;
#[cfg(not(web))]
mod tls;

#[cfg(not(web))]
pub use fenced::PgFencedTx;
#[cfg(not(web))]
pub use store::{PgStore, CLAIM_MANY_CONNECTIONS};

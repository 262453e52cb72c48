//! The contract's operations on SQLite: every statement and transaction of docs/contract.md
//! sections 2 and 3, the SQL in `sql/*.sql`.
//!
//! Everything here takes an already-open [`rusqlite::Connection`] and uses nothing but rusqlite's
//! portable API, so the native, Node and browser builds run this exact code; they differ only in
//! how they open the connection (file, Node `fs`, OPFS). Arguments arrive checked (a
//! [`LeaseWindow`]); the reasons come from [`crate::rules`].
//!
//! Each write is a single conditional `UPDATE` inside a `BEGIN IMMEDIATE` transaction: the write
//! lock is taken before anything is read, so no other connection can slip in between the check
//! (owner, fence, `until`) and the write. When the `UPDATE` matches no row, the reason is read in
//! the same transaction, so it describes the very row that caused the rejection.

use rusqlite::{params, Connection, OptionalExtension};

pub(crate) use super::write_tx::immediate;
use super::write_tx::WriteTx;

use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome};
use crate::rules::LeaseWindow;
use crate::rules::{unexplained, why_claim_refused, why_write_refused, ClaimRefusal, LeaseRow};

/// Contract `enqueue` (sections 2 and 7): INSERT OR IGNORE, so re-enqueueing never resets a live
/// lease (nor a payload); `run_at` becomes `until`. A payload is stored in the same transaction,
/// only when this call inserted the job; without one the insert is a single statement.
pub(crate) fn enqueue(
    conn: &Connection,
    job: &str,
    run_at: Option<f64>,
    payload: Option<&str>,
) -> Result<bool> {
    let insert = |conn: &Connection| {
        conn.prepare_cached(include_str!("sql/enqueue.sql"))
            .and_then(|mut stmt| stmt.execute(params![job, run_at.unwrap_or(0.0)]))
            .map_err(Error::storage("enqueue"))
    };
    let Some(payload) = payload else {
        return super::write_tx::single_statement(conn, "enqueue", || Ok(insert(conn)? == 1));
    };
    let tx = immediate(conn, "enqueue")?;
    if insert(&tx)? != 1 {
        return Ok(false);
    }
    tx.prepare_cached(include_str!("sql/put_payload.sql"))
        .and_then(|mut stmt| stmt.execute(params![job, payload]))
        .map_err(Error::storage("enqueue"))?;
    tx.commit().map_err(Error::storage("enqueue"))?;
    Ok(true)
}

/// The payload stored beside `job`, if any.
pub(crate) fn payload(
    conn: &Connection,
    job: &str,
    operation: &'static str,
) -> Result<Option<String>> {
    conn.prepare_cached(include_str!("sql/payload.sql"))
        .and_then(|mut stmt| stmt.query_row([job], |row| row.get(0)).optional())
        .map_err(Error::storage(operation))
}

pub(crate) fn job_state(row: &rusqlite::Row<'_>) -> rusqlite::Result<JobState> {
    Ok(JobState {
        id: row.get(0)?,
        owner: row.get(1)?,
        until: row.get(2)?,
        fence: row.get(3)?,
        result: row.get(4)?,
        done: row.get(5)?,
    })
}

/// Contract `state`: the stored row.
pub(crate) fn state(conn: &Connection, job: &str) -> Result<Option<JobState>> {
    conn.prepare_cached(include_str!("sql/state.sql"))
        .and_then(|mut stmt| stmt.query_row([job], job_state).optional())
        .map_err(Error::storage("state"))
}

/// Every row, in insertion order (for `leasefence jobs`).
pub(crate) fn all_jobs(conn: &Connection) -> Result<Vec<JobState>> {
    let mut stmt = conn
        .prepare(include_str!("sql/jobs.sql"))
        .map_err(Error::storage("jobs"))?;
    let rows = stmt
        .query_map([], job_state)
        .map_err(Error::storage("jobs"))?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::storage("jobs"))
}

pub(crate) fn read_lease(
    tx: &Connection,
    job: &str,
    operation: &'static str,
) -> Result<Option<LeaseRow>> {
    tx.prepare_cached(include_str!("sql/read_lease.sql"))
        .and_then(|mut stmt| {
            stmt.query_row([job], |row| {
                Ok(LeaseRow {
                    owner: row.get(0)?,
                    until: row.get(1)?,
                    fence: row.get(2)?,
                    done: row.get(3)?,
                })
            })
            .optional()
        })
        .map_err(Error::storage(operation))
}

/// Contract `claim`: missing, done or `until > now` is refused; otherwise a new lease with
/// `fence + 1`.
pub(crate) fn claim(
    conn: &Connection,
    job: &str,
    owner: &str,
    window: LeaseWindow,
) -> Result<Outcome<Fence>> {
    let (now, until) = (window.now(), window.until());
    let tx = immediate(conn, "claim")?;
    let fence: Option<Fence> = tx
        .prepare_cached(include_str!("sql/claim.sql"))
        .and_then(|mut stmt| {
            stmt.query_row(params![job, owner, until, now], |row| row.get(0))
                .optional()
        })
        .map_err(Error::storage("claim"))?;
    if let Some(fence) = fence {
        tx.commit().map_err(Error::storage("claim"))?;
        return Ok(Outcome::Granted(fence));
    }
    // Inside this IMMEDIATE transaction the row cannot have changed since the UPDATE.
    let reason = match why_claim_refused(read_lease(&tx, job, "claim")?, now) {
        ClaimRefusal::Rejected(reason) => reason,
        ClaimRefusal::Exhausted => return Err(Error::FenceExhausted { job: job.into() }),
        ClaimRefusal::Claimable => return Err(unexplained("claim", job, None)),
    };
    Ok(Outcome::Rejected(reason))
}

/// Contract `claim_next` (docs/contract.md sections 3 and 7): the claimable job with the smallest
/// `until`, then the earliest enqueued, claimed in the same transaction, with its payload.
pub(crate) fn claim_next(
    conn: &Connection,
    owner: &str,
    window: LeaseWindow,
) -> Result<Option<ClaimedJob>> {
    let (now, until) = (window.now(), window.until());
    let tx = immediate(conn, "claim_next")?;
    let claimed = tx
        .prepare_cached(include_str!("sql/claim_next.sql"))
        .and_then(|mut stmt| {
            stmt.query_row(params![owner, until, now], |row| {
                Ok(ClaimedJob {
                    job: row.get(0)?,
                    owner: owner.into(),
                    fence: row.get(1)?,
                    payload: None,
                })
            })
            .optional()
        })
        .map_err(Error::storage("claim_next"))?;
    let Some(mut claimed) = claimed else {
        return Ok(None);
    };
    claimed.payload = payload(&tx, &claimed.job, "claim_next")?;
    tx.commit().map_err(Error::storage("claim_next"))?;
    Ok(Some(claimed))
}

/// Runs a fenced `UPDATE` (renew, complete, release) whose `WHERE` already states the whole
/// condition; on no match, explains why.
fn fenced_update(
    conn: &Connection,
    operation: &'static str,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    lease: &Lease,
    live_at: Option<f64>,
) -> Result<Outcome<()>> {
    fenced_update_then(conn, operation, sql, params, lease, live_at, |_| Ok(()))
}

/// [`fenced_update`], and when it matched, `then` in the same transaction before the commit (the
/// failure records of `fail`): all of it commits, or none.
pub(crate) fn fenced_update_then(
    conn: &Connection,
    operation: &'static str,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    lease: &Lease,
    live_at: Option<f64>,
    then: impl FnOnce(&WriteTx<'_>) -> Result<()>,
) -> Result<Outcome<()>> {
    let tx = immediate(conn, operation)?;
    let changed = tx
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params))
        .map_err(Error::storage(operation))?;
    if changed == 1 {
        then(&tx)?;
        tx.commit().map_err(Error::storage(operation))?;
        return Ok(Outcome::Granted(()));
    }
    // Inside this IMMEDIATE transaction the row cannot have changed since the UPDATE.
    let row = read_lease(&tx, &lease.job, operation)?;
    let Some(reason) = why_write_refused(row, lease, live_at) else {
        return Err(unexplained(operation, &lease.job, None));
    };
    Ok(Outcome::Rejected(reason))
}

/// Contract `renew`: extends a live lease held by `owner` with `fence` to `now + ttl`.
pub(crate) fn renew(conn: &Connection, lease: &Lease, window: LeaseWindow) -> Result<Outcome<()>> {
    let (now, until) = (window.now(), window.until());
    fenced_update(
        conn,
        "renew",
        include_str!("sql/renew.sql"),
        params![lease.job, lease.owner, lease.fence, now, until],
        lease,
        Some(now),
    )
}

/// Contract `complete`: stores the result and marks the job done, for the current lease only.
/// `now` is checked by the caller.
pub(crate) fn complete(
    conn: &Connection,
    lease: &Lease,
    now: f64,
    result: Option<&str>,
) -> Result<Outcome<()>> {
    fenced_update(
        conn,
        "complete",
        include_str!("sql/complete.sql"),
        params![lease.job, lease.owner, lease.fence, now, result],
        lease,
        Some(now),
    )
}

/// Contract `release`: gives the lease up early; the fence is kept so old tokens stay stale.
pub(crate) fn release(conn: &Connection, lease: &Lease) -> Result<Outcome<()>> {
    fenced_update(
        conn,
        "release",
        include_str!("sql/release.sql"),
        params![lease.job, lease.owner, lease.fence],
        lease,
        None,
    )
}

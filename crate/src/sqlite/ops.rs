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
use super::write_tx::write_for;
pub(crate) use super::write_tx::Scope;

use crate::batch::NewJob;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome};
use crate::rules::queues::claimed_before;
use crate::rules::{unexplained, why_claim_refused, why_write_refused, ClaimRefusal, LeaseRow};
use crate::rules::{LeaseWindow, DEFAULT_QUEUE};

/// Contract `enqueue` (sections 2, 7 and 11): INSERT OR IGNORE, so re-enqueueing never resets a
/// live lease (nor a payload, queue or priority); `run_at` becomes `until`. A payload, queue and
/// priority are stored in the same transaction, only when this call inserted the job; without
/// them the insert is a single statement.
pub(crate) fn enqueue(conn: &Connection, new: &NewJob) -> Result<bool> {
    let job = new.job.as_str();
    let insert = |conn: &Connection| {
        conn.prepare_cached(include_str!("sql/enqueue.sql"))
            .and_then(|mut stmt| stmt.execute(params![job, new.run_at.unwrap_or(0.0)]))
            .map_err(Error::storage("enqueue"))
    };
    let priority = new.priority.unwrap_or(0);
    let queued_apart = new.queue_name() != DEFAULT_QUEUE || priority != 0;
    if new.payload.is_none() && !queued_apart {
        return super::write_tx::single_statement(conn, "enqueue", || Ok(insert(conn)? == 1));
    }
    let tx = immediate(conn, "enqueue")?;
    if insert(&tx)? != 1 {
        return Ok(false);
    }
    if let Some(payload) = &new.payload {
        tx.prepare_cached(include_str!("sql/put_payload.sql"))
            .and_then(|mut stmt| stmt.execute(params![job, payload]))
            .map_err(Error::storage("enqueue"))?;
    }
    if queued_apart {
        tx.prepare_cached(include_str!("sql/set_queue.sql"))
            .and_then(|mut stmt| stmt.execute(params![job, new.queue_name(), priority]))
            .map_err(Error::storage("enqueue"))?;
    }
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

/// Contract `claim_next` (docs/contract.md sections 3, 7 and 11): among the claimable jobs of
/// `queues` (`None`: every queue), the highest priority, then the smallest `until`, then the
/// earliest enqueued, claimed in the same transaction, with its payload.
pub(crate) fn claim_next(
    conn: &Connection,
    scope: Scope,
    owner: &str,
    queues: Option<&[&str]>,
    window: LeaseWindow,
) -> Result<Option<ClaimedJob>> {
    let own = write_for(conn, "claim_next", scope)?;
    let tx: &Connection = own.as_deref().unwrap_or(conn);
    let claimed = claim_picked(tx, owner, queues, window)?;
    if let (Some(own), Some(_)) = (own, &claimed) {
        own.commit().map_err(Error::storage("claim_next"))?;
    }
    Ok(claimed)
}

/// The work of [`claim_next`] in its write: picks the next job, claims it, reads its payload and
/// starting fence.
fn claim_picked(
    tx: &Connection,
    owner: &str,
    queues: Option<&[&str]>,
    window: LeaseWindow,
) -> Result<Option<ClaimedJob>> {
    let (now, until) = (window.now(), window.until());
    // Each pick is re-checked against `jobs` by the claim; a copy in leasefence_order that the
    // triggers did not keep (they were dropped for a while) is repaired and the pick made again.
    // Each repair closes or moves one row, so the loop ends; the bound only guards a bug.
    for _ in 0..1024 {
        let Some(job) = pick_next(tx, queues, now)? else {
            return Ok(None);
        };
        let claimed = tx
            .prepare_cached(include_str!("sql/claim_picked.sql"))
            .and_then(|mut stmt| {
                stmt.query_row(params![job, owner, until, now], |row| {
                    Ok(ClaimedJob {
                        job: row.get(0)?,
                        owner: owner.into(),
                        fence: row.get(1)?,
                        payload: None,
                        base: 0,
                    })
                })
                .optional()
            })
            .map_err(Error::storage("claim_next"))?;
        let Some(mut claimed) = claimed else {
            tx.prepare_cached(include_str!("sql/resync_order.sql"))
                .and_then(|mut stmt| stmt.execute([&job]))
                .map_err(Error::storage("claim_next"))?;
            continue;
        };
        claimed.payload = payload(tx, &claimed.job, "claim_next")?;
        claimed.base = tx
            .prepare_cached(include_str!("sql/attempt_base.sql"))
            .and_then(|mut stmt| stmt.query_row([&claimed.job], |row| row.get(0)))
            .map_err(Error::storage("claim_next"))?;
        return Ok(Some(claimed));
    }
    Err(Error::Internal {
        message: "claim_next kept finding copies in leasefence_order that disagree with `jobs`"
            .into(),
    })
}

/// One optional value of the first column of `sql`'s first row.
fn first_value<T: rusqlite::types::FromSql>(
    tx: &Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
) -> Result<Option<T>> {
    tx.prepare_cached(sql)
        .and_then(|mut stmt| stmt.query_row(args, |row| row.get(0)).optional())
        .map_err(Error::storage("claim_next"))
}

/// The job claim_next takes next, by index probes of `leasefence_next` only (no scan): for each
/// queue (the named ones, or every queue with an open job, found by skipping from one name to
/// the next), its priorities from the highest down, each probed for its first job with
/// `until <= now`; a queue stops at its first claimable priority, or at a priority below the best
/// found so far. The cost is logarithmic in the jobs, times the (queue, priority) pairs visited
/// (docs/decisions/queues-priorities.md).
fn pick_next(tx: &Connection, queues: Option<&[&str]>, now: f64) -> Result<Option<String>> {
    let mut best: Option<((i64, f64, i64), String)> = None;
    let mut visit = |queue: &str| -> Result<()> {
        let mut priority: Option<i64> =
            first_value(tx, include_str!("sql/top_priority.sql"), &[&queue])?;
        while let Some(p) = priority {
            if best.as_ref().is_some_and(|((bp, _, _), _)| *bp > p) {
                break;
            }
            let first: Option<(f64, i64, String)> = tx
                .prepare_cached(include_str!("sql/first_claimable.sql"))
                .and_then(|mut stmt| {
                    stmt.query_row(params![queue, p, now], |row| {
                        Ok((row.get(0)?, row.get(1)?, row.get(2)?))
                    })
                    .optional()
                })
                .map_err(Error::storage("claim_next"))?;
            if let Some((until, seq, job)) = first {
                let rank = (p, until, seq);
                if best.as_ref().is_none_or(|(b, _)| claimed_before(rank, *b)) {
                    best = Some((rank, job));
                }
                break;
            }
            priority = first_value(tx, include_str!("sql/lower_priority.sql"), &[&queue, &p])?;
        }
        Ok(())
    };
    match queues {
        Some(queues) => {
            for queue in queues {
                visit(queue)?;
            }
        }
        None => {
            let mut queue: Option<String> =
                first_value(tx, include_str!("sql/first_queue.sql"), &[])?;
            while let Some(name) = queue {
                visit(&name)?;
                queue = first_value(tx, include_str!("sql/next_queue.sql"), &[&name])?;
            }
        }
    }
    Ok(best.map(|(_, job)| job))
}

/// Runs a fenced `UPDATE` (renew, complete, release, fail) whose `WHERE` already states the
/// whole condition; on no match, explains why. When it matched, `then` runs in the same
/// transaction before the commit (`complete`'s finish stamp, `fail`'s failure records): all of it
/// commits, or none.
#[allow(clippy::too_many_arguments)] // the fenced UPDATE's parts, each one of its own kind
pub(crate) fn fenced_update(
    conn: &Connection,
    scope: Scope,
    operation: &'static str,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    lease: &Lease,
    live_at: Option<f64>,
    then: impl FnOnce(&Connection) -> Result<()>,
) -> Result<Outcome<()>> {
    let own = write_for(conn, operation, scope)?;
    let tx: &Connection = own.as_deref().unwrap_or(conn);
    let changed = tx
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params))
        .map_err(Error::storage(operation))?;
    if changed == 1 {
        then(tx)?;
        if let Some(own) = own {
            own.commit().map_err(Error::storage(operation))?;
        }
        return Ok(Outcome::Granted(()));
    }
    // Inside this write transaction the row cannot have changed since the UPDATE (which changed
    // nothing, so there is nothing to undo in a batch either).
    let row = read_lease(tx, &lease.job, operation)?;
    let Some(reason) = why_write_refused(row, lease, live_at) else {
        return Err(unexplained(operation, &lease.job, None));
    };
    Ok(Outcome::Rejected(reason))
}

/// Contract `renew`: extends a live lease held by `owner` with `fence` to `now + ttl`.
pub(crate) fn renew(
    conn: &Connection,
    scope: Scope,
    lease: &Lease,
    window: LeaseWindow,
) -> Result<Outcome<()>> {
    let (now, until) = (window.now(), window.until());
    fenced_update(
        conn,
        scope,
        "renew",
        include_str!("sql/renew.sql"),
        params![lease.job, lease.owner, lease.fence, now, until],
        lease,
        Some(now),
        |_| Ok(()),
    )
}

/// Contract `complete`: stores the result and marks the job done, for the current lease only.
/// `now` is checked by the caller.
pub(crate) fn complete(
    conn: &Connection,
    scope: Scope,
    lease: &Lease,
    now: f64,
    result: Option<&str>,
) -> Result<Outcome<()>> {
    fenced_update(
        conn,
        scope,
        "complete",
        include_str!("sql/complete.sql"),
        params![lease.job, lease.owner, lease.fence, now, result],
        lease,
        Some(now),
        |tx| stamp_finished(tx, &lease.job, now, "complete"),
    )
}

/// Records `now` as the finish time of `job`, which this transaction just finished (complete, or
/// fail without a retry): what prune compares with its `before`.
pub(crate) fn stamp_finished(
    conn: &Connection,
    job: &str,
    now: f64,
    operation: &'static str,
) -> Result<()> {
    conn.prepare_cached(include_str!("sql/stamp_finished.sql"))
        .and_then(|mut stmt| stmt.execute(params![job, now]))
        .map(drop)
        .map_err(Error::storage(operation))
}

/// Contract `release`: gives the lease up early; the fence is kept so old tokens stay stale.
pub(crate) fn release(conn: &Connection, lease: &Lease) -> Result<Outcome<()>> {
    fenced_update(
        conn,
        Scope::Own,
        "release",
        include_str!("sql/release.sql"),
        params![lease.job, lease.owner, lease.fence],
        lease,
        None,
        |_| Ok(()),
    )
}

/// `enqueue` of every job, in order, in one [`Group`](super::write_tx::Group) on `conn`: `BEGIN IMMEDIATE` when the
/// connection is idle, a savepoint inside a transaction already open (a group commit, a fenced
/// transaction, the caller's own transaction). An item's storage error undoes the whole list and
/// is returned. The jobs arrive checked.
pub(crate) fn enqueue_each(
    conn: &rusqlite::Connection,
    operation: &'static str,
    jobs: &[NewJob],
) -> Result<Vec<bool>> {
    let group = super::write_tx::Group::begin(conn, operation)?;
    let answers = jobs
        .iter()
        .map(|job| group.run(|| enqueue(conn, job))?)
        .collect::<Result<Vec<bool>>>()?;
    group.commit()?;
    Ok(answers)
}

//! The contract's single operations on PostgreSQL, written once for every client: each an
//! `async` function over a [`Wire`] that runs the catalogue's statements and reads the rows.
//! Arguments arrive checked (`store.rs` checks them before any connection is touched).
//!
//! Each decision is one conditional `UPDATE`; when it matches no row, the reason is read
//! afterwards and ordered by [`crate::rules`], and if the row no longer explains the refusal
//! (it changed in between) the `UPDATE` is tried again, at most [`MAX_TRIES`] times.

use super::wire::{Control, Row, Sql, Value, Wire};
use crate::batch::NewJob;
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Failure, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::DEFAULT_QUEUE;
use crate::rules::{
    unexplained, why_claim_refused, why_revive_refused, why_write_refused, ClaimRefusal, LeaseRow,
    LeaseWindow,
};

/// How often an operation re-runs its `UPDATE` when the row changed between the refused
/// `UPDATE` and the read of the reason; each retry means another transaction committed a change
/// to that very row, so this bound is only reached by a row that never explains itself.
pub(crate) const MAX_TRIES: usize = 32;

/// How many candidates of each (queue, priority) a claim of `n` jobs considers
/// (`sql/claim_next_many.sql`): `n` give the order; the rest let concurrent claimers pass over
/// each other's locked rows without waiting.
pub(crate) fn candidates_per_bucket(n: usize) -> i64 {
    n as i64 + 32
}

/// How many candidates of each (queue, priority) `claim_next` considers when every one of its
/// usual window ([`candidates_per_bucket`]) was locked by other claimers: enough to pass over a
/// claim in flight on each of a few hundred connections before it waits for one.
pub(crate) const WIDE_CANDIDATES: i64 = 512;

/// The lease in a row of `SELECT owner, until, fence, done FROM jobs ...`.
pub(crate) fn lease_row(operation: &'static str, row: &Row) -> Result<LeaseRow> {
    Ok(LeaseRow {
        owner: row.opt_text(operation, 0)?,
        until: row.float(operation, 1)?,
        fence: row.int(operation, 2)?,
        done: row.int(operation, 3)? != 0,
    })
}

/// A row of `SELECT id, owner, until, fence, result, done FROM jobs ...`.
pub(crate) fn job_state(operation: &'static str, row: &Row) -> Result<JobState> {
    Ok(JobState {
        id: row.text(operation, 0)?,
        owner: row.opt_text(operation, 1)?,
        until: row.float(operation, 2)?,
        fence: row.int(operation, 3)?,
        result: row.opt_text(operation, 4)?,
        done: row.int(operation, 5)? != 0,
    })
}

/// The job's lease as stored now, if the job exists.
pub(crate) async fn read_lease(
    wire: &mut impl Wire,
    operation: &'static str,
    job: &str,
) -> Result<Option<LeaseRow>> {
    let answer = wire
        .run(operation, Sql::ReadLease, vec![job.into()])
        .await?;
    answer
        .first()
        .map(|row| lease_row(operation, &row))
        .transpose()
}

/// `claim` of `job` for `owner` in `window`.
pub(crate) async fn claim(
    wire: &mut impl Wire,
    operation: &'static str,
    job: &str,
    owner: &str,
    window: LeaseWindow,
) -> Result<Outcome<Fence>> {
    let (now, until) = (window.now(), window.until());
    for _ in 0..MAX_TRIES {
        let params = vec![job.into(), owner.into(), until.into(), now.into()];
        if let Some(row) = wire.run(operation, Sql::Claim, params).await?.first() {
            return Ok(Outcome::Granted(row.int(operation, 0)?));
        }
        let lease = read_lease(wire, operation, job).await?;
        match why_claim_refused(lease, now) {
            ClaimRefusal::Rejected(reason) => return Ok(Outcome::Rejected(reason)),
            ClaimRefusal::Exhausted => return Err(Error::FenceExhausted { job: job.into() }),
            // Claimable now: released or expired after the UPDATE looked. Try again.
            ClaimRefusal::Claimable => continue,
        }
    }
    Err(unexplained(operation, job, Some(MAX_TRIES)))
}

/// A fenced `UPDATE` (renew, complete, release, fail) whose `WHERE` states the whole condition;
/// on no match, why. `live_at`: the moment the lease must still be live at (none for release).
pub(crate) async fn fenced_update(
    wire: &mut impl Wire,
    operation: &'static str,
    sql: Sql,
    params: Vec<Value>,
    lease: &Lease,
    live_at: Option<f64>,
) -> Result<Outcome<()>> {
    for _ in 0..MAX_TRIES {
        if wire.run(operation, sql, params.clone()).await?.changed == 1 {
            return Ok(Outcome::Granted(()));
        }
        let row = read_lease(wire, operation, &lease.job).await?;
        match why_write_refused(row, lease, live_at) {
            Some(reason) => return Ok(Outcome::Rejected(reason)),
            // The row matches now: it changed after the UPDATE looked. Try again.
            None => continue,
        }
    }
    Err(unexplained(operation, &lease.job, Some(MAX_TRIES)))
}

/// The lease's `(job, owner, fence)` as the first three parameters of a fenced statement.
pub(crate) fn lease_params(lease: &Lease) -> Vec<Value> {
    vec![
        lease.job.as_str().into(),
        lease.owner.as_str().into(),
        lease.fence.into(),
    ]
}

/// `renew` of `lease` at `now` until `until` (checked: [`checks::renew`](super::checks::renew)).
pub(crate) async fn renew(
    wire: &mut impl Wire,
    lease: &Lease,
    now: f64,
    until: f64,
) -> Result<Outcome<()>> {
    let mut params = lease_params(lease);
    params.extend([now.into(), until.into()]);
    fenced_update(wire, "renew", Sql::Renew, params, lease, Some(now)).await
}

/// `complete` of `lease` at `now` with `result`.
pub(crate) async fn complete(
    wire: &mut impl Wire,
    lease: &Lease,
    now: f64,
    result: Option<&str>,
) -> Result<Outcome<()>> {
    let mut params = lease_params(lease);
    params.extend([now.into(), result.into()]);
    fenced_update(wire, "complete", Sql::Complete, params, lease, Some(now)).await
}

/// `release` of `lease`.
pub(crate) async fn release(wire: &mut impl Wire, lease: &Lease) -> Result<Outcome<()>> {
    fenced_update(
        wire,
        "release",
        Sql::Release,
        lease_params(lease),
        lease,
        None,
    )
    .await
}

/// `fail` of `lease` at `now`: retried at `retry_at`, or dead without one.
pub(crate) async fn fail(
    wire: &mut impl Wire,
    lease: &Lease,
    now: f64,
    retry_at: Option<f64>,
    error: Option<&str>,
) -> Result<Outcome<()>> {
    let mut params = lease_params(lease);
    params.push(now.into());
    let sql = match retry_at {
        Some(retry_at) => {
            params.push(retry_at.into());
            Sql::FailRetry
        }
        None => Sql::FailDead,
    };
    params.push(error.into());
    fenced_update(wire, "fail", sql, params, lease, Some(now)).await
}

/// `enqueue` of a checked new job: one statement (`sql/enqueue.sql`), so one transaction by
/// itself. Whether it inserted the job.
pub(crate) async fn enqueue(wire: &mut impl Wire, new: &NewJob) -> Result<bool> {
    enqueue_for(wire, "enqueue", new).await
}

/// `enqueue` of a checked new job as part of `operation` (`enqueue_due` adds each due slot with
/// it, and its errors name that operation): whether it was added.
pub(crate) async fn enqueue_for(
    wire: &mut impl Wire,
    operation: &'static str,
    new: &NewJob,
) -> Result<bool> {
    let params = vec![
        new.job.as_str().into(),
        new.run_at.unwrap_or(0.0).into(),
        new.payload.as_deref().into(),
        new.queue_name().into(),
        new.priority.unwrap_or(0).into(),
    ];
    let inserted = wire
        .run(operation, Sql::Enqueue, params)
        .await?
        .one(operation)?;
    Ok(inserted.int(operation, 0)? == 1)
}

/// `state` of a job.
pub(crate) async fn state(wire: &mut impl Wire, job: &str) -> Result<Option<JobState>> {
    let answer = wire.run("state", Sql::State, vec![job.into()]).await?;
    answer
        .first()
        .map(|row| job_state("state", &row))
        .transpose()
}

/// Every job, in insertion order (natively `Leases::jobs`; the protocol has no such request).
#[cfg(not(web))]
pub(crate) async fn jobs(wire: &mut impl Wire) -> Result<Vec<JobState>> {
    let answer = wire.run("jobs", Sql::Jobs, Vec::new()).await?;
    answer
        .rows
        .iter()
        .map(|row| job_state("jobs", row))
        .collect()
}

/// A job a claim statement took (`claim_next_many.sql`, `claim_one_bucket.sql`): the columns
/// id, fence, payload, insertion number, base fence, in that order.
pub(crate) fn claimed_job(operation: &'static str, row: &Row, owner: &str) -> Result<ClaimedJob> {
    Ok(ClaimedJob {
        job: row.text(operation, 0)?,
        owner: owner.into(),
        fence: row.int(operation, 1)?,
        payload: row.opt_text(operation, 2)?,
        base: row.int(operation, 4)?,
    })
}

/// One try of claim_next's statement (`claim_next_many.sql` for one job) over the first
/// `candidates` claimable jobs of each (queue, priority): the job it locked and claimed, or
/// `None` when every one of them was locked by another transaction.
async fn claim_from_window(
    wire: &mut impl Wire,
    queues: &Value,
    candidates: i64,
    owner: &str,
    window: LeaseWindow,
) -> Result<Option<ClaimedJob>> {
    const OP: &str = "claim_next";
    let params = vec![
        window.now().into(),
        queues.clone(),
        candidates.into(),
        owner.into(),
        window.until().into(),
        1_i64.into(),
    ];
    match wire.run(OP, Sql::ClaimNextMany, params).await?.first() {
        Some(row) => claimed_job(OP, &row, owner).map(Some),
        None => Ok(None),
    }
}

/// `claim_next` among `queues` (all when `None`): the next job no other transaction is writing,
/// claimed in one statement; when every claimable job is locked right now, a wait for the first
/// one's writer (by claiming it directly: one row lock at a time, so waiting claimers never
/// deadlock), so `None` means no job was claimable.
pub(crate) async fn claim_next(
    wire: &mut impl Wire,
    queues: Option<Vec<&str>>,
    owner: &str,
    window: LeaseWindow,
) -> Result<Option<ClaimedJob>> {
    const OP: &str = "claim_next";
    let (now, until) = (window.now(), window.until());
    // One (queue, priority) pair holds every open job of the queues served: the plain statement.
    let queues = Value::from(queues);
    let params = vec![now.into(), owner.into(), until.into(), queues.clone()];
    if let Some(row) = wire.run(OP, Sql::ClaimOneBucket, params).await?.first() {
        return claimed_job(OP, &row, owner).map(Some);
    }
    for _ in 0..MAX_TRIES {
        let usual = candidates_per_bucket(1);
        if let Some(claimed) = claim_from_window(wire, &queues, usual, owner, window).await? {
            return Ok(Some(claimed));
        }
        // None free. Is any job claimable at all (every one locked right now)?
        let peek = vec![now.into(), queues.clone(), 1_i64.into()];
        let Some(head) = wire.run(OP, Sql::PeekNext, peek).await?.first() else {
            return Ok(None);
        };
        // Many claimers at once can hold every candidate of the usual window: look further
        // before waiting for one.
        let wide = claim_from_window(wire, &queues, WIDE_CANDIDATES, owner, window).await?;
        if let Some(claimed) = wide {
            return Ok(Some(claimed));
        }
        let head = head.text(OP, 0)?;
        // Its writer usually claimed it; then look again.
        let params = vec![head.as_str().into(), owner.into(), until.into(), now.into()];
        if let Some(row) = wire.run(OP, Sql::Claim, params).await?.first() {
            let fence = row.int(OP, 0)?;
            // A payload never changes once its job exists, so reading it apart from the claim
            // reads the very one.
            let (payload, base) = match wire
                .run(OP, Sql::Payload, vec![head.as_str().into()])
                .await?
                .first()
            {
                Some(row) => (row.opt_text(OP, 0)?, row.int(OP, 1)?),
                None => (None, 0),
            };
            return Ok(Some(ClaimedJob {
                job: head,
                owner: owner.into(),
                fence,
                payload,
                base,
            }));
        }
    }
    Err(Error::Contended { operation: OP })
}

/// `revive` of a dead job at `now`.
pub(crate) async fn revive(wire: &mut impl Wire, job: &str, now: f64) -> Result<Outcome<()>> {
    const OP: &str = "revive";
    let answer = wire
        .run(OP, Sql::Revive, vec![job.into(), now.into()])
        .await?;
    if answer.changed == 1 {
        return Ok(Outcome::Granted(()));
    }
    let exists = read_lease(wire, OP, job).await?.is_some();
    Ok(Outcome::Rejected(why_revive_refused(exists)))
}

/// The counts of every queue (`None`) or one.
pub(crate) async fn stats(
    wire: &mut impl Wire,
    queue: Option<&str>,
    now: f64,
) -> Result<JobCounts> {
    const OP: &str = "stats";
    let answer = match queue {
        None => wire.run(OP, Sql::Stats, vec![now.into()]).await?,
        Some(queue) => {
            wire.run(OP, Sql::StatsQueue, vec![now.into(), queue.into()])
                .await?
        }
    };
    let row = answer.one(OP)?;
    let count = |i: usize| -> Result<u64> { Ok(row.int(OP, i)?.max(0) as u64) };
    Ok(JobCounts {
        queued: count(0)?,
        scheduled: count(1)?,
        leased: count(2)?,
        done: count(3)?,
        dead: count(4)?,
    })
}

/// `inspect` of a job: its row, dead mark, payload, queue and failures, from one snapshot (a
/// read-only `REPEATABLE READ` transaction).
pub(crate) async fn inspect(wire: &mut impl Wire, job: &str) -> Result<Option<Inspection>> {
    const OP: &str = "inspect";
    wire.control(OP, Control::BeginSnapshot).await?;
    let read = async {
        let Some(row) = wire.run(OP, Sql::State, vec![job.into()]).await?.first() else {
            return Ok(None);
        };
        let state = job_state(OP, &row)?;
        let report = wire
            .run(OP, Sql::JobReport, vec![job.into()])
            .await?
            .one(OP)?;
        let failures = wire
            .run(OP, Sql::Failures, vec![job.into()])
            .await?
            .rows
            .iter()
            .map(|row| {
                Ok(Failure {
                    fence: row.int(OP, 0)?,
                    at: row.float(OP, 1)?,
                    error: row.opt_text(OP, 2)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        // Dead: done (the row just read) and marked; a mark on a row not done counts for nothing.
        let dead = state.done && report.flag(OP, 0)?;
        let base = report.opt_int(OP, 4)?.unwrap_or(0);
        Ok(Some(Inspection {
            attempts: crate::rules::attempts(state.fence, base),
            state,
            dead,
            payload: report.opt_text(OP, 1)?,
            failures,
            // A job missing by now (deleted since its row was read) is in the default queue.
            queue: report
                .opt_text(OP, 2)?
                .unwrap_or_else(|| DEFAULT_QUEUE.to_owned()),
            priority: report.opt_int(OP, 3)?.unwrap_or(0),
        }))
    }
    .await;
    // Read-only: ending it either way changes nothing.
    let ended = wire.control(OP, Control::Rollback).await;
    let inspection = read?;
    ended?;
    Ok(inspection)
}

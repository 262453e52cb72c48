//! The argument checks of the PostgreSQL operations, made before any connection is touched, for
//! every client alike: the contract's checks ([`crate::rules`]) and PostgreSQL's own limit,
//! `text` without U+0000.

use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::registry::WorkerBeat;
use crate::rules::batch::check_new_job;
use crate::rules::batch::{check_batch, check_claim_count, check_new_jobs};
use crate::rules::queues::{check_optional_queue, check_queues};
use crate::rules::registry::check_beat;
use crate::rules::{check_now, check_time, LeaseWindow};

/// PostgreSQL `text` cannot hold U+0000; refuse such strings before touching the server.
pub(crate) fn check_text(argument: &'static str, value: &str) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::invalid(
            argument,
            "contains the character U+0000, which PostgreSQL text cannot store",
        ));
    }
    Ok(())
}

/// [`check_text`] on the lease's job and owner.
pub(crate) fn check_lease(lease: &Lease) -> Result<()> {
    check_text("job", &lease.job)?;
    check_text("owner", &lease.owner)
}

/// `enqueue`'s job.
pub(crate) fn enqueue(new: &NewJob) -> Result<()> {
    check_new_job(new)?;
    check_text("job", &new.job)?;
    if let Some(payload) = &new.payload {
        check_text("payload", payload)?;
    }
    Ok(())
}

/// `claim`'s arguments; its lease window.
pub(crate) fn claim(job: &str, owner: &str, now: f64, ttl: f64) -> Result<LeaseWindow> {
    let window = LeaseWindow::new(now, ttl)?;
    check_text("job", job)?;
    check_text("owner", owner)?;
    Ok(window)
}

/// `renew`'s arguments; the lease's new end.
pub(crate) fn renew(lease: &Lease, now: f64, ttl: f64) -> Result<f64> {
    let until = LeaseWindow::new(now, ttl)?.until();
    check_lease(lease)?;
    Ok(until)
}

/// A fenced write's lease, time and finish (its statements are checked where they run).
pub(crate) fn fenced(lease: &Lease, now: f64, finish: &crate::rules::fenced::Finish) -> Result<()> {
    let result = match finish {
        crate::rules::fenced::Finish::Complete(result) => result.as_deref(),
        crate::rules::fenced::Finish::KeepLease => None,
    };
    complete(lease, now, result)
}

/// `complete`'s arguments.
pub(crate) fn complete(lease: &Lease, now: f64, result: Option<&str>) -> Result<()> {
    check_now(now)?;
    check_lease(lease)?;
    if let Some(result) = result {
        check_text("result", result)?;
    }
    Ok(())
}

/// `claim_next`'s arguments; its lease window.
pub(crate) fn claim_next(
    queues: Option<&[&str]>,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<LeaseWindow> {
    let window = LeaseWindow::new(now, ttl)?;
    check_queues(queues)?;
    check_text("owner", owner)?;
    Ok(window)
}

/// `fail`'s arguments.
pub(crate) fn fail(
    lease: &Lease,
    now: f64,
    retry_at: Option<f64>,
    error: Option<&str>,
) -> Result<()> {
    check_now(now)?;
    check_time("retry_at", retry_at)?;
    check_lease(lease)?;
    if let Some(error) = error {
        check_text("error", error)?;
    }
    Ok(())
}

/// `revive`'s arguments.
pub(crate) fn revive(job: &str, now: f64) -> Result<()> {
    check_now(now)?;
    check_text("job", job)
}

/// `stats`'s arguments.
pub(crate) fn stats(queue: Option<&str>, now: f64) -> Result<()> {
    check_now(now)?;
    check_optional_queue("queue", queue)
}

/// `enqueue_many`'s list: the batch bounds and item values, and no U+0000 in a job's text.
pub(crate) fn enqueue_many(jobs: &[NewJob]) -> Result<()> {
    check_new_jobs(jobs)?;
    for job in jobs {
        check_text("job", &job.job)?;
        if let Some(payload) = &job.payload {
            check_text("payload", payload)?;
        }
    }
    Ok(())
}

/// `renew_many`'s arguments (and `heartbeat`'s, with its beat); the leases' new end.
pub(crate) fn renew_many(
    leases: &[Lease],
    beat: Option<&WorkerBeat>,
    now: f64,
    ttl: f64,
) -> Result<f64> {
    check_batch("leases", leases.len())?;
    let until = LeaseWindow::new(now, ttl)?.until();
    leases.iter().try_for_each(check_lease)?;
    if let Some(beat) = beat {
        check_beat(beat)?;
    }
    Ok(until)
}

/// `complete_many`'s arguments.
pub(crate) fn complete_many(completions: &[LeaseCompletion], now: f64) -> Result<()> {
    check_batch("leases", completions.len())?;
    check_now(now)?;
    for done in completions {
        check_lease(&done.lease)?;
        if let Some(result) = &done.result {
            check_text("result", result)?;
        }
    }
    Ok(())
}

/// `claim_next_many`'s arguments; its lease window.
pub(crate) fn claim_next_many(
    queues: Option<&[&str]>,
    owner: &str,
    n: usize,
    now: f64,
    ttl: f64,
) -> Result<LeaseWindow> {
    check_claim_count(n)?;
    claim_next(queues, owner, now, ttl)
}

/// `schedule`'s schedule.
pub(crate) fn schedule(schedule: &crate::schedule::Schedule) -> Result<()> {
    crate::rules::schedule::check(schedule)?;
    if let Some(payload) = &schedule.payload {
        check_text("payload", payload)?;
    }
    check_text("cron", &schedule.cron)
}

/// `list_jobs`'s query and `now`; the query's cursor, read.
pub(crate) fn list_jobs(
    query: &crate::listing::JobQuery,
    now: f64,
) -> Result<crate::rules::listing::Cursor> {
    check_now(now)?;
    crate::rules::listing::check_query(query)
}

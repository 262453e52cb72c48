//! The JSON API under `/api/`: stats, a paged job list, a job's report, the workers, the
//! schedules, revive. Every answer is a
//! status and a JSON value; an error is `{"error": {"code", "message"}}`.

use leasefence::{JobCounts, JobQuery, JobStatus, JobSummary, Leases, Outcome, Reason};
use serde_json::{json, Value};

use super::sampler::Sampler;

/// Page size when `?limit=` is not given, and the largest one accepted.
pub(crate) const DEFAULT_LIMIT: usize = 50;
pub(crate) const MAX_LIMIT: usize = 500;

/// An answer: the HTTP status and its JSON body.
pub(crate) type Answer = (u16, Value);

/// An error answer with a code and a message saying what to do.
pub(crate) fn error(status: u16, code: &str, message: impl Into<String>) -> Answer {
    (
        status,
        json!({"error": {"code": code, "message": message.into()}}),
    )
}

fn storage(err: leasefence::Error) -> Answer {
    let status = match err.error_code() {
        leasefence::ErrorCode::Storage => 503,
        _ => 400,
    };
    error(status, err.code(), err.to_string())
}

/// The rows of `jobs`: every job is in exactly one state.
pub(crate) fn stored(c: &JobCounts) -> u64 {
    c.queued + c.scheduled + c.leased + c.done + c.dead
}

fn counts(c: &JobCounts) -> Value {
    json!({"queued": c.queued, "scheduled": c.scheduled, "leased": c.leased,
           "done": c.done, "dead": c.dead})
}

/// `GET /api/stats`: `{"now", "all": {state: n}, "queues": {queue: {state: n}}, "oldest_waiting":
/// {queue: seconds}, "count_ms"}`,
/// `now` the time of the counts (about a refresh interval old at most; see sampler.rs) and
/// `count_ms` what taking them cost the server.
pub(crate) fn stats(sampler: &Sampler) -> Answer {
    match sampler.current() {
        Ok(sample) => {
            let queues: serde_json::Map<String, Value> = sample
                .queues
                .iter()
                .map(|q| (q.queue.clone(), counts(&q.counts)))
                .collect();
            // Each queue's oldest waiting job's age in seconds (absent: none waits).
            let waiting: serde_json::Map<String, Value> = sample
                .waiting
                .iter()
                .map(|w| (w.queue.clone(), json!((sample.at - w.since).max(0.0))))
                .collect();
            (
                200,
                json!({"now": sample.at, "all": counts(&sample.all), "queues": queues,
                       "oldest_waiting": waiting,
                       "table": {"jobs": stored(&sample.all), "fence_floor": sample.floor},
                       "count_ms": sample.cost.as_secs_f64() * 1000.0}),
            )
        }
        Err(message) => error(503, "storage", message),
    }
}

/// `GET /api/history`: the counts of every queue together, one sample a refresh interval for
/// the last minutes the page was open: `{"samples": [{"at", "queued", "scheduled", "leased",
/// "done", "dead"}]}`, oldest first.
pub(crate) fn history(sampler: &Sampler) -> Answer {
    let samples: Vec<Value> = sampler
        .history()
        .iter()
        .map(|s| {
            let mut row = counts(&s.all);
            row["at"] = json!(s.at);
            row
        })
        .collect();
    (200, json!({"samples": samples}))
}

/// A job of a page; a dead one also with its last failure (`last_failure: {at, error}`, read by
/// `inspect`: a page holds at most `MAX_LIMIT` jobs, and only dead ones pay for it), so that the
/// list says why each died and when.
fn summary(store: &dyn Leases, job: &JobSummary) -> Value {
    let s = &job.state;
    let mut row = json!({"id": s.id, "state": job.status.as_str(), "queue": job.queue,
           "priority": job.priority, "owner": s.owner, "until": s.until,
           "fence": s.fence, "failures": job.failures});
    if job.status == JobStatus::Dead {
        if let Ok(Some(inspection)) = store.inspect(&s.id) {
            if let Some(last) = inspection.failures.last() {
                row["last_failure"] = json!({"at": last.at, "error": last.error});
            }
        }
    }
    row
}

/// `GET /api/jobs?state=&queue=&after=&limit=`: one page of jobs, read through an index by the
/// store (`Leases::list_jobs`, whose order each state follows); `next` is the `after` of the
/// following page (null on the last).
pub(crate) fn jobs(store: &dyn Leases, now: f64, query: &[(String, String)]) -> Answer {
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let mut listing = JobQuery::new().limit(DEFAULT_LIMIT);
    if let Some(state) = get("state") {
        match state.parse::<JobStatus>() {
            Ok(status) => listing = listing.status(status),
            Err(_) => {
                let names: Vec<&str> = JobStatus::ALL.iter().map(|s| s.as_str()).collect();
                return error(
                    400,
                    "invalid",
                    format!("unknown state {state:?}: use one of {}", names.join(", ")),
                );
            }
        }
    }
    match get("limit").map(str::parse::<usize>) {
        None => {}
        Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => listing = listing.limit(n),
        Some(_) => {
            return error(
                400,
                "invalid",
                format!("limit must be a whole number from 1 to {MAX_LIMIT}"),
            )
        }
    }
    if let Some(queue) = get("queue") {
        listing = listing.queue(queue);
    }
    if let Some(after) = get("after") {
        listing = listing.after(after);
    }
    match store.list_jobs(&listing, now) {
        Ok(page) => {
            let jobs: Vec<Value> = page.jobs.iter().map(|job| summary(store, job)).collect();
            (200, json!({"now": now, "jobs": jobs, "next": page.next}))
        }
        Err(err) => storage(err),
    }
}

/// `GET /api/workers`: the worker registry (`Leases::list_workers`): `{"now", "workers": [{owner,
/// host, pid, started, last_seen, until, stopped, alive, counters, held, holding}]}`.
pub(crate) fn workers(store: &dyn Leases, now: f64) -> Answer {
    match store.list_workers(now) {
        Ok(workers) => (200, json!({"now": now, "workers": workers})),
        Err(err) => storage(err),
    }
}

/// `GET /api/schedules`: the recurring jobs (section 11), by name: `{"schedules": [{name, cron,
/// tz, queue, priority, payload, missed, last}]}`, `last` the latest slot enqueued.
pub(crate) fn schedules(store: &dyn Leases) -> Answer {
    match store.schedules() {
        Ok(schedules) => (200, json!({"schedules": schedules})),
        Err(err) => storage(err),
    }
}

/// `GET /api/job/ID`: the job report: row, state, queue, payload, failures per attempt.
pub(crate) fn job(store: &dyn Leases, now: f64, id: &str) -> Answer {
    match store.inspect(id) {
        Ok(Some(inspection)) => {
            let state = JobStatus::at(&inspection.state, inspection.dead, now).as_str();
            (200, json!({"now": now, "state": state, "job": inspection}))
        }
        Ok(None) => error(404, "not_found", format!("no job {id:?}")),
        Err(err) => storage(err),
    }
}

/// `POST /api/revive` with `{"job": ID}`: the dead job becomes claimable now.
pub(crate) fn revive(store: &dyn Leases, now: f64, body: &str) -> Answer {
    let job = match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(fields)) => match fields.get("job") {
            Some(Value::String(job)) => job.clone(),
            _ => {
                return error(
                    400,
                    "invalid",
                    "send {\"job\": \"ID\"} with the job id as a string",
                )
            }
        },
        _ => return error(400, "invalid", "the body must be JSON: {\"job\": \"ID\"}"),
    };
    match store.revive(&job, now) {
        Ok(Outcome::Granted(())) => (200, json!({"revived": job})),
        Ok(Outcome::Rejected(Reason::NotFound)) => {
            error(404, "not_found", format!("no job {job:?}"))
        }
        Ok(Outcome::Rejected(reason)) => error(
            409,
            reason.code(),
            format!("job {job:?} was not revived: {reason}"),
        ),
        Err(err) => storage(err),
    }
}

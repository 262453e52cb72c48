//! The JSON API under `/api/`: stats, a paged job list, a job's report, revive. Every answer is a
//! status and a JSON value; an error is `{"error": {"code", "message"}}`.

use leasefence::{Inspection, JobCounts, Leases, Outcome, Reason};
use serde_json::{json, Value};

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
    let status = if err.code() == "storage" { 503 } else { 400 };
    error(status, err.code(), err.to_string())
}

/// A job, its queue and the one state it is in at `now` (as `stats` counts it).
pub(crate) struct Row {
    pub(crate) inspection: Inspection,
    pub(crate) status: &'static str,
}

/// The state `stats` counts a job in at `now`.
fn status_of(inspection: &Inspection, now: f64) -> &'static str {
    let row = &inspection.state;
    if inspection.dead {
        "dead"
    } else if row.done {
        "done"
    } else if row.until > now && row.owner.is_some() {
        "leased"
    } else if row.until > now {
        "scheduled"
    } else {
        "queued"
    }
}

/// Every job in insertion order with its queue and state. One `inspect` per job: this first
/// version reads the whole table (see docs/decisions/dashboard-server.md).
pub(crate) fn rows(store: &dyn Leases, now: f64) -> leasefence::Result<Vec<Row>> {
    let mut rows = Vec::new();
    for job in store.jobs()? {
        if let Some(inspection) = store.inspect(&job.id)? {
            let status = status_of(&inspection, now);
            rows.push(Row { inspection, status });
        }
    }
    Ok(rows)
}

/// Every queue that has a job, sorted.
pub(crate) fn queues(rows: &[Row]) -> Vec<String> {
    let mut queues: Vec<String> = rows.iter().map(|r| r.inspection.queue.clone()).collect();
    queues.sort();
    queues.dedup();
    queues
}

fn counts(c: &JobCounts) -> Value {
    json!({"queued": c.queued, "scheduled": c.scheduled, "leased": c.leased,
           "done": c.done, "dead": c.dead})
}

/// The counts by state of every queue and of all jobs, as the store's `stats` answers them.
pub(crate) fn stats_per_queue(
    store: &dyn Leases,
    now: f64,
) -> leasefence::Result<(JobCounts, Vec<(String, JobCounts)>)> {
    let all = store.stats(now)?;
    let mut per_queue = Vec::new();
    for queue in queues(&rows(store, now)?) {
        let counts = store.stats_in(Some(&queue), now)?;
        per_queue.push((queue, counts));
    }
    Ok((all, per_queue))
}

/// `GET /api/stats`: `{"now", "all": {state: n}, "queues": {queue: {state: n}}}`.
pub(crate) fn stats(store: &dyn Leases, now: f64) -> Answer {
    match stats_per_queue(store, now) {
        Ok((all, per_queue)) => {
            let queues: serde_json::Map<String, Value> = per_queue
                .iter()
                .map(|(q, c)| (q.clone(), counts(c)))
                .collect();
            (
                200,
                json!({"now": now, "all": counts(&all), "queues": queues}),
            )
        }
        Err(err) => storage(err),
    }
}

const STATES: [&str; 5] = ["queued", "scheduled", "leased", "done", "dead"];

fn summary(row: &Row) -> Value {
    let s = &row.inspection.state;
    json!({"id": s.id, "state": row.status, "queue": row.inspection.queue,
           "priority": row.inspection.priority, "owner": s.owner, "until": s.until,
           "fence": s.fence, "failures": row.inspection.failures.len()})
}

/// `GET /api/jobs?state=&queue=&after=&limit=`: jobs in insertion order, `limit` at a time;
/// `next` is the `after` of the following page (null on the last).
pub(crate) fn jobs(store: &dyn Leases, now: f64, query: &[(String, String)]) -> Answer {
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let state = get("state");
    if let Some(state) = state {
        if !STATES.contains(&state) {
            return error(
                400,
                "invalid",
                format!("unknown state {state:?}: use one of {}", STATES.join(", ")),
            );
        }
    }
    let limit = match get("limit").map(str::parse::<usize>) {
        None => DEFAULT_LIMIT,
        Some(Ok(n)) if (1..=MAX_LIMIT).contains(&n) => n,
        Some(_) => {
            return error(
                400,
                "invalid",
                format!("limit must be a whole number from 1 to {MAX_LIMIT}"),
            )
        }
    };
    let rows = match rows(store, now) {
        Ok(rows) => rows,
        Err(err) => return storage(err),
    };
    let start = match get("after") {
        None => 0,
        Some(after) => match rows.iter().position(|r| r.inspection.state.id == after) {
            Some(i) => i + 1,
            None => {
                return error(
                    400,
                    "invalid",
                    format!("after: no job {after:?}; pass the `next` of the previous page"),
                )
            }
        },
    };
    let mut matching = rows[start..].iter().filter(|r| {
        state.is_none_or(|s| s == r.status) && get("queue").is_none_or(|q| q == r.inspection.queue)
    });
    let page: Vec<&Row> = matching.by_ref().take(limit).collect();
    let next = if matching.next().is_some() {
        page.last().map(|r| r.inspection.state.id.clone())
    } else {
        None
    };
    let jobs: Vec<Value> = page.into_iter().map(summary).collect();
    (200, json!({"now": now, "jobs": jobs, "next": next}))
}

/// `GET /api/job/ID`: the job report: row, state, queue, payload, failures per attempt.
pub(crate) fn job(store: &dyn Leases, now: f64, id: &str) -> Answer {
    match store.inspect(id) {
        Ok(Some(inspection)) => {
            let state = status_of(&inspection, now);
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

//! The dispatch's typed answers as the WIT's records and variants, and the WIT's arguments as the
//! crate's: shapes only, no rules.

use super::exports::leasefence::store::types as wit;
use crate::protocol::{Answer, LeaseItem, Request, Returned};
use crate::Reason;

type Answered<T> = std::result::Result<T, wit::StoreError>;

/// A crate error as the WIT's: its code, its message, whether to try again.
pub(super) fn store_error(err: &crate::Error) -> wit::StoreError {
    wit::StoreError {
        code: match err.error_code() {
            crate::ErrorCode::InvalidArgument => wit::ErrorCode::InvalidArgument,
            _ => wit::ErrorCode::Storage,
        },
        message: err.to_string(),
        retryable: err.is_retryable(),
    }
}

/// An answer's value in the WIT's shape, or the value itself when it has another shape.
pub(super) type Shaped<T> = std::result::Result<T, Returned>;

/// The error for what the component cannot return: a bug of the dispatch or of this module,
/// reported as an error rather than a trap.
fn bug(message: String) -> wit::StoreError {
    wit::StoreError {
        code: wit::ErrorCode::Storage,
        message: format!("{message}: a leasefence bug, please report it"),
        retryable: false,
    }
}

/// The answer's value through `shape`; only a value of another shape is written out, for the
/// error.
pub(super) fn expect<T>(
    answer: Answer,
    op: &str,
    shape: impl FnOnce(Returned) -> Shaped<T>,
) -> Answered<T> {
    shape(answer.value).map_err(|other| unexpected(op, &other))
}

fn unexpected(op: &str, value: &Returned) -> wit::StoreError {
    bug(format!(
        "{op} answered {value:?}, which the component cannot return"
    ))
}

pub(super) fn reason(reason: Reason) -> wit::Reason {
    match reason {
        Reason::NotFound => wit::Reason::NotFound,
        Reason::Done => wit::Reason::Done,
        Reason::Held { owner, until } => wit::Reason::Held(wit::Holder { owner, until }),
        Reason::Scheduled { until } => wit::Reason::Scheduled(until),
        Reason::StaleFence { current } => wit::Reason::StaleFence(current),
        Reason::NotOwner => wit::Reason::NotOwner,
        Reason::Expired { until } => wit::Reason::Expired(until),
        Reason::NotDead => wit::Reason::NotDead,
    }
}

/// Why the store said no; a refusal without a reason is a bug of the dispatch, reported rather
/// than guessed.
fn refusal(answer_reason: Option<Reason>, op: &str) -> Answered<wit::Reason> {
    answer_reason
        .map(reason)
        .ok_or_else(|| bug(format!("{op} was refused without a reason")))
}

/// `claim`: the new fence, or why not.
pub(super) fn fence_or_reason(answer: Answer) -> Answered<Result<wit::Fence, wit::Reason>> {
    match answer.value {
        Returned::Fence(fence) => Ok(Ok(fence)),
        Returned::Null => Ok(Err(refusal(answer.reason, "claim")?)),
        other => Err(unexpected("claim", &other)),
    }
}

/// A write that answers true, or false with a reason.
pub(super) fn unit_or_reason(answer: Answer) -> Answered<Result<(), wit::Reason>> {
    match answer.value {
        Returned::Bool(true) => Ok(Ok(())),
        Returned::Bool(false) => Ok(Err(refusal(answer.reason, "the write")?)),
        other => Err(unexpected("a write", &other)),
    }
}

/// `renew-many`, `complete-many`: one answer per lease.
pub(super) fn per_lease(answer: Answer) -> Answered<Vec<Result<(), wit::Reason>>> {
    match answer.value {
        Returned::Answers(items) => items.into_iter().map(unit_or_reason).collect(),
        other => Err(unexpected("a batch", &other)),
    }
}

pub(super) fn bool_value(value: Returned) -> Shaped<bool> {
    match value {
        Returned::Bool(b) => Ok(b),
        other => Err(other),
    }
}

pub(super) fn bools(value: Returned) -> Shaped<Vec<bool>> {
    match value {
        Returned::Bools(list) => Ok(list),
        other => Err(other),
    }
}

pub(super) fn count(value: Returned) -> Shaped<u64> {
    match value {
        Returned::Count(n) => Ok(n),
        other => Err(other),
    }
}

pub(super) fn strings(value: Returned) -> Shaped<Vec<String>> {
    match value {
        Returned::Strings(list) => Ok(list),
        other => Err(other),
    }
}

pub(super) fn fences(value: Returned) -> Shaped<Vec<Option<wit::Fence>>> {
    match value {
        Returned::Fences(list) => Ok(list),
        other => Err(other),
    }
}

fn state(s: crate::JobState) -> wit::JobState {
    wit::JobState {
        id: s.id,
        owner: s.owner,
        until: s.until,
        fence: s.fence,
        result: s.result,
        done: s.done,
    }
}

pub(super) fn optional_state(value: Returned) -> Shaped<Option<wit::JobState>> {
    match value {
        Returned::State(s) => Ok(Some(state(s))),
        Returned::Null => Ok(None),
        other => Err(other),
    }
}

fn claimed(c: crate::ClaimedJob) -> wit::ClaimedJob {
    wit::ClaimedJob {
        job: c.job,
        fence: c.fence,
        payload: c.payload,
        base: c.base,
    }
}

pub(super) fn optional_claimed(value: Returned) -> Shaped<Option<wit::ClaimedJob>> {
    match value {
        Returned::Claimed(c) => Ok(Some(claimed(c))),
        Returned::Null => Ok(None),
        other => Err(other),
    }
}

pub(super) fn claimed_list(value: Returned) -> Shaped<Vec<wit::ClaimedJob>> {
    match value {
        Returned::ClaimedList(list) => Ok(list.into_iter().map(claimed).collect()),
        other => Err(other),
    }
}

fn job_counts(c: crate::JobCounts) -> wit::JobCounts {
    wit::JobCounts {
        queued: c.queued,
        scheduled: c.scheduled,
        leased: c.leased,
        done: c.done,
        dead: c.dead,
    }
}

pub(super) fn counts(value: Returned) -> Shaped<wit::JobCounts> {
    match value {
        Returned::Counts(c) => Ok(job_counts(c)),
        other => Err(other),
    }
}

pub(super) fn queue_counts(value: Returned) -> Shaped<Vec<wit::QueueCounts>> {
    match value {
        Returned::QueueCounts(list) => Ok(list
            .into_iter()
            .map(|q| wit::QueueCounts {
                queue: q.queue,
                counts: job_counts(q.counts),
            })
            .collect()),
        other => Err(other),
    }
}

pub(super) fn optional_inspection(value: Returned) -> Shaped<Option<wit::Inspection>> {
    match value {
        Returned::Inspection(i) => Ok(Some(wit::Inspection {
            state: state(i.state),
            attempts: i.attempts,
            dead: i.dead,
            payload: i.payload,
            failures: i
                .failures
                .into_iter()
                .map(|f| wit::Failure {
                    fence: f.fence,
                    at: f.at,
                    error: f.error,
                })
                .collect(),
            queue: i.queue,
            priority: i.priority,
        })),
        Returned::Null => Ok(None),
        other => Err(other),
    }
}

pub(super) fn next_due(value: Returned) -> Shaped<wit::NextDue> {
    match value {
        Returned::NextDue(d) => Ok(wit::NextDue {
            job: d.job,
            slot: d.slot,
        }),
        other => Err(other),
    }
}

pub(super) fn schedules(value: Returned) -> Shaped<Vec<wit::StoredSchedule>> {
    match value {
        Returned::Schedules(list) => Ok(list
            .into_iter()
            .map(|s| wit::StoredSchedule {
                schedule: wit::Schedule {
                    name: s.schedule.name,
                    cron: s.schedule.cron,
                    tz: s.schedule.tz,
                    queue: s.schedule.queue,
                    priority: s.schedule.priority,
                    payload: s.schedule.payload,
                    missed: match s.schedule.missed {
                        crate::Missed::Latest => wit::Missed::Latest,
                        crate::Missed::All => wit::Missed::All,
                    },
                },
                last: s.last,
            })
            .collect()),
        other => Err(other),
    }
}

pub(super) fn new_job(job: wit::NewJob) -> crate::NewJob {
    crate::NewJob {
        job: job.job,
        run_at: job.run_at,
        payload: job.payload,
        queue: job.queue,
        priority: job.priority,
    }
}

pub(super) fn lease_item(item: wit::LeaseItem) -> LeaseItem {
    LeaseItem {
        job: item.job,
        fence: item.fence,
        result: item.result,
    }
}

pub(super) fn schedule_request(s: wit::Schedule) -> Request {
    Request::Schedule {
        name: s.name,
        cron: s.cron,
        tz: s.tz,
        queue: s.queue,
        priority: s.priority,
        payload: s.payload,
        missed: Some(
            match s.missed {
                wit::Missed::Latest => crate::Missed::Latest,
                wit::Missed::All => crate::Missed::All,
            }
            .as_str()
            .to_string(),
        ),
    }
}

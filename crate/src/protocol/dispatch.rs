//! Running a request: the [`Backend`] it runs on, and the one dispatch from a [`Request`] to the
//! store's operation.

use std::borrow::Cow;

use super::{Answer, LeaseItem, Request, Response, Returned};
use crate::async_leases::AsyncLeases;
use crate::batch::{LeaseCompletion, NewJob};
use crate::call::{Call, Queues, Reply};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::leases::Leases;
use crate::outcome::Outcome;
use crate::rules::fenced::Finish;
use crate::sqlite::LeaseStore;

/// Where requests run: a store, opened lazily. `claim_many` runs as the store's
/// [`Leases::claim_many`] does (threads and connections per owner on a file).
///
/// Requests run through [`Backend::leases`], the store as the [`Leases`] trait, so a backend may
/// serve any storage. A backend on an SQLite [`LeaseStore`] only implements [`Backend::store`];
/// one on other storage ([`TargetBackend`](super::TargetBackend) on PostgreSQL) overrides
/// `leases` too.
///
/// ```
/// use leasefence::{protocol::Backend, LeaseStore};
/// struct Memory(LeaseStore);
/// impl Backend for Memory {
///     fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) }
/// }
/// # let _ = Memory(LeaseStore::open_in_memory()?);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub trait Backend {
    /// The SQLite store to run operations on; may open it on first use. A backend whose storage
    /// is not an SQLite [`LeaseStore`] answers with an error and overrides [`Backend::leases`].
    fn store(&mut self) -> Result<&LeaseStore>;

    /// The store every request runs on, as the [`Leases`] trait. The default is
    /// [`Backend::store`].
    ///
    /// ```
    /// # use leasefence::{protocol::Backend, LeaseStore};
    /// # struct Memory(LeaseStore);
    /// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
    /// let mut backend = Memory(LeaseStore::open_in_memory()?);
    /// assert!(backend.leases()?.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    fn leases(&mut self) -> Result<&dyn Leases> {
        Ok(self.store()?)
    }
}

/// Parses, checks and runs one request line and returns its response.
///
/// ```
/// # use leasefence::{protocol::{respond, Backend}, LeaseStore};
/// # struct Memory(LeaseStore);
/// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
/// let mut backend = Memory(LeaseStore::open_in_memory()?);
/// assert_eq!(respond(&mut backend, "nonsense").code(), Some("bad_request"));
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn respond(backend: &mut dyn Backend, line: &str) -> Response {
    match Request::parse(line) {
        Ok(request) => execute(backend, &request),
        Err(response) => response,
    }
}

/// Checks the argument values, then runs the request.
///
/// ```
/// # use leasefence::{protocol::{execute, Backend, Request}, LeaseStore};
/// # struct Memory(LeaseStore);
/// # impl Backend for Memory { fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) } }
/// let mut backend = Memory(LeaseStore::open_in_memory()?);
/// let r = execute(&mut backend, &Request::Enqueue {
///     job: "j".into(), run_at: None, payload: None, queue: None, priority: None,
/// });
/// assert_eq!(r.to_json(), r#"{"value":true}"#);
/// # Ok::<(), leasefence::Error>(())
/// ```
pub fn execute(backend: &mut dyn Backend, request: &Request) -> Response {
    match answer(backend, request) {
        Ok(answer) => answer.into(),
        Err(err) => Response::failed(&err),
    }
}

/// Checks the argument values, then runs the request: the typed [`Answer`], or the error
/// (`invalid_argument`, `storage`). What [`execute`] and the wasm calls share.
pub(crate) fn answer(backend: &mut dyn Backend, request: &Request) -> Result<Answer> {
    request.validate()?;
    let store = backend.leases()?;
    crate::async_leases::ready(run(store, request))
}

fn answered<T>(
    outcome: Outcome<T>,
    to_value: impl FnOnce(T) -> Returned,
    refused: Returned,
) -> Answer {
    match outcome {
        Outcome::Granted(value) => Answer {
            value: to_value(value),
            reason: None,
        },
        Outcome::Rejected(reason) => Answer {
            value: refused,
            reason: Some(reason),
        },
    }
}

/// A yes/no outcome as an answer: `true`, or `false` with the reason.
fn yes_or_no(outcome: Outcome<()>) -> Answer {
    answered(outcome, |()| Returned::Bool(true), Returned::Bool(false))
}

fn leases_of(owner: &str, items: &[LeaseItem]) -> Vec<Lease> {
    items
        .iter()
        .map(|item| Lease::new(&item.job, owner, item.fence))
        .collect()
}

fn plain(value: Returned) -> Answer {
    Answer {
        value,
        reason: None,
    }
}

/// A request's `queues` as a call takes them.
fn queues_of(queues: &Option<Vec<String>>) -> Queues<'_> {
    Queues::borrowing(queues.as_deref())
}

/// A lease of the request, as a call takes it.
fn lease(job: &str, owner: &str, fence: crate::Fence) -> Cow<'static, Lease> {
    Cow::Owned(Lease::new(job, owner, fence))
}

/// The call a checked request makes; `None` for a schedule request that stores nothing.
fn call_of(request: &Request) -> Result<Option<Call<'_>>> {
    Ok(Some(match request {
        Request::Init => Call::Init,
        Request::Enqueue {
            job,
            run_at,
            payload,
            queue,
            priority,
        } => Call::Enqueue {
            job: Cow::Owned(NewJob {
                job: job.clone(),
                run_at: *run_at,
                payload: payload.clone(),
                queue: queue.clone(),
                priority: *priority,
            }),
        },
        Request::State { job } => Call::State { job: job.into() },
        Request::Claim {
            job,
            owner,
            now,
            ttl,
        } => Call::Claim {
            job: job.into(),
            owner: owner.into(),
            now: *now,
            ttl: *ttl,
        },
        Request::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        } => Call::Renew {
            lease: lease(job, owner, *fence),
            now: *now,
            ttl: *ttl,
        },
        Request::Complete {
            job,
            owner,
            fence,
            now,
            result,
        } => Call::Complete {
            lease: lease(job, owner, *fence),
            now: *now,
            result: result.as_deref().map(Cow::Borrowed),
        },
        Request::Release { job, owner, fence } => Call::Release {
            lease: lease(job, owner, *fence),
        },
        Request::ClaimMany {
            job,
            owners,
            now,
            ttl,
        } => Call::ClaimMany {
            job: job.into(),
            owners: owners.iter().map(|owner| owner.into()).collect(),
            now: *now,
            ttl: *ttl,
        },
        Request::ClaimNext {
            owner,
            now,
            ttl,
            queues,
        } => Call::ClaimNext {
            queues: queues_of(queues),
            owner: owner.into(),
            now: *now,
            ttl: *ttl,
        },
        Request::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        } => Call::Fail {
            lease: lease(job, owner, *fence),
            now: *now,
            retry_at: *retry_at,
            error: error.as_deref().map(Cow::Borrowed),
        },
        Request::Revive { job, now } => Call::Revive {
            job: job.into(),
            now: *now,
        },
        Request::Inspect { job } => Call::Inspect { job: job.into() },
        Request::Stats { now, queue } => Call::Stats {
            queue: queue.as_deref().map(Cow::Borrowed),
            now: *now,
        },
        Request::EnqueueMany { jobs, statements } => Call::EnqueueMany {
            jobs: Cow::Borrowed(jobs),
            statements: Cow::Borrowed(statements),
        },
        Request::ClaimNextMany {
            owner,
            n,
            now,
            ttl,
            queues,
        } => Call::ClaimNextMany {
            queues: queues_of(queues),
            owner: owner.into(),
            n: *n,
            now: *now,
            ttl: *ttl,
        },
        Request::RenewMany {
            owner,
            leases,
            now,
            ttl,
        } => Call::RenewMany {
            leases: Cow::Owned(leases_of(owner, leases)),
            now: *now,
            ttl: *ttl,
        },
        Request::CompleteMany { owner, leases, now } => Call::CompleteMany {
            completions: leases_of(owner, leases)
                .into_iter()
                .zip(leases)
                .map(|(lease, item)| LeaseCompletion::new(lease, item.result.as_deref()))
                .collect::<Vec<_>>()
                .into(),
            now: *now,
        },
        Request::Schedule { .. } => match request.schedule()? {
            Some(schedule) => Call::Schedule {
                schedule: Cow::Owned(schedule),
            },
            None => return Ok(None),
        },
        Request::Unschedule { name } => Call::Unschedule { name: name.into() },
        Request::Schedules => Call::Schedules,
        Request::EnqueueDue { now } => Call::EnqueueDue { now: *now },
        Request::ListJobs { now, .. } => Call::ListJobs {
            query: Cow::Owned(request.job_query()?.unwrap_or_default()),
            now: *now,
        },
        Request::QueueStats { now } => Call::QueueStats { now: *now },
        Request::Heartbeat {
            owner,
            leases,
            now,
            ttl,
            ..
        } => {
            let Some(beat) = request.worker_beat()? else {
                return Err(Error::Internal {
                    message: "a heartbeat request without its worker".into(),
                });
            };
            Call::Heartbeat {
                beat: Cow::Owned(beat),
                leases: Cow::Owned(leases_of(owner, leases)),
                now: *now,
                ttl: *ttl,
            }
        }
        Request::ListWorkers { now } => Call::ListWorkers { now: *now },
        Request::Prune {
            before,
            keep_dead,
            limit,
            only_dead,
        } => Call::Prune {
            prune: Request::prune_options(before, keep_dead, limit, only_dead)?,
        },
        Request::OldestWaiting { now } => Call::OldestWaiting { now: *now },
        Request::FenceFloor => Call::FenceFloor,
        Request::NextDue { queues, .. } => Call::NextDue {
            queues: queues_of(queues),
        },
        Request::Fenced {
            job,
            owner,
            fence,
            now,
            statements,
            complete,
            result,
        } => Call::Fenced {
            lease: lease(job, owner, *fence),
            now: *now,
            statements: Cow::Borrowed(statements),
            finish: Finish::from_parts(*complete, result.clone())?,
        },
    }))
}

/// A reply as the protocol answers it (docs/contract.md section 4): a refusal is `false` or
/// `null` with its reason, a list of outcomes one answer each.
fn answer_of(reply: Reply) -> Result<Answer> {
    let nothing_or = |value: Option<Returned>| plain(value.unwrap_or(Returned::Null));
    Ok(match reply {
        Reply::Done => plain(Returned::Null),
        Reply::Bool(value) => plain(Returned::Bool(value)),
        Reply::Bools(values) => plain(Returned::Bools(values)),
        Reply::State(row) => nothing_or(row.map(Returned::State)),
        Reply::Fence(outcome) => answered(outcome, Returned::Fence, Returned::Null),
        Reply::Fences(outcomes) => plain(Returned::Fences(
            outcomes.into_iter().map(Outcome::granted).collect(),
        )),
        Reply::Claimed(claimed) => nothing_or(claimed.map(Returned::Claimed)),
        Reply::ClaimedMany(claimed) => plain(Returned::ClaimedList(claimed)),
        Reply::Outcome(outcome) => yes_or_no(outcome),
        Reply::Outcomes(outcomes) => plain(Returned::Answers(
            outcomes.into_iter().map(yes_or_no).collect(),
        )),
        Reply::Inspection(report) => nothing_or(report.map(Returned::Inspection)),
        Reply::Counts(counts) => plain(Returned::Counts(counts)),
        Reply::Page(page) => plain(Returned::Page(page)),
        Reply::QueueCounts(queues) => plain(Returned::QueueCounts(queues)),
        Reply::Waiting(waiting) => plain(Returned::Waiting(waiting)),
        Reply::Workers(workers) => plain(Returned::Workers(workers)),
        Reply::Pruned(count) => plain(Returned::Count(count)),
        Reply::FenceFloor(floor) => plain(Returned::Fence(floor)),
        Reply::Schedules(schedules) => plain(Returned::Schedules(schedules)),
        Reply::Enqueued(ids) => plain(Returned::Strings(ids)),
        other @ (Reply::Jobs(_) | Reply::Round(_) | Reply::NextDue(_)) => {
            return Err(other.unexpected("a protocol request"))
        }
    })
}

/// Runs a checked request on `store`: the one dispatch of every operation, for stores that answer
/// at once (through [`answer`]) and for those that answer later (PostgreSQL from Node).
pub(crate) async fn run(store: &(impl AsyncLeases + ?Sized), request: &Request) -> Result<Answer> {
    let Some(call) = call_of(request)? else {
        // A schedule that stores nothing (section 11) still answers as one that did.
        return Ok(plain(Returned::Bool(true)));
    };
    match (call, request) {
        // The schedule's own answer is `true`, not `null`.
        (call @ Call::Schedule { .. }, _) => {
            answer_of(store.execute(call).await?)?;
            Ok(plain(Returned::Bool(true)))
        }
        // The earliest due job, and the next slot of the schedules: two calls, one answer.
        (call @ Call::NextDue { .. }, Request::NextDue { now, .. }) => {
            let job = match store.execute(call).await? {
                Reply::NextDue(job) => job,
                other => return Err(other.unexpected("next_due")),
            };
            let schedules = match store.execute(Call::Schedules).await? {
                Reply::Schedules(schedules) => schedules,
                other => return Err(other.unexpected("schedules")),
            };
            let slot = crate::rules::schedule::next_slot(&schedules, *now);
            Ok(plain(Returned::NextDue(crate::wake::NextDue { job, slot })))
        }
        (call, _) => answer_of(store.execute(call).await?),
    }
}

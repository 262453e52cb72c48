//! Running a request: the [`Backend`] it runs on, and the one dispatch from a [`Request`] to the
//! store's operation.

use super::{Answer, LeaseItem, Request, Response, Returned};
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::Result;
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
    run(backend, request)
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

/// Each item's outcome as its own answer, in list order.
fn each_answered(outcomes: Vec<Outcome<()>>) -> Answer {
    plain(Returned::Answers(
        outcomes.into_iter().map(yes_or_no).collect(),
    ))
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

/// A request's `queues` as the store's methods take them.
fn queue_names(queues: &Option<Vec<String>>) -> Option<Vec<&str>> {
    queues
        .as_ref()
        .map(|queues| queues.iter().map(String::as_str).collect())
}

fn run(backend: &mut dyn Backend, request: &Request) -> Result<Answer> {
    Ok(match request {
        Request::Init => {
            backend.leases()?.init()?;
            plain(Returned::Null)
        }
        Request::Enqueue {
            job,
            run_at,
            payload,
            queue,
            priority,
        } => {
            let new = NewJob {
                job: job.clone(),
                run_at: *run_at,
                payload: payload.clone(),
                queue: queue.clone(),
                priority: *priority,
            };
            plain(Returned::Bool(backend.leases()?.enqueue_job(&new)?))
        }
        Request::State { job } => plain(match backend.leases()?.state(job)? {
            Some(row) => Returned::State(row),
            None => Returned::Null,
        }),
        Request::Claim {
            job,
            owner,
            now,
            ttl,
        } => answered(
            backend.leases()?.claim(job, owner, *now, *ttl)?,
            Returned::Fence,
            Returned::Null,
        ),
        Request::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        } => answered(
            backend
                .leases()?
                .renew(&Lease::new(job, owner, *fence), *now, *ttl)?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Complete {
            job,
            owner,
            fence,
            now,
            result,
        } => answered(
            backend
                .leases()?
                .complete(&Lease::new(job, owner, *fence), *now, result.as_deref())?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Release { job, owner, fence } => answered(
            backend.leases()?.release(&Lease::new(job, owner, *fence))?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::ClaimMany {
            job,
            owners,
            now,
            ttl,
        } => {
            let owners: Vec<&str> = owners.iter().map(String::as_str).collect();
            let outcomes = backend.leases()?.claim_many(job, &owners, *now, *ttl)?;
            plain(Returned::Fences(
                outcomes.into_iter().map(Outcome::granted).collect(),
            ))
        }
        Request::ClaimNext {
            owner,
            now,
            ttl,
            queues,
        } => {
            let names = queue_names(queues);
            let leases = backend.leases()?;
            plain(
                match leases.claim_next_in(names.as_deref(), owner, *now, *ttl)? {
                    Some(claimed) => Returned::Claimed(claimed),
                    None => Returned::Null,
                },
            )
        }
        Request::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        } => answered(
            backend.leases()?.fail(
                &Lease::new(job, owner, *fence),
                *now,
                *retry_at,
                error.as_deref(),
            )?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Revive { job, now } => answered(
            backend.leases()?.revive(job, *now)?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Inspect { job } => plain(match backend.leases()?.inspect(job)? {
            Some(report) => Returned::Inspection(report),
            None => Returned::Null,
        }),
        Request::Stats { now, queue } => plain(Returned::Counts(
            backend.leases()?.stats_in(queue.as_deref(), *now)?,
        )),
        Request::EnqueueMany { jobs, statements } if statements.is_empty() => {
            plain(Returned::Bools(backend.leases()?.enqueue_many(jobs)?))
        }
        Request::EnqueueMany { jobs, statements } => plain(Returned::Bools(
            backend.leases()?.enqueue_many_with(jobs, statements)?,
        )),
        Request::ClaimNextMany {
            owner,
            n,
            now,
            ttl,
            queues,
        } => {
            let names = queue_names(queues);
            plain(Returned::ClaimedList(
                backend
                    .leases()?
                    .claim_next_many_in(names.as_deref(), owner, *n, *now, *ttl)?,
            ))
        }
        Request::RenewMany {
            owner,
            leases,
            now,
            ttl,
        } => each_answered(
            backend
                .leases()?
                .renew_many(&leases_of(owner, leases), *now, *ttl)?,
        ),
        Request::CompleteMany { owner, leases, now } => {
            let completions: Vec<LeaseCompletion> = leases_of(owner, leases)
                .into_iter()
                .zip(leases)
                .map(|(lease, item)| LeaseCompletion::new(lease, item.result.as_deref()))
                .collect();
            each_answered(backend.leases()?.complete_many(&completions, *now)?)
        }
        Request::Schedule { .. } => {
            if let Some(schedule) = request.schedule()? {
                backend.leases()?.schedule(&schedule)?;
            }
            plain(Returned::Bool(true))
        }
        Request::Unschedule { name } => plain(Returned::Bool(backend.leases()?.unschedule(name)?)),
        Request::Schedules => plain(Returned::Schedules(backend.leases()?.schedules()?)),
        Request::EnqueueDue { now } => {
            plain(Returned::Strings(backend.leases()?.enqueue_due(*now)?))
        }
        Request::ListJobs { now, .. } => {
            let query = request.job_query()?.unwrap_or_default();
            plain(Returned::Page(backend.leases()?.list_jobs(&query, *now)?))
        }
        Request::QueueStats { now } => {
            plain(Returned::QueueCounts(backend.leases()?.queue_stats(*now)?))
        }
        Request::Heartbeat {
            owner,
            leases,
            now,
            ttl,
            ..
        } => {
            let Some(beat) = request.worker_beat()? else {
                return Err(crate::Error::Internal {
                    message: "a heartbeat request without its worker".into(),
                });
            };
            each_answered(backend.leases()?.heartbeat(
                &beat,
                &leases_of(owner, leases),
                *now,
                *ttl,
            )?)
        }
        Request::ListWorkers { now } => {
            plain(Returned::Workers(backend.leases()?.list_workers(*now)?))
        }
        Request::OldestWaiting { now } => {
            plain(Returned::Waiting(backend.leases()?.oldest_waiting(*now)?))
        }
        Request::NextDue { now, queues } => {
            let names = queue_names(queues);
            plain(Returned::NextDue(crate::wake::next_due(
                backend.leases()?,
                *now,
                names.as_deref(),
            )?))
        }
        Request::Fenced {
            job,
            owner,
            fence,
            now,
            statements,
            complete,
            result,
        } => answered(
            backend.leases()?.fenced(
                &Lease::new(job, owner, *fence),
                *now,
                statements,
                Finish::from_parts(*complete, result.clone())?,
            )?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
    })
}

//! Running a request: the [`Backend`] it runs on, and the one dispatch from a [`Request`] to the
//! store's operation.

use super::{Answer, LeaseItem, Request, Response, Returned};
use crate::async_leases::AsyncLeases;
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

/// Runs a checked request on `store`: the one dispatch of every operation, for stores that answer
/// at once (through [`answer`]) and for those that answer later (PostgreSQL from Node).
pub(crate) async fn run(store: &(impl AsyncLeases + ?Sized), request: &Request) -> Result<Answer> {
    Ok(match request {
        Request::Init => {
            store.init().await?;
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
            plain(Returned::Bool(store.enqueue_job(&new).await?))
        }
        Request::State { job } => plain(match store.state(job).await? {
            Some(row) => Returned::State(row),
            None => Returned::Null,
        }),
        Request::Claim {
            job,
            owner,
            now,
            ttl,
        } => answered(
            store.claim(job, owner, *now, *ttl).await?,
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
            store
                .renew(&Lease::new(job, owner, *fence), *now, *ttl)
                .await?,
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
            store
                .complete(&Lease::new(job, owner, *fence), *now, result.as_deref())
                .await?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Release { job, owner, fence } => answered(
            store.release(&Lease::new(job, owner, *fence)).await?,
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
            let outcomes = store.claim_many(job, &owners, *now, *ttl).await?;
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
            plain(
                match store
                    .claim_next_in(names.as_deref(), owner, *now, *ttl)
                    .await?
                {
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
            store
                .fail(
                    &Lease::new(job, owner, *fence),
                    *now,
                    *retry_at,
                    error.as_deref(),
                )
                .await?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Revive { job, now } => answered(
            store.revive(job, *now).await?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
        Request::Inspect { job } => plain(match store.inspect(job).await? {
            Some(report) => Returned::Inspection(report),
            None => Returned::Null,
        }),
        Request::Stats { now, queue } => plain(Returned::Counts(
            store.stats_in(queue.as_deref(), *now).await?,
        )),
        Request::EnqueueMany { jobs, statements } if statements.is_empty() => {
            plain(Returned::Bools(store.enqueue_many(jobs).await?))
        }
        Request::EnqueueMany { jobs, statements } => plain(Returned::Bools(
            store.enqueue_many_with(jobs, statements).await?,
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
                store
                    .claim_next_many_in(names.as_deref(), owner, *n, *now, *ttl)
                    .await?,
            ))
        }
        Request::RenewMany {
            owner,
            leases,
            now,
            ttl,
        } => each_answered(
            store
                .renew_many(&leases_of(owner, leases), *now, *ttl)
                .await?,
        ),
        Request::CompleteMany { owner, leases, now } => {
            let completions: Vec<LeaseCompletion> = leases_of(owner, leases)
                .into_iter()
                .zip(leases)
                .map(|(lease, item)| LeaseCompletion::new(lease, item.result.as_deref()))
                .collect();
            each_answered(store.complete_many(&completions, *now).await?)
        }
        Request::Schedule { .. } => {
            if let Some(schedule) = request.schedule()? {
                store.schedule(&schedule).await?;
            }
            plain(Returned::Bool(true))
        }
        Request::Unschedule { name } => plain(Returned::Bool(store.unschedule(name).await?)),
        Request::Schedules => plain(Returned::Schedules(store.schedules().await?)),
        Request::EnqueueDue { now } => plain(Returned::Strings(store.enqueue_due(*now).await?)),
        Request::ListJobs { now, .. } => {
            let query = request.job_query()?.unwrap_or_default();
            plain(Returned::Page(store.list_jobs(&query, *now).await?))
        }
        Request::QueueStats { now } => plain(Returned::QueueCounts(store.queue_stats(*now).await?)),
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
            each_answered(
                store
                    .heartbeat(&beat, &leases_of(owner, leases), *now, *ttl)
                    .await?,
            )
        }
        Request::ListWorkers { now } => plain(Returned::Workers(store.list_workers(*now).await?)),
        Request::Prune {
            before,
            keep_dead,
            limit,
            only_dead,
        } => {
            let prune = Request::prune_options(before, keep_dead, limit, only_dead)?;
            plain(Returned::Count(store.prune(&prune).await?))
        }
        Request::OldestWaiting { now } => {
            plain(Returned::Waiting(store.oldest_waiting(*now).await?))
        }
        Request::FenceFloor => plain(Returned::Fence(store.fence_floor().await?)),
        Request::NextDue { now, queues } => {
            let names = queue_names(queues);
            plain(Returned::NextDue(crate::wake::NextDue {
                job: store.next_due_in(names.as_deref()).await?,
                slot: crate::rules::schedule::next_slot(&store.schedules().await?, *now),
            }))
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
            store
                .fenced(
                    &Lease::new(job, owner, *fence),
                    *now,
                    statements,
                    Finish::from_parts(*complete, result.clone())?,
                )
                .await?,
            |()| Returned::Bool(true),
            Returned::Bool(false),
        ),
    })
}

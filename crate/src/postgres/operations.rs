//! Each operation of the contract on PostgreSQL, once for every client: its arguments checked
//! (`checks.rs`) before any connection is touched, then its statements (`ops.rs`, `many.rs`,
//! `recurring.rs`, `reads.rs`) on a connection the client lends for the call
//! ([`Connections`]). The native [`PgStore`](crate::PgStore) drives these at once (one poll);
//! Node's store (`wasm/postgres/`) awaits them. What differs between the clients stays with
//! them: `claim_many`'s race, fenced writes, the watch.

use std::future::Future;

use super::many::{self, ClaimRequest, ManyWrite};
use super::wire::{Sql, Value, Wire};
use super::{checks, ops, reads, recurring, schema};
use crate::batch::{LeaseCompletion, NewJob};
use crate::batch::{RoundAnswer, WorkerRound};
use crate::call::{Call, Reply};
use crate::error::Result;
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::registry::WorkerBeat;
use crate::rules::queues::check_queues;
use crate::rules::schedule::{check_name, now_seconds};
use crate::rules::{check_now, LeaseWindow};
use crate::schedule::{Schedule, StoredSchedule};

/// Runs `call` on `c`, each call as its function below runs it. What differs between the
/// clients is the store's own and never comes here: `claim_many`'s race, fenced writes,
/// `enqueue_many` with statements and `jobs` (answered with an internal error if they do).
pub(crate) async fn execute(c: &impl Connections, call: Call<'_>) -> Result<Reply> {
    Ok(match call {
        Call::Init => {
            init(c).await?;
            Reply::Done
        }
        Call::Enqueue { job } => Reply::Bool(enqueue(c, &job).await?),
        Call::EnqueueMany { jobs, statements } if statements.is_empty() => {
            Reply::Bools(enqueue_many(c, &jobs).await?)
        }
        Call::State { job } => Reply::State(state(c, &job).await?),
        Call::Claim {
            job,
            owner,
            now,
            ttl,
        } => Reply::Fence(claim(c, &job, &owner, now, ttl).await?),
        Call::ClaimNext {
            queues,
            owner,
            now,
            ttl,
        } => {
            let names = queues.names();
            Reply::Claimed(claim_next(c, names.as_deref(), &owner, now, ttl).await?)
        }
        Call::ClaimNextMany {
            queues,
            owner,
            n,
            now,
            ttl,
        } => {
            let names = queues.names();
            Reply::ClaimedMany(claim_next_many(c, names.as_deref(), &owner, n, now, ttl).await?)
        }
        Call::Renew { lease, now, ttl } => Reply::Outcome(renew(c, &lease, now, ttl).await?),
        Call::RenewMany { leases, now, ttl } => {
            Reply::Outcomes(renew_with_beat(c, "renew_many", None, &leases, now, ttl).await?)
        }
        Call::Heartbeat {
            beat,
            leases,
            now,
            ttl,
        } => {
            Reply::Outcomes(renew_with_beat(c, "heartbeat", Some(&beat), &leases, now, ttl).await?)
        }
        Call::Complete { lease, now, result } => {
            Reply::Outcome(complete(c, &lease, now, result.as_deref()).await?)
        }
        Call::CompleteMany { completions, now } => {
            Reply::Outcomes(complete_many(c, &completions, now).await?)
        }
        Call::CompleteThenClaim {
            completions,
            queues,
            owner,
            claim,
            now,
            ttl,
        } => {
            let names = queues.names();
            let round = WorkerRound {
                completions: &completions,
                queues: names.as_deref(),
                owner: &owner,
                claim,
                now,
                ttl,
            };
            Reply::Round(complete_then_claim(c, &round).await?)
        }
        Call::Fail {
            lease,
            now,
            retry_at,
            error,
        } => Reply::Outcome(fail(c, &lease, now, retry_at, error.as_deref()).await?),
        Call::Release { lease } => Reply::Outcome(release(c, &lease).await?),
        Call::Revive { job, now } => Reply::Outcome(revive(c, &job, now).await?),
        Call::Inspect { job } => Reply::Inspection(inspect(c, &job).await?),
        Call::Stats { queue, now } => Reply::Counts(stats(c, queue.as_deref(), now).await?),
        Call::ListJobs { query, now } => Reply::Page(list_jobs(c, &query, now).await?),
        Call::QueueStats { now } => Reply::QueueCounts(queue_stats(c, now).await?),
        Call::OldestWaiting { now } => Reply::Waiting(oldest_waiting(c, now).await?),
        Call::ListWorkers { now } => Reply::Workers(list_workers(c, now).await?),
        Call::Prune { prune: options } => Reply::Pruned(prune(c, &options).await?),
        Call::FenceFloor => Reply::FenceFloor(fence_floor(c).await?),
        Call::Schedule { schedule: entry } => {
            schedule(c, &entry).await?;
            Reply::Done
        }
        Call::Unschedule { name } => Reply::Bool(unschedule(c, &name).await?),
        Call::Schedules => Reply::Schedules(schedules(c).await?),
        Call::EnqueueDue { now } => Reply::Enqueued(enqueue_due(c, now).await?),
        Call::NextDue { queues } => Reply::NextDue(next_due(c, queues.names().as_deref()).await?),
        call => {
            return Err(crate::Error::Internal {
                message: format!(
                    "{} is the PostgreSQL store's own, not a shared operation",
                    call.name()
                ),
            })
        }
    })
}

/// What a client gives the operations: a connection, set up for the store, lent for one
/// operation.
pub(crate) trait Connections {
    /// The client's connection, as the statements see it.
    type Wire<'w>: Wire
    where
        Self: 'w;

    /// Runs `work` on a lent connection; `operation` names the call in errors.
    fn on_connection<T>(
        &self,
        operation: &'static str,
        work: impl AsyncFnOnce(&mut Self::Wire<'_>) -> Result<T>,
    ) -> impl Future<Output = Result<T>>;

    /// What one job may carry (section 13): the store's limits, the defaults where the client
    /// was opened without any.
    fn limits(&self) -> crate::Limits {
        crate::Limits::default()
    }
}

pub(crate) async fn init(c: &impl Connections) -> Result<()> {
    c.on_connection("init", async |wire| {
        schema::create_schema(wire, "init").await
    })
    .await
}

pub(crate) async fn enqueue(c: &impl Connections, new: &NewJob) -> Result<bool> {
    checks::enqueue(new)?;
    c.limits().check_payload(new.payload.as_deref())?;
    c.on_connection("enqueue", async |wire| ops::enqueue(wire, new).await)
        .await
}

pub(crate) async fn state(c: &impl Connections, job: &str) -> Result<Option<JobState>> {
    checks::check_text("job", job)?;
    c.on_connection("state", async |wire| ops::state(wire, job).await)
        .await
}

/// `claim` on checked arguments (`claim_many` checks once for all its owners).
pub(crate) async fn claim_within(
    c: &impl Connections,
    operation: &'static str,
    job: &str,
    owner: &str,
    window: LeaseWindow,
) -> Result<Outcome<Fence>> {
    c.on_connection(operation, async |wire| {
        ops::claim(wire, operation, job, owner, window).await
    })
    .await
}

pub(crate) async fn claim(
    c: &impl Connections,
    job: &str,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<Outcome<Fence>> {
    let window = checks::claim(job, owner, now, ttl)?;
    claim_within(c, "claim", job, owner, window).await
}

pub(crate) async fn renew(
    c: &impl Connections,
    lease: &Lease,
    now: f64,
    ttl: f64,
) -> Result<Outcome<()>> {
    let until = checks::renew(lease, now, ttl)?;
    c.on_connection("renew", async |wire| {
        ops::renew(wire, lease, now, until).await
    })
    .await
}

pub(crate) async fn complete(
    c: &impl Connections,
    lease: &Lease,
    now: f64,
    result: Option<&str>,
) -> Result<Outcome<()>> {
    checks::complete(lease, now, result)?;
    c.limits().check_result(result)?;
    c.on_connection("complete", async |wire| {
        ops::complete(wire, lease, now, result).await
    })
    .await
}

pub(crate) async fn release(c: &impl Connections, lease: &Lease) -> Result<Outcome<()>> {
    checks::check_lease(lease)?;
    c.on_connection("release", async |wire| ops::release(wire, lease).await)
        .await
}

pub(crate) async fn claim_next(
    c: &impl Connections,
    queues: Option<&[&str]>,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<Option<ClaimedJob>> {
    let window = checks::claim_next(queues, owner, now, ttl)?;
    let queues = queues.map(<[&str]>::to_vec);
    c.on_connection("claim_next", async |wire| {
        ops::claim_next(wire, queues, owner, window).await
    })
    .await
}

pub(crate) async fn fail(
    c: &impl Connections,
    lease: &Lease,
    now: f64,
    retry_at: Option<f64>,
    error: Option<&str>,
) -> Result<Outcome<()>> {
    checks::fail(lease, now, retry_at, error)?;
    c.limits().check_error(error)?;
    c.on_connection("fail", async |wire| {
        ops::fail(wire, lease, now, retry_at, error).await
    })
    .await
}

pub(crate) async fn revive(c: &impl Connections, job: &str, now: f64) -> Result<Outcome<()>> {
    checks::revive(job, now)?;
    c.on_connection("revive", async |wire| ops::revive(wire, job, now).await)
        .await
}

pub(crate) async fn inspect(c: &impl Connections, job: &str) -> Result<Option<Inspection>> {
    checks::check_text("job", job)?;
    c.on_connection("inspect", async |wire| ops::inspect(wire, job).await)
        .await
}

pub(crate) async fn stats(
    c: &impl Connections,
    queue: Option<&str>,
    now: f64,
) -> Result<JobCounts> {
    checks::stats(queue, now)?;
    c.on_connection("stats", async |wire| ops::stats(wire, queue, now).await)
        .await
}

pub(crate) async fn enqueue_many(c: &impl Connections, jobs: &[NewJob]) -> Result<Vec<bool>> {
    checks::enqueue_many(jobs)?;
    c.limits().check_jobs(jobs)?;
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    c.on_connection("enqueue_many", async |wire| {
        many::enqueue_many(wire, jobs).await
    })
    .await
}

pub(crate) async fn claim_next_many(
    c: &impl Connections,
    queues: Option<&[&str]>,
    owner: &str,
    n: usize,
    now: f64,
    ttl: f64,
) -> Result<Vec<ClaimedJob>> {
    let window = checks::claim_next_many(queues, owner, n, now, ttl)?;
    let request = ClaimRequest {
        queues: queues.map(<[&str]>::to_vec),
        owner,
        n,
        window,
    };
    c.on_connection("claim_next_many", async |wire| {
        many::claim_next_many(wire, request).await
    })
    .await
}

/// A worker's round: `complete_many` of its completions, then `claim_next_many`, in one
/// transaction on one connection (`many::complete_then_claim`). Bad completions refuse the round
/// as `complete_many` refuses them; a bad claim leaves the completions to `complete_many` alone
/// and answers its error, as the trait's default (the two calls) would. The native store's: Node's
/// workers group their calls in JavaScript.
pub(crate) async fn complete_then_claim(
    c: &impl Connections,
    round: &WorkerRound<'_>,
) -> Result<RoundAnswer> {
    let WorkerRound {
        completions,
        queues,
        owner,
        claim,
        now,
        ttl,
    } = *round;
    checks::complete_many(completions, now)?;
    c.limits().check_completions(completions)?;
    let window = match checks::claim_next_many(queues, owner, claim, now, ttl) {
        Ok(window) => window,
        Err(err) => {
            let completed = complete_many(c, completions, now).await?;
            return Ok(RoundAnswer {
                completed,
                claimed: Err(err),
            });
        }
    };
    let request = ClaimRequest {
        queues: queues.map(<[&str]>::to_vec),
        owner,
        n: claim,
        window,
    };
    let (completed, claimed) = c
        .on_connection("complete_then_claim", async |wire| {
            many::complete_then_claim(wire, completions, now, request).await
        })
        .await?;
    Ok(RoundAnswer { completed, claimed })
}

/// `renew_many` (`beat` none) or `heartbeat`: the leases renewed by `renew_many`'s statement, and
/// the worker's beat if given, in one transaction; every argument checked first.
pub(crate) async fn renew_with_beat(
    c: &impl Connections,
    operation: &'static str,
    beat: Option<&WorkerBeat>,
    leases: &[Lease],
    now: f64,
    ttl: f64,
) -> Result<Vec<Outcome<()>>> {
    let until = checks::renew_many(leases, beat, now, ttl)?;
    let items: Vec<&Lease> = leases.iter().collect();
    if items.is_empty() && beat.is_none() {
        return Ok(Vec::new());
    }
    let beat = beat.map(|beat| (beat, ttl));
    c.on_connection(operation, async |wire| {
        many::write_many(
            wire,
            operation,
            &items,
            now,
            beat,
            ManyWrite::Renew { until },
        )
        .await
    })
    .await
}

pub(crate) async fn complete_many(
    c: &impl Connections,
    completions: &[LeaseCompletion],
    now: f64,
) -> Result<Vec<Outcome<()>>> {
    checks::complete_many(completions, now)?;
    c.limits().check_completions(completions)?;
    let items: Vec<&Lease> = completions.iter().map(|done| &done.lease).collect();
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let write = ManyWrite::Complete { completions };
    c.on_connection("complete_many", async |wire| {
        many::write_many(wire, "complete_many", &items, now, None, write).await
    })
    .await
}

pub(crate) async fn schedule(c: &impl Connections, schedule: &Schedule) -> Result<()> {
    checks::schedule(schedule)?;
    c.on_connection("schedule", async |wire| {
        recurring::schedule(wire, schedule).await
    })
    .await
}

pub(crate) async fn unschedule(c: &impl Connections, name: &str) -> Result<bool> {
    check_name(name)?;
    c.on_connection("unschedule", async |wire| {
        recurring::unschedule(wire, name).await
    })
    .await
}

pub(crate) async fn schedules(c: &impl Connections) -> Result<Vec<StoredSchedule>> {
    c.on_connection("schedules", async |wire| {
        recurring::schedules(wire, "schedules").await
    })
    .await
}

pub(crate) async fn enqueue_due(c: &impl Connections, now: f64) -> Result<Vec<String>> {
    let now = now_seconds(now)?;
    c.on_connection("enqueue_due", async |wire| {
        recurring::enqueue_due(wire, now).await
    })
    .await
}

pub(crate) async fn next_due(c: &impl Connections, queues: Option<&[&str]>) -> Result<Option<f64>> {
    check_queues(queues)?;
    let queues = queues.map(<[&str]>::to_vec);
    c.on_connection("next_due", async |wire| {
        recurring::next_due(wire, queues).await
    })
    .await
}

pub(crate) async fn list_jobs(
    c: &impl Connections,
    query: &crate::JobQuery,
    now: f64,
) -> Result<crate::JobPage> {
    let cursor = checks::list_jobs(query, now)?;
    c.on_connection("list_jobs", async |wire| {
        reads::list_jobs(wire, query, cursor, now).await
    })
    .await
}

pub(crate) async fn queue_stats(c: &impl Connections, now: f64) -> Result<Vec<crate::QueueCounts>> {
    check_now(now)?;
    c.on_connection("queue_stats", async |wire| {
        reads::queue_stats(wire, now).await
    })
    .await
}

pub(crate) async fn list_workers(c: &impl Connections, now: f64) -> Result<Vec<crate::WorkerInfo>> {
    check_now(now)?;
    c.on_connection("list_workers", async |wire| {
        reads::list_workers(wire, now).await
    })
    .await
}

pub(crate) async fn oldest_waiting(
    c: &impl Connections,
    now: f64,
) -> Result<Vec<crate::QueueWaiting>> {
    check_now(now)?;
    c.on_connection("oldest_waiting", async |wire| {
        reads::oldest_waiting(wire, now).await
    })
    .await
}

/// Contract `prune` on PostgreSQL: one statement per bounded transaction (sql/prune.sql), until
/// a transaction finds fewer jobs than it may delete or the limit is reached.
pub(crate) async fn prune(c: &impl Connections, prune: &crate::Prune) -> Result<u64> {
    let mut run = prune.start()?;
    while let Some(batch) = run.next_batch() {
        let params = vec![
            prune.before.into(),
            Value::Bool(prune.keep_dead),
            (batch as i64).into(),
            Value::Bool(prune.only_dead),
        ];
        let gone = c
            .on_connection("prune", async |wire| {
                wire.run("prune", Sql::Prune, params)
                    .await?
                    .one("prune")?
                    .int("prune", 0)
            })
            .await?;
        run.deleted(batch, gone.max(0) as u64);
    }
    Ok(run.total())
}

/// The fence floor on PostgreSQL: the highest fence prune ever deleted (0 if none).
pub(crate) async fn fence_floor(c: &impl Connections) -> Result<i64> {
    c.on_connection("fence_floor", async |wire| {
        wire.run("fence_floor", Sql::FenceFloor, Vec::new())
            .await?
            .one("fence_floor")?
            .int("fence_floor", 0)
    })
    .await
}

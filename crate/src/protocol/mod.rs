//! The JSON-lines protocol of docs/contract.md section 4: one request object per line in, one
//! response line out. Used by `leasefence batch`, by the CLI's subcommands, and by the shared
//! contract vectors.
//!
//! Checks run in a fixed order, so every bad line gets exactly one, predictable error, and no
//! error ever reaches the database: first the line's shape (`bad_request`: not JSON, unknown op,
//! missing or mistyped field), then the argument values (`invalid_argument`), and only then
//! storage (`storage`).
//!
//! ```
//! use leasefence::protocol::{respond, Backend};
//! use leasefence::LeaseStore;
//!
//! struct Memory(LeaseStore);
//! impl Backend for Memory {
//!     fn store(&mut self) -> leasefence::Result<&LeaseStore> { Ok(&self.0) }
//! }
//! let mut backend = Memory(LeaseStore::open_in_memory()?);
//! assert_eq!(respond(&mut backend, r#"{"op":"enqueue","job":"j"}"#).to_json(), r#"{"value":true}"#);
//! assert_eq!(
//!     respond(&mut backend, r#"{"op":"claim","job":"j","owner":"a","now":0,"ttl":0}"#).code(),
//!     Some("invalid_argument")
//! );
//! # Ok::<(), leasefence::Error>(())
//! ```

mod catalogue;
mod dispatch;
pub(crate) mod json;
mod line;
mod read;
mod response;
#[cfg(not(web))]
mod target_backend;

use crate::batch::NewJob;
use crate::error::Result;
use crate::outcome::Fence;
use crate::rules;
use crate::rules::fenced::{Finish, Statement};
// The wasm calls answer with the typed value (no JSON in between).
pub use catalogue::{operations, Operation, Parameter};
#[cfg_attr(not(web), allow(unused_imports))]
pub(crate) use dispatch::answer;
#[cfg(all(pg, web))]
pub(crate) use dispatch::run;
pub use dispatch::{execute, respond, Backend};
#[cfg(any(web, feature = "addon"))]
pub(crate) use read::js_name;
pub use read::WorkerFields;
pub(crate) use read::{FencedArgs, Members, Op, Source, OP_NAMES};
pub use response::Response;
pub(crate) use response::{Answer, Returned};
#[cfg(not(web))]
pub use target_backend::TargetBackend;

/// One parsed request: an operation and its arguments, named as in docs/contract.md section 2.
///
/// ```
/// let req = leasefence::protocol::Request::parse(r#"{"op":"state","job":"j"}"#).unwrap();
/// assert_eq!(req, leasefence::protocol::Request::State { job: "j".into() });
/// ```
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum Request {
    Init,
    Enqueue {
        job: String,
        run_at: Option<f64>,
        payload: Option<String>,
        queue: Option<String>,
        priority: Option<i64>,
    },
    State {
        job: String,
    },
    Claim {
        job: String,
        owner: String,
        now: f64,
        ttl: f64,
    },
    Renew {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        ttl: f64,
    },
    Complete {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        result: Option<String>,
    },
    Release {
        job: String,
        owner: String,
        fence: Fence,
    },
    ClaimMany {
        job: String,
        owners: Vec<String>,
        now: f64,
        ttl: f64,
    },
    ClaimNext {
        owner: String,
        now: f64,
        ttl: f64,
        queues: Option<Vec<String>>,
    },
    Fail {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        retry_at: Option<f64>,
        error: Option<String>,
    },
    Revive {
        job: String,
        now: f64,
    },
    Inspect {
        job: String,
    },
    Stats {
        now: f64,
        queue: Option<String>,
    },
    /// docs/contract.md section 8: `statements`, then optional `complete` and `result`.
    Fenced {
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        statements: Vec<Statement>,
        complete: bool,
        result: Option<String>,
    },
    /// docs/contract.md section 10: `enqueue` of every job, in one transaction; section 11: with
    /// the caller's `statements` (section 8's shape and restrictions, no lease) run first in the
    /// same transaction, all or nothing. Empty: no statements.
    EnqueueMany {
        jobs: Vec<NewJob>,
        statements: Vec<Statement>,
    },
    /// Up to `n` successive `claim_next` calls, in one transaction.
    ClaimNextMany {
        owner: String,
        n: usize,
        now: f64,
        ttl: f64,
        queues: Option<Vec<String>>,
    },
    /// `renew` of every lease of `owner`, in one transaction.
    RenewMany {
        owner: String,
        leases: Vec<LeaseItem>,
        now: f64,
        ttl: f64,
    },
    /// `complete` of every lease of `owner` with its result, in one transaction.
    CompleteMany {
        owner: String,
        leases: Vec<LeaseItem>,
        now: f64,
    },
    /// Section 11: stores a schedule (`missed`: `"latest"` or `"all"`; absent is latest).
    Schedule {
        name: String,
        cron: String,
        tz: Option<String>,
        queue: Option<String>,
        priority: Option<i64>,
        payload: Option<String>,
        missed: Option<String>,
    },
    /// Section 11: removes a schedule.
    Unschedule {
        name: String,
    },
    /// Section 11: every stored schedule.
    Schedules,
    /// Section 11: enqueues every schedule's due slots at `now`.
    EnqueueDue {
        now: f64,
    },
    /// Section 11, waking: when an idle worker of `queues` (`None`: every queue) has something
    /// to look at again without being woken: the earliest `until` of an open job of those
    /// queues, and the next slot of any schedule after `now`.
    NextDue {
        now: f64,
        queues: Option<Vec<String>>,
    },
    /// What a dashboard reads: one page of jobs at `now`, of one state (`queued`, `scheduled`,
    /// `leased`, `done`, `dead`) and one queue if given, from the `next` of the previous page,
    /// `limit` (default 50) at most; see [`JobQuery`](crate::JobQuery) for the order.
    ListJobs {
        now: f64,
        status: Option<String>,
        queue: Option<String>,
        after: Option<String>,
        limit: Option<i64>,
    },
    /// Every queue that has a job, by name, with its jobs in each state at `now`.
    QueueStats {
        now: f64,
    },
    /// The worker registry: `owner`'s beat (alive until `now + ttl`) and the renewal of its
    /// `leases`, in one transaction, answered per lease as `renew_many` answers.
    Heartbeat {
        owner: String,
        leases: Vec<LeaseItem>,
        now: f64,
        ttl: f64,
        worker: WorkerFields,
    },
    /// The worker registry at `now`, each worker with the live leases it holds.
    ListWorkers {
        now: f64,
    },
    /// Each queue with a claimable job at `now`, with since when its oldest one has waited.
    OldestWaiting {
        now: f64,
    },
    /// Deletes jobs that finished before `before` (dead ones too unless `keep_dead`; dead ones
    /// only with `only_dead`), at most `limit` of them (section 13); answers how many.
    Prune {
        before: f64,
        keep_dead: Option<bool>,
        limit: Option<i64>,
        only_dead: Option<bool>,
    },
    /// The highest fence `prune` ever deleted (section 13): every job enqueued since starts
    /// above it.
    FenceFloor,
}

/// One item of `renew_many`'s and `complete_many`'s `leases`: a job and the fence its owner
/// holds, and (`complete_many` only) the result to store.
///
/// ```
/// use leasefence::protocol::{LeaseItem, Request};
/// let line = r#"{"op":"renew_many","owner":"w","leases":[{"job":"a","fence":1}],"now":0,"ttl":5}"#;
/// let Request::RenewMany { leases, .. } = Request::parse(line).unwrap() else { panic!() };
/// assert_eq!(leases, [LeaseItem { job: "a".into(), fence: 1, result: None }]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct LeaseItem {
    /// The job.
    pub job: String,
    /// The fence its owner holds.
    pub fence: Fence,
    /// The result `complete_many` stores; always `None` for `renew_many`.
    pub result: Option<String>,
}

/// The operation names, as the protocol spells them (from [`OP_NAMES`]).
pub(crate) const OPS: [&str; OP_NAMES.len()] = {
    let mut names = [""; OP_NAMES.len()];
    let mut i = 0;
    while i < names.len() {
        names[i] = OP_NAMES[i].1;
        i += 1;
    }
    names
};

impl Request {
    /// A `schedule` request's [`Schedule`](crate::Schedule), checked (`None` for other requests).
    pub(crate) fn schedule(&self) -> Result<Option<crate::Schedule>> {
        let Request::Schedule {
            name,
            cron,
            tz,
            queue,
            priority,
            payload,
            missed,
        } = self
        else {
            return Ok(None);
        };
        let missed = match missed.as_deref() {
            None => crate::Missed::Latest,
            Some(text) => crate::Missed::parse(text).ok_or_else(|| {
                crate::Error::invalid(
                    "missed",
                    format!("is {text:?}; use \"latest\" (the default) or \"all\""),
                )
            })?,
        };
        let schedule = crate::Schedule {
            name: name.clone(),
            cron: cron.clone(),
            tz: tz.clone(),
            queue: queue.clone(),
            priority: *priority,
            payload: payload.clone(),
            missed,
        };
        rules::schedule::check(&schedule)?;
        Ok(Some(schedule))
    }

    /// A `prune` request's options, checked: a finite `before` and a limit of 0 or more.
    pub(crate) fn prune_options(
        before: &f64,
        keep_dead: &Option<bool>,
        limit: &Option<i64>,
        only_dead: &Option<bool>,
    ) -> Result<crate::Prune> {
        let limit = match limit {
            Some(n) if *n < 0 => {
                return Err(crate::Error::invalid(
                    "limit",
                    format!("must be 0 or more jobs (or null for no limit), got {n}"),
                ))
            }
            other => other.map(|n| n as u64),
        };
        let prune = crate::Prune::finished_before(*before)
            .keep_dead(keep_dead.unwrap_or(false))
            .only_dead(only_dead.unwrap_or(false))
            .limit(limit);
        prune.check()?;
        Ok(prune)
    }

    /// `list_jobs`' arguments as a [`JobQuery`](crate::JobQuery), checked (state name, limit,
    /// queue, cursor); `None` for any other request.
    pub(crate) fn job_query(&self) -> crate::Result<Option<crate::JobQuery>> {
        let Request::ListJobs {
            status,
            queue,
            after,
            limit,
            ..
        } = self
        else {
            return Ok(None);
        };
        let mut query = crate::JobQuery::new();
        query.status = status.as_deref().map(str::parse).transpose()?;
        query.queue = queue.clone();
        query.after = after.clone();
        if let Some(limit) = limit {
            // A negative or huge limit is refused by the limit check, as 0 is.
            query.limit = usize::try_from(*limit).unwrap_or(0);
        }
        crate::rules::listing::check_query(&query)?;
        Ok(Some(query))
    }

    /// `heartbeat`'s worker as a [`WorkerBeat`](crate::WorkerBeat), checked (pid present and a
    /// process id, counters from 0, names); `None` for any other request.
    pub(crate) fn worker_beat(&self) -> crate::Result<Option<crate::WorkerBeat>> {
        let Request::Heartbeat { owner, worker, .. } = self else {
            return Ok(None);
        };
        let pid = match worker.pid {
            Some(pid) => u32::try_from(pid).map_err(|_| {
                crate::Error::invalid(
                    "pid",
                    format!("must be a process id from 0 to 2^32-1, got {pid}"),
                )
            })?,
            None => {
                return Err(crate::Error::invalid(
                    "pid",
                    "is missing: a worker's beat names its process id",
                ))
            }
        };
        let mut counts = [0u64; 7];
        let names = crate::Counters::default().named();
        for ((count, given), (name, _)) in counts.iter_mut().zip(worker.counters).zip(names) {
            *count = u64::try_from(given.unwrap_or(0)).map_err(|_| {
                crate::Error::invalid(
                    name,
                    format!("a counter counts from 0, got {}", given.unwrap_or(0)),
                )
            })?;
        }
        let beat = crate::WorkerBeat {
            owner: owner.clone(),
            host: worker.host.clone(),
            pid,
            started: worker.started,
            stopping: worker.stopping,
            counters: rules::registry::counters(counts),
        };
        rules::registry::check_beat(&beat)?;
        Ok(Some(beat))
    }

    /// Checks argument values (the invalid arguments of docs/contract.md section 2) without
    /// touching storage.
    ///
    /// The store checks the same values again, with the same functions of `rules`: this check
    /// comes first so that a bad request never opens a database ([`TargetBackend`] opens on
    /// first use) and `checkArguments` can answer before `claimMany` starts threads, while the
    /// store's own check guards its public methods, which take plain numbers. A checked type
    /// handed from here to the store would have to cross the public [`Leases`](crate::Leases)
    /// trait.
    ///
    /// ```
    /// use leasefence::protocol::Request;
    /// let r = Request::ClaimNext { owner: "w".into(), now: f64::NAN, ttl: 5.0, queues: None };
    /// assert_eq!(r.validate().unwrap_err().code(), "invalid_argument");
    /// let r = Request::ClaimNext { owner: "w".into(), now: 0.0, ttl: 5.0, queues: Some(vec![]) };
    /// assert_eq!(r.validate().unwrap_err().code(), "invalid_argument");
    /// ```
    pub fn validate(&self) -> Result<()> {
        match self {
            Request::Init | Request::State { .. } | Request::Inspect { .. } => Ok(()),
            Request::Schedule { .. } => self.schedule().map(drop),
            Request::Unschedule { name } => rules::schedule::check_name(name),
            Request::Schedules => Ok(()),
            Request::EnqueueDue { now } => rules::schedule::now_seconds(*now).map(drop),
            Request::NextDue { now, queues } => {
                rules::check_now(*now)?;
                rules::queues::check_queues(queues.as_deref())
            }
            Request::ListJobs { now, .. } => {
                rules::check_now(*now)?;
                self.job_query().map(drop)
            }
            Request::QueueStats { now }
            | Request::ListWorkers { now }
            | Request::OldestWaiting { now } => rules::check_now(*now),
            Request::Prune {
                before,
                keep_dead,
                limit,
                only_dead,
            } => Self::prune_options(before, keep_dead, limit, only_dead).map(drop),
            Request::Heartbeat {
                leases, now, ttl, ..
            } => {
                rules::batch::check_batch("leases", leases.len())?;
                rules::lease_end(*now, *ttl)?;
                self.worker_beat().map(drop)
            }
            Request::Enqueue { run_at, queue, .. } => {
                rules::check_time("run_at", *run_at)?;
                rules::queues::check_optional_queue("queue", queue.as_deref())
            }
            Request::Release { .. } | Request::FenceFloor => Ok(()),
            Request::Complete { now, .. } | Request::Revive { now, .. } => rules::check_now(*now),
            Request::Stats { now, queue } => {
                rules::check_now(*now)?;
                rules::queues::check_optional_queue("queue", queue.as_deref())
            }
            Request::Fail { now, retry_at, .. } => {
                rules::check_now(*now)?;
                rules::check_time("retry_at", *retry_at)
            }
            Request::Fenced {
                now,
                statements,
                complete,
                result,
                ..
            } => {
                rules::check_now(*now)?;
                rules::fenced::check_statements(statements)?;
                Finish::from_parts(*complete, result.clone()).map(drop)
            }
            Request::Claim { now, ttl, .. } | Request::Renew { now, ttl, .. } => {
                rules::lease_end(*now, *ttl).map(drop)
            }
            Request::ClaimNext {
                now, ttl, queues, ..
            } => {
                rules::lease_end(*now, *ttl)?;
                rules::queues::check_queues(queues.as_deref())
            }
            Request::EnqueueMany { jobs, statements } => {
                rules::batch::check_new_jobs(jobs)?;
                rules::fenced::check_statements(statements)
            }
            Request::ClaimNextMany {
                n,
                now,
                ttl,
                queues,
                ..
            } => {
                rules::batch::check_claim_count(*n)?;
                rules::lease_end(*now, *ttl)?;
                rules::queues::check_queues(queues.as_deref())
            }
            Request::RenewMany {
                leases, now, ttl, ..
            } => {
                rules::batch::check_batch("leases", leases.len())?;
                rules::lease_end(*now, *ttl).map(drop)
            }
            Request::CompleteMany { leases, now, .. } => {
                rules::batch::check_batch("leases", leases.len())?;
                rules::check_now(*now)
            }
            Request::ClaimMany {
                owners, now, ttl, ..
            } => {
                rules::lease_end(*now, *ttl)?;
                #[cfg(not(web))]
                rules::check_owner_count(owners.len())?;
                let _ = owners;
                Ok(())
            }
        }
    }
}

/// The component's WIT (wit/leasefence.wit) is held to the one list of operations: every
/// operation is a method of its typed `store`, or is named here as reachable only through its
/// `protocol` interface (with why).
#[cfg(test)]
mod wit_follows_the_operations {
    use super::OP_NAMES;

    /// Dashboard and registry reads and fenced writes (docs/contract.md sections 8 and 9): their
    /// shapes are the protocol's JSON; a host runs them through `protocol.handle`.
    const PROTOCOL_ONLY: [&str; 6] = [
        "fenced",
        "fence_floor",
        "list_jobs",
        "heartbeat",
        "list_workers",
        "oldest_waiting",
    ];

    /// The store's constructors, no operations.
    const OPENERS: [&str; 2] = ["open", "open-with"];

    fn store_methods() -> Vec<String> {
        let wit = include_str!("../../wit/leasefence.wit");
        let body = wit
            .split("resource store {")
            .nth(1)
            .and_then(|rest| rest.split("\n    }").next())
            .expect("wit/leasefence.wit has a `resource store { ... }`");
        body.lines()
            .filter_map(|line| line.trim().split_once(": "))
            .filter(|(_, rest)| rest.starts_with("func(") || rest.starts_with("static func("))
            .map(|(name, _)| name.to_string())
            .collect()
    }

    #[test]
    fn every_operation_is_a_store_method_or_protocol_only() {
        let methods = store_methods();
        for (_, name, _) in OP_NAMES {
            let method = name.replace('_', "-");
            let typed = methods.contains(&method);
            let protocol_only = PROTOCOL_ONLY.contains(&name);
            assert!(
                typed != protocol_only,
                "operation {name}: add `{method}` to the store resource of wit/leasefence.wit, \
                 or list it in PROTOCOL_ONLY (typed: {typed}, protocol only: {protocol_only})"
            );
        }
        for method in &methods {
            let op = method.replace('-', "_");
            assert!(
                OPENERS.contains(&method.as_str())
                    || OP_NAMES.iter().any(|(_, name, _)| *name == op),
                "the store resource's `{method}` is no operation of the protocol"
            );
        }
        assert_eq!(
            methods.len(),
            OP_NAMES.len() - PROTOCOL_ONLY.len() + OPENERS.len()
        );
    }
}

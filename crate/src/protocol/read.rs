//! The one request reader: which fields each operation takes, in which order, written once. The
//! protocol's JSON objects and the wasm calls' positional JavaScript arguments are each a
//! [`Source`] of field values; [`Request::read`] asks a source for the
//! fields of an operation and builds the [`Request`].
//!
//! Each source words its own errors (the texts its users and tests know) and decides when a value
//! error is reported: the protocol's source keeps the rule that shape errors (`bad_request`) beat
//! value errors (`invalid_argument`) by holding a value error back until every field has been
//! read, and [`Source::finish`] reports it then.

use super::{LeaseItem, Request};
use crate::batch::NewJob;
use crate::outcome::Fence;
use crate::rules::fenced::Statement;

/// An operation, as every runtime names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `init`
    Init,
    /// `enqueue`
    Enqueue,
    /// `state`
    State,
    /// `claim`
    Claim,
    /// `renew`
    Renew,
    /// `complete`
    Complete,
    /// `release`
    Release,
    /// `claim_many` / `claimMany`
    ClaimMany,
    /// `claim_next` / `claimNext`
    ClaimNext,
    /// `fail` (section 7)
    Fail,
    /// `revive` (section 7)
    Revive,
    /// `inspect` (section 7)
    Inspect,
    /// `stats`: how many jobs are in each state
    Stats,
    /// `fenced`: the caller's statements in the transaction that checks the lease
    Fenced,
    /// `enqueue_many` / `enqueueMany` (section 10)
    EnqueueMany,
    /// `claim_next_many` / `claimNextMany` (section 10)
    ClaimNextMany,
    /// `renew_many` / `renewMany` (section 10)
    RenewMany,
    /// `complete_many` / `completeMany` (section 10)
    CompleteMany,
    /// `schedule` (section 11, recurring jobs)
    Schedule,
    /// `unschedule` (section 11)
    Unschedule,
    /// `schedules` (section 11)
    Schedules,
    /// `enqueue_due` / `enqueueDue` (section 11)
    EnqueueDue,
    /// `next_due` / `nextDue` (section 11, waking)
    NextDue,
    /// `list_jobs` / `listJobs` (what a dashboard reads)
    ListJobs,
    /// `queue_stats` / `queueStats`
    QueueStats,
    /// `heartbeat`: a worker's beat with its renewals (the worker registry)
    Heartbeat,
    /// `list_workers` / `listWorkers`: the worker registry
    ListWorkers,
    /// `oldest_waiting` / `oldestWaiting`: each queue's longest wait
    OldestWaiting,
    /// `prune`: deletes jobs finished before a time (section 13)
    Prune,
    /// `fence_floor` / `fenceFloor`: the highest fence ever pruned (section 13)
    FenceFloor,
}

/// Every operation with its protocol name and its JavaScript name, in the protocol's order.
pub(crate) const OP_NAMES: [(Op, &str, &str); 30] = [
    (Op::Init, "init", "init"),
    (Op::Enqueue, "enqueue", "enqueue"),
    (Op::State, "state", "state"),
    (Op::Claim, "claim", "claim"),
    (Op::Renew, "renew", "renew"),
    (Op::Complete, "complete", "complete"),
    (Op::Release, "release", "release"),
    (Op::ClaimMany, "claim_many", "claimMany"),
    (Op::ClaimNext, "claim_next", "claimNext"),
    (Op::Fail, "fail", "fail"),
    (Op::Revive, "revive", "revive"),
    (Op::Inspect, "inspect", "inspect"),
    (Op::Stats, "stats", "stats"),
    (Op::Fenced, "fenced", "fenced"),
    (Op::EnqueueMany, "enqueue_many", "enqueueMany"),
    (Op::ClaimNextMany, "claim_next_many", "claimNextMany"),
    (Op::RenewMany, "renew_many", "renewMany"),
    (Op::CompleteMany, "complete_many", "completeMany"),
    (Op::Schedule, "schedule", "schedule"),
    (Op::Unschedule, "unschedule", "unschedule"),
    (Op::Schedules, "schedules", "schedules"),
    (Op::EnqueueDue, "enqueue_due", "enqueueDue"),
    (Op::NextDue, "next_due", "nextDue"),
    (Op::ListJobs, "list_jobs", "listJobs"),
    (Op::QueueStats, "queue_stats", "queueStats"),
    (Op::Heartbeat, "heartbeat", "heartbeat"),
    (Op::ListWorkers, "list_workers", "listWorkers"),
    (Op::OldestWaiting, "oldest_waiting", "oldestWaiting"),
    (Op::Prune, "prune", "prune"),
    (Op::FenceFloor, "fence_floor", "fenceFloor"),
];

impl Op {
    /// The operation the protocol calls `name`.
    pub(crate) fn from_protocol(name: &str) -> Option<Op> {
        OP_NAMES
            .iter()
            .find(|(_, p, _)| *p == name)
            .map(|(op, _, _)| *op)
    }

    /// The operation JavaScript calls `name` (`claimNext`).
    #[cfg_attr(not(web), allow(dead_code))]
    pub(crate) fn from_js(name: &str) -> Option<Op> {
        OP_NAMES
            .iter()
            .find(|(_, _, j)| *j == name)
            .map(|(op, _, _)| *op)
    }
}

/// A protocol name as JavaScript spells it: `run_at` is `runAt`.
#[cfg_attr(not(web), allow(dead_code))]
pub(crate) fn js_name(name: &str) -> String {
    let mut parts = name.split('_');
    let mut out = parts.next().unwrap_or_default().to_owned();
    for part in parts {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.extend(first.to_uppercase());
            out.push_str(chars.as_str());
        }
    }
    out
}

/// The named values of one object: a request's fields, or the members of one item of a batch
/// list (`{"job", "fence"}`). Names are the protocol's; a source spells them its own way.
pub(crate) trait Members {
    /// What a bad field becomes.
    type Error;
    /// A string field.
    fn string(&mut self, name: &'static str) -> Result<String, Self::Error>;
    /// A string or null.
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, Self::Error>;
    /// A number (`now`, `ttl`).
    fn number(&mut self, name: &'static str) -> Result<f64, Self::Error>;
    /// An optional string: absent or null is `None` (`payload`, `error`).
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, Self::Error>;
    /// An optional number: absent or null is `None` (`run_at`).
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, Self::Error>;
    /// A number or null that callers are asked always to pass, because null means something
    /// (`retry_at`: null makes the job dead). Read as [`Members::maybe_number`] (absent is null);
    /// only the operations' signatures ([`super::catalogue`]) tell it apart.
    fn nullable_number(&mut self, name: &'static str) -> Result<Option<f64>, Self::Error> {
        self.maybe_number(name)
    }
    /// A fence: an integer.
    fn fence(&mut self, name: &'static str) -> Result<Fence, Self::Error>;
    /// An optional integer within `i64`: absent or null is `None` (`priority`). A number that is
    /// not an integer, or out of range, is a value error (`invalid_argument`).
    fn maybe_integer(&mut self, name: &'static str) -> Result<Option<i64>, Self::Error>;
    /// An optional boolean: absent or null is `None` (`stopping`).
    fn maybe_bool(&mut self, name: &'static str) -> Result<Option<bool>, Self::Error>;
}

/// Where the field values of one request come from. Fields are asked for in the operation's
/// positional order (docs/contract.md section 5), so a positional source can keep a cursor.
pub(crate) trait Source: Members {
    /// One item of a list of objects (`jobs`, `leases`), read by name.
    type Item: Members<Error = Self::Error>;
    /// A count: a whole number (`n`); its range is [`Request::validate`]'s.
    fn count(&mut self, name: &'static str) -> Result<usize, Self::Error>;
    /// An array of strings.
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, Self::Error>;
    /// An optional array of strings: absent or null is `None` (`queues`).
    fn maybe_strings(&mut self, name: &'static str) -> Result<Option<Vec<String>>, Self::Error>;
    /// An array of objects, each item read by `read` (which asks for every member the item may
    /// have; any other member is refused).
    fn objects<T>(
        &mut self,
        name: &'static str,
        read: impl FnMut(&mut Self::Item) -> Result<T, Self::Error>,
    ) -> Result<Vec<T>, Self::Error>;
    /// An optional statement list (`enqueue_many`'s `statements`, section 11): absent or null is
    /// `None`; else an array of `{sql, params}` as a `fenced` request's.
    fn maybe_statements(
        &mut self,
        name: &'static str,
    ) -> Result<Option<Vec<Statement>>, Self::Error>;
    /// The tail of a `fenced` request: its statements, whether the job completes, the result.
    fn fenced_writes(&mut self) -> Result<FencedArgs, Self::Error>;
    /// The options of a `schedule` request (or a heartbeat's `worker`), read by `read`: members
    /// of the request itself in the protocol, the members of one object argument (`{tz, queue,
    /// ...}`) in JavaScript. `name` is that argument's name in a positional signature.
    fn options<T>(
        &mut self,
        name: &'static str,
        read: impl FnOnce(&mut Self::Item) -> Result<T, Self::Error>,
    ) -> Result<T, Self::Error>;
    /// Called once every field was read: the place for a held-back value error.
    fn finish(self) -> Result<(), Self::Error>
    where
        Self: Sized,
    {
        Ok(())
    }
}

/// The members of one `leases` item: `job` and `fence`, and for `complete_many` the optional
/// `result`.
fn lease_item<M: Members>(item: &mut M, with_result: bool) -> Result<LeaseItem, M::Error> {
    Ok(LeaseItem {
        job: item.string("job")?,
        fence: item.fence("fence")?,
        result: if with_result {
            item.maybe_string("result")?
        } else {
            None
        },
    })
}

impl Request {
    /// Reads the fields of `op` from `source`, in positional order, and builds the request.
    /// Value checks beyond the field types are [`Request::validate`]'s.
    pub(crate) fn read<S: Source>(op: Op, mut s: S) -> Result<Request, S::Error> {
        let request = match op {
            Op::Init => Request::Init,
            Op::Enqueue => Request::Enqueue {
                job: s.string("job")?,
                run_at: s.maybe_number("run_at")?,
                payload: s.maybe_string("payload")?,
                queue: s.maybe_string("queue")?,
                priority: s.maybe_integer("priority")?,
            },
            Op::State => Request::State {
                job: s.string("job")?,
            },
            Op::Claim => Request::Claim {
                job: s.string("job")?,
                owner: s.string("owner")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::Renew => Request::Renew {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::Complete => Request::Complete {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                result: s.optional_string("result")?,
            },
            Op::Release => Request::Release {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
            },
            Op::ClaimMany => Request::ClaimMany {
                job: s.string("job")?,
                owners: s.strings("owners")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::ClaimNext => Request::ClaimNext {
                owner: s.string("owner")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
                queues: s.maybe_strings("queues")?,
            },
            Op::Fail => Request::Fail {
                job: s.string("job")?,
                owner: s.string("owner")?,
                fence: s.fence("fence")?,
                now: s.number("now")?,
                retry_at: s.nullable_number("retry_at")?,
                error: s.maybe_string("error")?,
            },
            Op::Revive => Request::Revive {
                job: s.string("job")?,
                now: s.number("now")?,
            },
            Op::Inspect => Request::Inspect {
                job: s.string("job")?,
            },
            Op::Stats => Request::Stats {
                now: s.number("now")?,
                queue: s.maybe_string("queue")?,
            },
            Op::EnqueueMany => Request::EnqueueMany {
                jobs: s.objects("jobs", |item| {
                    Ok(NewJob {
                        job: item.string("job")?,
                        run_at: item.maybe_number("run_at")?,
                        payload: item.maybe_string("payload")?,
                        queue: item.maybe_string("queue")?,
                        priority: item.maybe_integer("priority")?,
                    })
                })?,
                statements: s.maybe_statements("statements")?.unwrap_or_default(),
            },
            Op::ClaimNextMany => Request::ClaimNextMany {
                owner: s.string("owner")?,
                n: s.count("n")?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
                queues: s.maybe_strings("queues")?,
            },
            Op::RenewMany => Request::RenewMany {
                owner: s.string("owner")?,
                leases: s.objects("leases", |item| lease_item(item, false))?,
                now: s.number("now")?,
                ttl: s.number("ttl")?,
            },
            Op::CompleteMany => Request::CompleteMany {
                owner: s.string("owner")?,
                leases: s.objects("leases", |item| lease_item(item, true))?,
                now: s.number("now")?,
            },
            Op::Schedule => {
                let (name, cron) = (s.string("name")?, s.string("cron")?);
                let options = s.options("options", |o| {
                    Ok(ScheduleOptions {
                        tz: o.maybe_string("tz")?,
                        queue: o.maybe_string("queue")?,
                        priority: o.maybe_integer("priority")?,
                        payload: o.maybe_string("payload")?,
                        missed: o.maybe_string("missed")?,
                    })
                })?;
                Request::Schedule {
                    name,
                    cron,
                    tz: options.tz,
                    queue: options.queue,
                    priority: options.priority,
                    payload: options.payload,
                    missed: options.missed,
                }
            }
            Op::Unschedule => Request::Unschedule {
                name: s.string("name")?,
            },
            Op::Schedules => Request::Schedules,
            Op::EnqueueDue => Request::EnqueueDue {
                now: s.number("now")?,
            },
            Op::NextDue => Request::NextDue {
                now: s.number("now")?,
                queues: s.maybe_strings("queues")?,
            },
            Op::ListJobs => Request::ListJobs {
                now: s.number("now")?,
                status: s.maybe_string("status")?,
                queue: s.maybe_string("queue")?,
                after: s.maybe_string("after")?,
                limit: s.maybe_integer("limit")?,
            },
            Op::QueueStats => Request::QueueStats {
                now: s.number("now")?,
            },
            Op::Heartbeat => {
                let owner = s.string("owner")?;
                let leases = s.objects("leases", |item| lease_item(item, false))?;
                let (now, ttl) = (s.number("now")?, s.number("ttl")?);
                let worker = s.options("worker", |o| {
                    let count = |o: &mut S::Item, name| o.maybe_integer(name);
                    Ok(WorkerFields {
                        host: o.string("host")?,
                        pid: o.maybe_integer("pid")?,
                        started: o.number("started")?,
                        stopping: o.maybe_bool("stopping")?.unwrap_or(false),
                        counters: [
                            count(o, "claimed")?,
                            count(o, "completed")?,
                            count(o, "failed")?,
                            count(o, "dead")?,
                            count(o, "leases_lost")?,
                            count(o, "stale_writes_refused")?,
                            count(o, "renewals")?,
                        ],
                    })
                })?;
                Request::Heartbeat {
                    owner,
                    leases,
                    now,
                    ttl,
                    worker,
                }
            }
            Op::ListWorkers => Request::ListWorkers {
                now: s.number("now")?,
            },
            Op::OldestWaiting => Request::OldestWaiting {
                now: s.number("now")?,
            },
            Op::Prune => Request::Prune {
                before: s.number("before")?,
                keep_dead: s.maybe_bool("keep_dead")?,
                limit: s.maybe_integer("limit")?,
                only_dead: s.maybe_bool("only_dead")?,
            },
            Op::FenceFloor => Request::FenceFloor,
            Op::Fenced => {
                let (job, owner) = (s.string("job")?, s.string("owner")?);
                let (fence, now) = (s.fence("fence")?, s.number("now")?);
                let FencedArgs {
                    statements,
                    complete,
                    result,
                } = s.fenced_writes()?;
                Request::Fenced {
                    job,
                    owner,
                    fence,
                    now,
                    statements,
                    complete,
                    result,
                }
            }
        };
        s.finish()?;
        Ok(request)
    }
}

/// What a `heartbeat` says of its worker, beside its owner: where it runs, when it started,
/// whether this is its last beat, and its counters (absent is 0) in [`Counters`]' order.
///
/// [`Counters`]: crate::Counters
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerFields {
    /// The machine.
    pub host: String,
    /// The process id (required; an integer from 0 to 2^32-1).
    pub pid: Option<i64>,
    /// When the worker started.
    pub started: f64,
    /// Its last beat.
    pub stopping: bool,
    /// claimed, completed, failed, dead, leases_lost, stale_writes_refused, renewals.
    pub counters: [Option<i64>; 7],
}

/// The options of a `schedule` request (section 11), each optional.
struct ScheduleOptions {
    tz: Option<String>,
    queue: Option<String>,
    priority: Option<i64>,
    payload: Option<String>,
    missed: Option<String>,
}

/// The fields of a `fenced` request after `now`: `statements`, and the optional `complete`
/// (default false) and `result` (default null).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct FencedArgs {
    /// The caller's statements, in order.
    pub(crate) statements: Vec<Statement>,
    /// Whether the job completes in the same commit.
    pub(crate) complete: bool,
    /// The result stored when it completes.
    pub(crate) result: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::{Op, OP_NAMES};

    #[test]
    fn every_operation_is_found_by_both_of_its_names() {
        for (op, protocol, js) in OP_NAMES {
            assert_eq!(Op::from_protocol(protocol), Some(op));
            assert_eq!(Op::from_js(js), Some(op));
        }
        assert_eq!(Op::from_protocol("claimNext"), None);
        assert_eq!(Op::from_js("claim_next"), None);
    }

    #[test]
    fn protocol_names_become_javascript_names() {
        assert_eq!(super::js_name("run_at"), "runAt");
        assert_eq!(super::js_name("job"), "job");
        assert_eq!(super::js_name("claim_next_many"), "claimNextMany");
    }
}

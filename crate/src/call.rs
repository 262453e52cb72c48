//! [`Call`] and [`Reply`]: each operation of the contract as one value, and its answer. A
//! backend implements [`Leases::execute`](crate::Leases::execute), one `match` over calls; the
//! typed methods of [`Leases`](crate::Leases) (`claim`, `complete`, ...) only build the call and
//! take its reply apart. A store that wraps another (a group commit, a counter in a test)
//! forwards the one call instead of every method.
//!
//! A call borrows its arguments ([`Cow::Borrowed`]) where the caller has them, so the typed API
//! copies nothing; [`Call::into_owned`] makes one that can wait in a queue for another thread.

use std::borrow::Cow;

use crate::batch::{LeaseCompletion, NewJob, RoundAnswer};
use crate::error::Error;
use crate::lease::Lease;
use crate::listing::{JobPage, JobQuery, QueueCounts, QueueWaiting};
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::registry::{WorkerBeat, WorkerInfo};
use crate::retention::Prune;
use crate::rules::fenced::{Finish, Statement};
use crate::schedule::{Schedule, StoredSchedule};

/// The queues a call serves, by name; `None`: every queue (docs/contract.md section 11).
///
/// ```
/// use leasefence::Queues;
/// let mail = Queues::of(Some(&["mail"]));
/// assert_eq!(mail.names(), Some(vec!["mail"]));
/// assert_eq!(Queues::of(None).names(), None);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Queues<'a>(Option<Vec<Cow<'a, str>>>);

impl<'a> Queues<'a> {
    /// The queues `names` (`None`: every queue), borrowed.
    ///
    /// ```
    /// assert_eq!(leasefence::Queues::of(Some(&["a", "b"])).names(), Some(vec!["a", "b"]));
    /// ```
    pub fn of(names: Option<&'a [&'a str]>) -> Self {
        Queues::borrowing(names)
    }

    /// The queues `names`, borrowed from `&str`s or `String`s (a protocol request's).
    pub(crate) fn borrowing<S: AsRef<str>>(names: Option<&'a [S]>) -> Self {
        Queues(names.map(|names| {
            names
                .iter()
                .map(|name| Cow::Borrowed(name.as_ref()))
                .collect()
        }))
    }

    /// The names as the stores' functions take them (`None`: every queue).
    ///
    /// ```
    /// assert_eq!(leasefence::Queues::default().names(), None);
    /// ```
    pub fn names(&self) -> Option<Vec<&str>> {
        self.0.as_deref().map(texts)
    }

    pub(crate) fn into_owned(self) -> Queues<'static> {
        Queues(self.0.map(|names| {
            names
                .into_iter()
                .map(|name| Cow::Owned(name.into_owned()))
                .collect()
        }))
    }
}

/// `values` borrowed as the stores' functions take lists of names (queues, owners).
pub(crate) fn texts<'s>(values: &'s [Cow<'_, str>]) -> Vec<&'s str> {
    values.iter().map(|value| &**value).collect()
}

/// One operation of the contract with its arguments: what
/// [`Leases::execute`](crate::Leases::execute) runs. Each variant is the typed method of
/// [`Leases`](crate::Leases) named beside it, which documents its checks and answer, and its reply
/// is the [`Reply`] variant named there.
///
/// ```
/// use leasefence::{Call, Leases, LeaseStore, Reply};
/// let store = LeaseStore::open_in_memory()?;
/// store.enqueue("j")?;
/// let call = Call::Claim { job: "j".into(), owner: "me".into(), now: 0.0, ttl: 30.0 };
/// assert_eq!(call.name(), "claim");
/// let Reply::Fence(outcome) = store.execute(call)? else { unreachable!() };
/// assert_eq!(outcome.granted(), Some(1));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(missing_docs)] // the fields are the typed method's arguments, documented there
pub enum Call<'a> {
    /// `init`: [`Reply::Done`].
    Init,
    /// `enqueue_job`: [`Reply::Bool`].
    Enqueue { job: Cow<'a, NewJob> },
    /// `enqueue_many_with` (no statements: `enqueue_many`): [`Reply::Bools`].
    EnqueueMany {
        jobs: Cow<'a, [NewJob]>,
        statements: Cow<'a, [Statement]>,
    },
    /// `state`: [`Reply::State`].
    State { job: Cow<'a, str> },
    /// `jobs`: [`Reply::Jobs`].
    Jobs,
    /// `claim`: [`Reply::Fence`].
    Claim {
        job: Cow<'a, str>,
        owner: Cow<'a, str>,
        now: f64,
        ttl: f64,
    },
    /// `claim_many`: [`Reply::Fences`].
    ClaimMany {
        job: Cow<'a, str>,
        owners: Vec<Cow<'a, str>>,
        now: f64,
        ttl: f64,
    },
    /// `claim_next_in`: [`Reply::Claimed`].
    ClaimNext {
        queues: Queues<'a>,
        owner: Cow<'a, str>,
        now: f64,
        ttl: f64,
    },
    /// `claim_next_many_in`: [`Reply::ClaimedMany`].
    ClaimNextMany {
        queues: Queues<'a>,
        owner: Cow<'a, str>,
        n: usize,
        now: f64,
        ttl: f64,
    },
    /// `renew`: [`Reply::Outcome`].
    Renew {
        lease: Cow<'a, Lease>,
        now: f64,
        ttl: f64,
    },
    /// `renew_many`: [`Reply::Outcomes`].
    RenewMany {
        leases: Cow<'a, [Lease]>,
        now: f64,
        ttl: f64,
    },
    /// `heartbeat`: [`Reply::Outcomes`].
    Heartbeat {
        beat: Cow<'a, WorkerBeat>,
        leases: Cow<'a, [Lease]>,
        now: f64,
        ttl: f64,
    },
    /// `complete`: [`Reply::Outcome`].
    Complete {
        lease: Cow<'a, Lease>,
        now: f64,
        result: Option<Cow<'a, str>>,
    },
    /// `complete_many`: [`Reply::Outcomes`].
    CompleteMany {
        completions: Cow<'a, [LeaseCompletion]>,
        now: f64,
    },
    /// `complete_then_claim`, a [`WorkerRound`](crate::WorkerRound)'s fields: [`Reply::Round`].
    CompleteThenClaim {
        completions: Cow<'a, [LeaseCompletion]>,
        queues: Queues<'a>,
        owner: Cow<'a, str>,
        claim: usize,
        now: f64,
        ttl: f64,
    },
    /// `fail`: [`Reply::Outcome`].
    Fail {
        lease: Cow<'a, Lease>,
        now: f64,
        retry_at: Option<f64>,
        error: Option<Cow<'a, str>>,
    },
    /// `release`: [`Reply::Outcome`].
    Release { lease: Cow<'a, Lease> },
    /// `revive`: [`Reply::Outcome`].
    Revive { job: Cow<'a, str>, now: f64 },
    /// `fenced`: [`Reply::Outcome`].
    Fenced {
        lease: Cow<'a, Lease>,
        now: f64,
        statements: Cow<'a, [Statement]>,
        finish: Finish,
    },
    /// `inspect`: [`Reply::Inspection`].
    Inspect { job: Cow<'a, str> },
    /// `stats_in`: [`Reply::Counts`].
    Stats {
        queue: Option<Cow<'a, str>>,
        now: f64,
    },
    /// `list_jobs`: [`Reply::Page`].
    ListJobs { query: Cow<'a, JobQuery>, now: f64 },
    /// `queue_stats`: [`Reply::QueueCounts`].
    QueueStats { now: f64 },
    /// `oldest_waiting`: [`Reply::Waiting`].
    OldestWaiting { now: f64 },
    /// `list_workers`: [`Reply::Workers`].
    ListWorkers { now: f64 },
    /// `prune`: [`Reply::Pruned`].
    Prune { prune: Prune },
    /// `fence_floor`: [`Reply::FenceFloor`].
    FenceFloor,
    /// `schedule`: [`Reply::Done`].
    Schedule { schedule: Cow<'a, Schedule> },
    /// `unschedule`: [`Reply::Bool`].
    Unschedule { name: Cow<'a, str> },
    /// `schedules`: [`Reply::Schedules`].
    Schedules,
    /// `enqueue_due`: [`Reply::Enqueued`].
    EnqueueDue { now: f64 },
    /// `next_due_in`: [`Reply::NextDue`].
    NextDue { queues: Queues<'a> },
}

/// What a [`Call`] answers: one variant per shape of answer, each named beside the calls that
/// give it.
///
/// ```
/// use leasefence::{Call, Leases, LeaseStore, Reply};
/// let store = LeaseStore::open_in_memory()?;
/// assert!(matches!(store.execute(Call::FenceFloor)?, Reply::FenceFloor(0)));
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
#[allow(missing_docs)] // each is the answer of the typed methods its calls name
pub enum Reply {
    Done,
    Bool(bool),
    Bools(Vec<bool>),
    State(Option<JobState>),
    Jobs(Vec<JobState>),
    Fence(Outcome<Fence>),
    Fences(Vec<Outcome<Fence>>),
    Claimed(Option<ClaimedJob>),
    ClaimedMany(Vec<ClaimedJob>),
    Outcome(Outcome<()>),
    Outcomes(Vec<Outcome<()>>),
    Round(RoundAnswer),
    Inspection(Option<Inspection>),
    Counts(JobCounts),
    Page(JobPage),
    QueueCounts(Vec<QueueCounts>),
    Waiting(Vec<QueueWaiting>),
    Workers(Vec<WorkerInfo>),
    Pruned(u64),
    FenceFloor(i64),
    Schedules(Vec<StoredSchedule>),
    Enqueued(Vec<String>),
    NextDue(Option<f64>),
}

impl Reply {
    /// The error for a reply that is not the one its call gives: a backend's `execute` that
    /// answered a call with another call's reply.
    pub(crate) fn unexpected(&self, call: &'static str) -> Error {
        let got = format!("{self:?}");
        let got = got.split(['(', ' ']).next().unwrap_or_default().to_owned();
        Error::Internal {
            message: format!(
                "the store answered {call} with a {got} reply; its Leases::execute must answer \
                 each call with the reply Call documents"
            ),
        }
    }
}

impl<'a> Call<'a> {
    /// The operation's name, as docs/contract.md and the protocol spell it.
    ///
    /// ```
    /// assert_eq!(leasefence::Call::FenceFloor.name(), "fence_floor");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            Call::Init => "init",
            Call::Enqueue { .. } => "enqueue",
            Call::EnqueueMany { .. } => "enqueue_many",
            Call::State { .. } => "state",
            Call::Jobs => "jobs",
            Call::Claim { .. } => "claim",
            Call::ClaimMany { .. } => "claim_many",
            Call::ClaimNext { .. } => "claim_next",
            Call::ClaimNextMany { .. } => "claim_next_many",
            Call::Renew { .. } => "renew",
            Call::RenewMany { .. } => "renew_many",
            Call::Heartbeat { .. } => "heartbeat",
            Call::Complete { .. } => "complete",
            Call::CompleteMany { .. } => "complete_many",
            Call::CompleteThenClaim { .. } => "complete_then_claim",
            Call::Fail { .. } => "fail",
            Call::Release { .. } => "release",
            Call::Revive { .. } => "revive",
            Call::Fenced { .. } => "fenced",
            Call::Inspect { .. } => "inspect",
            Call::Stats { .. } => "stats",
            Call::ListJobs { .. } => "list_jobs",
            Call::QueueStats { .. } => "queue_stats",
            Call::OldestWaiting { .. } => "oldest_waiting",
            Call::ListWorkers { .. } => "list_workers",
            Call::Prune { .. } => "prune",
            Call::FenceFloor => "fence_floor",
            Call::Schedule { .. } => "schedule",
            Call::Unschedule { .. } => "unschedule",
            Call::Schedules => "schedules",
            Call::EnqueueDue { .. } => "enqueue_due",
            Call::NextDue { .. } => "next_due",
        }
    }

    /// The same call owning its arguments, so that it can be sent to another thread.
    ///
    /// ```
    /// let job = String::from("j");
    /// let call = leasefence::Call::State { job: job.as_str().into() }.into_owned();
    /// drop(job);
    /// assert_eq!(call.name(), "state");
    /// ```
    pub fn into_owned(self) -> Call<'static> {
        fn own<B: ToOwned + ?Sized>(value: Cow<'_, B>) -> Cow<'static, B> {
            Cow::Owned(value.into_owned())
        }
        fn text(value: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
            value.map(own)
        }
        match self {
            Call::Init => Call::Init,
            Call::Enqueue { job } => Call::Enqueue { job: own(job) },
            Call::EnqueueMany { jobs, statements } => Call::EnqueueMany {
                jobs: own(jobs),
                statements: own(statements),
            },
            Call::State { job } => Call::State { job: own(job) },
            Call::Jobs => Call::Jobs,
            Call::Claim {
                job,
                owner,
                now,
                ttl,
            } => Call::Claim {
                job: own(job),
                owner: own(owner),
                now,
                ttl,
            },
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => Call::ClaimMany {
                job: own(job),
                owners: owners.into_iter().map(own).collect(),
                now,
                ttl,
            },
            Call::ClaimNext {
                queues,
                owner,
                now,
                ttl,
            } => Call::ClaimNext {
                queues: queues.into_owned(),
                owner: own(owner),
                now,
                ttl,
            },
            Call::ClaimNextMany {
                queues,
                owner,
                n,
                now,
                ttl,
            } => Call::ClaimNextMany {
                queues: queues.into_owned(),
                owner: own(owner),
                n,
                now,
                ttl,
            },
            Call::Renew { lease, now, ttl } => Call::Renew {
                lease: own(lease),
                now,
                ttl,
            },
            Call::RenewMany { leases, now, ttl } => Call::RenewMany {
                leases: own(leases),
                now,
                ttl,
            },
            Call::Heartbeat {
                beat,
                leases,
                now,
                ttl,
            } => Call::Heartbeat {
                beat: own(beat),
                leases: own(leases),
                now,
                ttl,
            },
            Call::Complete { lease, now, result } => Call::Complete {
                lease: own(lease),
                now,
                result: text(result),
            },
            Call::CompleteMany { completions, now } => Call::CompleteMany {
                completions: own(completions),
                now,
            },
            Call::CompleteThenClaim {
                completions,
                queues,
                owner,
                claim,
                now,
                ttl,
            } => Call::CompleteThenClaim {
                completions: own(completions),
                queues: queues.into_owned(),
                owner: own(owner),
                claim,
                now,
                ttl,
            },
            Call::Fail {
                lease,
                now,
                retry_at,
                error,
            } => Call::Fail {
                lease: own(lease),
                now,
                retry_at,
                error: text(error),
            },
            Call::Release { lease } => Call::Release { lease: own(lease) },
            Call::Revive { job, now } => Call::Revive { job: own(job), now },
            Call::Fenced {
                lease,
                now,
                statements,
                finish,
            } => Call::Fenced {
                lease: own(lease),
                now,
                statements: own(statements),
                finish,
            },
            Call::Inspect { job } => Call::Inspect { job: own(job) },
            Call::Stats { queue, now } => Call::Stats {
                queue: text(queue),
                now,
            },
            Call::ListJobs { query, now } => Call::ListJobs {
                query: own(query),
                now,
            },
            Call::QueueStats { now } => Call::QueueStats { now },
            Call::OldestWaiting { now } => Call::OldestWaiting { now },
            Call::ListWorkers { now } => Call::ListWorkers { now },
            Call::Prune { prune } => Call::Prune { prune },
            Call::FenceFloor => Call::FenceFloor,
            Call::Schedule { schedule } => Call::Schedule {
                schedule: own(schedule),
            },
            Call::Unschedule { name } => Call::Unschedule { name: own(name) },
            Call::Schedules => Call::Schedules,
            Call::EnqueueDue { now } => Call::EnqueueDue { now },
            Call::NextDue { queues } => Call::NextDue {
                queues: queues.into_owned(),
            },
        }
    }
}

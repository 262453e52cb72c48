//! [`AsyncLeases`]: the operations the protocol runs ([`crate::protocol`]), as futures, so that one
//! dispatch serves every store: a [`Leases`] (SQLite, natively PostgreSQL) answers at once, and
//! a store whose client waits on the network without blocking (PostgreSQL from Node, through
//! `pg`) answers when its statements have. The methods mirror [`Leases`]'s, with the same checks
//! and answers.

use crate::batch::{LeaseCompletion, NewJob};
use crate::error::Result;
use crate::lease::Lease;
use crate::leases::Leases;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::fenced::{Finish, Statement};
use crate::schedule::{Schedule, StoredSchedule};

/// The trait and its implementation for every synchronous store, from one list of signatures:
/// each is written once, and the implementation forwards each call to the [`Leases`] method of
/// the same name.
macro_rules! async_leases {
    ($(async fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $answer:ty;)*) => {
        /// The protocol's operations on some store, as futures. See [`Leases`] for each one's
        /// contract.
        #[allow(async_fn_in_trait)] // Crate-internal: its futures are awaited where they are made.
        pub(crate) trait AsyncLeases {
            $(async fn $name(&self $(, $arg: $ty)*) -> $answer;)*
        }

        /// Every synchronous store: each future is ready when first polled.
        impl AsyncLeases for dyn Leases + '_ {
            $(async fn $name(&self $(, $arg: $ty)*) -> $answer {
                Leases::$name(self $(, $arg)*)
            })*
        }
    };
}

async_leases! {
    async fn init(&self) -> Result<()>;
    async fn enqueue_job(&self, job: &NewJob) -> Result<bool>;
    async fn state(&self, job: &str) -> Result<Option<JobState>>;
    async fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>>;
    async fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>>;
    async fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>>;
    async fn release(&self, lease: &Lease) -> Result<Outcome<()>>;
    async fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>>;
    async fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>>;
    async fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>>;
    async fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>>;
    async fn inspect(&self, job: &str) -> Result<Option<Inspection>>;
    async fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts>;
    async fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>>;
    async fn enqueue_many_with(
        &self,
        jobs: &[NewJob],
        statements: &[Statement],
    ) -> Result<Vec<bool>>;
    async fn claim_next_many_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>>;
    async fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>>;
    async fn complete_many(
        &self,
        completions: &[LeaseCompletion],
        now: f64,
    ) -> Result<Vec<Outcome<()>>>;
    async fn schedule(&self, schedule: &Schedule) -> Result<()>;
    async fn unschedule(&self, name: &str) -> Result<bool>;
    async fn schedules(&self) -> Result<Vec<StoredSchedule>>;
    async fn enqueue_due(&self, now: f64) -> Result<Vec<String>>;
    async fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage>;
    async fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>>;
    async fn heartbeat(
        &self,
        beat: &crate::WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>>;
    async fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>>;
    async fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>>;
    async fn prune(&self, prune: &crate::Prune) -> Result<u64>;
    async fn fence_floor(&self) -> Result<i64>;
    async fn next_due_in(&self, queues: Option<&[&str]>) -> Result<Option<f64>>;
    async fn fenced(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>>;
}

/// Drives `future` to its end where every step is ready at once (a synchronous store, a
/// synchronous client): one poll. A future that would wait cannot be served here; it answers an
/// error instead of blocking.
pub(crate) fn ready<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    use std::task::{Context, Poll, Waker};
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(value) => value,
        Poll::Pending => Err(crate::Error::Internal {
            message: "a step of a synchronous store did not finish at once".into(),
        }),
    }
}

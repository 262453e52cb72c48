//! [`Leases`] for [`LeaseStore`]: every method is the store's own method of the same name.

use crate::batch::{LeaseCompletion, NewJob, RoundAnswer, WorkerRound};
use crate::error::Result;
use crate::lease::Lease;
use crate::leases::Leases;
use crate::outcome::{ClaimedJob, Fence, Inspection, JobCounts, JobState, Outcome};
use crate::rules::fenced::{FencedHandle, Finish, Statement};
#[cfg(not(web))]
use crate::rules::LeaseWindow;
use crate::schedule::{Schedule, StoredSchedule};
use crate::sqlite::LeaseStore;

/// SQLite: every method is the store's own method of the same name.
impl Leases for LeaseStore {
    fn schedule(&self, schedule: &Schedule) -> Result<()> {
        LeaseStore::schedule(self, schedule)
    }

    fn unschedule(&self, name: &str) -> Result<bool> {
        LeaseStore::unschedule(self, name)
    }

    fn schedules(&self) -> Result<Vec<StoredSchedule>> {
        LeaseStore::schedules(self)
    }

    fn enqueue_due(&self, now: f64) -> Result<Vec<String>> {
        LeaseStore::enqueue_due(self, now)
    }

    fn init(&self) -> Result<()> {
        LeaseStore::init(self)
    }

    fn enqueue(&self, job: &str) -> Result<bool> {
        LeaseStore::enqueue(self, job)
    }

    fn enqueue_with(&self, job: &str, run_at: Option<f64>, payload: Option<&str>) -> Result<bool> {
        LeaseStore::enqueue_with(self, job, run_at, payload)
    }

    fn enqueue_job(&self, job: &NewJob) -> Result<bool> {
        LeaseStore::enqueue_job(self, job)
    }

    fn state(&self, job: &str) -> Result<Option<JobState>> {
        LeaseStore::state(self, job)
    }

    fn jobs(&self) -> Result<Vec<JobState>> {
        LeaseStore::jobs(self)
    }

    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        LeaseStore::claim(self, job, owner, now, ttl)
    }

    fn renew(&self, lease: &Lease, now: f64, ttl: f64) -> Result<Outcome<()>> {
        LeaseStore::renew(self, lease, now, ttl)
    }

    fn complete(&self, lease: &Lease, now: f64, result: Option<&str>) -> Result<Outcome<()>> {
        LeaseStore::complete(self, lease, now, result)
    }

    fn release(&self, lease: &Lease) -> Result<Outcome<()>> {
        LeaseStore::release(self, lease)
    }

    fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>> {
        LeaseStore::claim_next(self, owner, now, ttl)
    }

    fn claim_next_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        now: f64,
        ttl: f64,
    ) -> Result<Option<ClaimedJob>> {
        LeaseStore::claim_next_in(self, queues, owner, now, ttl)
    }

    fn fail(
        &self,
        lease: &Lease,
        now: f64,
        retry_at: Option<f64>,
        error: Option<&str>,
    ) -> Result<Outcome<()>> {
        LeaseStore::fail(self, lease, now, retry_at, error)
    }

    fn revive(&self, job: &str, now: f64) -> Result<Outcome<()>> {
        LeaseStore::revive(self, job, now)
    }

    fn inspect(&self, job: &str) -> Result<Option<Inspection>> {
        LeaseStore::inspect(self, job)
    }

    fn stats(&self, now: f64) -> Result<JobCounts> {
        LeaseStore::stats(self, now)
    }

    fn stats_in(&self, queue: Option<&str>, now: f64) -> Result<JobCounts> {
        LeaseStore::stats_in(self, queue, now)
    }

    fn enqueue_many(&self, jobs: &[NewJob]) -> Result<Vec<bool>> {
        LeaseStore::enqueue_many(self, jobs)
    }

    fn list_jobs(&self, query: &crate::JobQuery, now: f64) -> Result<crate::JobPage> {
        super::listing::list_jobs(&self.conn, query, now)
    }

    fn queue_stats(&self, now: f64) -> Result<Vec<crate::QueueCounts>> {
        super::listing::queue_stats(&self.conn, now)
    }

    fn heartbeat(
        &self,
        beat: &crate::WorkerBeat,
        leases: &[Lease],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<()>>> {
        super::registry::heartbeat(&self.conn, beat, leases, now, ttl)
    }

    fn list_workers(&self, now: f64) -> Result<Vec<crate::WorkerInfo>> {
        super::registry::list_workers(&self.conn, now)
    }

    fn oldest_waiting(&self, now: f64) -> Result<Vec<crate::QueueWaiting>> {
        super::listing::oldest_waiting(&self.conn, now)
    }

    fn limits(&self) -> crate::Limits {
        self.options.limits
    }

    fn prune(&self, prune: &crate::Prune) -> Result<u64> {
        super::retention::prune(&self.conn, prune)
    }

    fn fence_floor(&self) -> Result<i64> {
        super::retention::fence_floor(&self.conn)
    }

    fn enqueue_many_with(&self, jobs: &[NewJob], statements: &[Statement]) -> Result<Vec<bool>> {
        LeaseStore::enqueue_many_with(self, jobs, statements)
    }

    fn claim_next_many(
        &self,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        LeaseStore::claim_next_many(self, owner, n, now, ttl)
    }

    fn claim_next_many_in(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        LeaseStore::claim_next_many_in(self, queues, owner, n, now, ttl)
    }

    fn next_due_in(&self, queues: Option<&[&str]>) -> Result<Option<f64>> {
        crate::sqlite::next_due::next_due(&self.conn, queues)
    }

    /// On Linux, a file's directory watched with inotify (`sqlite/watch.rs`): any process's
    /// commit to the file wakes, whatever its queue. Elsewhere and in memory, none.
    fn watch(
        &self,
        queues: Option<&[&str]>,
        wakeup: crate::wake::Wakeup,
    ) -> Result<Option<crate::wake::Watch>> {
        crate::rules::queues::check_queues(queues)?;
        #[cfg(target_os = "linux")]
        if let Some(path) = &self.path {
            return Ok(crate::sqlite::watch::watch_file(path, wakeup));
        }
        let _ = wakeup;
        Ok(None)
    }

    fn renew_many(&self, leases: &[Lease], now: f64, ttl: f64) -> Result<Vec<Outcome<()>>> {
        LeaseStore::renew_many(self, leases, now, ttl)
    }

    fn complete_many(&self, completions: &[LeaseCompletion], now: f64) -> Result<Vec<Outcome<()>>> {
        LeaseStore::complete_many(self, completions, now)
    }

    /// One transaction: the completions in a savepoint (their error undoes the round), then the
    /// claim in one of its own (its error is its answer alone; the completions commit).
    fn complete_then_claim(&self, round: &WorkerRound<'_>) -> Result<RoundAnswer> {
        let group = crate::sqlite::write_tx::Group::begin(&self.conn, "complete_then_claim")?;
        let completed =
            group.run(|| LeaseStore::complete_many(self, round.completions, round.now))??;
        let claimed = group.run(|| {
            LeaseStore::claim_next_many_in(
                self,
                round.queues,
                round.owner,
                round.claim,
                round.now,
                round.ttl,
            )
        })?;
        group.commit()?;
        Ok(RoundAnswer { completed, claimed })
    }

    /// Natively on a file: one OS thread and connection per owner ([`LeaseStore::claim_many`]).
    /// In memory there is only this connection, so the claims take turns on it.
    #[cfg(not(web))]
    fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        match self.path() {
            // WASI has no threads: in turn there too (one claim per transaction all the same).
            #[cfg(not(target_os = "wasi"))]
            Some(_) => LeaseStore::claim_many(self, job, owners, now, ttl),
            // In turn, on arguments checked once.
            _ => {
                let window = LeaseWindow::new(now, ttl)?;
                // A file's claim_many takes as many owners in every build.
                #[cfg(target_os = "wasi")]
                crate::rules::check_owner_count(owners.len())?;
                owners
                    .iter()
                    .map(|owner| self.claim_within(job, owner, window))
                    .collect()
            }
        }
    }

    fn fenced(
        &self,
        lease: &Lease,
        now: f64,
        statements: &[Statement],
        finish: Finish,
    ) -> Result<Outcome<()>> {
        LeaseStore::fenced(self, lease, now, statements, finish)
    }

    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> Result<()>,
    ) -> Result<Outcome<()>> {
        LeaseStore::fenced_with(self, lease, now, finish, |tx| {
            let mut tx = tx;
            work(&mut tx)
        })
    }
}

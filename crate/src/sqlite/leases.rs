//! [`Leases`] for [`LeaseStore`]: each call is the store's own method of the same name.

use crate::call::{Call, Reply};
use crate::error::Result;
use crate::lease::Lease;
use crate::leases::Leases;
use crate::outcome::Outcome;
use crate::rules::fenced::{FencedHandle, Finish};
#[cfg(not(web))]
use crate::rules::LeaseWindow;
use crate::sqlite::LeaseStore;

/// SQLite: each call is the store's own method of the same name (or its module's function).
impl Leases for LeaseStore {
    fn execute(&self, call: Call<'_>) -> Result<Reply> {
        let conn = &self.conn;
        Ok(match call {
            Call::Init => {
                LeaseStore::init(self)?;
                Reply::Done
            }
            Call::Enqueue { job } => Reply::Bool(LeaseStore::enqueue_job(self, &job)?),
            Call::EnqueueMany { jobs, statements } if statements.is_empty() => {
                Reply::Bools(LeaseStore::enqueue_many(self, &jobs)?)
            }
            Call::EnqueueMany { jobs, statements } => {
                Reply::Bools(LeaseStore::enqueue_many_with(self, &jobs, &statements)?)
            }
            Call::State { job } => Reply::State(LeaseStore::state(self, &job)?),
            Call::Jobs => Reply::Jobs(LeaseStore::jobs(self)?),
            Call::Claim {
                job,
                owner,
                now,
                ttl,
            } => Reply::Fence(LeaseStore::claim(self, &job, &owner, now, ttl)?),
            // In a page there is only this connection: one owner's claim after the other.
            #[cfg(web)]
            call @ Call::ClaimMany { .. } => return call.answer_by_default(self),
            #[cfg(not(web))]
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => {
                let owners = crate::call::texts(&owners);
                Reply::Fences(self.claim_many_here(&job, &owners, now, ttl)?)
            }
            Call::ClaimNext {
                queues,
                owner,
                now,
                ttl,
            } => {
                let names = queues.names();
                Reply::Claimed(LeaseStore::claim_next_in(
                    self,
                    names.as_deref(),
                    &owner,
                    now,
                    ttl,
                )?)
            }
            Call::ClaimNextMany {
                queues,
                owner,
                n,
                now,
                ttl,
            } => {
                let names = queues.names();
                Reply::ClaimedMany(LeaseStore::claim_next_many_in(
                    self,
                    names.as_deref(),
                    &owner,
                    n,
                    now,
                    ttl,
                )?)
            }
            Call::Renew { lease, now, ttl } => {
                Reply::Outcome(LeaseStore::renew(self, &lease, now, ttl)?)
            }
            Call::RenewMany { leases, now, ttl } => {
                Reply::Outcomes(LeaseStore::renew_many(self, &leases, now, ttl)?)
            }
            Call::Heartbeat {
                beat,
                leases,
                now,
                ttl,
            } => Reply::Outcomes(super::registry::heartbeat(conn, &beat, &leases, now, ttl)?),
            Call::Complete { lease, now, result } => {
                Reply::Outcome(LeaseStore::complete(self, &lease, now, result.as_deref())?)
            }
            Call::CompleteMany { completions, now } => {
                Reply::Outcomes(LeaseStore::complete_many(self, &completions, now)?)
            }
            Call::CompleteThenClaim {
                completions,
                queues,
                owner,
                claim,
                now,
                ttl,
            } => {
                // One transaction: the completions in a savepoint (their error undoes the
                // round), then the claim in one of its own (its error is its answer alone; the
                // completions commit).
                let group = crate::sqlite::write_tx::Group::begin(conn, "complete_then_claim")?;
                let completed =
                    group.run(|| LeaseStore::complete_many(self, &completions, now))??;
                let names = queues.names();
                let claimed = group.run(|| {
                    LeaseStore::claim_next_many_in(self, names.as_deref(), &owner, claim, now, ttl)
                })?;
                group.commit()?;
                Reply::Round(crate::RoundAnswer { completed, claimed })
            }
            Call::Fail {
                lease,
                now,
                retry_at,
                error,
            } => Reply::Outcome(LeaseStore::fail(
                self,
                &lease,
                now,
                retry_at,
                error.as_deref(),
            )?),
            Call::Release { lease } => Reply::Outcome(LeaseStore::release(self, &lease)?),
            Call::Revive { job, now } => Reply::Outcome(LeaseStore::revive(self, &job, now)?),
            Call::Fenced {
                lease,
                now,
                statements,
                finish,
            } => Reply::Outcome(LeaseStore::fenced(self, &lease, now, &statements, finish)?),
            Call::Inspect { job } => Reply::Inspection(LeaseStore::inspect(self, &job)?),
            Call::Stats { queue, now } => {
                Reply::Counts(LeaseStore::stats_in(self, queue.as_deref(), now)?)
            }
            Call::ListJobs { query, now } => {
                Reply::Page(super::listing::list_jobs(conn, &query, now)?)
            }
            Call::QueueStats { now } => Reply::QueueCounts(super::listing::queue_stats(conn, now)?),
            Call::OldestWaiting { now } => {
                Reply::Waiting(super::listing::oldest_waiting(conn, now)?)
            }
            Call::ListWorkers { now } => Reply::Workers(super::registry::list_workers(conn, now)?),
            Call::Prune { prune } => Reply::Pruned(super::retention::prune(conn, &prune)?),
            Call::FenceFloor => Reply::FenceFloor(super::retention::fence_floor(conn)?),
            Call::Schedule { schedule } => {
                LeaseStore::schedule(self, &schedule)?;
                Reply::Done
            }
            Call::Unschedule { name } => Reply::Bool(LeaseStore::unschedule(self, &name)?),
            Call::Schedules => Reply::Schedules(LeaseStore::schedules(self)?),
            Call::EnqueueDue { now } => Reply::Enqueued(LeaseStore::enqueue_due(self, now)?),
            Call::NextDue { queues } => Reply::NextDue(crate::sqlite::next_due::next_due(
                conn,
                queues.names().as_deref(),
            )?),
        })
    }

    fn limits(&self) -> crate::Limits {
        self.options.limits
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

impl LeaseStore {
    /// `claim_many` as this store runs it: natively on a file, one OS thread and connection per
    /// owner ([`LeaseStore::claim_many`]); in memory there is only this connection, so the
    /// claims take turns on it.
    #[cfg(not(web))]
    fn claim_many_here(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<crate::Outcome<crate::Fence>>> {
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
}

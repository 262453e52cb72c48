//! One claimed attempt: the poison check, the handler run under the heartbeat, and the write of
//! its outcome (complete, fail, release), each retried on a busy store while the lease lasts.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::heartbeat::Heartbeat;
use super::{CancelReason, CancelToken, Completion, CompletionResult, Job, Worker};
use crate::error::{Error, Result};
use crate::leases::Leases;
use crate::outcome::{ClaimedJob, Outcome};
use crate::rules::fenced::Finish;
use crate::rules::worker::{self as rules, AttemptVerdict};

impl Worker {
    pub(super) fn process<H>(
        &self,
        claimed: ClaimedJob,
        claimed_at: f64,
        heartbeat: &Heartbeat,
        handler: &mut H,
    ) -> Result<()>
    where
        H: FnMut(&Job) -> CompletionResult,
    {
        let Some(job) = self.admit(&claimed, claimed_at)? else {
            return Ok(());
        };
        let token = job.token.clone();
        let tracked = self.stop.track(&token);
        let beating = heartbeat.begin(
            &job.id,
            job.fence,
            &token,
            claimed_at,
            claimed_at + self.options.renew_interval(),
        );
        let outcome = catch_unwind(AssertUnwindSafe(|| handler(&job)));
        heartbeat.end(beating);
        self.stop.untrack(tracked);
        if let Some(reason) = token.reason() {
            // The result is thrown away: the lease is gone, or the worker is being interrupted.
            if reason == CancelReason::Stopping {
                self.write(&token, |store| store.release(&claimed.lease()))?;
            } else {
                self.counters.add(&self.counters.leases_lost);
            }
            return Ok(());
        }
        match outcome {
            Ok(Ok(completion)) => self.complete(&claimed, &token, completion),
            Ok(Err(error)) => self.fail(&claimed, &token, Failing::Attempt, &error.to_string()),
            Err(panic) => {
                let message = panic_message(&*panic);
                self.fail(
                    &claimed,
                    &token,
                    Failing::Attempt,
                    &format!("the handler panicked: {message}"),
                )
            }
        }
    }

    /// A claimed job made ready for its handler, its lease's token reckoned from `claimed_at`;
    /// `None` for a poison job (past `max_attempts`, its previous attempt recorded no failure),
    /// made dead here instead of run.
    pub(super) fn admit(&self, claimed: &ClaimedJob, claimed_at: f64) -> Result<Option<Job>> {
        let attempt = claimed.attempt();
        let token = CancelToken::with_clock(
            Arc::clone(&self.options.clock),
            claimed_at + self.options.ttl,
        );
        let max_attempts = self.options.max_attempts;
        if rules::must_check_previous_attempt(attempt, max_attempts) {
            let failed = self.previous_attempt_failed(claimed, &token)?;
            if let AttemptVerdict::Poison { error } =
                rules::attempt_verdict(attempt, max_attempts, failed)
            {
                self.fail(claimed, &token, Failing::Dead, &error)?;
                return Ok(None);
            }
        }
        Ok(Some(Job {
            id: claimed.job.clone(),
            fence: claimed.fence,
            attempt,
            payload: claimed.payload.clone(),
            token,
        }))
    }

    /// Completes the job; with statements, as one fenced write. A store error that retrying
    /// cannot cure ends the run; an error of the statements themselves fails the job, by its
    /// kind: [`Error::Statement`] (a broken constraint, a missing table) or
    /// [`Error::InvalidArgument`] (a refused table, a bad parameter). Nothing was applied.
    pub(super) fn complete(
        &self,
        claimed: &ClaimedJob,
        token: &CancelToken,
        completion: Completion,
    ) -> Result<()> {
        let Completion { result, statements } = completion;
        let lease = claimed.lease();
        let written = if statements.is_empty() {
            self.write(token, |store| {
                store.complete(&lease, self.now(), result.as_deref())
            })
        } else {
            self.write(token, |store| {
                store.fenced(
                    &lease,
                    self.now(),
                    &statements,
                    Finish::Complete(result.clone()),
                )
            })
        };
        match written {
            Ok(Some(Outcome::Granted(()))) => self.counters.add(&self.counters.completed),
            Ok(Some(Outcome::Rejected(_))) => self.refused(),
            Ok(None) => self.counters.add(&self.counters.leases_lost),
            // A result over the store's limit fails the attempt (with the size and the limit);
            // so does a statement's error.
            Err(err @ Error::InvalidArgument { .. }) => {
                return self.fail(claimed, token, Failing::Attempt, &err.to_string());
            }
            Err(err @ Error::Statement { .. }) if !statements.is_empty() => {
                return self.fail(claimed, token, Failing::Attempt, &err.to_string());
            }
            Err(err) => return Err(err),
        }
        Ok(())
    }

    pub(super) fn refused(&self) {
        self.counters.add(&self.counters.stale_writes_refused);
        self.counters.add(&self.counters.leases_lost);
    }

    /// Fails the attempt: with a retry time after the backoff, or dead at the last attempt (or
    /// at once, for a poison job). The store's `now` and the retry's start are one reading.
    pub(super) fn fail(
        &self,
        claimed: &ClaimedJob,
        token: &CancelToken,
        failing: Failing,
        error: &str,
    ) -> Result<()> {
        let delay = match failing {
            Failing::Attempt => Some(self.options.backoff.delay(claimed.attempt()).as_secs_f64()),
            Failing::Dead => None,
        };
        // The store refuses an error text over its limit; what finally went wrong is at the end.
        let error = crate::rules::limits::keep_end(error, self.store.limits().error_bytes());
        let error = error.as_ref();
        let mut retry_at = None;
        let answer = self.write(token, |store| {
            let now = self.now();
            retry_at = delay.and_then(|delay| {
                rules::retry_at(now, claimed.attempt(), self.options.max_attempts, delay)
            });
            store.fail(&claimed.lease(), now, retry_at, Some(error))
        })?;
        match answer {
            Some(Outcome::Granted(())) if retry_at.is_some() => {
                self.counters.add(&self.counters.failed)
            }
            Some(Outcome::Granted(())) => self.counters.add(&self.counters.dead),
            Some(Outcome::Rejected(_)) => self.refused(),
            None => self.counters.add(&self.counters.leases_lost),
        }
        Ok(())
    }

    /// Whether attempt `fence - 1` recorded a failure (a revived job's has the one that made it
    /// dead); read only for claims past the maximum.
    pub(super) fn previous_attempt_failed(
        &self,
        claimed: &ClaimedJob,
        token: &CancelToken,
    ) -> Result<bool> {
        let found = self.write(token, |store| {
            Ok(Outcome::Granted(store.inspect(&claimed.job)?))
        })?;
        Ok(match found {
            Some(Outcome::Granted(Some(report))) => {
                report.failures.iter().any(|f| f.fence == claimed.fence - 1)
            }
            _ => false,
        })
    }

    /// Runs a write, trying again while the database is busy and the lease lasts; `None` when the
    /// lease ran out first (the job is then claimable by others; nothing was written).
    pub(super) fn write<T>(
        &self,
        token: &CancelToken,
        mut op: impl FnMut(&dyn Leases) -> Result<Outcome<T>>,
    ) -> Result<Option<Outcome<T>>> {
        let mut failed_tries = 0;
        loop {
            match op(&*self.store) {
                Ok(answer) => return Ok(Some(answer)),
                Err(err) if err.is_retryable() => {
                    if self.now() >= token.deadline() {
                        return Ok(None);
                    }
                    failed_tries += 1;
                    std::thread::sleep(Duration::from_secs_f64(rules::write_retry_delay(
                        failed_tries,
                    )));
                }
                Err(err) => return Err(err),
            }
        }
    }
}

/// How a failed attempt is recorded.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Failing {
    /// A handler's failure: retried after the backoff, or dead at the last attempt.
    Attempt,
    /// Dead at once (a poison job), whatever the attempt.
    Dead,
}

/// The text of a handler's panic, recorded as the attempt's failure.
pub(super) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

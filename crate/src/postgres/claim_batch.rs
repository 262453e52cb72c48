//! `claim_next_many` on PostgreSQL (docs/contract.md section 10): up to `n` jobs in
//! `claim_next`'s order in one transaction, with `claim_next`'s rule that a job locked by another
//! transaction is passed over but never makes the answer shorter.
//!
//! Each pass is one statement (`sql/claim_next_many.sql`): the first claimable jobs no other
//! transaction is writing, `SKIP LOCKED`. When a pass finds fewer than are still wanted and a
//! claimable job remains (locked by another transaction when the pass looked, or new since), the
//! call waits for that job's writer by claiming it directly, as `claim_next` does, then passes
//! again for the rest.
//!
//! Unlike `claim_next`, the transaction holds the jobs it already claimed while it waits, and two
//! such waiters could each wait for a job the other holds. So a claimer waits only for a job
//! inserted after every job it holds (the insertion number, `leasefence_order.seq`, is one total
//! order of the rows): along any chain of waiting claimers the numbers only grow, so the chain
//! never closes into a deadlock. When the job to wait for comes before one it holds, the call
//! rolls back what it claimed and starts again holding nothing, beginning with the wait for that
//! job. The other writers of `jobs` never wait for a claimable row while holding another (see
//! `mod.rs`), so they close no cycle either.

use postgres::Transaction;

use super::failure::pg;
use super::session::Statements;
use super::store::{candidates_per_bucket, check_text, PgStore, MAX_TRIES};
use crate::error::{Error, Result};
use crate::outcome::{ClaimedJob, Fence};
use crate::rules::batch::check_claim_count;
use crate::rules::queues::check_queues;
use crate::rules::LeaseWindow;

const OPERATION: &str = "claim_next_many";

/// A claimable job to wait for: its id and insertion number.
struct Head {
    job: String,
    seq: i64,
}

/// How one transaction of the call ended.
enum Attempt {
    /// The answer: commit it.
    Claimed(Vec<ClaimedJob>),
    /// The job to wait for comes before one already claimed: roll back and start again, waiting
    /// for it first.
    WaitFirst(Head),
}

/// One call's arguments and its count of tries (a wait that claimed nothing, or a new start).
struct Claimer<'a> {
    owner: &'a str,
    /// The queues claimed from; `None`: every queue.
    queues: Option<Vec<&'a str>>,
    n: usize,
    window: LeaseWindow,
    tries: usize,
}

impl PgStore {
    pub(super) fn claim_next_many_on(
        &self,
        queues: Option<&[&str]>,
        owner: &str,
        n: usize,
        now: f64,
        ttl: f64,
    ) -> Result<Vec<ClaimedJob>> {
        check_claim_count(n)?;
        let window = LeaseWindow::new(now, ttl)?;
        check_queues(queues)?;
        check_text("owner", owner)?;
        let mut claimer = Claimer {
            owner,
            queues: queues.map(<[&str]>::to_vec),
            n,
            window,
            tries: 0,
        };
        self.link.with_session(OPERATION, |session| {
            let mut first = None;
            loop {
                let mut tx = session.client.transaction().map_err(pg(OPERATION))?;
                match claimer.attempt(&mut tx, &session.stmts, first.take())? {
                    Attempt::Claimed(jobs) => {
                        tx.commit().map_err(pg(OPERATION))?;
                        return Ok(jobs);
                    }
                    Attempt::WaitFirst(head) => {
                        tx.rollback().map_err(pg(OPERATION))?;
                        claimer.tried()?;
                        first = Some(head);
                    }
                }
            }
        })
    }
}

impl Claimer<'_> {
    /// Counts a try; too many in a row is [`Error::Contended`], as for `claim_next`.
    fn tried(&mut self) -> Result<()> {
        self.tries += 1;
        if self.tries >= MAX_TRIES {
            return Err(Error::Contended {
                operation: OPERATION,
            });
        }
        Ok(())
    }

    /// One transaction: wait for `first` if given (holding nothing yet), then passes and waits
    /// until `n` jobs are claimed or none is claimable.
    fn attempt(
        &mut self,
        tx: &mut Transaction<'_>,
        stmts: &Statements,
        first: Option<Head>,
    ) -> Result<Attempt> {
        let mut claimed = Vec::new();
        // The highest insertion number held: a wait is only for a later one.
        let mut highest: Option<i64> = None;
        if let Some(head) = first {
            self.wait_for(tx, stmts, head, &mut claimed, &mut highest)?;
        }
        while claimed.len() < self.n {
            let wanted = self.n - claimed.len();
            let rows = tx
                .query(
                    &stmts.claim_next_many,
                    &[
                        &self.window.now(),
                        &self.queues,
                        &candidates_per_bucket(wanted),
                        &self.owner,
                        &self.window.until(),
                        &(wanted as i64),
                    ],
                )
                .map_err(pg(OPERATION))?;
            for row in &rows {
                let read = || -> std::result::Result<(ClaimedJob, i64), postgres::Error> {
                    Ok((
                        ClaimedJob {
                            job: row.try_get(0)?,
                            owner: self.owner.into(),
                            fence: row.try_get(1)?,
                            payload: row.try_get(2)?,
                        },
                        row.try_get(3)?,
                    ))
                };
                let (job, seq) = read().map_err(pg(OPERATION))?;
                claimed.push(job);
                highest = highest.max(Some(seq));
            }
            if claimed.len() == self.n {
                break;
            }
            // Fewer than wanted. Is any job claimable at all (locked right now, or new)?
            let Some(head) = self.peek(tx, stmts)? else {
                break;
            };
            if highest.is_some_and(|held| head.seq < held) {
                return Ok(Attempt::WaitFirst(head));
            }
            self.wait_for(tx, stmts, head, &mut claimed, &mut highest)?;
        }
        Ok(Attempt::Claimed(claimed))
    }

    /// The first claimable job, locked or not; this transaction's own claims are not claimable.
    fn peek(&self, tx: &mut Transaction<'_>, stmts: &Statements) -> Result<Option<Head>> {
        let row = tx
            .query_opt(
                &stmts.peek_next,
                &[&self.window.now(), &self.queues, &1_i64],
            )
            .map_err(pg(OPERATION))?;
        row.map(|row| {
            Ok(Head {
                job: row.try_get(0)?,
                seq: row.try_get(1)?,
            })
        })
        .transpose()
        .map_err(pg(OPERATION))
    }

    /// Waits for the writer of `head` by claiming it directly; its writer usually claimed it,
    /// and then this counts as a try.
    fn wait_for(
        &mut self,
        tx: &mut Transaction<'_>,
        stmts: &Statements,
        head: Head,
        claimed: &mut Vec<ClaimedJob>,
        highest: &mut Option<i64>,
    ) -> Result<()> {
        let (until, now) = (self.window.until(), self.window.now());
        let fence: Option<Fence> = tx
            .query_opt(&stmts.claim, &[&head.job, &self.owner, &until, &now])
            .and_then(|row| row.map(|row| row.try_get(0)).transpose())
            .map_err(pg(OPERATION))?;
        let Some(fence) = fence else {
            return self.tried();
        };
        // A payload never changes once its job exists.
        let payload: Option<String> = tx
            .query_opt(&stmts.payload, &[&head.job])
            .and_then(|row| row.map(|row| row.try_get(0)).transpose())
            .map_err(pg(OPERATION))?;
        *highest = (*highest).max(Some(head.seq));
        claimed.push(ClaimedJob {
            job: head.job,
            owner: self.owner.into(),
            fence,
            payload,
        });
        Ok(())
    }
}

//! The batch operations on PostgreSQL (docs/contract.md section 10), over a [`Wire`], written once
//! for every client: each one transaction, answered item by item exactly as the single operations
//! would answer in list order, and each one statement where it can be (`sql/*_many.sql`, the list
//! bound as arrays and read back with `unnest(...) WITH ORDINALITY`). Arguments arrive checked
//! (`checks.rs`).
//!
//! - `enqueue_many`: one `INSERT ... SELECT` of the first item of each id, `ON CONFLICT DO
//!   NOTHING`; a later item of an id already in the list answers `false`, as a second `enqueue`
//!   would.
//! - `renew_many` / `complete_many` (and `heartbeat`, renewals and a beat): one `UPDATE ... FROM
//!   unnest(...)` for the whole list, which also reads the row of every lease it refused, so the
//!   reasons come in the same statement. A job listed twice cannot be written twice by one
//!   `UPDATE`, so the list runs in rounds: round `k` holds the `k`-th item of each job, and each
//!   round sees the ones before it (a completed job is `done` to its second completion, a renewed
//!   lease is still live to its second renewal). A list naming every job once is one round. A
//!   lease refused by a row that then explains no refusal (another transaction changed it in
//!   between) is written again, as the single operations do.
//! - `claim_next_many`: up to `n` jobs in `claim_next`'s order in one transaction, with
//!   `claim_next`'s rule that a job locked by another transaction is passed over but never makes
//!   the answer shorter. Each pass is one statement (`sql/claim_next_many.sql`): the first
//!   claimable jobs no other transaction is writing, `SKIP LOCKED`. When a pass finds fewer than
//!   are still wanted and a claimable job remains, the call waits for that job's writer by
//!   claiming it directly, then passes again for the rest. Unlike `claim_next`, the transaction
//!   holds the jobs it already claimed while it waits, and two such waiters could each wait for a
//!   job the other holds; so a claimer waits only for a job inserted after every job it holds
//!   (`jobs.seq` is one total order): along any chain of waiting claimers the numbers
//!   only grow, and the chain never closes into a deadlock. When the job to wait for comes before
//!   one it holds, the call rolls back and starts again holding nothing, beginning with the wait
//!   for that job.

use std::collections::HashMap;

use super::ops::{candidates_per_bucket, claimed_job, MAX_TRIES};
use super::wire::{in_transaction, Control, Row, Sql, Value, Wire};
use crate::batch::{LeaseCompletion, NewJob};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{ClaimedJob, Outcome};
use crate::registry::WorkerBeat;
use crate::rules::registry::{beat_times, counter_columns, prune_before};
use crate::rules::{unexplained, why_write_refused, LeaseRow, LeaseWindow};

/// `enqueue_many` of checked jobs, in its own transaction.
pub(crate) async fn enqueue_many(wire: &mut impl Wire, jobs: &[NewJob]) -> Result<Vec<bool>> {
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    in_transaction(wire, "enqueue_many", async |wire| {
        enqueue_rows(wire, jobs).await
    })
    .await
}

/// `enqueue_many`'s write on an open transaction, answered in order: `sql/enqueue_many.sql`, one
/// statement for the whole list. The jobs arrive checked.
pub(crate) async fn enqueue_rows(wire: &mut impl Wire, jobs: &[NewJob]) -> Result<Vec<bool>> {
    const OP: &str = "enqueue_many";
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    let params = vec![
        texts(jobs.iter().map(|job| job.job.as_str())),
        Value::FloatArray(jobs.iter().map(|job| job.run_at.unwrap_or(0.0)).collect()),
        Value::NullableTextArray(jobs.iter().map(|job| job.payload.clone()).collect()),
        texts(jobs.iter().map(NewJob::queue_name)),
        Value::IntArray(jobs.iter().map(|job| job.priority.unwrap_or(0)).collect()),
    ];
    let answer = wire.run(OP, Sql::EnqueueMany, params).await?;
    let mut added = vec![false; jobs.len()];
    for row in &answer.rows {
        *item_at(&mut added, row.int(OP, 0)?, OP)? = true;
    }
    Ok(added)
}

fn texts<'a>(items: impl Iterator<Item = &'a str>) -> Value {
    Value::TextArray(items.map(str::to_owned).collect())
}

/// What a fenced write of many leases writes.
pub(crate) enum ManyWrite<'a> {
    /// `renew_many`: each lease until `until`.
    Renew { until: f64 },
    /// `complete_many`: each lease's result (the completions are the leases' list).
    Complete { completions: &'a [LeaseCompletion] },
}

impl ManyWrite<'_> {
    /// The statement over the leases at `pending` (no job twice).
    fn statement(&self, leases: &[&Lease], pending: &[usize], now: f64) -> (Sql, Vec<Value>) {
        let mut params = vec![
            texts(pending.iter().map(|&i| leases[i].job.as_str())),
            texts(pending.iter().map(|&i| leases[i].owner.as_str())),
            Value::IntArray(pending.iter().map(|&i| leases[i].fence).collect()),
        ];
        match self {
            ManyWrite::Renew { until } => {
                params.extend([now.into(), (*until).into()]);
                (Sql::RenewMany, params)
            }
            ManyWrite::Complete { completions } => {
                params.push(Value::NullableTextArray(
                    pending
                        .iter()
                        .map(|&i| completions[i].result.clone())
                        .collect(),
                ));
                params.push(now.into());
                (Sql::CompleteMany, params)
            }
        }
    }
}

/// A fenced write of every lease in one transaction (and a worker's beat with its ttl before the
/// commit, if given). Per lease in list order: granted, or refused with the contract's reason for
/// the row the statement found (`why_write_refused`, `now` for the live check).
pub(crate) async fn write_many(
    wire: &mut impl Wire,
    operation: &'static str,
    leases: &[&Lease],
    now: f64,
    beat: Option<(&WorkerBeat, f64)>,
    write: ManyWrite<'_>,
) -> Result<Vec<Outcome<()>>> {
    if leases.is_empty() && beat.is_none() {
        return Ok(Vec::new());
    }
    in_transaction(wire, operation, async |wire| {
        write_rows(wire, operation, leases, now, beat, &write).await
    })
    .await
}

/// [`write_many`]'s statements on an open transaction.
async fn write_rows(
    wire: &mut impl Wire,
    operation: &'static str,
    leases: &[&Lease],
    now: f64,
    beat: Option<(&WorkerBeat, f64)>,
    write: &ManyWrite<'_>,
) -> Result<Vec<Outcome<()>>> {
    let mut answers: Vec<Option<Outcome<()>>> = vec![None; leases.len()];
    for round in rounds(leases.iter().map(|lease| lease.job.as_str())) {
        let mut pending = round;
        let mut tries = 0;
        while !pending.is_empty() {
            if tries == MAX_TRIES {
                let job = &leases[pending[0]].job;
                return Err(unexplained(operation, job, Some(MAX_TRIES)));
            }
            tries += 1;
            let (sql, params) = write.statement(leases, &pending, now);
            let answer = wire.run(operation, sql, params).await?;
            let mut changed_since = Vec::new();
            for row in &answer.rows {
                let index = *item_at(&mut pending, row.int(operation, 0)?, operation)?;
                let outcome = if row.flag(operation, 1)? {
                    Some(Outcome::Granted(()))
                } else {
                    why_write_refused(refused_row(row, operation)?, leases[index], Some(now))
                        .map(Outcome::Rejected)
                };
                match outcome {
                    Some(outcome) => answers[index] = Some(outcome),
                    // The row matches now: it changed after the UPDATE looked.
                    None => changed_since.push(index),
                }
            }
            pending = changed_since;
        }
    }
    if let Some((beat, ttl)) = beat {
        record_beat(wire, operation, beat, now, ttl).await?;
    }
    answers
        .into_iter()
        .map(|answer| {
            answer.ok_or_else(|| Error::Internal {
                message: format!("{operation} answered no row for one of its leases"),
            })
        })
        .collect()
}

/// Writes `beat` (checked) and forgets workers gone long ago, in the open transaction.
async fn record_beat(
    wire: &mut impl Wire,
    operation: &'static str,
    beat: &WorkerBeat,
    now: f64,
    ttl: f64,
) -> Result<()> {
    let (last_seen, until, stopped) = beat_times(beat, now, ttl);
    let mut params = vec![
        beat.owner.as_str().into(),
        beat.host.as_str().into(),
        i64::from(beat.pid).into(),
        beat.started.into(),
        last_seen.into(),
        until.into(),
        stopped.map_or(Value::Null, Value::Float),
    ];
    params.extend(counter_columns(beat).map(Value::Int));
    wire.run(operation, Sql::WorkerBeat, params).await?;
    wire.run(operation, Sql::WorkersPrune, vec![prune_before(now).into()])
        .await?;
    Ok(())
}

/// The row a `*_many.sql` statement found for a refused lease (columns 2 to 6: owner, until,
/// fence, done, exists), `None` when the job does not exist.
fn refused_row(row: &Row, operation: &'static str) -> Result<Option<LeaseRow>> {
    if !row.flag(operation, 6)? {
        return Ok(None);
    }
    Ok(Some(LeaseRow {
        owner: row.opt_text(operation, 2)?,
        until: row.float(operation, 3)?,
        fence: row.int(operation, 4)?,
        done: row.int(operation, 5)? != 0,
    }))
}

/// The positions of the list in rounds: round `k` holds the `k`-th item of each job, in list
/// order, so no round names a job twice, and running the rounds one after the other gives every
/// item the answer it would get after the items before it.
fn rounds<'a>(jobs: impl Iterator<Item = &'a str>) -> Vec<Vec<usize>> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    for (index, job) in jobs.enumerate() {
        let count = seen.entry(job).or_insert(0);
        if rounds.len() == *count {
            rounds.push(Vec::new());
        }
        rounds[*count].push(index);
        *count += 1;
    }
    rounds
}

/// The item at a position the server answered (from 1): an error, never a panic, should the
/// server answer a position the list does not have.
fn item_at<'a, T>(items: &'a mut [T], position: i64, operation: &str) -> Result<&'a mut T> {
    let len = items.len();
    usize::try_from(position)
        .ok()
        .and_then(|p| p.checked_sub(1))
        .and_then(|i| items.get_mut(i))
        .ok_or_else(|| Error::Internal {
            message: format!("{operation} answered item {position} of a list of {len}"),
        })
}

const CLAIM_MANY: &str = "claim_next_many";

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

/// What a claim asks for, its arguments checked: up to `n` jobs of `queues` (every queue when
/// `None`) for `owner`, leased over `window`.
pub(crate) struct ClaimRequest<'a> {
    pub(crate) queues: Option<Vec<&'a str>>,
    pub(crate) owner: &'a str,
    pub(crate) n: usize,
    pub(crate) window: LeaseWindow,
}

/// `claim_next_many` of checked arguments, in a transaction of its own.
pub(crate) async fn claim_next_many(
    wire: &mut impl Wire,
    request: ClaimRequest<'_>,
) -> Result<Vec<ClaimedJob>> {
    match claim_after(wire, request, async |_| Ok(())).await? {
        Claim::Committed((), jobs) => Ok(jobs),
        Claim::Failed(err) => Err(err),
    }
}

/// A worker's round (`Leases::complete_then_claim`, docs/contract.md section 10) of checked
/// arguments: the completions written as `complete_many` writes them, then the claim as
/// `claim_next_many` claims, in one transaction, so the round pays one commit. When the claim
/// fails (contended, a lock it waited for too long), that transaction is rolled back and the
/// completions are written alone in one of their own: the claim's error is its answer, and the
/// completions stand, as the trait promises. (Node's workers group their calls in JavaScript,
/// so from Node only a `complete_then_claim` call itself comes here.)
pub(crate) async fn complete_then_claim(
    wire: &mut impl Wire,
    completions: &[LeaseCompletion],
    now: f64,
    request: ClaimRequest<'_>,
) -> Result<(Vec<Outcome<()>>, Result<Vec<ClaimedJob>>)> {
    const OP: &str = "complete_then_claim";
    let leases: Vec<&Lease> = completions.iter().map(|done| &done.lease).collect();
    let write = ManyWrite::Complete { completions };
    let written = claim_after(wire, request, async |wire| {
        write_rows(wire, OP, &leases, now, None, &write).await
    })
    .await?;
    match written {
        Claim::Committed(completed, jobs) => Ok((completed, Ok(jobs))),
        Claim::Failed(err) => {
            let completed = write_many(wire, OP, &leases, now, None, write).await?;
            Ok((completed, Err(err)))
        }
    }
}

/// How [`claim_after`] ended.
enum Claim<B> {
    /// Committed: what the writes before the claim answered, and the jobs claimed.
    Committed(B, Vec<ClaimedJob>),
    /// The claim failed, and the transaction (the writes before it too) was rolled back.
    Failed(Error),
}

/// One transaction of `before`'s writes, then the claim of `request`; started again (with
/// `before` again) when the claim must let go of what it holds to wait for an earlier job. An
/// error of `before` is the call's error; the claim's is [`Claim::Failed`].
async fn claim_after<W: Wire, B>(
    wire: &mut W,
    request: ClaimRequest<'_>,
    mut before: impl AsyncFnMut(&mut W) -> Result<B>,
) -> Result<Claim<B>> {
    let mut claimer = Claimer {
        owner: request.owner,
        queues: Value::from(request.queues),
        n: request.n,
        window: request.window,
        tries: 0,
    };
    let mut first = None;
    loop {
        wire.control(CLAIM_MANY, Control::Begin).await?;
        let written = match before(wire).await {
            Ok(written) => written,
            Err(err) => {
                let _ = wire.control(CLAIM_MANY, Control::Rollback).await;
                return Err(err);
            }
        };
        let attempt = claimer.attempt(wire, first.take()).await;
        match attempt {
            Ok(Attempt::Claimed(jobs)) => {
                wire.control(CLAIM_MANY, Control::Commit).await?;
                return Ok(Claim::Committed(written, jobs));
            }
            Ok(Attempt::WaitFirst(head)) => {
                wire.control(CLAIM_MANY, Control::Rollback).await?;
                if let Err(err) = claimer.tried() {
                    return Ok(Claim::Failed(err));
                }
                first = Some(head);
            }
            Err(err) => {
                let _ = wire.control(CLAIM_MANY, Control::Rollback).await;
                return Ok(Claim::Failed(err));
            }
        }
    }
}

/// One call's arguments and its count of tries (a wait that claimed nothing, or a new start).
struct Claimer<'a> {
    owner: &'a str,
    /// The queues claimed from, as the statements take them (`NULL`: every queue).
    queues: Value,
    n: usize,
    window: LeaseWindow,
    tries: usize,
}

impl Claimer<'_> {
    /// Counts a try; too many in a row is [`Error::Contended`], as for `claim_next`.
    fn tried(&mut self) -> Result<()> {
        self.tries += 1;
        if self.tries >= MAX_TRIES {
            return Err(Error::Contended {
                operation: CLAIM_MANY,
            });
        }
        Ok(())
    }

    /// One transaction: wait for `first` if given (holding nothing yet), then passes and waits
    /// until `n` jobs are claimed or none is claimable.
    async fn attempt(&mut self, wire: &mut impl Wire, first: Option<Head>) -> Result<Attempt> {
        let mut claimed = Vec::new();
        // The highest insertion number held: a wait is only for a later one.
        let mut highest: Option<i64> = None;
        if let Some(head) = first {
            self.wait_for(wire, head, &mut claimed, &mut highest)
                .await?;
        }
        while claimed.len() < self.n {
            let wanted = self.n - claimed.len();
            let params = vec![
                self.window.now().into(),
                self.queues.clone(),
                candidates_per_bucket(wanted).into(),
                self.owner.into(),
                self.window.until().into(),
                (wanted as i64).into(),
            ];
            let answer = wire.run(CLAIM_MANY, Sql::ClaimNextMany, params).await?;
            for row in &answer.rows {
                claimed.push(claimed_job(CLAIM_MANY, row, self.owner)?);
                highest = highest.max(Some(row.int(CLAIM_MANY, 3)?));
            }
            if claimed.len() == self.n {
                break;
            }
            // Fewer than wanted. Is any job claimable at all (locked right now, or new)?
            let Some(head) = self.peek(wire).await? else {
                break;
            };
            if highest.is_some_and(|held| head.seq < held) {
                return Ok(Attempt::WaitFirst(head));
            }
            self.wait_for(wire, head, &mut claimed, &mut highest)
                .await?;
        }
        Ok(Attempt::Claimed(claimed))
    }

    /// The first claimable job, locked or not; this transaction's own claims are not claimable.
    async fn peek(&self, wire: &mut impl Wire) -> Result<Option<Head>> {
        let params = vec![self.window.now().into(), self.queues.clone(), 1_i64.into()];
        match wire.run(CLAIM_MANY, Sql::PeekNext, params).await?.first() {
            Some(row) => Ok(Some(Head {
                job: row.text(CLAIM_MANY, 0)?,
                seq: row.int(CLAIM_MANY, 1)?,
            })),
            None => Ok(None),
        }
    }

    /// Waits for the writer of `head` by claiming it directly; its writer usually claimed it,
    /// and then this counts as a try.
    async fn wait_for(
        &mut self,
        wire: &mut impl Wire,
        head: Head,
        claimed: &mut Vec<ClaimedJob>,
        highest: &mut Option<i64>,
    ) -> Result<()> {
        let params = vec![
            head.job.as_str().into(),
            self.owner.into(),
            self.window.until().into(),
            self.window.now().into(),
        ];
        let Some(row) = wire.run(CLAIM_MANY, Sql::Claim, params).await?.first() else {
            return self.tried();
        };
        let fence = row.int(CLAIM_MANY, 0)?;
        // A payload never changes once its job exists.
        let (payload, base) = match wire
            .run(CLAIM_MANY, Sql::Payload, vec![head.job.as_str().into()])
            .await?
            .first()
        {
            Some(row) => (row.opt_text(CLAIM_MANY, 0)?, row.int(CLAIM_MANY, 1)?),
            None => (None, 0),
        };
        *highest = (*highest).max(Some(head.seq));
        claimed.push(ClaimedJob {
            job: head.job,
            owner: self.owner.into(),
            fence,
            payload,
            base,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_hold_each_job_once_in_list_order() {
        let jobs = ["a", "b", "a", "c", "a", "b"];
        assert_eq!(
            rounds(jobs.into_iter()),
            [vec![0, 1, 3], vec![2, 5], vec![4]]
        );
        assert_eq!(rounds(["x", "y"].into_iter()), [vec![0, 1]]);
        assert!(rounds(std::iter::empty()).is_empty());
    }

    #[test]
    fn a_position_outside_the_list_is_an_error() {
        let mut items = [1, 2];
        assert_eq!(*item_at(&mut items, 2, "op").unwrap(), 2);
        for bad in [0, 3, -1] {
            assert!(matches!(
                item_at(&mut items, bad, "op"),
                Err(Error::Internal { .. })
            ));
        }
    }
}

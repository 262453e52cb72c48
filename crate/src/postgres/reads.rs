//! What a dashboard reads on PostgreSQL, over a [`Wire`], written once for every client: jobs a
//! page at a time and every queue counted at once, in the order and with the cursors of the
//! SQLite backend (newest first down `leasefence_seq`, the open states along `leasefence_next`
//! (`until`, then `seq`), dead jobs from their marks); each queue's longest wait; the worker
//! registry with the live leases. Each is one read-only snapshot. Arguments arrive checked.

use super::ops::job_state;
use super::wire::{Control, Row, Sql, Value, Wire};
use crate::error::Result;
use crate::listing::{JobPage, JobQuery, JobStatus, JobSummary, QueueCounts, QueueWaiting};
use crate::registry::{HeldLease, WorkerInfo};
use crate::rules::listing::{
    page, queue_counts, set_dead, summary, until_range, wrong_cursor, Cursor,
};
use crate::rules::registry::{
    with_holdings, worker_info, StoredWorker, MAX_LEASES_READ, MAX_WORKERS,
};

/// Runs `reads` in a read-only snapshot; its answers (rolled back either way: it wrote nothing).
async fn in_snapshot<W: Wire, T>(
    wire: &mut W,
    operation: &'static str,
    reads: impl AsyncFnOnce(&mut W) -> Result<T>,
) -> Result<T> {
    wire.control(operation, Control::BeginSnapshot).await?;
    let answer = reads(wire).await;
    let ended = wire.control(operation, Control::Rollback).await;
    let answer = answer?;
    ended?;
    Ok(answer)
}

/// A listed row: the six columns of `jobs`, then `queue, priority, dead, failures` and `seq`.
fn listed_row(row: &Row, now: f64) -> Result<(JobSummary, i64)> {
    const OP: &str = "list_jobs";
    let state = job_state(OP, row)?;
    let summary = summary(
        state,
        row.flag(OP, 8)?,
        row.text(OP, 6)?,
        row.int(OP, 7)?,
        row.int(OP, 9)?,
        now,
    );
    Ok((summary, row.int(OP, 10)?))
}

/// One page of `query` (checked; `cursor` its reading) at `now`.
pub(crate) async fn list_jobs(
    wire: &mut impl Wire,
    query: &JobQuery,
    cursor: Cursor,
    now: f64,
) -> Result<JobPage> {
    const OP: &str = "list_jobs";
    let queue = Value::from(query.queue.as_deref());
    let fetch = Value::Int((query.limit + 1) as i64);
    let done_only = query.status == Some(JobStatus::Done);
    let (sql, params) = match (query.status, cursor) {
        (Some(status), Cursor::After(until, seq)) if status.by_until() => {
            let (low, high, owner) = until_range(status, until, now);
            let owner = owner.map_or(Value::Null, Value::Bool);
            let params = vec![
                low.into(),
                high.into(),
                until.into(),
                seq.into(),
                owner,
                queue,
                fetch,
            ];
            (Sql::ListByUntil, params)
        }
        (Some(JobStatus::Dead), Cursor::Before(seq)) => {
            (Sql::ListDead, vec![seq.into(), queue, fetch])
        }
        (_, Cursor::Before(seq)) => (
            Sql::ListNewest,
            vec![seq.into(), queue, Value::Bool(done_only), fetch],
        ),
        (_, Cursor::After(..)) => return Err(wrong_cursor(query)),
    };
    let answer = in_snapshot(wire, OP, async |wire| wire.run(OP, sql, params).await).await?;
    let rows = answer
        .rows
        .iter()
        .map(|row| listed_row(row, now))
        .collect::<Result<Vec<_>>>()?;
    Ok(page(rows, query))
}

/// Every queue that has a job, with its jobs in each state at `now`, from one snapshot.
pub(crate) async fn queue_stats(wire: &mut impl Wire, now: f64) -> Result<Vec<QueueCounts>> {
    const OP: &str = "queue_stats";
    let (counts, dead) = in_snapshot(wire, OP, async |wire| {
        let counts = wire.run(OP, Sql::QueueStats, vec![now.into()]).await?;
        let dead = wire.run(OP, Sql::DeadPerQueue, Vec::new()).await?;
        Ok((counts, dead))
    })
    .await?;
    let mut queues = counts
        .rows
        .iter()
        .map(|row| {
            Ok(queue_counts(
                row.text(OP, 0)?,
                [
                    row.int(OP, 1)?,
                    row.int(OP, 2)?,
                    row.int(OP, 3)?,
                    row.int(OP, 4)?,
                ],
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    let dead = dead
        .rows
        .iter()
        .map(|row| Ok((row.text(OP, 0)?, row.int(OP, 1)?.max(0) as u64)))
        .collect::<Result<Vec<_>>>()?;
    set_dead(&mut queues, dead);
    Ok(queues)
}

/// Each queue's longest wait at `now`, from one snapshot.
pub(crate) async fn oldest_waiting(wire: &mut impl Wire, now: f64) -> Result<Vec<QueueWaiting>> {
    const OP: &str = "oldest_waiting";
    let answer = in_snapshot(wire, OP, async |wire| {
        wire.run(OP, Sql::OldestWaiting, vec![now.into()]).await
    })
    .await?;
    answer
        .rows
        .iter()
        .map(|row| {
            Ok(QueueWaiting {
                queue: row.text(OP, 0)?,
                since: row.float(OP, 1)?,
            })
        })
        .collect()
}

/// The worker registry's rows with the live leases at `now`, from one snapshot.
pub(crate) async fn list_workers(wire: &mut impl Wire, now: f64) -> Result<Vec<WorkerInfo>> {
    const OP: &str = "list_workers";
    let (rows, held) = in_snapshot(wire, OP, async |wire| {
        let rows = wire
            .run(OP, Sql::Workers, vec![(MAX_WORKERS as i64).into()])
            .await?;
        let held = wire
            .run(
                OP,
                Sql::HeldLeases,
                vec![now.into(), (MAX_LEASES_READ as i64).into()],
            )
            .await?;
        Ok((rows, held))
    })
    .await?;
    let workers = rows
        .rows
        .iter()
        .map(|row| {
            let mut counters = [0i64; 7];
            for (i, count) in counters.iter_mut().enumerate() {
                *count = row.int(OP, 7 + i)?;
            }
            let stored = StoredWorker {
                owner: row.text(OP, 0)?,
                host: row.text(OP, 1)?,
                pid: row.int(OP, 2)?,
                started: row.float(OP, 3)?,
                last_seen: row.float(OP, 4)?,
                until: row.float(OP, 5)?,
                stopped: row.opt_float(OP, 6)?,
                counters,
            };
            Ok(worker_info(stored, now))
        })
        .collect::<Result<Vec<_>>>()?;
    let leases = held
        .rows
        .iter()
        .map(|row| {
            Ok((
                row.text(OP, 0)?,
                HeldLease {
                    job: row.text(OP, 1)?,
                    fence: row.int(OP, 2)?,
                    until: row.float(OP, 3)?,
                },
            ))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(with_holdings(workers, leases))
}

//! Listing jobs a page at a time and counting every queue at once on PostgreSQL (what a
//! dashboard reads), in the order and with the cursors of the SQLite backend: newest first down
//! `leasefence_seq`, the open states along `leasefence_next` (`until`, then `seq`), dead jobs from
//! their marks. Each is one read-only snapshot; the statements are prepared per call, as a
//! dashboard asks rarely and a worker's session should not carry them.

use postgres::types::ToSql;
use postgres::Row;

use super::failure::pg;
use super::session::{read_snapshot, Session};
use crate::error::Result;
use crate::listing::{JobPage, JobQuery, JobStatus, JobSummary, QueueCounts, QueueWaiting};
use crate::rules::listing::{
    check_query, page, queue_counts, set_dead, summary, until_range, wrong_cursor, Cursor,
};

/// A listed row: the six columns of `jobs` (read as `state` reads them), then `queue, priority,
/// dead, failures` and `seq`.
fn listed_row(row: &Row, now: f64) -> std::result::Result<(JobSummary, i64), postgres::Error> {
    let state = super::store::job_state(row)?;
    let summary = summary(
        state,
        row.try_get(8)?,
        row.try_get(6)?,
        row.try_get(7)?,
        row.try_get(9)?,
        now,
    );
    Ok((summary, row.try_get(10)?))
}

/// One page of `query` at `now` (`Leases::list_jobs`).
pub(super) fn list_jobs(session: &mut Session, query: &JobQuery, now: f64) -> Result<JobPage> {
    crate::rules::check_now(now)?;
    let cursor = check_query(query)?;
    let queue = query.queue.as_deref();
    let fetch = (query.limit + 1) as i64;
    let done_only = query.status == Some(JobStatus::Done);
    let rows = match (query.status, cursor) {
        (Some(status), Cursor::After(until, seq)) if status.by_until() => {
            let (low, high, owner) = until_range(status, until, now);
            let args: [&(dyn ToSql + Sync); 7] =
                [&low, &high, &until, &seq, &owner, &queue, &fetch];
            read(session, include_str!("sql/list_by_until.sql"), &args)?
        }
        (Some(JobStatus::Dead), Cursor::Before(seq)) => read(
            session,
            include_str!("sql/list_dead.sql"),
            &[&seq, &queue, &fetch],
        )?,
        (_, Cursor::Before(seq)) => read(
            session,
            include_str!("sql/list_newest.sql"),
            &[&seq, &queue, &done_only, &fetch],
        )?,
        (_, Cursor::After(..)) => return Err(wrong_cursor(query)),
    };
    let rows = rows
        .iter()
        .map(|row| listed_row(row, now))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(pg("list_jobs"))?;
    Ok(page(rows, query))
}

fn read(session: &mut Session, sql: &str, args: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>> {
    let mut tx = read_snapshot(&mut session.client, "list_jobs")?;
    let rows = tx.query(sql, args).map_err(pg("list_jobs"))?;
    tx.commit().map_err(pg("list_jobs"))?;
    Ok(rows)
}

/// Every queue that has a job, with its jobs in each state at `now` (`Leases::queue_stats`), from
/// one snapshot.
pub(super) fn queue_stats(session: &mut Session, now: f64) -> Result<Vec<QueueCounts>> {
    crate::rules::check_now(now)?;
    let mut tx = read_snapshot(&mut session.client, "queue_stats")?;
    let counts = tx
        .query(include_str!("sql/queue_stats.sql"), &[&now])
        .map_err(pg("queue_stats"))?;
    let dead = tx
        .query(include_str!("sql/dead_per_queue.sql"), &[])
        .map_err(pg("queue_stats"))?;
    tx.commit().map_err(pg("queue_stats"))?;
    let count = |row: &Row, i: usize| -> std::result::Result<u64, postgres::Error> {
        Ok(row.try_get::<_, i64>(i)?.max(0) as u64)
    };
    let mut queues = counts
        .iter()
        .map(|row| {
            let column = |i: usize| row.try_get::<_, i64>(i);
            Ok(queue_counts(
                row.try_get(0)?,
                [column(1)?, column(2)?, column(3)?, column(4)?],
            ))
        })
        .collect::<std::result::Result<Vec<_>, postgres::Error>>()
        .map_err(pg("queue_stats"))?;
    let dead = dead
        .iter()
        .map(|row| Ok((row.try_get::<_, String>(0)?, count(row, 1)?)))
        .collect::<std::result::Result<Vec<_>, postgres::Error>>()
        .map_err(pg("queue_stats"))?;
    set_dead(&mut queues, dead);
    Ok(queues)
}

/// Each queue's longest wait at `now` (`Leases::oldest_waiting`), from one snapshot.
pub(super) fn oldest_waiting(session: &mut Session, now: f64) -> Result<Vec<QueueWaiting>> {
    crate::rules::check_now(now)?;
    let mut tx = read_snapshot(&mut session.client, "oldest_waiting")?;
    let rows = tx
        .query(include_str!("sql/oldest_waiting.sql"), &[&now])
        .map_err(pg("oldest_waiting"))?;
    tx.commit().map_err(pg("oldest_waiting"))?;
    rows.iter()
        .map(|row| {
            Ok(QueueWaiting {
                queue: row.try_get(0)?,
                since: row.try_get(1)?,
            })
        })
        .collect::<std::result::Result<Vec<_>, postgres::Error>>()
        .map_err(pg("oldest_waiting"))
}

//! Listing jobs a page at a time and counting every queue at once on SQLite (what a dashboard
//! reads). Each page is one indexed read: newest first down `leasefence_order`'s primary key, the
//! open states along `leasefence_claimable` (`until`, then the rowid), dead jobs from their marks.

use rusqlite::types::ToSql;
use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::listing::{JobPage, JobQuery, JobStatus, JobSummary, QueueCounts, QueueWaiting};
use crate::rules::listing::{check_query, page, queue_counts, summary, until_range, Cursor};

/// A listed row: the six columns of `jobs` (read as `state` reads them), then `queue, priority,
/// dead, failures` and the insertion number the page's order uses.
fn listed_row(row: &rusqlite::Row<'_>, now: f64) -> rusqlite::Result<(JobSummary, i64)> {
    let state = super::ops::job_state(row)?;
    let summary = summary(
        state,
        row.get(8)?,
        row.get(6)?,
        row.get(7)?,
        row.get(9)?,
        now,
    );
    Ok((summary, row.get(10)?))
}

/// One page of `query` at `now` (`Leases::list_jobs`), read in one transaction.
pub(crate) fn list_jobs(conn: &Connection, query: &JobQuery, now: f64) -> Result<JobPage> {
    crate::rules::check_now(now)?;
    let cursor = check_query(query)?;
    let queue = query.queue.as_deref();
    // One more than the page: whether it exists says whether there is a next page.
    let fetch = (query.limit + 1) as i64;
    let (sql, args): (&str, Vec<Box<dyn ToSql>>) = match (query.status, cursor) {
        (Some(status), Cursor::After(until, rowid)) if status.by_until() => {
            let (low, high, owner) = until_range(status, until, now);
            (
                include_str!("sql/list_by_until.sql"),
                vec![
                    Box::new(low),
                    Box::new(high),
                    Box::new(until),
                    Box::new(rowid),
                    Box::new(owner),
                    Box::new(queue.map(str::to_owned)),
                    Box::new(fetch),
                ],
            )
        }
        (Some(JobStatus::Dead), Cursor::Before(seq)) => (
            include_str!("sql/list_dead.sql"),
            vec![
                Box::new(seq),
                Box::new(queue.map(str::to_owned)),
                Box::new(fetch),
            ],
        ),
        (status, Cursor::Before(seq)) => (
            include_str!("sql/list_newest.sql"),
            vec![
                Box::new(seq),
                Box::new(queue.map(str::to_owned)),
                Box::new(i64::from(status == Some(JobStatus::Done))),
                Box::new(fetch),
            ],
        ),
        // check_query already refuses a cursor of the other order; kept as an error, not a panic.
        (_, Cursor::After(..)) => return Err(crate::rules::listing::wrong_cursor(query)),
    };
    let tx = super::write_tx::deferred(conn, "list_jobs")?;
    let rows = tx
        .prepare_cached(sql)
        .and_then(|mut stmt| {
            let params: Vec<&dyn ToSql> = args.iter().map(|a| a.as_ref()).collect();
            stmt.query_map(&params[..], |row| listed_row(row, now))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("list_jobs"))?;
    tx.commit().map_err(Error::storage("list_jobs"))?;
    Ok(page(rows, query))
}

/// Every queue that has a job, by name, with its jobs in each state at `now`
/// (`Leases::queue_stats`): one pass over `leasefence_order`, and one over the dead marks, in one
/// transaction.
pub(crate) fn queue_stats(conn: &Connection, now: f64) -> Result<Vec<QueueCounts>> {
    crate::rules::check_now(now)?;
    let count = |row: &rusqlite::Row<'_>, column: usize| -> rusqlite::Result<u64> {
        Ok(row.get::<_, i64>(column)?.max(0) as u64)
    };
    let tx = super::write_tx::deferred(conn, "queue_stats")?;
    let mut queues = tx
        .prepare_cached(include_str!("sql/queue_stats.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([now], |row| {
                Ok(queue_counts(
                    row.get(0)?,
                    [row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?],
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("queue_stats"))?;
    let dead = tx
        .prepare_cached(include_str!("sql/dead_per_queue.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([], |row| Ok((row.get::<_, String>(0)?, count(row, 1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("queue_stats"))?;
    tx.commit().map_err(Error::storage("queue_stats"))?;
    crate::rules::listing::set_dead(&mut queues, dead);
    Ok(queues)
}

/// Each queue's longest wait at `now` (`Leases::oldest_waiting`).
pub(crate) fn oldest_waiting(conn: &Connection, now: f64) -> Result<Vec<QueueWaiting>> {
    crate::rules::check_now(now)?;
    let tx = super::write_tx::deferred(conn, "oldest_waiting")?;
    let waiting = tx
        .prepare_cached(include_str!("sql/oldest_waiting.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([now], |row| {
                Ok(QueueWaiting {
                    queue: row.get(0)?,
                    since: row.get(1)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("oldest_waiting"))?;
    tx.commit().map_err(Error::storage("oldest_waiting"))?;
    Ok(waiting)
}

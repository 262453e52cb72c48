//! Retention on SQLite (docs/contract.md section 13): prune in bounded transactions, the fence
//! floor it raises, and the cap on a job's failure records.

use rusqlite::{params, Connection};

use super::ops::immediate;
use crate::error::{Error, Result};
use crate::retention::Prune;
use crate::rules::MAX_FAILURE_RECORDS;

/// Deletes finished jobs as `prune` says, at most [`PRUNE_BATCH`](crate::retention::PRUNE_BATCH)
/// per `BEGIN IMMEDIATE` transaction, each raising the fence floor to the highest fence it
/// deletes before it deletes anything. Answers how many jobs were deleted.
pub(crate) fn prune(conn: &Connection, prune: &Prune) -> Result<u64> {
    let mut run = prune.start()?;
    while let Some(batch) = run.next_batch() {
        let gone = prune_batch(conn, prune, batch)?;
        run.deleted(batch, gone);
    }
    Ok(run.total())
}

/// One transaction of [`prune`]: at most `batch` jobs, the floor raised first.
fn prune_batch(conn: &Connection, prune: &Prune, batch: usize) -> Result<u64> {
    let tx = immediate(conn, "prune")?;
    let picked: Vec<(String, i64)> = tx
        .prepare_cached(include_str!("sql/prune_pick.sql"))
        .and_then(|mut stmt| {
            stmt.query_map(
                params![prune.before, prune.keep_dead, batch as i64, prune.only_dead],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )?
            .collect()
        })
        .map_err(Error::storage("prune"))?;
    let Some(highest) = picked.iter().map(|(_, fence)| *fence).max() else {
        return Ok(0);
    };
    tx.prepare_cached(include_str!("sql/raise_floor.sql"))
        .and_then(|mut stmt| stmt.execute([highest]))
        .map_err(Error::storage("prune"))?;
    for sql in [
        include_str!("sql/prune_payloads.sql"),
        include_str!("sql/prune_failures.sql"),
        include_str!("sql/prune_dead.sql"),
        include_str!("sql/prune_jobs.sql"),
    ] {
        let mut stmt = tx.prepare_cached(sql).map_err(Error::storage("prune"))?;
        for (job, _) in &picked {
            stmt.execute([job]).map_err(Error::storage("prune"))?;
        }
    }
    tx.commit().map_err(Error::storage("prune"))?;
    Ok(picked.len() as u64)
}

/// The fence floor: the highest fence of any job ever pruned (0 if none).
pub(crate) fn fence_floor(conn: &Connection) -> Result<i64> {
    conn.prepare_cached(include_str!("sql/floor.sql"))
        .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
        .map_err(Error::storage("fence_floor"))
}

/// Drops `job`'s failure records older than its latest [`MAX_FAILURE_RECORDS`], in the
/// transaction of the `fail` that just added one.
pub(crate) fn keep_latest_failures(conn: &Connection, job: &str) -> Result<()> {
    conn.prepare_cached(include_str!("sql/keep_latest_failures.sql"))
        .and_then(|mut stmt| stmt.execute(params![job, MAX_FAILURE_RECORDS as i64]))
        .map(drop)
        .map_err(Error::storage("fail"))
}

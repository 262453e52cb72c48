//! Delays, failures and dead jobs on SQLite (docs/contract.md section 7): `fail`, `revive`,
//! `inspect` and the job counts of `stats`. `enqueue` with a run time and a payload, and the
//! payload `claim_next` hands over, are in `ops.rs` beside the seed's operations.
//!
//! What `jobs` cannot hold lives in side tables (`leasefence_payloads`, `leasefence_failures`,
//! `leasefence_dead`), written in the same `BEGIN IMMEDIATE` transaction as the row they belong
//! to. A dead job is `done = 1` in `jobs`, so a program that knows only `jobs` (the seed) never
//! claims it; a job backing off has no owner and `until = retry_at`, so it never claims it early.

use rusqlite::{params, Connection, OptionalExtension};

use super::ops::{fenced_update, immediate, payload, read_lease, Scope};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::{Failure, Inspection, JobCounts, JobState, Outcome};
use crate::rules::why_revive_refused;

/// Contract `fail`: for the current live lease only (the checks and reasons of `complete`). With
/// a `retry_at` the job waits, unowned, until then; without one it is dead. The failure is
/// recorded either way, in the same transaction.
pub(crate) fn fail(
    conn: &Connection,
    lease: &Lease,
    now: f64,
    retry_at: Option<f64>,
    error: Option<&str>,
) -> Result<Outcome<()>> {
    let Lease { job, owner, fence } = lease;
    let record = |tx: &Connection| {
        tx.prepare_cached(include_str!("sql/record_failure.sql"))
            .and_then(|mut stmt| stmt.execute(params![job, fence, now, error]))
            .map_err(Error::storage("fail"))?;
        if retry_at.is_none() {
            tx.prepare_cached(include_str!("sql/mark_dead.sql"))
                .and_then(|mut stmt| stmt.execute(params![job, fence, now]))
                .map_err(Error::storage("fail"))?;
            super::ops::stamp_finished(tx, job, now, "fail")?;
        }
        super::retention::keep_latest_failures(tx, job)?;
        Ok(())
    };
    // fail_dead.sql takes the first four parameters, fail_retry.sql all five.
    let (sql, taken) = match retry_at {
        Some(_) => (include_str!("sql/fail_retry.sql"), 5),
        None => (include_str!("sql/fail_dead.sql"), 4),
    };
    let params: [&dyn rusqlite::ToSql; 5] = [&job, &owner, &fence, &now, &retry_at];
    fenced_update(
        conn,
        Scope::Own,
        "fail",
        sql,
        &params[..taken],
        lease,
        Some(now),
        record,
    )
}

/// Contract `revive`: a dead job becomes claimable at `now`, its fence kept and its dead mark
/// cleared; anything else is refused with `not_found` or `not_dead`.
pub(crate) fn revive(conn: &Connection, job: &str, now: f64) -> Result<Outcome<()>> {
    let tx = immediate(conn, "revive")?;
    let changed = tx
        .prepare_cached(include_str!("sql/revive.sql"))
        .and_then(|mut stmt| stmt.execute(params![job, now]))
        .map_err(Error::storage("revive"))?;
    if changed != 1 {
        // Inside this IMMEDIATE transaction the row cannot have changed since the UPDATE.
        let exists = read_lease(&tx, job, "revive")?.is_some();
        return Ok(Outcome::Rejected(why_revive_refused(exists)));
    }
    tx.prepare_cached(include_str!("sql/unmark_dead.sql"))
        .and_then(|mut stmt| stmt.execute([job]))
        .map_err(Error::storage("revive"))?;
    tx.commit().map_err(Error::storage("revive"))?;
    Ok(Outcome::Granted(()))
}

/// Contract `inspect`: the row, attempts, dead mark, payload and failures, read in one
/// transaction so they describe one moment.
pub(crate) fn inspect(conn: &Connection, job: &str) -> Result<Option<Inspection>> {
    let tx = super::write_tx::deferred(conn, "inspect")?;
    let state: Option<JobState> = tx
        .prepare_cached(include_str!("sql/state.sql"))
        .and_then(|mut stmt| stmt.query_row([job], super::ops::job_state).optional())
        .map_err(Error::storage("inspect"))?;
    let Some(state) = state else {
        return Ok(None);
    };
    // Dead: done (the row just read) and marked; a mark on a row not done counts for nothing, so
    // it is looked up only for a done row.
    let dead = state.done
        && tx
            .prepare_cached(include_str!("sql/dead_mark.sql"))
            .and_then(|mut stmt| stmt.query_row([job], |row| row.get::<_, bool>(0)))
            .map_err(Error::storage("inspect"))?;
    let payload = payload(&tx, job, "inspect")?;
    let failures = tx
        .prepare_cached(include_str!("sql/failures.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([job], |row| {
                Ok(Failure {
                    fence: row.get(0)?,
                    at: row.get(1)?,
                    error: row.get(2)?,
                })
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("inspect"))?;
    // A job with no row in leasefence_order (its triggers were dropped while it was inserted)
    // is in the default queue, as claim_next sees it until the row is made again.
    let (queue, priority, base) = tx
        .prepare_cached(include_str!("sql/queue_of.sql"))
        .and_then(|mut stmt| {
            stmt.query_row([job], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
                .optional()
        })
        .map_err(Error::storage("inspect"))?
        .unwrap_or_else(|| (crate::DEFAULT_QUEUE.to_owned(), 0, 0));
    // Read-only: ending it either way changes nothing.
    tx.commit().map_err(Error::storage("inspect"))?;
    Ok(Some(Inspection {
        attempts: crate::rules::attempts(state.fence, base),
        state,
        dead,
        payload,
        failures,
        queue,
        priority,
    }))
}

fn count(row: &rusqlite::Row<'_>, column: usize) -> rusqlite::Result<u64> {
    // A count is never negative.
    Ok(row.get::<_, i64>(column)?.max(0) as u64)
}

/// How many jobs (of `queue`, or all) are in each state at `now` (`leasefence stats`): one read
/// of the table.
pub(crate) fn stats(conn: &Connection, queue: Option<&str>, now: f64) -> Result<JobCounts> {
    let (sql, args): (&str, Vec<&dyn rusqlite::ToSql>) = match &queue {
        None => (include_str!("sql/stats.sql"), vec![&now]),
        Some(queue) => (include_str!("sql/stats_queue.sql"), vec![&now, queue]),
    };
    conn.prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_row(&args[..], |row| {
                Ok(JobCounts {
                    queued: count(row, 0)?,
                    scheduled: count(row, 1)?,
                    leased: count(row, 2)?,
                    done: count(row, 3)?,
                    dead: count(row, 4)?,
                })
            })
        })
        .map_err(Error::storage("stats"))
}

#[cfg(test)]
mod tests {
    use crate::Lease;
    use crate::LeaseStore;

    #[test]
    fn a_dead_mark_counts_only_while_the_row_is_done() {
        let store = LeaseStore::open_in_memory().unwrap();
        store.enqueue("poison").unwrap();
        store.enqueue("fine").unwrap();
        let fence = store
            .claim("poison", "w", 0.0, 10.0)
            .unwrap()
            .granted()
            .unwrap();
        assert!(store
            .fail(&Lease::new("poison", "w", fence), 1.0, None, Some("boom"))
            .unwrap()
            .is_granted());
        assert!(store.inspect("poison").unwrap().unwrap().dead);
        assert!(!store.inspect("fine").unwrap().unwrap().dead);
        // A program that knows only `jobs` reopens the row: the mark left behind means nothing.
        store
            .connection()
            .execute("UPDATE jobs SET done = 0 WHERE id = 'poison'", [])
            .unwrap();
        assert!(!store.inspect("poison").unwrap().unwrap().dead);
        // A mark on a job still queued (written outside the contract): not dead.
        store
            .connection()
            .execute(
                "INSERT INTO leasefence_dead(job, fence, at) VALUES ('fine', 1, 2.0)",
                [],
            )
            .unwrap();
        assert!(!store.inspect("fine").unwrap().unwrap().dead);
    }
}

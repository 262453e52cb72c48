//! The worker registry on SQLite (`leasefence_workers`): a beat written in the transaction of
//! the renewals it comes with (a [`Group`]: each renew answered as alone, one commit), and the
//! rows read with the live leases of `jobs` in one snapshot.

use rusqlite::{params, params_from_iter, Connection};

use super::ops;
use super::write_tx::{deferred, immediate, Group};
use crate::error::{Error, Result};
use crate::lease::Lease;
use crate::outcome::Outcome;
use crate::registry::{HeldLease, WorkerBeat, WorkerInfo};
use crate::rules::batch::check_batch;
use crate::rules::registry::{
    beat_times, check_beat, counter_columns, prune_before, with_holdings, worker_info,
    StoredWorker, MAX_LEASES_READ, MAX_WORKERS,
};
use crate::rules::LeaseWindow;

/// `Leases::heartbeat`: the renewals, then the beat and the pruning, in one transaction.
pub(crate) fn heartbeat(
    conn: &Connection,
    beat: &WorkerBeat,
    leases: &[Lease],
    now: f64,
    ttl: f64,
) -> Result<Vec<Outcome<()>>> {
    check_batch("leases", leases.len())?;
    let window = LeaseWindow::new(now, ttl)?;
    check_beat(beat)?;
    let group = Group::begin(conn, "heartbeat")?;
    let answers = leases
        .iter()
        .map(|lease| group.run(|| ops::renew(conn, ops::Scope::Batch, lease, window))?)
        .collect::<Result<Vec<_>>>()?;
    group.run(|| record_beat(conn, beat, now, ttl))??;
    group.commit()?;
    Ok(answers)
}

fn record_beat(conn: &Connection, beat: &WorkerBeat, now: f64, ttl: f64) -> Result<()> {
    let (last_seen, until, stopped) = beat_times(beat, now, ttl);
    let counters = counter_columns(beat);
    let row: [&dyn rusqlite::ToSql; 7] = [
        &beat.owner,
        &beat.host,
        &beat.pid,
        &beat.started,
        &last_seen,
        &until,
        &stopped,
    ];
    let counters = counters.iter().map(|n| n as &dyn rusqlite::ToSql);
    let tx = immediate(conn, "heartbeat")?;
    tx.prepare_cached(include_str!("sql/worker_beat.sql"))
        .and_then(|mut stmt| stmt.execute(params_from_iter(row.into_iter().chain(counters))))
        .map_err(Error::storage("heartbeat"))?;
    tx.prepare_cached(include_str!("sql/workers_prune.sql"))
        .and_then(|mut stmt| stmt.execute([prune_before(now)]))
        .map_err(Error::storage("heartbeat"))?;
    tx.commit().map_err(Error::storage("heartbeat"))
}

/// `Leases::list_workers`: the rows and the live leases, in one read transaction.
pub(crate) fn list_workers(conn: &Connection, now: f64) -> Result<Vec<WorkerInfo>> {
    crate::rules::check_now(now)?;
    let tx = deferred(conn, "list_workers")?;
    let workers = tx
        .prepare_cached(include_str!("sql/workers.sql"))
        .and_then(|mut stmt| {
            stmt.query_map([MAX_WORKERS as i64], |row| worker_row(row, now))?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("list_workers"))?;
    let leases = tx
        .prepare_cached(include_str!("sql/held_leases.sql"))
        .and_then(|mut stmt| {
            stmt.query_map(params![now, MAX_LEASES_READ as i64], |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    HeldLease {
                        job: row.get(1)?,
                        fence: row.get(2)?,
                        until: row.get(3)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(Error::storage("list_workers"))?;
    tx.commit().map_err(Error::storage("list_workers"))?;
    Ok(with_holdings(workers, leases))
}

fn worker_row(row: &rusqlite::Row<'_>, now: f64) -> rusqlite::Result<WorkerInfo> {
    let mut counters = [0i64; 7];
    for (i, count) in counters.iter_mut().enumerate() {
        *count = row.get(7 + i)?;
    }
    let stored = StoredWorker {
        owner: row.get(0)?,
        host: row.get(1)?,
        pid: row.get(2)?,
        started: row.get(3)?,
        last_seen: row.get(4)?,
        until: row.get(5)?,
        stopped: row.get(6)?,
        counters,
    };
    Ok(worker_info(stored, now))
}

//! The worker registry on PostgreSQL (`leasefence_workers`): a beat written in the transaction of
//! the renewals it comes with (`renew_many`'s statement, then the beat), and the rows read with
//! the live leases in one read-only snapshot. The statements are prepared per call: a beat comes
//! once per renew interval, a listing when a dashboard asks.

use postgres::types::ToSql;
use postgres::{Row, Transaction};

use super::failure::pg;
use super::session::{read_snapshot, Session};
use crate::error::Result;
use crate::registry::{HeldLease, WorkerBeat, WorkerInfo};
use crate::rules::registry::{
    beat_times, prune_before, with_holdings, worker_info, StoredWorker, MAX_LEASES_READ,
    MAX_WORKERS,
};

/// Writes `beat` (checked by the caller) and prunes, on `tx`.
pub(super) fn record_beat(
    tx: &mut Transaction<'_>,
    beat: &WorkerBeat,
    now: f64,
    ttl: f64,
) -> std::result::Result<(), postgres::Error> {
    let (last_seen, until, stopped) = beat_times(beat, now, ttl);
    let c = &beat.counters;
    // check_beat kept every counter within i64.
    let n = |v: u64| v as i64;
    let pid = i64::from(beat.pid);
    let counters = [
        n(c.claimed),
        n(c.completed),
        n(c.failed),
        n(c.dead),
        n(c.leases_lost),
        n(c.stale_writes_refused),
        n(c.renewals),
    ];
    let args: [&(dyn ToSql + Sync); 14] = [
        &beat.owner,
        &beat.host,
        &pid,
        &beat.started,
        &last_seen,
        &until,
        &stopped,
        &counters[0],
        &counters[1],
        &counters[2],
        &counters[3],
        &counters[4],
        &counters[5],
        &counters[6],
    ];
    tx.execute(include_str!("sql/worker_beat.sql"), &args)?;
    tx.execute(include_str!("sql/workers_prune.sql"), &[&prune_before(now)])?;
    Ok(())
}

/// `Leases::list_workers`: the rows and the live leases, from one snapshot.
pub(super) fn list_workers(session: &mut Session, now: f64) -> Result<Vec<WorkerInfo>> {
    crate::rules::check_now(now)?;
    let mut tx = read_snapshot(&mut session.client, "list_workers")?;
    let rows = tx
        .query(include_str!("sql/workers.sql"), &[&(MAX_WORKERS as i64)])
        .map_err(pg("list_workers"))?;
    let held = tx
        .query(
            include_str!("sql/held_leases.sql"),
            &[&now, &(MAX_LEASES_READ as i64)],
        )
        .map_err(pg("list_workers"))?;
    tx.commit().map_err(pg("list_workers"))?;
    let workers = rows
        .iter()
        .map(|row| worker_row(row, now))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(pg("list_workers"))?;
    let leases = held
        .iter()
        .map(|row| {
            Ok((
                row.try_get::<_, String>(0)?,
                HeldLease {
                    job: row.try_get(1)?,
                    fence: row.try_get(2)?,
                    until: row.try_get(3)?,
                },
            ))
        })
        .collect::<std::result::Result<Vec<_>, postgres::Error>>()
        .map_err(pg("list_workers"))?;
    Ok(with_holdings(workers, leases))
}

fn worker_row(row: &Row, now: f64) -> std::result::Result<WorkerInfo, postgres::Error> {
    let mut counters = [0i64; 7];
    for (i, count) in counters.iter_mut().enumerate() {
        *count = row.try_get(7 + i)?;
    }
    let stored = StoredWorker {
        owner: row.try_get(0)?,
        host: row.try_get(1)?,
        pid: row.try_get(2)?,
        started: row.try_get(3)?,
        last_seen: row.try_get(4)?,
        until: row.try_get(5)?,
        stopped: row.try_get(6)?,
        counters,
    };
    Ok(worker_info(stored, now))
}

//! The worker registry's rules, once for every backend: what a beat may carry, when a row is
//! alive, when it is pruned, and how the leases read from `jobs` are handed to their workers.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::registry::{HeldLease, WorkerBeat, WorkerInfo, MAX_HOLDING_SHOWN, WORKER_PRUNE_AFTER};

/// The longest owner or host a beat may carry (bytes): a name, not a document.
pub(crate) const MAX_NAME: usize = 256;

/// The most rows [`crate::Leases::list_workers`] answers (the pruned table rarely has more).
pub(crate) const MAX_WORKERS: usize = 1000;

/// The most live leases read to fill the workers' `holding` lists.
pub(crate) const MAX_LEASES_READ: usize = 10_000;

/// Checks a beat before anything is written: names present and short, times finite, counters
/// within SQLite's and PostgreSQL's 64-bit integers.
pub(crate) fn check_beat(beat: &WorkerBeat) -> Result<()> {
    for (argument, value) in [("owner", &beat.owner), ("host", &beat.host)] {
        if value.contains('\0') {
            return Err(Error::invalid(
                argument,
                format!("a worker's {argument} must not contain a NUL character"),
            ));
        }
        if value.is_empty() || value.len() > MAX_NAME {
            return Err(Error::invalid(
                argument,
                format!(
                    "a worker's {argument} must be 1 to {MAX_NAME} bytes, got {} bytes",
                    value.len()
                ),
            ));
        }
    }
    if !beat.started.is_finite() {
        return Err(Error::invalid(
            "started",
            format!(
                "must be a finite time in Unix seconds, got {}",
                beat.started
            ),
        ));
    }
    for (name, value) in beat.counters.named() {
        if i64::try_from(value).is_err() {
            return Err(Error::invalid(
                name,
                format!("a counter must fit a signed 64-bit integer, got {value}"),
            ));
        }
    }
    Ok(())
}

/// The row's times for a beat at `now` with `ttl`: (last seen, until, stopped). A stopping beat
/// ends the row's life at once.
pub(crate) fn beat_times(beat: &WorkerBeat, now: f64, ttl: f64) -> (f64, f64, Option<f64>) {
    if beat.stopping {
        (now, now, Some(now))
    } else {
        (now, now + ttl, None)
    }
}

/// A beat's counters as the registry row's last seven columns (`sql/worker_beat.sql`), in
/// [`Counters`](crate::Counters)' order: [`check_beat`] kept each within a signed 64-bit integer.
pub(crate) fn counter_columns(beat: &WorkerBeat) -> [i64; 7] {
    beat.counters.named().map(|(_, value)| value as i64)
}

/// Rows whose worker went before this time are deleted.
pub(crate) fn prune_before(now: f64) -> f64 {
    now - WORKER_PRUNE_AFTER
}

/// Whether a row is alive at `now`.
pub(crate) fn alive(until: f64, stopped: Option<f64>, now: f64) -> bool {
    stopped.is_none() && until > now
}

/// A registry row as a backend reads it: its columns in `sql/workers.sql`'s order, the counters
/// in [`Counters`](crate::Counters)' order.
pub(crate) struct StoredWorker {
    pub(crate) owner: String,
    pub(crate) host: String,
    pub(crate) pid: i64,
    pub(crate) started: f64,
    pub(crate) last_seen: f64,
    pub(crate) until: f64,
    pub(crate) stopped: Option<f64>,
    pub(crate) counters: [i64; 7],
}

/// The counters from their values in [`Counters::named`](crate::Counters::named)'s order.
pub(crate) fn counters(values: [u64; 7]) -> crate::registry::Counters {
    let [claimed, completed, failed, dead, leases_lost, stale_writes_refused, renewals] = values;
    crate::registry::Counters {
        claimed,
        completed,
        failed,
        dead,
        leases_lost,
        stale_writes_refused,
        renewals,
    }
}

/// What a stored row says at `now`: alive or not, its counters (a negative stored count reads 0).
pub(crate) fn worker_info(row: StoredWorker, now: f64) -> WorkerInfo {
    WorkerInfo {
        alive: alive(row.until, row.stopped, now),
        owner: row.owner,
        host: row.host,
        pid: u32::try_from(row.pid).unwrap_or(0),
        started: row.started,
        last_seen: row.last_seen,
        until: row.until,
        stopped: row.stopped,
        counters: counters(row.counters.map(|v| v.max(0) as u64)),
        held: 0,
        holding: Vec::new(),
    }
}

/// The rows (alive first, then the latest seen) with their live leases: `leases` are
/// `(owner, lease)` in the order their ends come.
pub(crate) fn with_holdings(
    mut workers: Vec<WorkerInfo>,
    leases: Vec<(String, HeldLease)>,
) -> Vec<WorkerInfo> {
    let mut by_owner: HashMap<&str, usize> = HashMap::new();
    for (i, w) in workers.iter().enumerate() {
        by_owner.insert(w.owner.as_str(), i);
    }
    let mut placed: Vec<(usize, HeldLease)> = Vec::new();
    for (owner, lease) in leases {
        if let Some(&i) = by_owner.get(owner.as_str()) {
            placed.push((i, lease));
        }
    }
    for (i, lease) in placed {
        let worker = &mut workers[i];
        worker.held += 1;
        if worker.holding.len() < MAX_HOLDING_SHOWN {
            worker.holding.push(lease);
        }
    }
    workers.sort_by(|a, b| {
        b.alive
            .cmp(&a.alive)
            .then(b.last_seen.total_cmp(&a.last_seen))
            .then(a.owner.cmp(&b.owner))
    });
    workers
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Counters;

    fn info(owner: &str, alive: bool, last_seen: f64) -> WorkerInfo {
        WorkerInfo {
            owner: owner.into(),
            host: "h".into(),
            pid: 1,
            started: 0.0,
            last_seen,
            until: last_seen + 1.0,
            stopped: None,
            alive,
            counters: Counters::default(),
            held: 0,
            holding: Vec::new(),
        }
    }

    #[test]
    fn leases_go_to_their_owner_and_alive_rows_come_first() {
        let lease = |job: &str| HeldLease {
            job: job.into(),
            fence: 1,
            until: 5.0,
        };
        let rows = with_holdings(
            vec![
                info("gone", false, 9.0),
                info("a", true, 1.0),
                info("b", true, 2.0),
            ],
            vec![
                ("a".into(), lease("j1")),
                ("stranger".into(), lease("j2")),
                ("a".into(), lease("j3")),
            ],
        );
        let order: Vec<&str> = rows.iter().map(|w| w.owner.as_str()).collect();
        assert_eq!(order, ["b", "a", "gone"]);
        assert_eq!(rows[1].held, 2);
        assert_eq!(rows[1].holding[1].job, "j3");
        assert_eq!(rows[0].held, 0);
    }

    #[test]
    fn a_beat_with_an_empty_owner_or_a_huge_counter_is_refused() {
        let mut beat = WorkerBeat::new("", "h", 1, 0.0);
        assert!(check_beat(&beat).is_err());
        beat.owner = "w".into();
        assert!(check_beat(&beat).is_ok());
        beat.counters.claimed = u64::MAX;
        assert!(check_beat(&beat).is_err());
        beat.counters.claimed = 0;
        beat.started = f64::NAN;
        assert!(check_beat(&beat).is_err());
    }

    #[test]
    fn a_stopping_beat_ends_the_row_at_once() {
        let mut beat = WorkerBeat::new("w", "h", 1, 0.0);
        assert_eq!(beat_times(&beat, 10.0, 5.0), (10.0, 15.0, None));
        assert!(alive(15.0, None, 14.9));
        assert!(!alive(15.0, None, 15.0));
        beat.stopping = true;
        let (_, until, stopped) = beat_times(&beat, 10.0, 5.0);
        assert!(!alive(until, stopped, 10.0));
    }
}

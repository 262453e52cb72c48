//! The playground's counterfactual (browser builds): the same operations against a store without
//! fencing, in a second table of the same database (`lease_only_jobs`, an extra table as
//! docs/contract.md section 1 allows), with its own plain SQL in `sql/lease_only_*.sql`.
//!
//! It has leases but no fence: claim waits for the lease to end, and renew, complete, release and
//! fail are checked by job id alone, the way many queues check them. It is shown next to the real
//! `jobs` table so a learner sees what a stale worker's late write does where nothing refuses it.
//! It is never part of the contract: no other build and no other caller touches it.

use rusqlite::{params, Connection, OptionalExtension};

use crate::rules::{check_now, check_time, LeaseWindow};
use crate::{Error, Result};

/// One row of `lease_only_jobs`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Row {
    pub id: String,
    pub owner: Option<String>,
    pub until: f64,
    pub result: Option<String>,
    pub done: bool,
    /// The error of the last `fail`, if any.
    pub error: Option<String>,
    /// Failed for good (`fail` without a retry time); `revive` clears it.
    pub dead: bool,
}

/// An operation of the counterfactual store, its arguments checked like the real store's.
pub(crate) enum Op<'a> {
    Enqueue {
        job: &'a str,
    },
    Claim {
        job: &'a str,
        owner: &'a str,
        now: f64,
        ttl: f64,
    },
    Renew {
        job: &'a str,
        now: f64,
        ttl: f64,
    },
    Complete {
        job: &'a str,
        result: Option<&'a str>,
    },
    Release {
        job: &'a str,
    },
    /// With `retry_at`: nobody holds the job and it waits until then; without: dead.
    Fail {
        job: &'a str,
        retry_at: Option<f64>,
        error: Option<&'a str>,
    },
    Revive {
        job: &'a str,
        now: f64,
    },
    State {
        job: &'a str,
    },
}

/// What it answered: whether the write changed a row (`value`), or the row (`state`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Answer {
    pub value: bool,
    pub row: Option<Row>,
}

/// Creates the table, or adds the failure columns to one made before `fail` existed (a page
/// restored from an older saved state keeps its database).
pub(crate) fn create(conn: &Connection) -> Result<()> {
    conn.execute_batch(include_str!("sql/lease_only_schema.sql"))
        .map_err(Error::storage("leaseOnly"))?;
    let has_failures: i64 = conn
        .prepare_cached(include_str!("sql/lease_only_has_failures.sql"))
        .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
        .map_err(Error::storage("leaseOnly"))?;
    if has_failures == 0 {
        conn.execute_batch(include_str!("sql/lease_only_add_failures.sql"))
            .map_err(Error::storage("leaseOnly"))?;
    }
    Ok(())
}

fn write(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Answer> {
    let changed = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params))
        .map_err(Error::storage("leaseOnly"))?;
    Ok(Answer {
        value: changed == 1,
        row: None,
    })
}

/// Runs one operation, each in its own implicit transaction (the table must exist: [`create`]).
pub(crate) fn run(conn: &Connection, op: Op<'_>) -> Result<Answer> {
    match op {
        Op::Enqueue { job } => write(
            conn,
            include_str!("sql/lease_only_enqueue.sql"),
            params![job],
        ),
        Op::Claim {
            job,
            owner,
            now,
            ttl,
        } => {
            let window = LeaseWindow::new(now, ttl)?;
            write(
                conn,
                include_str!("sql/lease_only_claim.sql"),
                params![job, owner, window.until(), window.now()],
            )
        }
        Op::Renew { job, now, ttl } => {
            let window = LeaseWindow::new(now, ttl)?;
            write(
                conn,
                include_str!("sql/lease_only_renew.sql"),
                params![job, window.until()],
            )
        }
        Op::Complete { job, result } => write(
            conn,
            include_str!("sql/lease_only_complete.sql"),
            params![job, result],
        ),
        Op::Release { job } => write(
            conn,
            include_str!("sql/lease_only_release.sql"),
            params![job],
        ),
        Op::Fail {
            job,
            retry_at: Some(retry_at),
            error,
        } => {
            check_time("retry_at", Some(retry_at))?;
            write(
                conn,
                include_str!("sql/lease_only_fail_retry.sql"),
                params![job, retry_at, error],
            )
        }
        Op::Fail {
            job,
            retry_at: None,
            error,
        } => write(
            conn,
            include_str!("sql/lease_only_fail_dead.sql"),
            params![job, error],
        ),
        Op::Revive { job, now } => {
            check_now(now)?;
            write(
                conn,
                include_str!("sql/lease_only_revive.sql"),
                params![job, now],
            )
        }
        Op::State { job } => {
            let row = conn
                .prepare_cached(include_str!("sql/lease_only_state.sql"))
                .and_then(|mut stmt| {
                    stmt.query_row([job], |r| {
                        Ok(Row {
                            id: r.get(0)?,
                            owner: r.get(1)?,
                            until: r.get(2)?,
                            result: r.get(3)?,
                            done: r.get(4)?,
                            error: r.get(5)?,
                            dead: r.get(6)?,
                        })
                    })
                    .optional()
                })
                .map_err(Error::storage("leaseOnly"))?;
            Ok(Answer {
                value: row.is_some(),
                row,
            })
        }
    }
}

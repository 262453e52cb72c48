//! The playground's counterfactual: the same operations against a store without fencing, in a
//! second table of the same database (`lease_only_jobs`, an extra table as docs/contract.md
//! section 1 allows), with its own plain SQL in `sql/lease_only_*.sql`.
//!
//! It has leases but no fence: claim waits for the lease to end, and renew, complete, release and
//! fail are checked by job id alone, the way many queues check them. It is shown next to the real
//! `jobs` table so a learner sees what a stale worker's late write does where nothing refuses it.
//! It is never part of the contract: only the playground's wasm has it.

use js_sys::Array;
use rusqlite::{params, Connection, OptionalExtension};
use wasm_bindgen::JsValue;

use crate::{js_error, storage};

/// The counterfactual store's table.
pub(crate) const TABLE: &str = "lease_only_jobs";

type Result<T> = std::result::Result<T, JsValue>;

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

/// An operation of the counterfactual store, on arguments the real store's checks passed
/// (`leasefence::check_arguments`): a lease's end is `now + ttl`, already known to be finite.
pub(crate) enum Op {
    Enqueue {
        job: String,
    },
    Claim {
        job: String,
        owner: String,
        now: f64,
        until: f64,
    },
    Renew {
        job: String,
        until: f64,
    },
    Complete {
        job: String,
        result: Option<String>,
    },
    Release {
        job: String,
    },
    /// With `retry_at`: nobody holds the job and it waits until then; without: dead.
    Fail {
        job: String,
        retry_at: Option<f64>,
        error: Option<String>,
    },
    Revive {
        job: String,
        now: f64,
    },
    State {
        job: String,
    },
}

impl Op {
    /// Reads `op` from the positional arguments of the real store's operation of that name.
    pub(crate) fn read(op: &str, args: &Array) -> Result<Op> {
        let bad = |name: &str, want: &str| {
            js_error(
                "invalid_argument",
                &format!("leaseOnly {op}(): argument `{name}` must be {want}"),
                false,
            )
        };
        let string =
            |i: u32, name: &str| args.get(i).as_string().ok_or_else(|| bad(name, "a string"));
        let number = |i: u32, name: &str| args.get(i).as_f64().ok_or_else(|| bad(name, "a number"));
        // A missing optional argument (undefined) means null, as in `call`.
        let optional = |i: u32| {
            let value = args.get(i);
            !(value.is_null() || value.is_undefined())
        };
        let job = string(0, "job")?;
        Ok(match op {
            "enqueue" => Op::Enqueue { job },
            "state" => Op::State { job },
            "claim" => {
                let now = number(2, "now")?;
                Op::Claim {
                    job,
                    owner: string(1, "owner")?,
                    now,
                    until: now + number(3, "ttl")?,
                }
            }
            "renew" => Op::Renew {
                job,
                until: number(3, "now")? + number(4, "ttl")?,
            },
            "complete" => Op::Complete {
                job,
                result: if optional(4) {
                    Some(string(4, "result")?)
                } else {
                    None
                },
            },
            "release" => Op::Release { job },
            "fail" => Op::Fail {
                job,
                retry_at: if optional(4) {
                    Some(number(4, "retryAt")?)
                } else {
                    None
                },
                error: if optional(5) {
                    Some(string(5, "error")?)
                } else {
                    None
                },
            },
            "revive" => Op::Revive {
                job,
                now: number(1, "now")?,
            },
            _ => {
                return Err(js_error(
                    "invalid_argument",
                    &format!(
                        "leaseOnly: {op:?} has no counterpart without fencing; use enqueue, \
                         state, claim, renew, complete, release, fail or revive"
                    ),
                    false,
                ))
            }
        })
    }
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
        .map_err(storage("leaseOnly"))?;
    let has_failures: i64 = conn
        .prepare_cached(include_str!("sql/lease_only_has_failures.sql"))
        .and_then(|mut stmt| stmt.query_row([], |r| r.get(0)))
        .map_err(storage("leaseOnly"))?;
    if has_failures == 0 {
        conn.execute_batch(include_str!("sql/lease_only_add_failures.sql"))
            .map_err(storage("leaseOnly"))?;
    }
    Ok(())
}

fn write(conn: &Connection, sql: &str, params: &[&dyn rusqlite::ToSql]) -> Result<Answer> {
    let changed = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params))
        .map_err(storage("leaseOnly"))?;
    Ok(Answer {
        value: changed == 1,
        row: None,
    })
}

/// Runs one operation, each in its own implicit transaction (the table must exist: [`create`]).
pub(crate) fn run(conn: &Connection, op: &Op) -> Result<Answer> {
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
            until,
        } => write(
            conn,
            include_str!("sql/lease_only_claim.sql"),
            params![job, owner, until, now],
        ),
        Op::Renew { job, until } => write(
            conn,
            include_str!("sql/lease_only_renew.sql"),
            params![job, until],
        ),
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
        } => write(
            conn,
            include_str!("sql/lease_only_fail_retry.sql"),
            params![job, retry_at, error],
        ),
        Op::Fail {
            job,
            retry_at: None,
            error,
        } => write(
            conn,
            include_str!("sql/lease_only_fail_dead.sql"),
            params![job, error],
        ),
        Op::Revive { job, now } => write(
            conn,
            include_str!("sql/lease_only_revive.sql"),
            params![job, now],
        ),
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
                .map_err(storage("leaseOnly"))?;
            Ok(Answer {
                value: row.is_some(),
                row,
            })
        }
    }
}

//! The contract: every SQL statement and transaction of docs/contract.md sections 1 to 3, in one
//! place.
//!
//! Everything here takes an already-open [`rusqlite::Connection`] and uses nothing but rusqlite's
//! portable API, so the native, Node and browser builds run this exact code; they differ only in
//! how they open the connection (file, Node `fs`, OPFS).
//!
//! Each write is a single conditional `UPDATE` inside a `BEGIN IMMEDIATE` transaction: the write
//! lock is taken before anything is read, so no other connection can slip in between the check
//! (owner, fence, `until`) and the write. When the `UPDATE` matches no row, the reason is read in
//! the same transaction, so it describes the very row that caused the rejection.

use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::error::{Error, Result};
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome, Reason};

/// The table, exactly as docs/contract.md section 1 states it.
pub(crate) const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, \
     owner TEXT, until REAL NOT NULL DEFAULT 0, fence INTEGER NOT NULL DEFAULT 0, result TEXT, \
     done INTEGER NOT NULL DEFAULT 0)";

/// Keeps `claim_next` logarithmic: only claimable-in-principle rows (not done) are indexed, in
/// `until` order; SQLite appends the rowid, which gives the insertion-order tie-break for free.
pub(crate) const CREATE_CLAIMABLE_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS leasefence_claimable ON jobs(until) WHERE done = 0";

/// `(name, declared type, not null, default, primary key)` of each column, in order.
const EXPECTED_COLUMNS: [(&str, &str, bool, Option<&str>, bool); 6] = [
    ("id", "TEXT", false, None, true),
    ("owner", "TEXT", false, None, false),
    ("until", "REAL", true, Some("0"), false),
    ("fence", "INTEGER", true, Some("0"), false),
    ("result", "TEXT", false, None, false),
    ("done", "INTEGER", true, Some("0"), false),
];

/// Checks, by reading only, that the database is SQLite and that `jobs`, if present, has exactly
/// the contract's shape, so that a foreign file is refused before anything is written to it.
/// Returns whether the table and index already exist. `path` is only used in error messages.
pub(crate) fn check_schema(conn: &Connection, path: &str) -> Result<bool> {
    let foreign = |problem: String| Error::NotLeasefenceDatabase {
        path: path.to_string(),
        problem,
    };
    let mut found = Vec::new();
    conn.prepare(
        // SQLite names are case-insensitive: a foreign `JOBS` table is our `jobs`.
        "SELECT lower(name), type FROM sqlite_schema \
         WHERE lower(name) IN ('jobs', 'leasefence_claimable')",
    )
    .and_then(|mut stmt| {
        stmt.query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()
    })
    .map(|rows| found = rows)
    .map_err(|err| match err.sqlite_error_code() {
        Some(rusqlite::ErrorCode::NotADatabase) => {
            foreign(format!("not an SQLite database (SQLite says: {err})"))
        }
        Some(rusqlite::ErrorCode::DatabaseCorrupt) => {
            foreign(format!("SQLite finds it damaged: {err}"))
        }
        _ => Error::Storage {
            operation: "open",
            source: err,
        },
    })?;
    let kind_of = |name: &str| {
        found
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.as_str())
    };
    match kind_of("jobs") {
        None => {}
        Some("table") => check_columns(conn).map_err(foreign)?,
        Some(other) => {
            let article = if other.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            return Err(foreign(format!("`jobs` is {article} {other}, not a table")));
        }
    }
    if let Some(kind) = kind_of("leasefence_claimable").filter(|k| *k != "index") {
        return Err(foreign(format!(
            "`leasefence_claimable` is a {kind}; leasefence needs that name for its index"
        )));
    }
    Ok(kind_of("jobs").is_some() && kind_of("leasefence_claimable").is_some())
}

/// Creates the table and index if missing; never touches existing rows.
pub(crate) fn create_schema(conn: &Connection) -> Result<()> {
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(Error::storage("open"))?;
    tx.execute(CREATE_TABLE, [])
        .map_err(Error::storage("open"))?;
    tx.execute(CREATE_CLAIMABLE_INDEX, [])
        .map_err(Error::storage("open"))?;
    tx.commit().map_err(Error::storage("open"))
}

fn check_columns(conn: &Connection) -> std::result::Result<(), String> {
    // claim_next orders by rowid (insertion order); a WITHOUT ROWID table has none.
    conn.prepare("SELECT rowid FROM jobs LIMIT 0")
        .map_err(|_| {
            "its `jobs` table is WITHOUT ROWID; the contract needs a rowid table".to_string()
        })?;
    let describe = |err: rusqlite::Error| format!("cannot read the `jobs` table: {err}");
    let mut stmt = conn
        .prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('jobs')")
        .map_err(describe)?;
    let found = stmt
        .query_map([], |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, bool>(2)?,
                row.get::<_, Option<String>>(3)?,
                row.get::<_, i64>(4)? > 0,
            ))
        })
        .map_err(describe)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(describe)?;
    let describe_column =
        |name: &str, ty: &str, not_null: bool, default: Option<&str>, pk: bool| {
            let mut text = format!("{name} {ty}");
            if pk {
                text.push_str(" PRIMARY KEY");
            }
            if not_null {
                text.push_str(" NOT NULL");
            }
            if let Some(default) = default {
                text.push_str(&format!(" DEFAULT {default}"));
            }
            text
        };
    let want_list: Vec<String> = EXPECTED_COLUMNS
        .iter()
        .map(|c| describe_column(c.0, c.1, c.2, c.3, c.4))
        .collect();
    if found.len() != EXPECTED_COLUMNS.len() {
        let got: Vec<String> = found.iter().map(|c| format!("{} {}", c.0, c.1)).collect();
        return Err(format!(
            "its `jobs` table has {} columns ({}), the contract needs exactly 6 ({})",
            found.len(),
            got.join(", "),
            want_list.join(", ")
        ));
    }
    for ((name, ty, not_null, default, pk), (want, want_text)) in
        found.iter().zip(EXPECTED_COLUMNS.iter().zip(&want_list))
    {
        let default_ok = match (default.as_deref(), want.3) {
            (None, None) => true,
            (Some(got), Some(want)) => got.trim_matches(['(', ')', '\'']) == want,
            _ => false,
        };
        if !name.eq_ignore_ascii_case(want.0)
            || !ty.eq_ignore_ascii_case(want.1)
            || *not_null != want.2
            || !default_ok
            || *pk != want.4
        {
            let got: Vec<String> = found
                .iter()
                .map(|c| describe_column(&c.0, &c.1, c.2, c.3.as_deref(), c.4))
                .collect();
            return Err(format!(
                "its `jobs` table has column `{}` where the contract needs `{want_text}` \
                 (found: {}; needed: {})",
                describe_column(name, ty, *not_null, default.as_deref(), *pk),
                got.join(", "),
                want_list.join(", ")
            ));
        }
    }
    Ok(())
}

/// An invariant broke: the row a refused operation read explains no refusal.
fn unexplained(operation: &str, job: &str) -> Error {
    Error::Internal {
        message: format!("{operation} of job {job:?} was refused, but its row explains no refusal"),
    }
}

/// Rejects a time that is NaN or infinite.
pub(crate) fn check_now(now: f64) -> Result<()> {
    if now.is_finite() {
        Ok(())
    } else {
        Err(Error::invalid(
            "now",
            format!("must be a finite number of seconds, got {now}"),
        ))
    }
}

/// Rejects a ttl that is not a finite positive number, and a lease end that overflows; returns
/// the lease end `now + ttl`.
pub(crate) fn lease_end(now: f64, ttl: f64) -> Result<f64> {
    check_now(now)?;
    if !ttl.is_finite() || ttl <= 0.0 {
        return Err(Error::invalid(
            "ttl",
            format!("must be a finite number of seconds greater than 0, got {ttl}"),
        ));
    }
    let until = now + ttl;
    if !until.is_finite() {
        return Err(Error::invalid(
            "ttl",
            format!("now + ttl ({now} + {ttl}) overflows; use a smaller now or ttl"),
        ));
    }
    if until <= now {
        // A ttl lost to rounding (1e-9 s at now = 1.7e9, any ttl below one unit in the last
        // place of now) would grant a lease that is over before it starts: a burnt fence and a
        // token that is stale on arrival. Same effect as ttl = 0, so the same answer.
        return Err(Error::invalid(
            "ttl",
            format!(
                "now + ttl == now at this magnitude ({now:?} + {ttl:?}): the lease would end as it \
                 starts; use a larger ttl or smaller time values"
            ),
        ));
    }
    Ok(until)
}

fn immediate<'c>(conn: &'c Connection, operation: &'static str) -> Result<Transaction<'c>> {
    // new_unchecked: the store never nests transactions, and this keeps the API on `&self`.
    Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(Error::storage(operation))
}

/// Contract `enqueue`: INSERT OR IGNORE, so re-enqueueing never resets a live lease.
pub(crate) fn enqueue(conn: &Connection, job: &str) -> Result<bool> {
    let changed = conn
        .prepare_cached("INSERT OR IGNORE INTO jobs(id) VALUES (?1)")
        .and_then(|mut stmt| stmt.execute([job]))
        .map_err(Error::storage("enqueue"))?;
    Ok(changed == 1)
}

/// Contract `state`: the stored row.
pub(crate) fn state(conn: &Connection, job: &str) -> Result<Option<JobState>> {
    conn.prepare_cached("SELECT id, owner, until, fence, result, done FROM jobs WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([job], |row| {
                Ok(JobState {
                    id: row.get(0)?,
                    owner: row.get(1)?,
                    until: row.get(2)?,
                    fence: row.get(3)?,
                    result: row.get(4)?,
                    done: row.get(5)?,
                })
            })
            .optional()
        })
        .map_err(Error::storage("state"))
}

/// Every row, in insertion order (for `leasefence jobs`).
pub(crate) fn all_jobs(conn: &Connection) -> Result<Vec<JobState>> {
    let mut stmt = conn
        .prepare("SELECT id, owner, until, fence, result, done FROM jobs ORDER BY rowid")
        .map_err(Error::storage("jobs"))?;
    let rows = stmt
        .query_map([], |row| {
            Ok(JobState {
                id: row.get(0)?,
                owner: row.get(1)?,
                until: row.get(2)?,
                fence: row.get(3)?,
                result: row.get(4)?,
                done: row.get(5)?,
            })
        })
        .map_err(Error::storage("jobs"))?;
    rows.collect::<std::result::Result<Vec<_>, _>>()
        .map_err(Error::storage("jobs"))
}

/// The columns the rejection reasons are computed from, read in the refusing transaction.
/// Shared by every backend, like the two functions below that turn it into a reason.
pub(crate) struct Lease {
    pub(crate) owner: Option<String>,
    pub(crate) until: f64,
    pub(crate) fence: Fence,
    pub(crate) done: bool,
}

/// What the row of a refused claim shows.
pub(crate) enum ClaimRefusal {
    Rejected(Reason),
    /// The fence reached `i64::MAX`: no further claim can be fenced.
    Exhausted,
    /// The row is claimable after all: it changed after the `UPDATE` looked.
    Claimable,
}

/// The order of docs/contract.md section 3 for a refused claim: not_found, done, held.
pub(crate) fn why_claim_refused(lease: Option<Lease>, now: f64) -> ClaimRefusal {
    match lease {
        None => ClaimRefusal::Rejected(Reason::NotFound),
        Some(lease) if lease.done => ClaimRefusal::Rejected(Reason::Done),
        Some(lease) if lease.until > now => ClaimRefusal::Rejected(Reason::Held {
            owner: lease.owner,
            until: lease.until,
        }),
        Some(lease) if lease.fence == Fence::MAX => ClaimRefusal::Exhausted,
        Some(_) => ClaimRefusal::Claimable,
    }
}

/// The order of docs/contract.md section 3 for a refused fenced write: not_found, done,
/// stale_fence, not_owner, then expired for the writes that need a live lease
/// (`live_at = Some(now)`: renew and complete; release passes `None`). `None` when the lease
/// matches after all (the row changed after the `UPDATE` looked).
pub(crate) fn why_write_refused(
    lease: Option<Lease>,
    owner: &str,
    fence: Fence,
    live_at: Option<f64>,
) -> Option<Reason> {
    match lease {
        None => Some(Reason::NotFound),
        Some(lease) if lease.done => Some(Reason::Done),
        Some(lease) if lease.fence != fence => Some(Reason::StaleFence {
            current: lease.fence,
        }),
        Some(lease) if lease.owner.as_deref() != Some(owner) => Some(Reason::NotOwner),
        Some(lease) if live_at.is_some_and(|now| lease.until <= now) => {
            Some(Reason::Expired { until: lease.until })
        }
        Some(_) => None,
    }
}

fn read_lease(tx: &Transaction<'_>, job: &str, operation: &'static str) -> Result<Option<Lease>> {
    tx.prepare_cached("SELECT owner, until, fence, done FROM jobs WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([job], |row| {
                Ok(Lease {
                    owner: row.get(0)?,
                    until: row.get(1)?,
                    fence: row.get(2)?,
                    done: row.get(3)?,
                })
            })
            .optional()
        })
        .map_err(Error::storage(operation))
}

/// Contract `claim`: missing, done or `until > now` is refused; otherwise a new lease with
/// `fence + 1`.
pub(crate) fn claim(
    conn: &Connection,
    job: &str,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<Outcome<Fence>> {
    let until = lease_end(now, ttl)?;
    let tx = immediate(conn, "claim")?;
    // `fence < i64::MAX`: SQLite would silently turn the overflowing `fence + 1` into a REAL.
    let fence: Option<Fence> = tx
        .prepare_cached(
            "UPDATE jobs SET owner = ?2, until = ?3, fence = fence + 1 \
             WHERE id = ?1 AND done = 0 AND until <= ?4 AND fence < 9223372036854775807 \
             RETURNING fence",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![job, owner, until, now], |row| row.get(0))
                .optional()
        })
        .map_err(Error::storage("claim"))?;
    if let Some(fence) = fence {
        tx.commit().map_err(Error::storage("claim"))?;
        return Ok(Outcome::Granted(fence));
    }
    // Inside this IMMEDIATE transaction the row cannot have changed since the UPDATE.
    let reason = match why_claim_refused(read_lease(&tx, job, "claim")?, now) {
        ClaimRefusal::Rejected(reason) => reason,
        ClaimRefusal::Exhausted => return Err(Error::FenceExhausted { job: job.into() }),
        ClaimRefusal::Claimable => return Err(unexplained("claim", job)),
    };
    Ok(Outcome::Rejected(reason))
}

/// Contract `claim_next` (docs/contract.md section 3): the claimable job with the smallest `until`,
/// then the earliest enqueued, claimed in the same transaction.
pub(crate) fn claim_next(
    conn: &Connection,
    owner: &str,
    now: f64,
    ttl: f64,
) -> Result<Option<ClaimedJob>> {
    let until = lease_end(now, ttl)?;
    let tx = immediate(conn, "claim_next")?;
    // Jobs whose fence is exhausted are skipped here; `claim` on them reports FenceExhausted.
    let claimed = tx
        .prepare_cached(
            "UPDATE jobs SET owner = ?1, until = ?2, fence = fence + 1 \
             WHERE rowid = (SELECT rowid FROM jobs \
                            WHERE done = 0 AND until <= ?3 AND fence < 9223372036854775807 \
                            ORDER BY until, rowid LIMIT 1) \
             RETURNING id, fence",
        )
        .and_then(|mut stmt| {
            stmt.query_row(params![owner, until, now], |row| {
                Ok(ClaimedJob {
                    job: row.get(0)?,
                    fence: row.get(1)?,
                })
            })
            .optional()
        })
        .map_err(Error::storage("claim_next"))?;
    if claimed.is_some() {
        tx.commit().map_err(Error::storage("claim_next"))?;
    }
    Ok(claimed)
}

/// Runs a fenced `UPDATE` (renew, complete, release) whose `WHERE` already states the whole
/// condition; on no match, explains why.
fn fenced_update(
    conn: &Connection,
    operation: &'static str,
    sql: &str,
    params: &[&dyn rusqlite::ToSql],
    (job, owner, fence): (&str, &str, Fence),
    live_at: Option<f64>,
) -> Result<Outcome<()>> {
    let tx = immediate(conn, operation)?;
    let changed = tx
        .prepare_cached(sql)
        .and_then(|mut stmt| stmt.execute(params))
        .map_err(Error::storage(operation))?;
    if changed == 1 {
        tx.commit().map_err(Error::storage(operation))?;
        return Ok(Outcome::Granted(()));
    }
    // Inside this IMMEDIATE transaction the row cannot have changed since the UPDATE.
    let Some(reason) = why_write_refused(read_lease(&tx, job, operation)?, owner, fence, live_at)
    else {
        return Err(unexplained(operation, job));
    };
    Ok(Outcome::Rejected(reason))
}

/// Contract `renew`: extends a live lease held by `owner` with `fence` to `now + ttl`.
pub(crate) fn renew(
    conn: &Connection,
    job: &str,
    owner: &str,
    fence: Fence,
    now: f64,
    ttl: f64,
) -> Result<Outcome<()>> {
    let until = lease_end(now, ttl)?;
    fenced_update(
        conn,
        "renew",
        "UPDATE jobs SET until = ?5 \
         WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4",
        params![job, owner, fence, now, until],
        (job, owner, fence),
        Some(now),
    )
}

/// Contract `complete`: stores the result and marks the job done, for the current lease only.
pub(crate) fn complete(
    conn: &Connection,
    job: &str,
    owner: &str,
    fence: Fence,
    now: f64,
    result: Option<&str>,
) -> Result<Outcome<()>> {
    check_now(now)?;
    fenced_update(
        conn,
        "complete",
        "UPDATE jobs SET result = ?5, done = 1 \
         WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4",
        params![job, owner, fence, now, result],
        (job, owner, fence),
        Some(now),
    )
}

/// Contract `release`: gives the lease up early; the fence is kept so old tokens stay stale.
pub(crate) fn release(
    conn: &Connection,
    job: &str,
    owner: &str,
    fence: Fence,
) -> Result<Outcome<()>> {
    fenced_update(
        conn,
        "release",
        "UPDATE jobs SET owner = NULL, until = 0 \
         WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0",
        params![job, owner, fence],
        (job, owner, fence),
        None,
    )
}

//! The `jobs` table on SQLite: the read-only check that a file is SQLite with the contract's
//! shape (or empty), and its creation (`sql/schema.sql`). The shape itself is
//! [`crate::rules::columns`]'s; this file only reads SQLite's catalog and words the mismatch.

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::rules::columns::{self, ColumnSpec, Dialect, FoundColumn, Mismatch};

/// How SQLite's catalog spells the spec: names and types case-insensitive, a default as written
/// (`'0'`, `(0)`), a primary key that may be NULL.
struct Sqlite;

impl Dialect for Sqlite {
    const PRIMARY_KEY_IMPLIES_NOT_NULL: bool = false;

    fn column_type(spec: &ColumnSpec) -> &'static str {
        spec.sqlite_type
    }

    fn same_word(found: &str, want: &str) -> bool {
        found.eq_ignore_ascii_case(want)
    }

    fn normalise_default(default: &str) -> String {
        default.trim_matches(['(', ')', '\'']).to_string()
    }

    fn shown_default(default: &str) -> String {
        default.to_string()
    }
}

/// The tables beside `jobs` (docs/contract.md section 7): what `jobs` cannot hold
/// ([`LeaseStore::TABLES`](super::LeaseStore::TABLES) lists them with `jobs`).
pub(crate) const SIDE_TABLES: [&str; 7] = [
    "leasefence_payloads",
    "leasefence_failures",
    "leasefence_dead",
    "leasefence_order",
    "leasefence_schedules",
    "leasefence_workers",
    "leasefence_floor",
];

/// The indexes beside `jobs`' own: the claim order of section 11, each job's failures, and the
/// finished jobs in finish order (prune, section 13).
const SIDE_INDEXES: [&str; 3] = [
    "leasefence_next",
    "leasefence_failures_of_job",
    "leasefence_finished",
];

/// The triggers that keep `leasefence_order` in line with `jobs`, and the fence floor's
/// (sql/schema.sql).
const TRIGGERS: [&str; 5] = [
    "leasefence_order_insert",
    "leasefence_order_update",
    "leasefence_order_rename",
    "leasefence_order_delete",
    "leasefence_fence_floor",
];

/// Checks, by reading only, that the database is SQLite and that `jobs`, if present, has exactly
/// the contract's shape, so that a foreign file is refused before anything is written to it.
/// Returns whether the table and index already exist. `path` is only used in error messages.
pub(crate) fn check_schema(conn: &Connection, path: &str) -> Result<bool> {
    let foreign = |problem: String| Error::NotLeasefenceDatabase {
        path: path.to_string(),
        problem,
    };
    // Every name leasefence needs, from the lists below, so a new object is checked by adding
    // it there alone.
    let names: Vec<&str> = ["jobs", "leasefence_claimable"]
        .into_iter()
        .chain(SIDE_TABLES)
        .chain(SIDE_INDEXES)
        .chain(TRIGGERS)
        .collect();
    let mut found = Vec::new();
    conn.prepare(&format!(
        // SQLite names are case-insensitive: a foreign `JOBS` table is our `jobs`.
        "SELECT lower(name), type FROM sqlite_schema WHERE lower(name) IN ({})",
        vec!["?"; names.len()].join(", ")
    ))
    .and_then(|mut stmt| {
        stmt.query_map(rusqlite::params_from_iter(&names), |row| {
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
            source: crate::error::SqliteError(err),
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
        Some("table") => check_columns(conn, &foreign)?,
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
    for table in SIDE_TABLES {
        if let Some(kind) = kind_of(table).filter(|k| *k != "table") {
            return Err(foreign(format!(
                "`{table}` is a {kind}; leasefence needs that name for a table of its own"
            )));
        }
    }
    for index in SIDE_INDEXES {
        if let Some(kind) = kind_of(index).filter(|k| *k != "index") {
            return Err(foreign(format!(
                "`{index}` is a {kind}; leasefence needs that name for an index of its own"
            )));
        }
    }
    for trigger in TRIGGERS {
        if let Some(kind) = kind_of(trigger).filter(|k| *k != "trigger") {
            return Err(foreign(format!(
                "`{trigger}` is a {kind}; leasefence needs that name for a trigger of its own"
            )));
        }
    }
    // Anything missing (a file from an older leasefence or from the seed's module, a dropped
    // trigger) makes the caller run create_schema, which also brings `leasefence_order` back in
    // line with `jobs`.
    let complete = kind_of("jobs").is_some()
        && kind_of("leasefence_claimable").is_some()
        && SIDE_TABLES.iter().all(|table| kind_of(table).is_some())
        && SIDE_INDEXES.iter().all(|index| kind_of(index).is_some())
        && TRIGGERS.iter().all(|trigger| kind_of(trigger).is_some());
    Ok(complete && stamps_up_to_date(conn)?)
}

/// Whether `leasefence_order` has the `enqueued` and `finished` columns and its triggers fill
/// them (a file from before the oldest waiting job's age or before prune lacks them:
/// create_schema adds them).
fn stamps_up_to_date(conn: &Connection) -> Result<bool> {
    conn.query_row(
        "SELECT (SELECT count(*) FROM pragma_table_info('leasefence_order') \
                 WHERE name IN ('enqueued', 'finished', 'base')) = 3 \
            AND coalesce((SELECT sql LIKE '%enqueued%' AND sql LIKE '%finished%' \
                                 AND sql LIKE '%base%' \
                          FROM sqlite_schema \
                          WHERE type = 'trigger' AND name = 'leasefence_order_insert'), 0) \
            AND coalesce((SELECT sql LIKE '%finished%' AND sql NOT LIKE '%SET job%' \
                          FROM sqlite_schema \
                          WHERE type = 'trigger' AND name = 'leasefence_order_update'), 0)",
        [],
        |row| row.get(0),
    )
    .map_err(Error::storage("open"))
}

/// Creates what is missing (tables, indexes, triggers); never touches existing rows but to bring
/// a file from an older release up to date: its `leasefence_order` gains the columns added
/// since (below) and its triggers the stamps.
pub(crate) fn create_schema(conn: &Connection) -> Result<()> {
    let tx = super::ops::immediate(conn, "open")?;
    let has = |sql: &str| -> Result<bool> {
        tx.query_row(sql, [], |row| row.get(0))
            .map_err(Error::storage("open"))
    };
    let order_exists = has(
        "SELECT count(*) = 1 FROM sqlite_schema WHERE type = 'table' AND name = 'leasefence_order'",
    )?;
    // The columns later releases added to leasefence_order, each with what brings an older
    // file's rows up to date: open jobs count as enqueued now and done jobs as finished now (the
    // closest known); every job so far started at fence 0 (there was no floor before prune).
    let added_columns = [
        (
            "enqueued",
            "ALTER TABLE leasefence_order ADD COLUMN enqueued REAL; \
             UPDATE leasefence_order SET enqueued = (julianday('now') - 2440587.5) * 86400.0 \
             WHERE open = 1;",
        ),
        (
            "finished",
            "ALTER TABLE leasefence_order ADD COLUMN finished REAL; \
             UPDATE leasefence_order SET finished = (julianday('now') - 2440587.5) * 86400.0 \
             WHERE job IN (SELECT id FROM jobs WHERE done = 1);",
        ),
        (
            "base",
            "ALTER TABLE leasefence_order ADD COLUMN base INTEGER NOT NULL DEFAULT 0;",
        ),
    ];
    for (column, add) in added_columns {
        let present: bool = tx
            .query_row(
                "SELECT count(*) = 1 FROM pragma_table_info('leasefence_order') WHERE name = ?1",
                [column],
                |row| row.get(0),
            )
            .map_err(Error::storage("open"))?;
        if order_exists && !present {
            tx.execute_batch(add).map_err(Error::storage("open"))?;
        }
    }
    // A trigger of an older leasefence lacks a stamp, or (the update trigger from before the
    // rename trigger) still assigns `job` on every update.
    for (trigger, outdated) in [
        ("leasefence_order_insert", "NOT LIKE '%enqueued%'"),
        ("leasefence_order_insert", "NOT LIKE '%finished%'"),
        ("leasefence_order_insert", "NOT LIKE '%base%'"),
        ("leasefence_order_update", "NOT LIKE '%finished%'"),
        ("leasefence_order_update", "LIKE '%SET job%'"),
    ] {
        if has(&format!(
            "SELECT coalesce((SELECT sql {outdated} FROM sqlite_schema \
                              WHERE type = 'trigger' AND name = '{trigger}'), 0)"
        ))? {
            // The trigger of an older leasefence: made again by schema.sql with the stamp.
            tx.execute_batch(&format!("DROP TRIGGER IF EXISTS {trigger}"))
                .map_err(Error::storage("open"))?;
        }
    }
    tx.execute_batch(include_str!("sql/schema.sql"))
        .map_err(Error::storage("open"))?;
    tx.commit().map_err(Error::storage("open"))
}

/// Compares the columns of `jobs` with the contract. A file another process holds locked at this
/// moment (many workers opening at once) is a `storage` error, which a retry gets past, never a
/// "not a leasefence database" verdict.
fn check_columns(conn: &Connection, foreign: &dyn Fn(String) -> Error) -> Result<()> {
    let busy = |err: rusqlite::Error| Error::Storage {
        operation: "open",
        source: crate::error::SqliteError(err),
    };
    // claim_next orders by rowid (insertion order); a WITHOUT ROWID table has none.
    match conn.prepare("SELECT rowid FROM jobs LIMIT 0") {
        Err(err) if crate::error::is_busy(&err) => return Err(busy(err)),
        Err(_) => {
            return Err(foreign(
                "its `jobs` table is WITHOUT ROWID; the contract needs a rowid table".into(),
            ))
        }
        Ok(_) => {}
    }
    let describe = |err: rusqlite::Error| {
        if crate::error::is_busy(&err) {
            busy(err)
        } else {
            foreign(format!("cannot read the `jobs` table: {err}"))
        }
    };
    let mut stmt = conn
        .prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('jobs')")
        .map_err(describe)?;
    let found = stmt
        .query_map([], |row| {
            Ok(FoundColumn {
                name: row.get(0)?,
                ty: row.get(1)?,
                not_null: row.get(2)?,
                default: row.get(3)?,
                primary_key: row.get::<_, i64>(4)? > 0,
            })
        })
        .map_err(describe)?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(describe)?;
    let want_list = columns::describe_expected::<Sqlite>();
    match columns::compare::<Sqlite>(&found) {
        Ok(()) => Ok(()),
        Err(Mismatch::Count) => {
            let got: Vec<String> = found
                .iter()
                .map(|c| format!("{} {}", c.name, c.ty))
                .collect();
            Err(foreign(format!(
                "its `jobs` table has {} columns ({}), the contract needs exactly 6 ({})",
                found.len(),
                got.join(", "),
                want_list.join(", ")
            )))
        }
        Err(Mismatch::Column(i)) => {
            let got: Vec<String> = found
                .iter()
                .map(columns::describe_found::<Sqlite>)
                .collect();
            Err(foreign(format!(
                "its `jobs` table has column `{}` where the contract needs `{}` \
                 (found: {}; needed: {})",
                got[i],
                want_list[i],
                got.join(", "),
                want_list.join(", ")
            )))
        }
    }
}

#[cfg(all(test, not(web)))]
mod tests {
    use super::*;

    /// Another process holding the file locked while the columns are read (many workers opening
    /// at once) is a retryable storage error, not a verdict on the file.
    #[test]
    fn a_locked_file_is_busy_not_foreign() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.db");
        let holder = Connection::open(&path).unwrap();
        holder
            .execute_batch(
                "PRAGMA journal_mode = DELETE; \
                 CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
                 fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);",
            )
            .unwrap();
        let reader = Connection::open(&path).unwrap();
        reader.busy_timeout(std::time::Duration::ZERO).unwrap();
        // The reader has the schema cached; then the holder takes the file exclusively.
        reader.prepare("SELECT id FROM jobs").unwrap();
        holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let foreign = |problem: String| Error::NotLeasefenceDatabase {
            path: "locked.db".into(),
            problem,
        };
        match check_columns(&reader, &foreign) {
            Err(err @ Error::Storage { .. }) => assert!(err.to_string().contains("locked")),
            other => panic!("expected a storage error, got {other:?}"),
        }
        holder.execute_batch("COMMIT").unwrap();
        assert!(check_columns(&reader, &foreign).is_ok());
    }

    /// The order table's copies follow every change of `jobs` a program following the contract
    /// may make, a rename included, through the update and rename triggers; a file whose update
    /// trigger still assigns `job` on every update (an older release's, which rewrote the
    /// table's `job` index in every commit) gets the split pair on open.
    #[test]
    fn the_order_copies_follow_renames_and_updates_and_an_old_trigger_is_replaced() {
        let conn = Connection::open_in_memory().unwrap();
        create_schema(&conn).unwrap();
        conn.execute_batch(
            "INSERT INTO jobs(id) VALUES ('a'); \
             UPDATE leasefence_order SET queue = 'mail', priority = 3 WHERE job = 'a'; \
             UPDATE jobs SET id = 'b', until = 5 WHERE id = 'a';",
        )
        .unwrap();
        let row = |conn: &Connection| -> (String, String, i64, f64, bool, bool) {
            conn.query_row(
                "SELECT job, queue, priority, until, open, finished IS NOT NULL \
                 FROM leasefence_order",
                [],
                |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                },
            )
            .unwrap()
        };
        assert_eq!(row(&conn), ("b".into(), "mail".into(), 3, 5.0, true, false));
        conn.execute_batch("UPDATE jobs SET until = 7, fence = fence + 1 WHERE id = 'b'")
            .unwrap();
        assert_eq!(row(&conn), ("b".into(), "mail".into(), 3, 7.0, true, false));
        conn.execute_batch("UPDATE jobs SET done = 1, id = 'c' WHERE id = 'b'")
            .unwrap();
        assert_eq!(row(&conn), ("c".into(), "mail".into(), 3, 7.0, false, true));

        let old = Connection::open_in_memory().unwrap();
        create_schema(&old).unwrap();
        old.execute_batch(
            "DROP TRIGGER leasefence_order_update; DROP TRIGGER leasefence_order_rename; \
             CREATE TRIGGER leasefence_order_update AFTER UPDATE OF id, until, done, fence ON jobs \
             BEGIN UPDATE leasefence_order SET job = NEW.id, until = NEW.until, \
             open = (NEW.done = 0), finished = NULL WHERE job = OLD.id; END;",
        )
        .unwrap();
        assert!(
            !check_schema(&old, "m").unwrap(),
            "the old trigger needs the upgrade"
        );
        create_schema(&old).unwrap();
        assert!(check_schema(&old, "m").unwrap());
        let update: String = old
            .query_row(
                "SELECT sql FROM sqlite_schema WHERE name = 'leasefence_order_update'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(!update.contains("SET job"), "{update}");
    }

    /// Section 11's names are leasefence's: another kind of object holding one is refused
    /// before anything is written; a file from before section 11 is "not complete", so opening
    /// it creates what is missing.
    #[test]
    fn section_11_names_are_checked_and_their_absence_means_upgrade() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, \
             fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0);",
        )
        .unwrap();
        assert!(
            !check_schema(&conn, "m").unwrap(),
            "a seed file needs the upgrade"
        );
        create_schema(&conn).unwrap();
        assert!(check_schema(&conn, "m").unwrap());
        conn.execute_batch("DROP TRIGGER leasefence_order_update")
            .unwrap();
        assert!(
            !check_schema(&conn, "m").unwrap(),
            "a dropped trigger is made again"
        );
        for foreign in [
            "DROP TABLE leasefence_order; CREATE VIEW leasefence_order AS SELECT 1",
            "DROP TRIGGER IF EXISTS leasefence_order_insert; \
             CREATE TABLE leasefence_order_insert(x)",
        ] {
            let conn = Connection::open_in_memory().unwrap();
            conn.execute_batch(include_str!("sql/schema.sql")).unwrap();
            conn.execute_batch(foreign).unwrap();
            match check_schema(&conn, "m") {
                Err(Error::NotLeasefenceDatabase { problem, .. }) => {
                    assert!(problem.contains("leasefence needs that name"), "{problem}")
                }
                other => panic!("{foreign}: expected a refusal, got {other:?}"),
            }
        }
    }
}

/// The core's comparer (`rules::columns`) through SQLite's own dialect, without a database.
#[cfg(test)]
mod dialect_tests {
    use super::*;
    use crate::rules::columns::{compare, describe_expected, describe_found, JOBS_COLUMNS};

    fn table() -> Vec<FoundColumn> {
        JOBS_COLUMNS
            .iter()
            .map(|c| FoundColumn {
                name: c.name.to_uppercase(),
                ty: c.sqlite_type.to_lowercase(),
                not_null: c.not_null,
                default: c.default.map(|d| format!("'{d}'")),
                primary_key: c.primary_key,
            })
            .collect()
    }

    #[test]
    fn compares_through_the_dialect() {
        assert!(compare::<Sqlite>(&table()).is_ok());
        let mut short = table();
        short.pop();
        assert!(matches!(compare::<Sqlite>(&short), Err(Mismatch::Count)));
        let mut nullable = table();
        nullable[2].not_null = false;
        assert!(matches!(
            compare::<Sqlite>(&nullable),
            Err(Mismatch::Column(2))
        ));
        assert_eq!(
            describe_expected::<Sqlite>()[2],
            "until REAL NOT NULL DEFAULT 0"
        );
        assert_eq!(describe_found::<Sqlite>(&table()[0]), "ID text PRIMARY KEY");
    }
}

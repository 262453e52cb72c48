//! The PostgreSQL schema: the read-only check that the connection's current schema holds the
//! contract's `jobs` table with the library's columns (or none) and leasefence's companions, and
//! their creation (`sql/schema.sql`). The shape of `jobs` is [`crate::rules::columns`]'s.

use super::wire::{in_transaction, Sql, Wire};
use crate::error::{Error, Result};
use crate::rules::columns::{self, ColumnSpec, Dialect, FoundColumn, JOBS_COLUMNS};

/// Serializes schema creation between processes opening one database at once (`CREATE ... IF
/// NOT EXISTS` alone races on the catalogs). "leasefence" in ASCII, truncated to 63 bits.
const SCHEMA_LOCK: i64 = 0x6C65_6173_6566_656E;

/// The body of the `leasefence_track` trigger function, `%1$I` standing for the schema (filled in
/// by the server's `format`). It runs before each row inserted into `jobs`, whoever inserts it:
/// a job inserted below the fence floor of section 13 starts at the floor, `base` records the
/// fence the job started at (its attempts count from there), and a job inserted already done
/// gets the server's clock as its finish time. Nothing runs on updates: claims and completions
/// write their one row and nothing else (docs/decisions/postgres-jobs-columns.md). One text for
/// the check at open (`sql/inspect.sql` compares the installed body with it) and the creation
/// (`sql/schema.sql` reads it from the transaction-local setting `leasefence.track_body`), both
/// as a bound parameter. Changing a single character of it makes every store re-create the
/// trigger at its next open.
pub(crate) const TRACK_BODY: &str = concat!(
    "\nDECLARE\n",
    "    floor_fence BIGINT;\n",
    "BEGIN\n",
    "    SELECT floor INTO floor_fence FROM %1$I.leasefence_floor WHERE id = 1;\n",
    "    NEW.fence := greatest(NEW.fence, coalesce(floor_fence, 0));\n",
    "    NEW.base := NEW.fence;\n",
    "    IF NEW.done <> 0 AND NEW.finished IS NULL THEN\n",
    "        NEW.finished := extract(epoch FROM clock_timestamp());\n",
    "    END IF;\n",
    "    RETURN NEW;\n",
    "END ",
);

/// How PostgreSQL's catalog spells the spec: exact lower-case names and `format_type` types, a
/// default as `pg_get_expr` prints it, a primary key that is always `NOT NULL`.
struct Postgres;

impl Dialect for Postgres {
    const PRIMARY_KEY_IMPLIES_NOT_NULL: bool = true;

    fn column_type(spec: &ColumnSpec) -> &'static str {
        spec.postgres_type
    }

    fn same_word(found: &str, want: &str) -> bool {
        found == want
    }

    // `'0'::double precision` and `0` are both a default of zero.
    fn normalise_default(default: &str) -> String {
        let bare = default.split("::").next().unwrap_or(default);
        bare.trim_matches(['(', ')', '\'', ' ']).to_string()
    }

    fn shown_default(default: &str) -> String {
        Self::normalise_default(default)
    }
}

/// Checks, by reading only, that `jobs` (if present) has the contract's six columns followed by the
/// library's own (or some of them, or none yet) and that no other object holds leasefence's names.
/// Returns whether everything is in place: the tables, the indexes (valid), and the trigger enabled
/// and calling the library's own function body. When not, [`create_schema`] makes what is missing
/// and repairs the trigger (`sql/schema.sql` says why it repairs rather than refuses). `label` is
/// the redacted URL, for messages.
pub(crate) async fn check_schema(wire: &mut impl Wire, label: &str) -> Result<bool> {
    const OP: &str = "connect";
    let foreign = |problem: String| Error::NotLeasefenceDatabase {
        path: label.to_string(),
        problem,
    };
    let row = wire
        .run(OP, Sql::Inspect, vec![TRACK_BODY.into()])
        .await?
        .one(OP)?;
    let schema = row.opt_text(OP, 0)?;
    let jobs = row.opt_text(OP, 1)?;
    let order = row.opt_text(OP, 2)?;
    let index = row.opt_text(OP, 3)?;
    // The trigger is there, enabled, and calls the library's function with the library's body.
    let trigger = row.flag(OP, 4)?;
    let side_tables: [(&str, Option<String>); 5] = [
        ("leasefence_payloads", row.opt_text(OP, 5)?),
        ("leasefence_failures", row.opt_text(OP, 6)?),
        ("leasefence_dead", row.opt_text(OP, 7)?),
        ("leasefence_schedules", row.opt_text(OP, 9)?),
        ("leasefence_workers", row.opt_text(OP, 10)?),
    ];
    // leasefence_seq, leasefence_next and leasefence_failures_of_job, valid, on their tables.
    let indexes = row.flag(OP, 8)?;
    // The library's columns of `jobs` and the fence floor's table.
    let columns_in_place = row.flag(OP, 11)?;
    if schema.is_none() {
        return Err(Error::Open {
            path: label.to_string(),
            problem: "the connection has no schema to work in (its search_path names no \
                      existing schema); create the schema, or choose one with \
                      ?options=-csearch_path%3Dname"
                .into(),
        });
    }
    let kind = |relkind: &str| match relkind {
        "r" => "a table",
        "p" => "a partitioned table",
        "v" => "a view",
        "m" => "a materialized view",
        "i" => "an index",
        "S" => "a sequence",
        "f" => "a foreign table",
        _ => "another kind of relation",
    };
    match jobs.as_deref() {
        None | Some("r") => {}
        Some(other) => {
            return Err(foreign(format!("`jobs` is {}, not a table", kind(other))));
        }
    }
    // An earlier version's side table: migrated into `jobs` by sql/schema.sql.
    if let Some(other) = order.as_deref().filter(|k| *k != "r") {
        return Err(foreign(format!(
            "`leasefence_order` is {}; leasefence reads that name as its earlier side table \
             (rename it)",
            kind(other)
        )));
    }
    if let Some(other) = index.as_deref().filter(|k| *k != "i") {
        return Err(foreign(format!(
            "`leasefence_next` is {}; leasefence needs that name for its index",
            kind(other)
        )));
    }
    for (name, found) in &side_tables {
        if let Some(other) = found.as_deref().filter(|k| *k != "r") {
            return Err(foreign(format!(
                "`{name}` is {}; leasefence needs that name for a table of its own",
                kind(other)
            )));
        }
    }
    if jobs.is_some() {
        check_columns(wire).await?.map_err(foreign)?;
    }
    Ok(jobs.is_some()
        && order.is_none()
        && index.is_some()
        && trigger
        && indexes
        && columns_in_place
        && side_tables.iter().all(|(_, found)| found.is_some()))
}

/// The library's own columns of `jobs` on PostgreSQL, after the contract's six, with their
/// `format_type` types (`sql/schema.sql` adds them and says what each holds).
const LIBRARY_COLUMNS: [(&str, &str); 6] = [
    ("queue", "text"),
    ("priority", "bigint"),
    ("seq", "bigint"),
    ("enqueued", "double precision"),
    ("finished", "double precision"),
    ("base", "bigint"),
];

/// Compares the columns of `jobs` with the contract's six followed by the library's own (all of
/// them, or some of a schema the script has not brought up to date: it adds the rest); the inner
/// error describes a mismatch.
async fn check_columns(wire: &mut impl Wire) -> Result<std::result::Result<(), String>> {
    const OP: &str = "connect";
    let answer = wire.run(OP, Sql::Columns, Vec::new()).await?;
    let found: Vec<FoundColumn> = answer
        .rows
        .iter()
        .map(|row| {
            Ok(FoundColumn {
                name: row.text(OP, 0)?,
                ty: row.text(OP, 1)?,
                not_null: row.flag(OP, 2)?,
                default: row.opt_text(OP, 3)?,
                primary_key: row.flag(OP, 4)?,
            })
        })
        .collect::<Result<_>>()?;
    let contract = &found[..found.len().min(JOBS_COLUMNS.len())];
    let library = &found[contract.len()..];
    // In any order: a column dropped by hand comes back at the end.
    let library_fits = library.iter().all(|column| {
        LIBRARY_COLUMNS
            .iter()
            .any(|(name, ty)| column.name == *name && column.ty == *ty)
    });
    if columns::compare::<Postgres>(contract).is_ok() && library_fits {
        return Ok(Ok(()));
    }
    let got: Vec<String> = found
        .iter()
        .map(columns::describe_found::<Postgres>)
        .collect();
    let library_wanted: Vec<String> = LIBRARY_COLUMNS
        .iter()
        .map(|(name, ty)| format!("{name} {ty}"))
        .collect();
    Ok(Err(format!(
        "its `jobs` table has columns ({}), the contract needs exactly ({}), followed on \
         PostgreSQL by no other columns than leasefence's own ({})",
        got.join(", "),
        columns::describe_expected::<Postgres>().join(", "),
        library_wanted.join(", ")
    )))
}

/// Creates whatever is missing and repairs the trigger, in one transaction holding the schema
/// lock (`init`: always, whatever is in place).
pub(crate) async fn create_schema(wire: &mut impl Wire, operation: &'static str) -> Result<()> {
    in_transaction(wire, operation, async |wire| {
        lock_schema(wire, operation).await?;
        run_schema_script(wire, operation).await
    })
    .await
}

/// Takes the transaction-scoped lock that serializes schema creation between processes.
async fn lock_schema(wire: &mut impl Wire, operation: &'static str) -> Result<()> {
    wire.run(operation, Sql::SchemaLock, vec![SCHEMA_LOCK.into()])
        .await
        .map(drop)
}

/// `sql/schema.sql`, its trigger body set first.
async fn run_schema_script(wire: &mut impl Wire, operation: &'static str) -> Result<()> {
    wire.run(operation, Sql::TrackBody, vec![TRACK_BODY.into()])
        .await?;
    wire.batch(operation, include_str!("sql/schema.sql")).await
}

/// Makes or repairs the schema found not in place at open. Under the lock it checks again: when
/// several processes open a new schema at once, all but the first find it made by then and run
/// nothing. Running `sql/schema.sql` again on tables already in use deadlocked with the first
/// processes' writers (its DDL locks the side tables in another order than an insert does).
async fn create_missing_schema(wire: &mut impl Wire, label: &str) -> Result<()> {
    const OP: &str = "connect";
    in_transaction(wire, OP, async |wire| {
        lock_schema(wire, OP).await?;
        if check_schema(wire, label).await? {
            return Ok(());
        }
        run_schema_script(wire, OP).await
    })
    .await
}

/// The busy timeout as the session's `lock_timeout` (`250ms`): at least a millisecond (`0`
/// would mean no limit at all).
pub(crate) fn lock_timeout_setting(timeout: std::time::Duration) -> String {
    let millis = timeout.as_millis().clamp(1, i32::MAX as u128);
    format!("{millis}ms")
}

/// The session settings of a new connection ([`Sql::SessionSettings`]), `lock_timeout` as
/// PostgreSQL writes it (`250ms`).
pub(crate) async fn session_settings(wire: &mut impl Wire, lock_timeout: &str) -> Result<()> {
    wire.run("connect", Sql::SessionSettings, vec![lock_timeout.into()])
        .await
        .map(drop)
}

/// Sets a new connection up for the store: the session settings (`lock_timeout`, the lock
/// timeout as PostgreSQL writes it, `250ms`), then the schema checked and made or repaired where
/// it is not in place. `label`: the redacted URL, for messages.
pub(crate) async fn set_up(wire: &mut impl Wire, lock_timeout: &str, label: &str) -> Result<()> {
    session_settings(wire, lock_timeout).await?;
    if !check_schema(wire, label).await? {
        create_missing_schema(wire, label).await?;
    }
    Ok(())
}

//! The PostgreSQL schema: the read-only check that the connection's current schema holds the
//! contract's `jobs` table (or none) and leasefence's companions, and their creation
//! (`sql/schema.sql`). The shape of `jobs` is [`crate::rules::columns`]'s.

use super::wire::{in_transaction, Sql, Wire};
use crate::error::{Error, Result};
use crate::rules::columns::{self, ColumnSpec, Dialect, FoundColumn};

/// Serializes schema creation between processes opening one database at once (`CREATE ... IF
/// NOT EXISTS` alone races on the catalogs). "leasefence" in ASCII, truncated to 63 bits.
const SCHEMA_LOCK: i64 = 0x6C65_6173_6566_656E;

/// The body of the `leasefence_track` trigger function, `%1$I` standing for the schema (filled in
/// by the server's `format`): it keeps `leasefence_order` (insertion order, and the copies of
/// `until` and claimability that claim_next's index reads) in line with `jobs`. One text for the
/// check at open (`sql/inspect.sql` compares the installed body with it) and the creation
/// (`sql/schema.sql` reads it from the transaction-local setting `leasefence.track_body`), both
/// as a bound parameter. Changing a single character of it makes every store re-create the
/// trigger at its next open.
///
/// Besides the copies, it keeps `base` (the fence the job started at, from which its attempts
/// count), `finished` (prune's finish time: the operation that finished a
/// job writes its `now` in the same statement, before this trigger runs; a job finished by
/// anyone else gets the server's clock) and the fence floor of section 13: a job inserted below
/// the floor is raised to it at once, whoever inserted it.
pub(crate) const TRACK_BODY: &str = concat!(
    "\nDECLARE\n",
    "    floor_fence BIGINT;\n",
    "BEGIN\n",
    "    IF TG_OP = 'INSERT' THEN\n",
    "        SELECT floor INTO floor_fence FROM %1$I.leasefence_floor WHERE id = 1;\n",
    "        INSERT INTO %1$I.leasefence_order(id, until, open, finished, base)\n",
    "        VALUES (NEW.id, NEW.until, NEW.done = 0 AND NEW.fence < 9223372036854775807,\n",
    "                CASE WHEN NEW.done = 0 THEN NULL\n",
    "                     ELSE extract(epoch FROM clock_timestamp()) END,\n",
    "                greatest(NEW.fence, coalesce(floor_fence, 0)));\n",
    "        IF floor_fence > NEW.fence THEN\n",
    "            UPDATE %1$I.jobs SET fence = floor_fence WHERE id = NEW.id;\n",
    "        END IF;\n",
    "    ELSE\n",
    "        UPDATE %1$I.leasefence_order\n",
    "        SET until = NEW.until, open = (NEW.done = 0 AND NEW.fence < 9223372036854775807),\n",
    "            finished = CASE WHEN NEW.done = 0 THEN NULL\n",
    "                            ELSE coalesce(finished, extract(epoch FROM clock_timestamp())) END\n",
    "        WHERE id = NEW.id;\n",
    "    END IF;\n",
    "    RETURN NULL;\n",
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

/// Checks, by reading only, that `jobs` (if present) has exactly the contract's shape and that
/// no other object holds leasefence's names. Returns whether everything is in place: the tables,
/// the indexes (valid), and the trigger enabled and calling the library's own function body. When
/// not, [`create_schema`] makes what is missing and repairs the trigger (`sql/schema.sql` says why
/// it repairs rather than refuses). `label` is
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
    // leasefence_order stamps each job's enqueue time.
    let stamped = row.flag(OP, 11)?;
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
    if let Some(other) = order.as_deref().filter(|k| *k != "r") {
        return Err(foreign(format!(
            "`leasefence_order` is {}; leasefence needs that name for its side table",
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
        && order.is_some()
        && index.is_some()
        && trigger
        && indexes
        && stamped
        && side_tables.iter().all(|(_, found)| found.is_some()))
}

/// Compares the columns of `jobs` with the contract; the inner error describes a mismatch.
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
    Ok(match columns::compare::<Postgres>(&found) {
        Ok(()) => Ok(()),
        Err(_) => {
            let got: Vec<String> = found
                .iter()
                .map(columns::describe_found::<Postgres>)
                .collect();
            Err(format!(
                "its `jobs` table has columns ({}), the contract needs exactly ({})",
                got.join(", "),
                columns::describe_expected::<Postgres>().join(", ")
            ))
        }
    })
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

//! Application data kept next to the jobs, in the same SQLite file: an extra table, as
//! docs/contract.md section 1 allows. The playground keeps its timeline here, so one OPFS database
//! holds both.

use rusqlite::{OptionalExtension, Transaction, TransactionBehavior};

use crate::{Error, LeaseStore, Result};

const CREATE: &str =
    "CREATE TABLE IF NOT EXISTS leasefence_app_data(key TEXT PRIMARY KEY, value TEXT NOT NULL)";

pub(crate) fn get(store: &LeaseStore, key: &str) -> Result<Option<String>> {
    let conn = store.connection();
    conn.execute(CREATE, []).map_err(Error::storage("appGet"))?;
    conn.query_row(
        "SELECT value FROM leasefence_app_data WHERE key = ?1",
        [key],
        |row| row.get(0),
    )
    .optional()
    .map_err(Error::storage("appGet"))
}

pub(crate) fn set(store: &LeaseStore, key: &str, value: &str) -> Result<()> {
    let conn = store.connection();
    conn.execute(CREATE, []).map_err(Error::storage("appSet"))?;
    conn.execute(
        "INSERT INTO leasefence_app_data(key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )
    .map_err(Error::storage("appSet"))?;
    Ok(())
}

pub(crate) fn erase(store: &LeaseStore) -> Result<()> {
    let conn = store.connection();
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .map_err(Error::storage("erase"))?;
    // Everything the store keeps: a job's payload or failures must not outlive the job. The names
    // are the crate's own constants (identifiers cannot be bound).
    // lease_only_jobs: the playground's counterfactual store (wasm/lease_only.rs, browser).
    let tables = ["leasefence_app_data", "lease_only_jobs", "jobs"]
        .into_iter()
        .chain(crate::sqlite::SIDE_TABLES);
    for table in tables {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS {table};"))
            .map_err(Error::storage("erase"))?;
    }
    tx.commit().map_err(Error::storage("erase"))?;
    store.init()
}

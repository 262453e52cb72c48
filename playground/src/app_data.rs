//! The page's own data kept next to the jobs, in the same SQLite file: an extra table, as
//! docs/contract.md section 1 allows. The playground keeps its timeline here (and its worker lab
//! its report bucket), so one OPFS database holds both; and the reset that erases it all.

use leasefence::LeaseStore;
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior};
use wasm_bindgen::JsValue;

use crate::{error_to_js, lease_only, storage};

/// Its name is a `leasefence_*` one, so fenced writes can never touch it.
const TABLE: &str = "leasefence_app_data";
const CREATE: &str =
    "CREATE TABLE IF NOT EXISTS leasefence_app_data(key TEXT PRIMARY KEY, value TEXT NOT NULL)";

pub(crate) fn get(conn: &Connection, key: &str) -> Result<Option<String>, JsValue> {
    conn.execute(CREATE, []).map_err(storage("appGet"))?;
    conn.query_row(
        "SELECT value FROM leasefence_app_data WHERE key = ?1",
        [key],
        |row| row.get(0),
    )
    .optional()
    .map_err(storage("appGet"))
}

pub(crate) fn set(conn: &Connection, key: &str, value: &str) -> Result<(), JsValue> {
    conn.execute(CREATE, []).map_err(storage("appSet"))?;
    conn.execute(
        "INSERT INTO leasefence_app_data(key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )
    .map_err(storage("appSet"))?;
    Ok(())
}

/// Drops the page's tables and the store's in one transaction, then lets the store create its
/// own again, empty.
pub(crate) fn erase(store: &LeaseStore) -> Result<(), JsValue> {
    let tx = Transaction::new_unchecked(store.connection(), TransactionBehavior::Immediate)
        .map_err(storage("erase"))?;
    // Everything the database keeps: a job's payload or failures must not outlive the job. The
    // names are constants (identifiers cannot be bound).
    let tables = [TABLE, lease_only::TABLE]
        .into_iter()
        .chain(LeaseStore::TABLES);
    for table in tables {
        tx.execute_batch(&format!("DROP TABLE IF EXISTS {table};"))
            .map_err(storage("erase"))?;
    }
    tx.commit().map_err(storage("erase"))?;
    store.init().map_err(|e| error_to_js(&e))
}

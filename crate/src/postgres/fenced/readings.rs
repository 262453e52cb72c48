//! The readings of the library's tables on the native client (`library_tables.rs` holds the
//! statements and their comparison).

use postgres::types::ToSql;
use postgres::Transaction;

use crate::error::Result;
use crate::postgres::failure::pg;
pub(super) use crate::postgres::library_tables::Reading;

/// The rows of a simple query, up to seven text columns each (missing ones `None`).
pub(super) fn rows(client: &mut impl postgres::GenericClient, sql: &str) -> Result<Vec<Reading>> {
    let messages = client.simple_query(sql).map_err(pg("fenced"))?;
    Ok(messages
        .iter()
        .filter_map(|m| match m {
            postgres::SimpleQueryMessage::Row(row) => Some(std::array::from_fn(|i| {
                row.try_get(i).ok().flatten().map(String::from)
            })),
            _ => None,
        })
        .collect())
}

pub(super) fn fingerprint(
    tx: &mut Transaction<'_>,
    stmt: &postgres::Statement,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Reading>> {
    let rows = tx.query(stmt, params).map_err(pg("fenced"))?;
    rows.iter()
        .map(|row| {
            let mut reading: Reading = Default::default();
            for (i, value) in reading.iter_mut().enumerate() {
                *value = row.try_get(i).map_err(pg("fenced"))?;
            }
            Ok(reading)
        })
        .collect()
}

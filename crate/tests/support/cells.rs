//! A table read cell by cell, exactly as SQLite stores it: what a test compares to see that a
//! refused or failed operation changed nothing, to the byte.

use rusqlite::types::ValueRef;
use rusqlite::Connection;

/// One cell exactly as stored: type and bytes (reals by their bit pattern).
#[derive(Debug, PartialEq)]
pub enum Cell {
    Null,
    Int(i64),
    Real(u64),
    Text(Vec<u8>),
    Blob(Vec<u8>),
}

impl From<ValueRef<'_>> for Cell {
    fn from(value: ValueRef<'_>) -> Self {
        match value {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(i) => Cell::Int(i),
            ValueRef::Real(f) => Cell::Real(f.to_bits()),
            ValueRef::Text(t) => Cell::Text(t.to_vec()),
            ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
        }
    }
}

/// Every row of `query`, cell by cell.
pub fn rows(conn: &Connection, query: &str) -> Vec<Vec<Cell>> {
    let mut stmt = conn.prepare(query).unwrap();
    let n = stmt.column_count();
    stmt.query_map([], |row| {
        (0..n)
            .map(|i| row.get_ref(i).map(Cell::from))
            .collect::<rusqlite::Result<Vec<_>>>()
    })
    .unwrap()
    .collect::<rusqlite::Result<Vec<_>>>()
    .unwrap()
}

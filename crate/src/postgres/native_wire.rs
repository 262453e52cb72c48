//! The [`Wire`] of a native session: the catalogue's statements, prepared on the synchronous
//! `postgres` client at connect (`session.rs`), run with their values; every answer is there
//! when the call returns, so the operations' futures finish in one poll
//! ([`ready`](crate::async_leases::ready)).

use std::error::Error as StdError;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, GenericClient};

use super::failure::pg;
use super::session::{native_type, Session, Statements};
use super::wire::{wrong_shape, Answer, Control, Row, Sql, Value, Wire};
use crate::error::Result;

/// A connection lent to one operation: a live session's client and its prepared statements, or
/// (while the session is set up) a bare client.
pub(crate) struct ClientWire<'c, C: GenericClient = Client> {
    client: &'c mut C,
    prepared: Option<&'c Statements>,
}

impl<'c> ClientWire<'c> {
    /// A live session's connection.
    pub(super) fn of(session: &'c mut Session) -> Self {
        ClientWire {
            client: &mut session.client,
            prepared: Some(&session.stmts),
        }
    }
}

impl<'c, C: GenericClient> ClientWire<'c, C> {
    /// A connection (or a transaction on it) with the session's prepared statements.
    pub(super) fn prepared(client: &'c mut C, stmts: &'c Statements) -> Self {
        ClientWire {
            client,
            prepared: Some(stmts),
        }
    }

    /// A connection (or a caller's transaction) whose statements are not prepared: each is
    /// prepared when it runs.
    pub(crate) fn bare(client: &'c mut C) -> Self {
        ClientWire {
            client,
            prepared: None,
        }
    }
}

impl<C: GenericClient> Wire for ClientWire<'_, C> {
    async fn run(
        &mut self,
        operation: &'static str,
        sql: Sql,
        params: Vec<Value>,
    ) -> Result<Answer> {
        let prepared;
        let statement = match self.prepared.and_then(|stmts| stmts.get(sql)) {
            Some(statement) => statement,
            None => {
                let types: Vec<Type> = sql.params().iter().map(|t| native_type(*t)).collect();
                prepared = self
                    .client
                    .prepare_typed(&sql.text(), &types)
                    .map_err(pg(operation))?;
                &prepared
            }
        };
        let params: Vec<&(dyn ToSql + Sync)> =
            params.iter().map(|p| p as &(dyn ToSql + Sync)).collect();
        if statement.columns().is_empty() {
            let changed = self
                .client
                .execute(statement, &params)
                .map_err(pg(operation))?;
            return Ok(Answer {
                rows: Vec::new(),
                changed,
            });
        }
        let rows = self
            .client
            .query(statement, &params)
            .map_err(pg(operation))?;
        let changed = rows.len() as u64;
        let rows = rows
            .iter()
            .map(|row| row_of(operation, row))
            .collect::<Result<_>>()?;
        Ok(Answer { rows, changed })
    }

    async fn batch(&mut self, operation: &'static str, script: &str) -> Result<()> {
        self.client.batch_execute(script).map_err(pg(operation))
    }

    async fn control(&mut self, operation: &'static str, command: Control) -> Result<()> {
        self.client
            .batch_execute(command.sql())
            .map_err(pg(operation))
    }
}

/// A client row as values, by its columns' types.
fn row_of(operation: &'static str, row: &postgres::Row) -> Result<Row> {
    let value = |i: usize, ty: &Type| -> std::result::Result<Value, postgres::Error> {
        Ok(match *ty {
            Type::TEXT | Type::VARCHAR | Type::NAME => row
                .try_get::<_, Option<String>>(i)?
                .map_or(Value::Null, Value::Text),
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)?
                .map_or(Value::Null, Value::Int),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)?
                .map_or(Value::Null, |n| Value::Int(n.into())),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)?
                .map_or(Value::Null, |n| Value::Int(n.into())),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(i)?
                .map_or(Value::Null, Value::Float),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)?
                .map_or(Value::Null, Value::Bool),
            _ => return Ok(Value::Null),
        })
    };
    row.columns()
        .iter()
        .enumerate()
        .map(|(i, column)| match *column.type_() {
            Type::TEXT
            | Type::VARCHAR
            | Type::NAME
            | Type::INT8
            | Type::INT4
            | Type::INT2
            | Type::FLOAT8
            | Type::BOOL => value(i, column.type_()).map_err(pg(operation)),
            ref other => Err(wrong_shape(
                operation,
                format!("column {} is of type {other}", column.name()),
            )),
        })
        .collect::<Result<Vec<_>>>()
        .map(Row)
}

impl ToSql for Value {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn StdError + Sync + Send>> {
        match self {
            Value::Null => Ok(IsNull::Yes),
            // Checked: an integer sent for a `double precision` parameter is refused by the
            // client, never written as the wrong bytes.
            Value::Text(text) => text.to_sql_checked(ty, out),
            Value::Int(n) => n.to_sql_checked(ty, out),
            Value::Float(x) => x.to_sql_checked(ty, out),
            Value::Bool(b) => b.to_sql_checked(ty, out),
            Value::TextArray(texts) => texts.to_sql_checked(ty, out),
            Value::NullableTextArray(texts) => texts.to_sql_checked(ty, out),
            Value::IntArray(ns) => ns.to_sql_checked(ty, out),
            Value::FloatArray(xs) => xs.to_sql_checked(ty, out),
        }
    }

    /// Any type here; each variant checks the parameter's type against its own in `to_sql`.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

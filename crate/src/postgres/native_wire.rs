//! The [`Wire`] of a native session: the catalogue's statements, prepared on the synchronous
//! `postgres` client at connect (`session.rs`), run with their values; every answer is there
//! when the call returns, so the operations' futures finish in one poll
//! ([`ready`](crate::async_leases::ready)).

use std::error::Error as StdError;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};
use postgres::{Client, GenericClient, Statement};

use super::failure::pg;
use super::wire::{wrong_shape, Answer, Control, PgType, Row, Sql, Value, Wire};
use crate::error::Result;

/// A connection lent to one operation: a live session's client and its prepared statements, or
/// (while the session is set up) a bare client.
pub(crate) struct ClientWire<'c, C: GenericClient = Client> {
    client: &'c mut C,
    prepared: Option<&'c Statements>,
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

/// The statements of the contract, prepared once per connection with fixed parameter types.
pub(super) struct Statements {
    /// The readings of a fenced write (`postgres/fenced/readings.rs`); the second also applies
    /// [`SESSION_SETTINGS`] again (`$1`).
    pub(super) fingerprint: Statement,
    pub(super) fingerprint_after: Statement,
    /// A fenced write's lease check: the row, locked until the commit.
    pub(super) read_lease_for_share: Statement,
    pub(super) enqueue: Statement,
    pub(super) state: Statement,
    pub(super) jobs: Statement,
    pub(super) claim: Statement,
    pub(super) read_lease: Statement,
    /// The first claimable job of some queues, locked or not: its id and insertion number.
    pub(super) peek_next: Statement,
    /// `stats` of one queue.
    pub(super) stats_queue: Statement,
    pub(super) renew: Statement,
    pub(super) complete: Statement,
    pub(super) release: Statement,
    pub(super) payload: Statement,
    pub(super) fail_retry: Statement,
    pub(super) fail_dead: Statement,
    pub(super) revive: Statement,
    pub(super) job_report: Statement,
    pub(super) failures: Statement,
    pub(super) stats: Statement,
    /// The batch operations (`postgres/batch.rs`).
    pub(super) enqueue_many: Statement,
    /// Also claim_next's statement (with how many = 1).
    pub(super) claim_next_many: Statement,
    pub(super) claim_one_bucket: Statement,
    pub(super) renew_many: Statement,
    pub(super) complete_many: Statement,
}

impl Statements {
    pub(super) fn prepare(client: &mut Client) -> std::result::Result<Self, postgres::Error> {
        // The contract's statements, as the catalogue (`wire.rs`) writes them for every client.
        let mut p = |sql: Sql| {
            let types: Vec<Type> = sql.params().iter().map(|t| native_type(*t)).collect();
            client.prepare_typed(&sql.text(), &types)
        };
        Ok(Statements {
            fingerprint: p(Sql::Fingerprint)?,
            fingerprint_after: p(Sql::FingerprintAfter)?,
            read_lease_for_share: p(Sql::ReadLeaseForShare)?,
            enqueue: p(Sql::Enqueue)?,
            state: p(Sql::State)?,
            jobs: p(Sql::Jobs)?,
            claim: p(Sql::Claim)?,
            read_lease: p(Sql::ReadLease)?,
            peek_next: p(Sql::PeekNext)?,
            stats_queue: p(Sql::StatsQueue)?,
            renew: p(Sql::Renew)?,
            complete: p(Sql::Complete)?,
            release: p(Sql::Release)?,
            payload: p(Sql::Payload)?,
            fail_retry: p(Sql::FailRetry)?,
            fail_dead: p(Sql::FailDead)?,
            revive: p(Sql::Revive)?,
            job_report: p(Sql::JobReport)?,
            failures: p(Sql::Failures)?,
            stats: p(Sql::Stats)?,
            enqueue_many: p(Sql::EnqueueMany)?,
            claim_next_many: p(Sql::ClaimNextMany)?,
            claim_one_bucket: p(Sql::ClaimOneBucket)?,
            renew_many: p(Sql::RenewMany)?,
            complete_many: p(Sql::CompleteMany)?,
        })
    }

    /// The prepared statement of `sql`; `None` for the statements of the set-up, which run
    /// before the tables they would be prepared against exist, and the rare ones (a worker's
    /// beat, once per renew interval; schedules; the idle worker's next due time; a dashboard's
    /// reads), prepared when they run.
    pub(super) fn get(&self, sql: Sql) -> Option<&Statement> {
        Some(match sql {
            Sql::SessionSettings
            | Sql::Inspect
            | Sql::Columns
            | Sql::SchemaLock
            | Sql::TrackBody
            | Sql::WorkerBeat
            | Sql::WorkersPrune
            | Sql::SchedulePut
            | Sql::ScheduleDelete
            | Sql::Schedules
            | Sql::ScheduleLast
            | Sql::NextDue
            | Sql::ListByUntil
            | Sql::ListDead
            | Sql::ListNewest
            | Sql::QueueStats
            | Sql::DeadPerQueue
            | Sql::OldestWaiting
            | Sql::Prune
            | Sql::FenceFloor
            | Sql::Workers
            | Sql::HeldLeases
            | Sql::GuardAccept
            | Sql::GuardCurrent
            | Sql::GuardWrites => return None,
            Sql::Enqueue => &self.enqueue,
            Sql::State => &self.state,
            Sql::Jobs => &self.jobs,
            Sql::Claim => &self.claim,
            Sql::ReadLease => &self.read_lease,
            Sql::PeekNext => &self.peek_next,
            Sql::Payload => &self.payload,
            Sql::Renew => &self.renew,
            Sql::Complete => &self.complete,
            Sql::Release => &self.release,
            Sql::FailRetry => &self.fail_retry,
            Sql::FailDead => &self.fail_dead,
            Sql::Revive => &self.revive,
            Sql::JobReport => &self.job_report,
            Sql::Failures => &self.failures,
            Sql::Stats => &self.stats,
            Sql::StatsQueue => &self.stats_queue,
            Sql::EnqueueMany => &self.enqueue_many,
            Sql::ClaimNextMany => &self.claim_next_many,
            Sql::ClaimOneBucket => &self.claim_one_bucket,
            Sql::RenewMany => &self.renew_many,
            Sql::CompleteMany => &self.complete_many,
            Sql::Fingerprint => &self.fingerprint,
            Sql::FingerprintAfter => &self.fingerprint_after,
            Sql::ReadLeaseForShare => &self.read_lease_for_share,
        })
    }
}

/// The native client's type of a catalogue parameter.
pub(super) fn native_type(t: PgType) -> Type {
    match t {
        PgType::Text => Type::TEXT,
        PgType::Bool => Type::BOOL,
        PgType::Int8 => Type::INT8,
        PgType::Float8 => Type::FLOAT8,
        PgType::TextArray => Type::TEXT_ARRAY,
        PgType::Int8Array => Type::INT8_ARRAY,
        PgType::Float8Array => Type::FLOAT8_ARRAY,
    }
}

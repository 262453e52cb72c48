//! The seam between the PostgreSQL backend's rules and a connection: the statements the backend
//! runs ([`Sql`], each with its text and parameter types, written once), the values that go in
//! and come back ([`Value`], [`Row`]), and [`Wire`], what a connection must do to run them.
//!
//! The operations (`ops.rs`) are `async` functions generic over a [`Wire`], so one copy of them
//! serves every client: natively the synchronous `postgres` client, whose answers are ready at
//! once (`native_wire.rs`, driven by [`ready`](crate::async_leases::ready)); in Node, `pg` through JavaScript promises.
//! Nothing here knows a client library.

use std::borrow::Cow;
use std::future::Future;

use crate::error::{Error, Result};

/// A statement of the backend: its text (from `sql/*.sql` where it is longer than a line) and
/// the types of its parameters, so that every client prepares it the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sql {
    Enqueue,
    SetQueue,
    State,
    Jobs,
    Claim,
    ReadLease,
    PeekNext,
    Payload,
    Renew,
    Complete,
    Release,
    FailRetry,
    FailDead,
    Revive,
    JobReport,
    Failures,
    Stats,
    StatsQueue,
    EnqueueMany,
    ClaimNextMany,
    RenewMany,
    CompleteMany,
}

/// A parameter's PostgreSQL type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PgType {
    Text,
    Int8,
    Float8,
    TextArray,
    Int8Array,
    Float8Array,
}

impl Sql {
    /// Every statement.
    #[cfg(test)]
    pub(crate) const ALL: [Sql; 22] = [
        Sql::Enqueue,
        Sql::SetQueue,
        Sql::State,
        Sql::Jobs,
        Sql::Claim,
        Sql::ReadLease,
        Sql::PeekNext,
        Sql::Payload,
        Sql::Renew,
        Sql::Complete,
        Sql::Release,
        Sql::FailRetry,
        Sql::FailDead,
        Sql::Revive,
        Sql::JobReport,
        Sql::Failures,
        Sql::Stats,
        Sql::StatsQueue,
        Sql::EnqueueMany,
        Sql::ClaimNextMany,
        Sql::RenewMany,
        Sql::CompleteMany,
    ];

    /// The statement's text.
    pub(crate) fn text(self) -> Cow<'static, str> {
        let text: &'static str = match self {
            Sql::Enqueue => include_str!("sql/enqueue.sql"),
            Sql::SetQueue => include_str!("sql/set_queue.sql"),
            Sql::State => "SELECT id, owner, until, fence, result, done FROM jobs WHERE id = $1",
            Sql::Jobs => {
                "SELECT j.id, j.owner, j.until, j.fence, j.result, j.done FROM jobs j \
                 LEFT JOIN leasefence_order o ON o.id = j.id ORDER BY o.seq NULLS LAST, j.id"
            }
            Sql::Claim => {
                "UPDATE jobs SET owner = $2, until = $3, fence = fence + 1 \
                 WHERE id = $1 AND done = 0 AND until <= $4 AND fence < 9223372036854775807 \
                 RETURNING fence"
            }
            Sql::ReadLease => "SELECT owner, until, fence, done FROM jobs WHERE id = $1",
            Sql::PeekNext => concat!(
                include_str!("sql/candidates.sql"),
                include_str!("sql/peek_next.sql")
            ),
            Sql::Payload => "SELECT payload FROM leasefence_payloads WHERE job = $1",
            Sql::Renew => {
                "UPDATE jobs SET until = $5 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4"
            }
            Sql::Complete => {
                "UPDATE jobs SET result = $5, done = 1 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4"
            }
            Sql::Release => return notifying(include_str!("sql/release.sql")).into(),
            Sql::FailRetry => return notifying(include_str!("sql/fail_retry.sql")).into(),
            Sql::FailDead => include_str!("sql/fail_dead.sql"),
            Sql::Revive => return notifying(include_str!("sql/revive.sql")).into(),
            Sql::JobReport => include_str!("sql/job_report.sql"),
            Sql::Failures => include_str!("sql/failures.sql"),
            Sql::Stats => include_str!("sql/stats.sql"),
            Sql::StatsQueue => include_str!("sql/stats_queue.sql"),
            Sql::EnqueueMany => include_str!("sql/enqueue_many.sql"),
            Sql::ClaimNextMany => concat!(
                include_str!("sql/candidates.sql"),
                include_str!("sql/claim_next_many.sql")
            ),
            Sql::RenewMany => include_str!("sql/renew_many.sql"),
            Sql::CompleteMany => include_str!("sql/complete_many.sql"),
        };
        Cow::Borrowed(text)
    }

    /// The types of the statement's parameters, `$1` first.
    pub(crate) fn params(self) -> &'static [PgType] {
        use PgType::*;
        match self {
            Sql::Enqueue => &[Text, Float8, Text, Text],
            Sql::SetQueue => &[TextArray, TextArray, Int8Array],
            Sql::State | Sql::ReadLease | Sql::Payload | Sql::JobReport | Sql::Failures => &[Text],
            Sql::Jobs => &[],
            Sql::Claim => &[Text, Text, Float8, Float8],
            Sql::PeekNext => &[Float8, TextArray, Int8],
            Sql::Renew => &[Text, Text, Int8, Float8, Float8],
            Sql::Complete => &[Text, Text, Int8, Float8, Text],
            Sql::Release => &[Text, Text, Int8],
            Sql::FailRetry => &[Text, Text, Int8, Float8, Float8, Text],
            Sql::FailDead => &[Text, Text, Int8, Float8, Text],
            Sql::Revive => &[Text, Float8],
            Sql::Stats => &[Float8],
            Sql::StatsQueue => &[Float8, Text],
            Sql::EnqueueMany => &[TextArray, Float8Array, TextArray, TextArray],
            Sql::ClaimNextMany => &[Float8, TextArray, Int8, Text, Float8, Int8],
            Sql::RenewMany => &[TextArray, TextArray, Int8Array, Float8, Float8],
            Sql::CompleteMany => &[TextArray, TextArray, Int8Array, TextArray, Float8],
        }
    }
}

/// A statement that frees jobs (release, a failure's retry, revive) with its wake-up put in:
/// `sql/notify_freed.sql` in place of the statement's `-- notify freed` line, so the wake-up is
/// written once.
pub(crate) fn notifying(statement: &str) -> String {
    const MARK: &str = "-- notify freed\n";
    debug_assert_eq!(statement.matches(MARK).count(), 1, "{statement}");
    let fragment = include_str!("sql/notify_freed.sql");
    // Only the fragment's CTE is spliced in, not its comment.
    let cte: String = fragment
        .lines()
        .filter(|line| !line.starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n");
    statement.replacen(MARK, &format!("{cte}\n"), 1)
}

/// A value sent as a parameter or read from a row. Integers are `bigint` and numbers `double
/// precision` on the server; `done` (an `integer`) arrives as [`Value::Int`] too.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Text(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    TextArray(Vec<String>),
    IntArray(Vec<i64>),
}

impl From<&str> for Value {
    fn from(text: &str) -> Value {
        Value::Text(text.to_owned())
    }
}

impl From<Option<&str>> for Value {
    fn from(text: Option<&str>) -> Value {
        text.map_or(Value::Null, Value::from)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::Int(n)
    }
}

impl From<f64> for Value {
    fn from(x: f64) -> Value {
        Value::Float(x)
    }
}

impl From<Option<Vec<&str>>> for Value {
    fn from(texts: Option<Vec<&str>>) -> Value {
        texts.map_or(Value::Null, |texts| {
            Value::TextArray(texts.into_iter().map(str::to_owned).collect())
        })
    }
}

/// One row of an answer, its columns in the statement's order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row(pub(crate) Vec<Value>);

/// What a statement answered: its rows, and how many rows it changed (an `UPDATE` without
/// `RETURNING` answers no rows).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Answer {
    pub(crate) rows: Vec<Row>,
    pub(crate) changed: u64,
}

impl Answer {
    /// The first row, if any.
    pub(crate) fn first(self) -> Option<Row> {
        self.rows.into_iter().next()
    }

    /// The only row, which the statement always returns (an aggregate, an `INSERT` counted).
    pub(crate) fn one(self, operation: &'static str) -> Result<Row> {
        self.first().ok_or_else(|| {
            wrong_shape(
                operation,
                "a statement that always answers one row gave none",
            )
        })
    }
}

/// A row whose shape is not what the statement returns: the server's schema or the client's
/// decoding is not the one this crate was built for.
pub(crate) fn wrong_shape(operation: &'static str, problem: impl Into<String>) -> Error {
    Error::Postgres {
        operation,
        source: crate::error::PostgresError(crate::error::PgFailure::Reported {
            sqlstate: None,
            message: format!(
                "PostgreSQL answered in a shape this leasefence does not read ({}): is a table \
                 of another program or version in the way?",
                problem.into()
            ),
        }),
        disconnected: false,
        transient: false,
        refused_for_good: false,
    }
}

impl Row {
    fn at(&self, operation: &'static str, i: usize) -> Result<&Value> {
        self.0
            .get(i)
            .ok_or_else(|| wrong_shape(operation, format!("no column {i}")))
    }

    /// Column `i`, text or `NULL`.
    pub(crate) fn opt_text(&self, operation: &'static str, i: usize) -> Result<Option<String>> {
        match self.at(operation, i)? {
            Value::Null => Ok(None),
            Value::Text(text) => Ok(Some(text.clone())),
            other => Err(wrong_shape(
                operation,
                format!("column {i} is {other:?}, not text"),
            )),
        }
    }

    /// Column `i`, text.
    pub(crate) fn text(&self, operation: &'static str, i: usize) -> Result<String> {
        self.opt_text(operation, i)?
            .ok_or_else(|| wrong_shape(operation, format!("column {i} is NULL")))
    }

    /// Column `i`, an integer or `NULL`. Clients that pass `bigint` on as text (so as not to
    /// round it through a double) are read exactly.
    pub(crate) fn opt_int(&self, operation: &'static str, i: usize) -> Result<Option<i64>> {
        match self.at(operation, i)? {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            Value::Text(text) => text.parse().map(Some).map_err(|_| {
                wrong_shape(operation, format!("column {i} is {text:?}, not an integer"))
            }),
            other => Err(wrong_shape(
                operation,
                format!("column {i} is {other:?}, not an integer"),
            )),
        }
    }

    /// Column `i`, an integer.
    pub(crate) fn int(&self, operation: &'static str, i: usize) -> Result<i64> {
        self.opt_int(operation, i)?
            .ok_or_else(|| wrong_shape(operation, format!("column {i} is NULL")))
    }

    /// Column `i`, a number or `NULL`.
    pub(crate) fn opt_float(&self, operation: &'static str, i: usize) -> Result<Option<f64>> {
        match self.at(operation, i)? {
            Value::Null => Ok(None),
            Value::Float(x) => Ok(Some(*x)),
            other => Err(wrong_shape(
                operation,
                format!("column {i} is {other:?}, not a number"),
            )),
        }
    }

    /// Column `i`, a number.
    pub(crate) fn float(&self, operation: &'static str, i: usize) -> Result<f64> {
        self.opt_float(operation, i)?
            .ok_or_else(|| wrong_shape(operation, format!("column {i} is NULL")))
    }
}

/// A connection the operations run on. Each call runs one statement of [`Sql`] with its
/// parameters (in the types [`Sql::params`] names) and answers its rows, or this crate's error for
/// `operation` (the implementation classifies its client's errors: lost connection, transient,
/// refused for good).
pub(crate) trait Wire {
    /// Runs `sql` with `params`.
    fn run(
        &mut self,
        operation: &'static str,
        sql: Sql,
        params: Vec<Value>,
    ) -> impl Future<Output = Result<Answer>>;

    /// Runs `BEGIN`, `COMMIT` or `ROLLBACK` (a statement without parameters or rows).
    fn control(
        &mut self,
        operation: &'static str,
        command: Control,
    ) -> impl Future<Output = Result<()>>;
}

/// The transaction commands a [`Wire`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    Begin,
    Commit,
    Rollback,
}

impl Control {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Control::Begin => "BEGIN",
            Control::Commit => "COMMIT",
            Control::Rollback => "ROLLBACK",
        }
    }
}

/// Runs `work` in one transaction on `wire`: committed when it succeeds, rolled back when it
/// fails (the rollback's own failure is dropped: the first error is the one to report, and a
/// lost connection rolls back by itself).
pub(crate) async fn in_transaction<W: Wire, T>(
    wire: &mut W,
    operation: &'static str,
    work: impl AsyncFnOnce(&mut W) -> Result<T>,
) -> Result<T> {
    wire.control(operation, Control::Begin).await?;
    match work(wire).await {
        Ok(value) => {
            wire.control(operation, Control::Commit).await?;
            Ok(value)
        }
        Err(err) => {
            let _ = wire.control(operation, Control::Rollback).await;
            Err(err)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each statement's text uses exactly the parameters its types list: `$1` to `$n`, each.
    #[test]
    fn every_statement_has_the_parameters_it_declares() {
        for sql in Sql::ALL {
            let text = sql.text();
            let declared = sql.params().len();
            for n in 1..=declared {
                assert!(text.contains(&format!("${n}")), "{sql:?} never uses ${n}");
            }
            assert!(
                !text.contains(&format!("${}", declared + 1)),
                "{sql:?} uses ${} beyond its {declared} declared types",
                declared + 1
            );
        }
    }

    #[test]
    fn rows_read_what_they_hold_and_name_what_they_do_not() {
        let row = Row(vec![
            Value::Text("a".into()),
            Value::Null,
            Value::Int(3),
            Value::Text("9223372036854775807".into()),
            Value::Float(1.5),
        ]);
        assert_eq!(row.text("t", 0).unwrap(), "a");
        assert_eq!(row.opt_text("t", 1).unwrap(), None);
        assert_eq!(row.int("t", 2).unwrap(), 3);
        // bigint passed on as text by a client keeps every digit.
        assert_eq!(row.int("t", 3).unwrap(), i64::MAX);
        assert_eq!(row.float("t", 4).unwrap(), 1.5);
        let wrong = row.int("claim", 0).unwrap_err().to_string();
        assert!(
            wrong.contains("claim") && wrong.contains("column 0"),
            "{wrong}"
        );
        assert!(row.text("t", 1).unwrap_err().to_string().contains("NULL"));
        assert!(row
            .float("t", 9)
            .unwrap_err()
            .to_string()
            .contains("no column 9"));
    }
}

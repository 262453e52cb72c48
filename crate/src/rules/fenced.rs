//! Fenced writes (docs/contract.md section 8), backend-neutral: the statement and value types every
//! runtime hands in, what a fenced transaction does at its end ([`Finish`]), which tables the
//! caller's statements may never write, and the statements that may never run inside the
//! transaction (they would end it early or change the connection for later callers).
//!
//! The backends enforce the table rule each with the strongest tool they have: SQLite's
//! authorizer (every table a statement, a trigger or a view would write, decided when the
//! statement is compiled), PostgreSQL's per-transaction write counters of the library's tables.

use crate::error::{Error, Result};

/// One bound parameter of a fenced statement: what a JSON scalar becomes in SQL.
///
/// ```
/// use leasefence::SqlValue;
/// assert_eq!(SqlValue::from(3), SqlValue::Integer(3));
/// assert_eq!(SqlValue::from("x"), SqlValue::Text("x".into()));
/// assert_eq!(SqlValue::from(None::<&str>), SqlValue::Null);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    /// SQL `NULL`.
    Null,
    /// A whole number (JSON numbers written without a fraction or exponent that fit `i64`).
    Integer(i64),
    /// Any other number.
    Real(f64),
    /// Text.
    Text(String),
    /// A boolean: SQLite stores it as 1 or 0, PostgreSQL binds it as `boolean` (or 1/0 into an
    /// integer parameter).
    Bool(bool),
}

impl From<i64> for SqlValue {
    fn from(value: i64) -> Self {
        SqlValue::Integer(value)
    }
}

impl From<i32> for SqlValue {
    fn from(value: i32) -> Self {
        SqlValue::Integer(value.into())
    }
}

impl From<f64> for SqlValue {
    fn from(value: f64) -> Self {
        SqlValue::Real(value)
    }
}

impl From<bool> for SqlValue {
    fn from(value: bool) -> Self {
        SqlValue::Bool(value)
    }
}

impl From<&str> for SqlValue {
    fn from(value: &str) -> Self {
        SqlValue::Text(value.into())
    }
}

impl From<String> for SqlValue {
    fn from(value: String) -> Self {
        SqlValue::Text(value)
    }
}

impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(value: Option<T>) -> Self {
        value.map_or(SqlValue::Null, Into::into)
    }
}

/// One of the caller's statements: SQL text and its parameters, bound in order.
///
/// Write the placeholders as `$1`, `$2`, ... to run the same SQL on both backends (SQLite also
/// takes `?`, `?NNN`). One statement per entry.
///
/// ```
/// use leasefence::Statement;
/// let s = Statement::new("UPDATE counters SET n = $1 WHERE id = $2", [7.into(), "c".into()]);
/// assert_eq!(s.params.len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// The SQL text: one statement.
    pub sql: String,
    /// Its parameters; `$N` takes the N-th.
    pub params: Vec<SqlValue>,
}

impl Statement {
    /// A statement with its parameters.
    ///
    /// ```
    /// let s = leasefence::Statement::new("DELETE FROM outbox", []);
    /// assert!(s.params.is_empty());
    /// ```
    pub fn new(sql: impl Into<String>, params: impl IntoIterator<Item = SqlValue>) -> Self {
        Statement {
            sql: sql.into(),
            params: params.into_iter().collect(),
        }
    }
}

/// What a fenced query read, the same on both backends: the column names, then each row's values
/// in column order.
///
/// ```
/// use leasefence::{Rows, SqlValue};
/// let read = Rows { columns: vec!["n".into()], rows: vec![vec![SqlValue::Integer(1)]] };
/// assert_eq!(read.get(0, "n"), Some(&SqlValue::Integer(1)));
/// assert_eq!(read.get(1, "n"), None);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rows {
    /// The names of the columns, in order.
    pub columns: Vec<String>,
    /// The rows, each with one value per column.
    pub rows: Vec<Vec<SqlValue>>,
}

impl Rows {
    /// The value of column `column` in row `row` (from 0); `None` when either is missing.
    ///
    /// ```
    /// # use leasefence::{Rows, SqlValue};
    /// let read = Rows { columns: vec!["a".into(), "b".into()], rows: vec![vec![SqlValue::Null, 2.into()]] };
    /// assert_eq!(read.get(0, "b"), Some(&SqlValue::Integer(2)));
    /// assert_eq!(read.get(0, "c"), None);
    /// ```
    pub fn get(&self, row: usize, column: &str) -> Option<&SqlValue> {
        let at = self.columns.iter().position(|c| c == column)?;
        self.rows.get(row)?.get(at)
    }
}

/// The caller's handle on a fenced transaction, the same on every backend: statements on the
/// caller's own tables with [`SqlValue`] parameters (`$1`, `$2`, ...), inside the transaction
/// that checks the lease. What [`Leases::fenced_with`](crate::Leases::fenced_with) hands its
/// closure. A refused statement is [`Error::InvalidArgument`], a failing one
/// [`Error::Statement`]; either, returned from the closure, rolls everything back (and a failure
/// the closure swallows still fails the call).
///
/// ```
/// use leasefence::{FencedHandle, Result, SqlValue};
/// fn bump(tx: &mut dyn FencedHandle, id: &str) -> Result<i64> {
///     let read = tx.query("SELECT n FROM counters WHERE id = $1", &[id.into()])?;
///     let n = match read.get(0, "n") { Some(SqlValue::Integer(n)) => *n, _ => 0 };
///     tx.execute("UPDATE counters SET n = $1 WHERE id = $2", &[(n + 1).into(), id.into()])?;
///     Ok(n + 1)
/// }
/// # let _ = bump;
/// ```
pub trait FencedHandle {
    /// Runs one statement; the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64>;

    /// Reads every row of one query. On SQLite a blob column is refused (select `hex(column)`);
    /// on PostgreSQL a column of a type other than boolean, integer, floating point or text is
    /// (cast it: `column::text`).
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Rows>;
}

/// What a fenced transaction does to the job when the lease is current and every statement ran.
///
/// ```
/// use leasefence::Finish;
/// assert_eq!(Finish::default(), Finish::KeepLease);
/// let done = Finish::Complete(Some("sent".into()));
/// # let _ = done;
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Finish {
    /// The lease stays as it is (the worker goes on, and completes later).
    #[default]
    KeepLease,
    /// The job completes with this result in the same commit.
    Complete(Option<String>),
}

impl Finish {
    /// The `complete` and `result` arguments of the protocol as a [`Finish`]: a result needs
    /// `complete: true`.
    pub(crate) fn from_parts(complete: bool, result: Option<String>) -> Result<Finish> {
        match (complete, result) {
            (true, result) => Ok(Finish::Complete(result)),
            (false, None) => Ok(Finish::KeepLease),
            (false, Some(_)) => Err(Error::invalid(
                "result",
                "is only stored when the job completes: pass complete: true with it",
            )),
        }
    }
}

/// Whether the caller's statements must not write the table `name`: `jobs` and every
/// `leasefence_*` table, compared as SQLite compares names (ASCII case-insensitively).
pub(crate) fn is_library_table(name: &str) -> bool {
    const PREFIX: &str = "leasefence_";
    name.eq_ignore_ascii_case("jobs")
        || (name.len() >= PREFIX.len()
            && name.is_char_boundary(PREFIX.len())
            && name[..PREFIX.len()].eq_ignore_ascii_case(PREFIX))
}

/// The refusal of a write to one of the library's tables.
pub(crate) fn refused_table(table: &str) -> Error {
    Error::invalid(
        "statements",
        format!(
            "write to {table:?} refused: your statements (of a fenced write, or run with \
             enqueue_many) may write your own tables only, never `jobs` or a `leasefence_*` table \
             (jobs and leases are the library's to change)"
        ),
    )
}

/// Statements refused by their first keyword, and why (PostgreSQL's check; SQLite's authorizer
/// refuses the kinds it cannot allow by their action codes). Transaction control would end the
/// fenced transaction early; session commands would outlive it; `COPY` speaks a sub-protocol the
/// store's client does not, and `LOCK`, `ANALYZE` and `VACUUM` act on tables as a whole (the
/// library's among them). The same effects reached from a function or a `DO` block are caught by
/// PostgreSQL's fenced path itself (see `postgres/fenced/`).
#[cfg_attr(not(all(feature = "postgres", not(web))), allow(dead_code))]
const FORBIDDEN_FIRST_WORDS: [(&str, &str); 19] = [
    ("BEGIN", TRANSACTION),
    ("START", TRANSACTION),
    ("COMMIT", TRANSACTION),
    ("END", TRANSACTION),
    ("ROLLBACK", TRANSACTION),
    ("ABORT", TRANSACTION),
    ("SAVEPOINT", TRANSACTION),
    ("RELEASE", TRANSACTION),
    ("PREPARE", SESSION),
    ("DEALLOCATE", SESSION),
    ("SET", SESSION),
    ("RESET", SESSION),
    ("DISCARD", SESSION),
    ("LISTEN", SESSION),
    ("LOAD", SESSION),
    (
        "COPY",
        "COPY streams rows outside the statement protocol the store speaks",
    ),
    ("LOCK", TABLES),
    ("ANALYZE", TABLES),
    ("VACUUM", TABLES),
];

const TRANSACTION: &str = "the library opens, commits and rolls back the transaction itself";
const SESSION: &str = "the connection is the library's, and what this changes would outlive the \
                       transaction";
const TABLES: &str = "it acts on whole tables, and the library's tables and their statistics are \
                      not the statements' to lock or change";

/// The first keyword of `sql`, after white space and comments (`-- ...`, `/* ... */`, nested as
/// PostgreSQL nests them), upper-cased; empty when the text starts with something else.
#[cfg_attr(not(all(feature = "postgres", not(web))), allow(dead_code))]
pub(crate) fn first_word(sql: &str) -> String {
    let bytes = sql.as_bytes();
    let mut i = 0;
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if bytes[i..].starts_with(b"--") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if bytes[i..].starts_with(b"/*") {
            let mut depth = 0usize;
            while i < bytes.len() {
                if bytes[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if bytes[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else {
            break;
        }
    }
    let end = bytes[i..]
        .iter()
        .position(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(bytes.len(), |n| i + n);
    sql[i..end].to_ascii_uppercase()
}

/// Refuses a statement that controls the transaction or the session (PostgreSQL's check; SQLite's
/// authorizer refuses these by their action code).
#[cfg_attr(not(all(feature = "postgres", not(web))), allow(dead_code))]
pub(crate) fn check_statement_kind(sql: &str) -> Result<()> {
    let word = first_word(sql);
    if let Some((_, why)) = FORBIDDEN_FIRST_WORDS.iter().find(|(w, _)| *w == word) {
        return Err(Error::invalid(
            "statements",
            format!("a {word} statement is not allowed among your statements (of a fenced write, or run with enqueue_many): {why}"),
        ));
    }
    Ok(())
}

/// Checks the statement list before any database access: each text non-empty.
pub(crate) fn check_statements(statements: &[Statement]) -> Result<()> {
    for (index, statement) in statements.iter().enumerate() {
        if statement.sql.trim().is_empty() {
            return Err(Error::invalid(
                "statements",
                format!("statement #{index} has no SQL text"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_words_skip_space_and_comments() {
        assert_eq!(first_word("  commit"), "COMMIT");
        assert_eq!(
            first_word("-- note\n /* a /* b */ c */ Rollback;"),
            "ROLLBACK"
        );
        assert_eq!(first_word("(select 1)"), "");
        assert_eq!(first_word("-- only a comment"), "");
        assert!(check_statement_kind("begin").is_err());
        assert!(check_statement_kind("SET LOCAL x = 1").is_err());
        assert!(check_statement_kind("UPDATE t SET x = 1").is_ok());
        assert!(check_statement_kind("settle_table").is_ok());
        for refused in [
            "copy jobs TO STDOUT",
            "LOCK jobs",
            "analyze",
            "DEALLOCATE ALL",
            "LISTEN x",
        ] {
            assert!(check_statement_kind(refused).is_err(), "{refused}");
        }
        assert!(check_statement_kind("copyist").is_ok());
    }

    #[test]
    fn library_tables() {
        assert!(is_library_table("jobs"));
        assert!(is_library_table("Jobs"));
        assert!(is_library_table("LEASEFENCE_anything"));
        assert!(!is_library_table("leasefence"));
        assert!(!is_library_table("my_jobs"));
        assert!(!is_library_table("é"));
    }
}

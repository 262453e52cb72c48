//! The seam between the PostgreSQL backend's rules and a connection: the statements the backend
//! runs ([`Sql`], each with its text and parameter types, written once), the values that go in
//! and come back ([`Value`], [`Row`]), and [`Wire`], what a connection must do to run them.
//!
//! The operations (`ops.rs`) are `async` functions generic over a [`Wire`], so one copy of them
//! serves every client: natively the synchronous `postgres` client, whose answers are ready at once
//! (`native_wire.rs`, driven by [`ready`](crate::async_leases::ready)); in Node, `pg` through
//! JavaScript promises. Nothing here knows a client library.

use std::borrow::Cow;
use std::future::Future;

use crate::error::{Error, Result};

/// A statement of the backend: its text (from `sql/*.sql` where it is longer than a line) and
/// the types of its parameters, so that every client prepares it the same way.
// In wasm the batch and listing statements wait for their operations to be carried over.
#[cfg_attr(web, allow(dead_code))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sql {
    /// The session's settings ([`SESSION_SETTINGS`]), `$1` the lock timeout.
    SessionSettings,
    /// What the schema check finds (`sql/inspect.sql`), `$1` the trigger's body.
    Inspect,
    /// The columns of `jobs` (`sql/columns.sql`).
    Columns,
    /// The lock that serializes schema creation between processes.
    SchemaLock,
    /// The trigger's body for `sql/schema.sql`, as a transaction-local setting.
    TrackBody,
    /// A worker's beat (`sql/worker_beat.sql`).
    WorkerBeat,
    /// The registry's pruning (`sql/workers_prune.sql`).
    WorkersPrune,
    SchedulePut,
    ScheduleDelete,
    Schedules,
    ScheduleLast,
    NextDue,
    ListByUntil,
    ListDead,
    ListNewest,
    QueueStats,
    DeadPerQueue,
    OldestWaiting,
    Prune,
    FenceFloor,
    Workers,
    HeldLeases,
    Enqueue,
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
    ClaimOneBucket,
    RenewMany,
    CompleteMany,
    /// The reading of the library's tables before a fenced write's statements
    /// (`library_tables.rs`).
    Fingerprint,
    /// The reading after them, with the store's settings applied again (`$1` the lock timeout).
    FingerprintAfter,
    /// The job's lease read in a fenced write, its row locked until the commit.
    ReadLeaseForShare,
    /// The fence guard's check (`guard.rs`): `$2` recorded for key `$1` if it is at least the
    /// highest accepted; a row when it was.
    GuardAccept,
    /// The highest fence the guard accepted for key `$1`.
    GuardCurrent,
    /// The rows this transaction wrote to the guard's table, as the server counts them.
    GuardWrites,
}

/// A parameter's PostgreSQL type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PgType {
    Text,
    Bool,
    Int8,
    Float8,
    TextArray,
    Int8Array,
    Float8Array,
}

impl Sql {
    /// The reading of the library's tables a fenced write takes (`library_tables.rs`).
    const FINGERPRINT: &'static str = include_str!("sql/fingerprint.sql");

    /// Every statement.
    #[cfg(test)]
    pub(crate) const ALL: [Sql; 50] = [
        Sql::ListByUntil,
        Sql::ListDead,
        Sql::ListNewest,
        Sql::QueueStats,
        Sql::DeadPerQueue,
        Sql::OldestWaiting,
        Sql::Prune,
        Sql::FenceFloor,
        Sql::Workers,
        Sql::HeldLeases,
        Sql::SchedulePut,
        Sql::ScheduleDelete,
        Sql::Schedules,
        Sql::ScheduleLast,
        Sql::NextDue,
        Sql::SessionSettings,
        Sql::Inspect,
        Sql::Columns,
        Sql::SchemaLock,
        Sql::TrackBody,
        Sql::WorkerBeat,
        Sql::WorkersPrune,
        Sql::Enqueue,
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
        Sql::ClaimOneBucket,
        Sql::RenewMany,
        Sql::CompleteMany,
        Sql::Fingerprint,
        Sql::FingerprintAfter,
        Sql::ReadLeaseForShare,
        Sql::GuardAccept,
        Sql::GuardCurrent,
        Sql::GuardWrites,
    ];

    /// The statement's text.
    pub(crate) fn text(self) -> Cow<'static, str> {
        let text: &'static str = match self {
            Sql::SessionSettings => SESSION_SETTINGS,
            Sql::Inspect => include_str!("sql/inspect.sql"),
            Sql::Columns => include_str!("sql/columns.sql"),
            Sql::SchemaLock => "SELECT 1 FROM pg_advisory_xact_lock($1)",
            Sql::TrackBody => "SELECT set_config('leasefence.track_body', $1, true)",
            Sql::WorkerBeat => include_str!("sql/worker_beat.sql"),
            Sql::WorkersPrune => include_str!("sql/workers_prune.sql"),
            Sql::SchedulePut => include_str!("sql/schedule_put.sql"),
            Sql::ScheduleDelete => include_str!("sql/schedule_delete.sql"),
            Sql::Schedules => include_str!("sql/schedules.sql"),
            Sql::ScheduleLast => include_str!("sql/schedule_last.sql"),
            Sql::NextDue => include_str!("sql/next_due.sql"),
            Sql::ListByUntil => include_str!("sql/list_by_until.sql"),
            Sql::ListDead => include_str!("sql/list_dead.sql"),
            Sql::ListNewest => include_str!("sql/list_newest.sql"),
            Sql::QueueStats => include_str!("sql/queue_stats.sql"),
            Sql::DeadPerQueue => include_str!("sql/dead_per_queue.sql"),
            Sql::OldestWaiting => include_str!("sql/oldest_waiting.sql"),
            Sql::Prune => include_str!("sql/prune.sql"),
            Sql::FenceFloor => include_str!("sql/fence_floor.sql"),
            Sql::Workers => include_str!("sql/workers.sql"),
            Sql::HeldLeases => include_str!("sql/held_leases.sql"),
            Sql::Enqueue => include_str!("sql/enqueue.sql"),
            Sql::State => "SELECT id, owner, until, fence, result, done FROM jobs WHERE id = $1",
            Sql::Jobs => "SELECT id, owner, until, fence, result, done FROM jobs ORDER BY seq",
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
            // The payload and the fence the job started at, of a job just claimed by key.
            Sql::Payload => {
                "SELECT (SELECT payload FROM leasefence_payloads WHERE job = $1), \
                        coalesce((SELECT base FROM jobs WHERE id = $1), 0)"
            }
            Sql::Renew => {
                "UPDATE jobs SET until = $5 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4"
            }
            Sql::Complete => include_str!("sql/complete.sql"),
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
            Sql::ClaimOneBucket => include_str!("sql/claim_one_bucket.sql"),
            Sql::RenewMany => include_str!("sql/renew_many.sql"),
            Sql::CompleteMany => include_str!("sql/complete_many.sql"),
            Sql::Fingerprint => Sql::FINGERPRINT,
            Sql::FingerprintAfter => return fingerprint_after().into(),
            Sql::ReadLeaseForShare => {
                "SELECT owner, until, fence, done FROM jobs WHERE id = $1 FOR SHARE"
            }
            // ON CONFLICT DO UPDATE locks the conflicting row even when its WHERE is false, so
            // the current fence read after a refusal cannot move before the transaction ends.
            Sql::GuardAccept => {
                "INSERT INTO leasefence_guard(key, fence) VALUES ($1, $2) \
                 ON CONFLICT (key) DO UPDATE SET fence = EXCLUDED.fence \
                 WHERE leasefence_guard.fence <= EXCLUDED.fence RETURNING fence"
            }
            Sql::GuardCurrent => "SELECT fence FROM leasefence_guard WHERE key = $1",
            Sql::GuardWrites => {
                "SELECT pg_stat_get_xact_tuples_inserted(c) + pg_stat_get_xact_tuples_updated(c) \
                 + pg_stat_get_xact_tuples_deleted(c) FROM to_regclass('leasefence_guard') AS c"
            }
        };
        Cow::Borrowed(text)
    }

    /// The types of the statement's parameters, `$1` first.
    pub(crate) fn params(self) -> &'static [PgType] {
        use PgType::*;
        match self {
            Sql::SessionSettings | Sql::Inspect | Sql::TrackBody => &[Text],
            Sql::Columns => &[],
            Sql::SchemaLock => &[Int8],
            Sql::WorkerBeat => &[
                Text, Text, Int8, Float8, Float8, Float8, Float8, Int8, Int8, Int8, Int8, Int8,
                Int8, Int8,
            ],
            Sql::WorkersPrune => &[Float8],
            Sql::SchedulePut => &[Text, Text, Text, Text, Int8, Text, Text],
            Sql::ScheduleDelete => &[Text],
            Sql::Schedules => &[],
            Sql::ScheduleLast => &[Text, Int8],
            Sql::NextDue => &[TextArray],
            Sql::ListByUntil => &[Float8, Float8, Float8, Int8, Bool, Text, Int8],
            Sql::ListDead => &[Int8, Text, Int8],
            Sql::ListNewest => &[Int8, Text, Bool, Int8],
            Sql::QueueStats | Sql::OldestWaiting => &[Float8],
            Sql::Prune => &[Float8, Bool, Int8, Bool],
            Sql::FenceFloor => &[],
            Sql::DeadPerQueue => &[],
            Sql::Workers => &[Int8],
            Sql::HeldLeases => &[Float8, Int8],
            Sql::Enqueue => &[Text, Float8, Text, Text, Int8],
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
            Sql::EnqueueMany => &[TextArray, Float8Array, TextArray, TextArray, Int8Array],
            Sql::ClaimNextMany => &[Float8, TextArray, Int8, Text, Float8, Int8],
            Sql::ClaimOneBucket => &[Float8, Text, Float8, TextArray],
            Sql::RenewMany => &[TextArray, TextArray, Int8Array, Float8, Float8],
            Sql::CompleteMany => &[TextArray, TextArray, Int8Array, TextArray, Float8],
            Sql::Fingerprint => &[],
            Sql::FingerprintAfter | Sql::ReadLeaseForShare | Sql::GuardCurrent => &[Text],
            Sql::GuardAccept => &[Text, Int8],
            Sql::GuardWrites => &[],
        }
    }
}

/// The second reading of a fenced write (`sql/fingerprint.sql`, see `library_tables.rs`) and, in
/// the same round trip, the store's settings applied
/// again ([`SESSION_SETTINGS`]'s, `$1` the lock timeout), after the session was given back
/// (`library_tables::GIVE_BACK_SESSION`) with them reset.
/// The settings change nothing this reading reads.
///
/// Not read: the locks the transaction holds. `LOCK` is refused by its first keyword; one taken
/// from a function or a `DO` block lasts until this transaction ends, which the library's commit
/// follows at once, and refusing the call afterwards would not undo the waits it caused meanwhile
/// (no more than a long statement holding the job's row would). Reading `pg_locks` costs more
/// than the rest of the reading together.
fn fingerprint_after() -> String {
    let settings = SESSION_SETTINGS
        .strip_prefix("SELECT ")
        .expect("SESSION_SETTINGS is one SELECT");
    format!(
        "{} UNION ALL SELECT 'settings', {settings}, NULL, NULL",
        Sql::FINGERPRINT.trim_end()
    )
}

/// The session settings the store relies on, applied at connect and again after the caller's
/// statements of every fenced write (`postgres/fenced/`): the busy timeout as `lock_timeout`
/// (`$1`), and durability: a commit returns only once its WAL is flushed. `on` is the server
/// default; a server configured with `off` is overridden for this session (`local` and the
/// synchronous-replication levels are at least as strong and are kept). And no JIT compilation:
/// the planner prices the claim's recursive walk over queues and priorities (claim_next_many.sql)
/// above `jit_above_cost` from its row guesses, and compiling it took 50-80 ms at every
/// execution of a statement that runs in well under a millisecond (a worker at concurrency 64
/// fell from 1,115 to 87 jobs/s). Every statement of the library is a few index probes.
/// And generic plans for the statements prepared once per connection (`plan_cache_mode`): left to
/// itself the server planned `claim_next`'s statement afresh at every execution (its custom plan
/// looks cheaper once the queues parameter is folded in), 0.4-0.6 ms of planning for a statement
/// that runs in 0.3 ms; the library's statements are written so that the plan without the
/// values is the right one (index probes with limits, docs/decisions/postgres-claim-statement.md).
/// A fenced write gives the caller's statements the server's own choice back for its transaction
/// (`fenced/steps.rs`).
pub(crate) const SESSION_SETTINGS: &str = "SELECT set_config('lock_timeout', $1, false), \
     CASE WHEN current_setting('synchronous_commit') = 'off' \
     THEN set_config('synchronous_commit', 'on', false) END, set_config('jit', 'off', false), \
     set_config('plan_cache_mode', 'force_generic_plan', false)";

// What Node's `pg` sends (and the tests check natively).
#[cfg(any(test, web))]
impl PgType {
    /// The type's name in SQL.
    fn sql_name(self) -> &'static str {
        match self {
            PgType::Text => "text",
            PgType::Bool => "bool",
            PgType::Int8 => "int8",
            PgType::Float8 => "float8",
            PgType::TextArray => "text[]",
            PgType::Int8Array => "int8[]",
            PgType::Float8Array => "float8[]",
        }
    }
}

#[cfg(any(test, web))]
impl Sql {
    /// The text with each parameter cast to its type (`$1` becomes `($1::text)`), for a client
    /// that cannot declare parameter types when it prepares (Node's `pg`): the server then infers
    /// exactly the types [`Sql::params`] lists.
    pub(crate) fn text_with_casts(self) -> String {
        let text = self.text();
        let types = self.params();
        let mut out = String::with_capacity(text.len() + 16 * types.len());
        let mut rest = text.as_ref();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let digits = rest[at + 1..]
                .bytes()
                .take_while(u8::is_ascii_digit)
                .count();
            let number: Option<usize> = rest[at + 1..at + 1 + digits].parse().ok();
            match number.and_then(|n| types.get(n.wrapping_sub(1))) {
                Some(ty) => {
                    out.push_str(&format!("(${}::{})", number.unwrap_or(0), ty.sql_name()));
                }
                None => out.push_str(&rest[at..at + 1 + digits]),
            }
            rest = &rest[at + 1 + digits..];
        }
        out.push_str(rest);
        out
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
    /// A `text[]` with `NULL` items (payloads, results).
    NullableTextArray(Vec<Option<String>>),
    IntArray(Vec<i64>),
    FloatArray(Vec<f64>),
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

/// How a failure with SQLSTATE `code` (none when no server answered: the connection could not
/// be made or broke) and `severity` is classified, for every client alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Classified {
    /// The connection is unusable: the next call must connect again.
    pub(crate) lost: bool,
    /// The refusal goes away by itself (deadlock, serialization failure, `lock_timeout`, a full
    /// server): retrying may succeed.
    pub(crate) transient: bool,
    /// The server refused the session for a reason connecting again cannot change (credentials,
    /// `pg_hba.conf`, a database that does not exist).
    pub(crate) refused_for_good: bool,
}

/// Classifies a failure by its SQLSTATE and severity ([`Classified`]).
pub(crate) fn classify(code: Option<&str>, severity: Option<&str>) -> Classified {
    let Some(code) = code else {
        return Classified {
            lost: true,
            transient: false,
            refused_for_good: false,
        };
    };
    Classified {
        // Connection exceptions, and the server ending the session (admin or crash shutdown,
        // starting up).
        lost: code.starts_with("08")
            || matches!(code, "57P01" | "57P02" | "57P03")
            || matches!(severity, Some("FATAL" | "PANIC")),
        // Deadlock, serialization failure, lock not available, too many connections, starting up.
        transient: matches!(code, "40P01" | "40001" | "55P03" | "53300" | "57P03"),
        // Invalid authorization, an unknown database.
        refused_for_good: code.starts_with("28") || code == "3D000",
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

    /// Column `i`, a boolean.
    pub(crate) fn flag(&self, operation: &'static str, i: usize) -> Result<bool> {
        match self.at(operation, i)? {
            Value::Bool(b) => Ok(*b),
            other => Err(wrong_shape(
                operation,
                format!("column {i} is {other:?}, not a boolean"),
            )),
        }
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

    /// Runs `script`, statements without parameters or rows (`sql/schema.sql`).
    fn batch(&mut self, operation: &'static str, script: &str) -> impl Future<Output = Result<()>>;

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
    /// A read-only transaction on one snapshot (`REPEATABLE READ`), for the reads that must
    /// describe one moment.
    BeginSnapshot,
    /// In a fenced write's transaction, before the caller's statements: the server's default
    /// plan choice back for this transaction, where the store's session forces generic plans
    /// for its own statements ([`SESSION_SETTINGS`]).
    CallersPlans,
    Commit,
    Rollback,
}

impl Control {
    pub(crate) fn sql(self) -> &'static str {
        match self {
            Control::Begin => "BEGIN",
            Control::BeginSnapshot => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            Control::CallersPlans => "SET LOCAL plan_cache_mode TO DEFAULT",
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

    #[test]
    fn casts_name_each_parameter_type_once() {
        assert_eq!(
            Sql::Claim.text_with_casts(),
            "UPDATE jobs SET owner = ($2::text), until = ($3::float8), fence = fence + 1 \
             WHERE id = ($1::text) AND done = 0 AND until <= ($4::float8) \
             AND fence < 9223372036854775807 RETURNING fence"
        );
        for sql in Sql::ALL {
            let cast = sql.text_with_casts();
            for (n, ty) in sql.params().iter().enumerate() {
                let placeholder = format!("(${}::{})", n + 1, ty.sql_name());
                assert!(cast.contains(&placeholder), "{sql:?}: no {placeholder}");
            }
            // Every `$n` is inside a cast; dollar signs of other kinds (`%1$I`) are left alone.
            let bare = cast.replace('(', " ").matches(" $").count();
            let casts = cast.matches("($").count();
            assert!(bare <= casts, "{sql:?} has a parameter without a cast");
        }
    }

    /// Each statement as a client without parameter types prepares it (Node's `pg`): the server
    /// infers exactly the declared types. Needs `LEASEFENCE_PG_URL` (`bash scripts/postgres.sh`).
    #[test]
    #[ignore = "needs a PostgreSQL server: bash scripts/postgres.sh"]
    #[cfg(not(web))]
    fn the_cast_statements_prepare_with_the_declared_types_on_a_server() {
        use crate::postgres::native_wire::native_type;
        let url = std::env::var("LEASEFENCE_PG_URL").expect("LEASEFENCE_PG_URL");
        let schema = format!("wire_casts_{}", std::process::id());
        let mut admin = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        admin
            .batch_execute(&format!("CREATE SCHEMA {schema}"))
            .unwrap();
        let scoped = format!(
            "{url}{}options=-csearch_path%3D{schema}",
            if url.contains('?') { '&' } else { '?' }
        );
        let result = std::panic::catch_unwind(|| {
            // The store makes the tables the statements name.
            let store = crate::postgres::PgStore::connect(&scoped).unwrap();
            drop(store);
            let mut client = postgres::Client::connect(&scoped, postgres::NoTls).unwrap();
            // And the fence guard's table, which lives in the application's database.
            client.batch_execute(crate::postgres::guard::TABLE).unwrap();
            for sql in Sql::ALL {
                let statement = client
                    .prepare(&sql.text_with_casts())
                    .unwrap_or_else(|e| panic!("{sql:?}: {e}"));
                let declared: Vec<postgres::types::Type> =
                    sql.params().iter().map(|t| native_type(*t)).collect();
                assert_eq!(statement.params(), declared.as_slice(), "{sql:?}");
            }
        });
        admin
            .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
            .unwrap();
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    }
}

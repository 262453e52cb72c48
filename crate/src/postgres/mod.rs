//! [`PgStore`]: the contract of docs/contract.md sections 2 and 3 on a PostgreSQL server (feature
//! `postgres`, native builds only).
//!
//! # Storage
//!
//! The `jobs` table has the contract's six columns and nothing else:
//!
//! ```sql
//! jobs(id TEXT PRIMARY KEY, owner TEXT, until DOUBLE PRECISION NOT NULL DEFAULT 0,
//!      fence BIGINT NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)
//! ```
//!
//! - `until` is `DOUBLE PRECISION`, the same IEEE double as SQLite's `REAL` and Rust's `f64`, so
//!   lease ends compare exactly as on SQLite.
//! - `fence` is `BIGINT` (`i64`). Claims only match `fence < 9223372036854775807`, so the fence
//!   never wraps; a job whose fence is exhausted is reported as
//!   [`Error::FenceExhausted`](crate::Error::FenceExhausted), as on SQLite.
//! - `done` is `INTEGER` 0/1, not `BOOLEAN`: it is the contract's column as written
//!   (docs/contract.md section 1 and the seed's `done = 0` / `done = 1`), so SQL written against
//!   the SQLite table, by us or by anyone following the contract, runs unchanged here
//!   (`WHERE done = 0` would be a type error on a `BOOLEAN`). JSON and [`JobState::done`] show it
//!   as a boolean either way.
//!
//! `claim_next` needs insertion order, which the SQLite table gets for free from its rowid, and
//! docs/contract.md section 1 forbids extra columns in `jobs`. So insertion order lives in a
//! side table, `leasefence_order(id, seq, until, open)`: one row per job, `seq` an identity
//! assigned when
//! the job is inserted, with copies of `until` and `open = (done = 0 AND fence < i64::MAX)`.
//! The copies are what make `claim_next` logarithmic: one partial index, `leasefence_next ON
//! leasefence_order(until, seq) WHERE open`, yields the claimable jobs already in the contract's
//! order, where a join of `jobs(until)` with a `seq`-only side table would have to sort every
//! tied row (a million fresh jobs all have `until = 0`). The copies are kept by an `AFTER INSERT
//! OR UPDATE` trigger on `jobs`, inside the writing transaction, so they are exact for every
//! writer, including plain SQL from other programs (`INSERT INTO jobs(id) VALUES (...)` is a valid
//! enqueue); the side table references `jobs(id)` and cascades deletes. Jobs that predate the side
//! table are numbered in their physical order (`ctid`) when it is created.
//!
//! # Concurrency under READ COMMITTED
//!
//! Every operation runs as single-statement transactions (autocommit) at the server's default
//! isolation. Each decision is ONE conditional `UPDATE`: PostgreSQL locks the row and re-checks
//! the `WHERE` clause on its newest committed version before writing, so two claims of one job
//! can never both match, and the fence is incremented under the row lock. When the `UPDATE`
//! matches no row, the reason is read afterwards with a fresh snapshot; a rejection changes
//! nothing, so a reason read then is a true answer at that moment. If that row no longer explains
//! the refusal (the lease was released in between, say), the operation is simply tried again.
//! Reasons come out in the same priority order as on SQLite (`not_found`, `done`, `held`,
//! `stale_fence`, `not_owner`, `expired`).
//!
//! `claim_next` picks its row in a subquery with `FOR NO KEY UPDATE OF jobs SKIP LOCKED`, so
//! workers never queue behind a row another worker is claiming: each takes the next free one.
//! When every claimable row is momentarily locked by others, it waits for the first one with a
//! plain `claim` of it (one row lock at a time, so waiting claimers cannot deadlock) instead of
//! answering "nothing claimable", so `None` means there was no claimable job.
//!
//! Locks are always taken `jobs` row first, then its `leasefence_order` row (by the trigger), so
//! the operations cannot deadlock one another.
//!
//! # Durability and connections
//!
//! Every commit waits for its WAL flush: the session runs with `synchronous_commit = on`, the
//! server default (switched back on if the server defaults to `off`), so a fence, once returned,
//! survives a server crash and is never handed out again. A dropped connection (server restart,
//! `pg_terminate_backend`, network) is an [`Error::Postgres`](crate::Error) with code `storage`,
//! `disconnected: true` and a message saying to retry; the store connects again on the next call.
//! Every statement with data in it uses bound parameters.
//!
//! Limits: PostgreSQL `text` cannot hold U+0000, so ids, owners and results containing it are
//! rejected as invalid arguments; a job id must fit a b-tree index entry (about 2.7 kB after
//! compression).
//!
//! # TLS
//!
//! `sslmode` and `sslrootcert` in the URL mean what they mean to libpq and `psql` (see
//! [`tls`](self::tls) for the table): `prefer` by default; `verify-full` with
//! `sslrootcert=/path/to/ca.pem` checks that the server is the one the URL names, which is what a
//! fleet reaching its database across a network wants. A certificate the client refuses is an
//! [`Error::Open`](crate::Error::Open) naming the reason, not a retryable error.

use std::sync::{Barrier, Mutex, MutexGuard};
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::{ToSql, Type};
use postgres::{Client, Config, NoTls, Row, Statement};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::contract::{self, ClaimRefusal, Lease};
use crate::error::{redact_url, Error, Result};
use crate::leases::Leases;
use crate::options::OpenOptions;
use crate::outcome::{ClaimedJob, Fence, JobState, Outcome};

mod tls;

/// The table, exactly the contract's six columns (see the module documentation for the types).
const CREATE_JOBS: &str = "CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT, \
     until DOUBLE PRECISION NOT NULL DEFAULT 0, fence BIGINT NOT NULL DEFAULT 0, result TEXT, \
     done INTEGER NOT NULL DEFAULT 0)";

/// Insertion order, and the copies of `until` and claimability that let one index serve
/// `claim_next`; kept by the `leasefence_track` trigger. No user data: simple-protocol DDL.
const CREATE_COMPANIONS: &str = r#"
CREATE TABLE IF NOT EXISTS leasefence_order(
    id TEXT PRIMARY KEY REFERENCES jobs(id) ON UPDATE CASCADE ON DELETE CASCADE,
    seq BIGINT GENERATED BY DEFAULT AS IDENTITY NOT NULL,
    until DOUBLE PRECISION NOT NULL,
    open BOOLEAN NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS leasefence_seq ON leasefence_order(seq);
CREATE INDEX IF NOT EXISTS leasefence_next ON leasefence_order(until, seq) WHERE open;
DO $do$ BEGIN EXECUTE format($f$
CREATE OR REPLACE FUNCTION %1$I.leasefence_track() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO %1$I.leasefence_order(id, until, open)
        VALUES (NEW.id, NEW.until, NEW.done = 0 AND NEW.fence < 9223372036854775807);
    ELSE
        UPDATE %1$I.leasefence_order
        SET until = NEW.until, open = (NEW.done = 0 AND NEW.fence < 9223372036854775807)
        WHERE id = NEW.id;
    END IF;
    RETURN NULL;
END $body$ $f$, current_schema()); END $do$;
DO $do$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
                   JOIN pg_namespace n ON n.oid = c.relnamespace
                   WHERE n.nspname = current_schema() AND c.relname = 'jobs'
                     AND t.tgname = 'leasefence_track') THEN
        CREATE TRIGGER leasefence_track AFTER INSERT OR UPDATE ON jobs
        FOR EACH ROW EXECUTE FUNCTION leasefence_track();
    END IF;
END $do$;
INSERT INTO leasefence_order(id, until, open)
SELECT id, until, done = 0 AND fence < 9223372036854775807 FROM jobs ORDER BY ctid
ON CONFLICT (id) DO NOTHING;
"#;

/// Serializes schema creation between processes opening one database at once (`CREATE ... IF
/// NOT EXISTS` alone races on the catalogs). "leasefence" in ASCII, truncated to 63 bits.
const SCHEMA_LOCK: i64 = 0x6C65_6173_6566_656E;

/// What the schema check finds in the connection's current schema.
const INSPECT: &str = "SELECT current_schema()::text, \
     (SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
      WHERE n.nspname = current_schema() AND c.relname = 'jobs'), \
     (SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
      WHERE n.nspname = current_schema() AND c.relname = 'leasefence_order'), \
     (SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
      WHERE n.nspname = current_schema() AND c.relname = 'leasefence_next'), \
     EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
      JOIN pg_namespace n ON n.oid = c.relnamespace \
      WHERE n.nspname = current_schema() AND c.relname = 'jobs' \
        AND t.tgname = 'leasefence_track')";

/// The columns of `jobs` in the current schema: name, type, not null, default, primary key.
const COLUMNS: &str = "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), \
     a.attnotnull, pg_get_expr(d.adbin, d.adrelid), \
     EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisprimary \
             AND i.indnatts = 1 AND i.indkey[0] = a.attnum) \
     FROM pg_attribute a \
     JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
     LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
     WHERE n.nspname = current_schema() AND c.relname = 'jobs' \
       AND a.attnum > 0 AND NOT a.attisdropped \
     ORDER BY a.attnum";

/// `(name, type, not null, default, primary key)` of each column, in order.
const EXPECTED_COLUMNS: [(&str, &str, bool, Option<&str>, bool); 6] = [
    ("id", "text", true, None, true),
    ("owner", "text", false, None, false),
    ("until", "double precision", true, Some("0"), false),
    ("fence", "bigint", true, Some("0"), false),
    ("result", "text", false, None, false),
    ("done", "integer", true, Some("0"), false),
];

/// How often an operation re-runs its `UPDATE` when the row changed between the refused
/// `UPDATE` and the read of the reason; each retry means another transaction committed a change
/// to that very row, so this bound is only reached by a row that never explains itself.
const MAX_TRIES: usize = 32;

/// How many connections `claim_many` opens at most: the owners are spread over them.
/// PostgreSQL serves 100 connections by default, shared by every worker.
///
/// ```
/// assert!(leasefence::CLAIM_MANY_CONNECTIONS <= 100);
/// ```
pub const CLAIM_MANY_CONNECTIONS: usize = 16;

/// What one `claim_many` connection answers: each of its owners' index and outcome.
type LaneAnswers = Result<Vec<(usize, Result<Outcome<Fence>>)>>;

/// The statements of the contract, prepared once per connection with fixed parameter types.
struct Statements {
    enqueue: Statement,
    state: Statement,
    jobs: Statement,
    claim: Statement,
    read_lease: Statement,
    claim_next: Statement,
    peek_next: Statement,
    renew: Statement,
    complete: Statement,
    release: Statement,
}

/// `claim_next`: the first claimable job in (until, insertion) order that no other transaction
/// is writing, locked and claimed in one statement. The outer `WHERE` repeats the conditions:
/// the row is locked by then, so they hold, but a wrong grant must be impossible by construction.
const CLAIM_NEXT: &str = "UPDATE jobs SET owner = $1, until = $2, fence = fence + 1 \
     WHERE id = (SELECT j.id FROM leasefence_order o JOIN jobs j ON j.id = o.id \
                 WHERE o.open AND o.until <= $3 \
                   AND j.done = 0 AND j.until <= $3 AND j.fence < 9223372036854775807 \
                 ORDER BY o.until, o.seq LIMIT 1 \
                 FOR NO KEY UPDATE OF j SKIP LOCKED) \
       AND done = 0 AND until <= $3 AND fence < 9223372036854775807 \
     RETURNING id, fence";

impl Statements {
    fn prepare(client: &mut Client) -> std::result::Result<Self, postgres::Error> {
        use Type as T;
        let mut p = |sql: &str, types: &[Type]| client.prepare_typed(sql, types);
        Ok(Statements {
            enqueue: p(
                "INSERT INTO jobs(id) VALUES ($1) ON CONFLICT (id) DO NOTHING",
                &[T::TEXT],
            )?,
            state: p(
                "SELECT id, owner, until, fence, result, done FROM jobs WHERE id = $1",
                &[T::TEXT],
            )?,
            jobs: p(
                "SELECT j.id, j.owner, j.until, j.fence, j.result, j.done FROM jobs j \
                 LEFT JOIN leasefence_order o ON o.id = j.id ORDER BY o.seq NULLS LAST, j.id",
                &[],
            )?,
            claim: p(
                "UPDATE jobs SET owner = $2, until = $3, fence = fence + 1 \
                 WHERE id = $1 AND done = 0 AND until <= $4 AND fence < 9223372036854775807 \
                 RETURNING fence",
                &[T::TEXT, T::TEXT, T::FLOAT8, T::FLOAT8],
            )?,
            read_lease: p(
                "SELECT owner, until, fence, done FROM jobs WHERE id = $1",
                &[T::TEXT],
            )?,
            claim_next: p(CLAIM_NEXT, &[T::TEXT, T::FLOAT8, T::FLOAT8])?,
            peek_next: p(
                "SELECT id FROM leasefence_order WHERE open AND until <= $1 \
                 ORDER BY until, seq LIMIT 1",
                &[T::FLOAT8],
            )?,
            renew: p(
                "UPDATE jobs SET until = $5 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4",
                &[T::TEXT, T::TEXT, T::INT8, T::FLOAT8, T::FLOAT8],
            )?,
            complete: p(
                "UPDATE jobs SET result = $5, done = 1 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4",
                &[T::TEXT, T::TEXT, T::INT8, T::FLOAT8, T::TEXT],
            )?,
            release: p(
                "UPDATE jobs SET owner = NULL, until = 0 \
                 WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0",
                &[T::TEXT, T::TEXT, T::INT8],
            )?,
        })
    }
}

/// One live connection, set up and with its statements prepared.
struct Session {
    client: Client,
    stmts: Statements,
}

/// A lease store on a PostgreSQL server: the whole contract through [`Leases`], on one
/// connection that is opened again after it is lost.
///
/// Open it with [`open`](crate::open) (`postgres://` or `postgresql://` URL) or
/// [`PgStore::connect`]. The tables are created in the connection's current schema (the first
/// existing schema of its `search_path`; choose one with `?options=-csearch_path%3Dqueue`).
/// Calls from several threads on one store take turns on its connection; give each worker its
/// own store for parallelism.
///
/// TLS follows libpq's `sslmode` and `sslrootcert` (`prefer` by default). Across machines use
/// `verify-full`, which checks that the server holds a certificate for the URL's host, signed
/// by the authority in `sslrootcert`:
///
/// ```no_run
/// use leasefence::Leases;
/// let store = leasefence::PgStore::connect(
///     "postgres://app@db.internal/queue?sslmode=verify-full&sslrootcert=/etc/leasefence/ca.pem",
/// )?;
/// store.enqueue("invoice-42")?;
/// let fence = store.claim("invoice-42", "worker-a", 0.0, 30.0)?.granted();
/// # Ok::<(), leasefence::Error>(())
/// ```
pub struct PgStore {
    config: Config,
    /// The TLS connector, `None` for `sslmode=disable`.
    tls: Option<MakeRustlsConnect>,
    /// The URL's `sslmode`, for messages.
    ssl_mode: tls::SslMode,
    label: String,
    lock_timeout: Duration,
    session: Mutex<Option<Session>>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("url", &self.label).finish()
    }
}

/// A client error as this crate's error; whether the connection was lost is decided by
/// [`PgStore::with_session`], which sees the client.
fn pg(operation: &'static str) -> impl Fn(postgres::Error) -> Error {
    move |source| Error::Postgres {
        operation,
        source,
        disconnected: false,
    }
}

/// Whether the error leaves the connection unusable: anything that is not an answer of the
/// server (I/O, protocol, a closed socket), or the server ending the session.
fn connection_lost(err: &postgres::Error) -> bool {
    let Some(db) = err.as_db_error() else {
        return true;
    };
    let code = db.code();
    code.code().starts_with("08")
        || [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
        || matches!(db.severity(), "FATAL" | "PANIC")
}

/// Whether the server refused the session itself for a reason that connecting again cannot
/// change: bad credentials, no `pg_hba.conf` entry, a database that does not exist.
pub(crate) fn refused_for_good(err: &postgres::Error) -> bool {
    err.code().is_some_and(|code| {
        code.code().starts_with("28") || *code == SqlState::INVALID_CATALOG_NAME
    })
}

/// Whether the server refused for a reason that goes away by itself: a deadlock or
/// serialization failure, a lock wait that ran into `lock_timeout`, a full server.
pub(crate) fn is_transient(err: &postgres::Error) -> bool {
    err.code().is_some_and(|code| {
        [
            SqlState::T_R_DEADLOCK_DETECTED,
            SqlState::T_R_SERIALIZATION_FAILURE,
            SqlState::LOCK_NOT_AVAILABLE,
            SqlState::TOO_MANY_CONNECTIONS,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(code)
    })
}

/// PostgreSQL `text` cannot hold U+0000; refuse such strings before touching the server.
fn check_text(argument: &'static str, value: &str) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::invalid(
            argument,
            "contains the character U+0000, which PostgreSQL text cannot store",
        ));
    }
    Ok(())
}

fn job_state(row: &Row) -> std::result::Result<JobState, postgres::Error> {
    Ok(JobState {
        id: row.try_get(0)?,
        owner: row.try_get(1)?,
        until: row.try_get(2)?,
        fence: row.try_get(3)?,
        result: row.try_get(4)?,
        done: row.try_get::<_, i32>(5)? != 0,
    })
}

/// A row that keeps changing under an operation that tries to explain its refusal.
fn unexplained(operation: &'static str, job: &str) -> Error {
    Error::Internal {
        message: format!(
            "{operation} of job {job:?} was refused {MAX_TRIES} times by a row that then did \
             not explain the refusal (a row written outside the contract, e.g. a NaN until?); \
             nothing was changed, retrying is safe"
        ),
    }
}

impl PgStore {
    /// Connects to the server at `url` (`postgres://user:password@host:port/database?...`, or
    /// `postgresql://`), checks that the `jobs` table, if present, has exactly the contract's
    /// shape, and creates the tables if missing. Default [`OpenOptions`].
    ///
    /// ```no_run
    /// let store = leasefence::PgStore::connect("postgresql://localhost/queue")?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn connect(url: &str) -> Result<PgStore> {
        Self::connect_with(url, &OpenOptions::new())
    }

    /// [`PgStore::connect`] with options: the busy timeout is the session's `lock_timeout`
    /// (how long an operation waits for another transaction's row lock before failing with a
    /// retryable error) and, unless the URL sets `connect_timeout`, the connect timeout.
    ///
    /// ```no_run
    /// let options = leasefence::OpenOptions::new().busy_timeout(std::time::Duration::from_secs(2));
    /// let store = leasefence::PgStore::connect_with("postgres://localhost/queue", &options)?;
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn connect_with(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let store = Self::configure(url, options)?;
        store.with_session("connect", |_| Ok(()))?;
        Ok(store)
    }

    /// Parses the URL; connects nothing yet.
    fn configure(url: &str, options: &OpenOptions) -> Result<PgStore> {
        let label = redact_url(url);
        let refused = |problem: String| Error::Open {
            path: label.clone(),
            problem,
        };
        // The TLS parameters first: the client library knows neither verify-ca/verify-full
        // nor sslrootcert.
        let (url, settings) = tls::split_url(url).map_err(refused)?;
        let connector = tls::connector(&settings).map_err(refused)?;
        let mut config: Config = url.parse().map_err(|err| Error::Open {
            path: label.clone(),
            problem: format!(
                "not a usable PostgreSQL URL ({err}); write it as \
                 postgres://user:password@host:port/database"
            ),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.busy_timeout.max(Duration::from_secs(1)));
        }
        if config.get_application_name().is_none() {
            config.application_name("leasefence");
        }
        config.ssl_mode(settings.mode.client_mode());
        Ok(PgStore {
            config,
            tls: connector,
            ssl_mode: settings.mode,
            label,
            lock_timeout: options.busy_timeout,
            session: Mutex::new(None),
        })
    }

    /// The server's URL as given, with any password replaced by `***`.
    ///
    /// ```no_run
    /// let store = leasefence::PgStore::connect("postgres://app:secret@localhost/queue")?;
    /// assert_eq!(store.url(), "postgres://app:***@localhost/queue");
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn url(&self) -> &str {
        &self.label
    }

    /// A store with this one's settings and no connection yet (claim_many's lanes).
    fn unconnected_twin(&self) -> PgStore {
        PgStore {
            config: self.config.clone(),
            tls: self.tls.clone(),
            ssl_mode: self.ssl_mode,
            label: self.label.clone(),
            lock_timeout: self.lock_timeout,
            session: Mutex::new(None),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|poisoned| {
            // A call panicked mid-way: its connection is in an unknown state; start afresh.
            self.session.clear_poison();
            let mut guard = poisoned.into_inner();
            *guard = None;
            guard
        })
    }

    /// Runs `work` on the live session, connecting first when there is none. A client error
    /// that leaves the connection unusable drops the session (the next call connects again)
    /// and is reported as `disconnected`.
    fn with_session<T>(
        &self,
        operation: &'static str,
        work: impl FnOnce(&mut Session) -> Result<T>,
    ) -> Result<T> {
        let mut guard = self.lock();
        if guard.as_ref().is_some_and(|s| s.client.is_closed()) {
            // The client already knows the socket is gone: nothing was sent on it, so
            // connecting again now is safe.
            *guard = None;
        }
        let session = match guard.as_mut() {
            Some(session) => session,
            None => guard.insert(self.open_session(operation)?),
        };
        let result = work(session);
        let closed = session.client.is_closed();
        match result {
            Err(Error::Postgres {
                operation, source, ..
            }) => {
                let lost = closed || connection_lost(&source);
                if lost {
                    *guard = None;
                }
                Err(Error::Postgres {
                    operation,
                    source,
                    disconnected: lost,
                })
            }
            other => other,
        }
    }

    /// Connects, sets the session up, makes sure the schema is there, prepares the statements.
    /// Failures are reported as failures of `operation`, the call that needed the connection.
    fn open_session(&self, operation: &'static str) -> Result<Session> {
        let failed = |source: postgres::Error| {
            // A refusal of who we are (authentication, an unknown database) is final.
            let disconnected =
                !refused_for_good(&source) && (connection_lost(&source) || is_transient(&source));
            Error::Postgres {
                operation,
                source,
                disconnected,
            }
        };
        let connected = match &self.tls {
            Some(tls) => self.config.connect(tls.clone()),
            None => self.config.connect(NoTls),
        };
        let mut client =
            connected.map_err(|source| match tls::refused_by_tls(&source, self.ssl_mode) {
                // Connecting again cannot change a certificate.
                Some(problem) => Error::Open {
                    path: self.label.clone(),
                    problem,
                },
                None => failed(source),
            })?;
        let millis = self.lock_timeout.as_millis().clamp(1, i32::MAX as u128);
        client
            .query_one(
                "SELECT set_config('lock_timeout', $1, false)",
                &[&format!("{millis}ms")],
            )
            .map_err(failed)?;
        // Durability: a commit returns only once its WAL is flushed. `on` is the server default;
        // a server configured with `off` is overridden for this session (`local` and the
        // synchronous-replication levels are at least as strong and are kept).
        client
            .batch_execute(
                "SELECT set_config('synchronous_commit', 'on', false) \
                 WHERE current_setting('synchronous_commit') = 'off'",
            )
            .map_err(failed)?;
        if !self.check_schema(&mut client).map_err(|err| match err {
            Error::Postgres { source, .. } => failed(source),
            other => other,
        })? {
            create_schema(&mut client).map_err(failed)?;
        }
        let stmts = Statements::prepare(&mut client).map_err(failed)?;
        Ok(Session { client, stmts })
    }

    /// Checks, by reading only, that `jobs` (if present) has exactly the contract's shape and
    /// that no other object holds leasefence's names. Returns whether everything is in place.
    fn check_schema(&self, client: &mut Client) -> Result<bool> {
        let foreign = |problem: String| Error::NotLeasefenceDatabase {
            path: self.label.clone(),
            problem,
        };
        let row = client.query_one(INSPECT, &[]).map_err(pg("connect"))?;
        let schema: Option<String> = row.get(0);
        let jobs: Option<String> = row.get(1);
        let order: Option<String> = row.get(2);
        let index: Option<String> = row.get(3);
        let trigger: bool = row.get(4);
        if schema.is_none() {
            return Err(Error::Open {
                path: self.label.clone(),
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
        if jobs.is_some() {
            check_columns(client)
                .map_err(pg("connect"))?
                .map_err(foreign)?;
        }
        Ok(jobs.is_some() && order.is_some() && index.is_some() && trigger)
    }

    fn read_lease(
        session: &mut Session,
        operation: &'static str,
        job: &str,
    ) -> Result<Option<Lease>> {
        let row = session
            .client
            .query_opt(&session.stmts.read_lease, &[&job])
            .map_err(pg(operation))?;
        row.map(|row| {
            Ok(Lease {
                owner: row.try_get(0)?,
                until: row.try_get(1)?,
                fence: row.try_get(2)?,
                done: row.try_get::<_, i32>(3)? != 0,
            })
        })
        .transpose()
        .map_err(pg(operation))
    }

    /// Runs a fenced `UPDATE` (renew, complete, release) whose `WHERE` states the whole
    /// condition; on no match, explains why.
    fn fenced(
        &self,
        operation: &'static str,
        statement: fn(&Statements) -> &Statement,
        params: &[&(dyn ToSql + Sync)],
        (job, owner, fence): (&str, &str, Fence),
        live_at: Option<f64>,
    ) -> Result<Outcome<()>> {
        self.with_session(operation, |session| {
            for _ in 0..MAX_TRIES {
                let changed = session
                    .client
                    .execute(statement(&session.stmts), params)
                    .map_err(pg(operation))?;
                if changed == 1 {
                    return Ok(Outcome::Granted(()));
                }
                let lease = Self::read_lease(session, operation, job)?;
                match contract::why_write_refused(lease, owner, fence, live_at) {
                    Some(reason) => return Ok(Outcome::Rejected(reason)),
                    // The row matches now: it changed after the UPDATE looked. Try again.
                    None => continue,
                }
            }
            Err(unexplained(operation, job))
        })
    }
}

/// Compares the columns of `jobs` with the contract; the inner error describes a mismatch.
fn check_columns(
    client: &mut Client,
) -> std::result::Result<std::result::Result<(), String>, postgres::Error> {
    let rows = client.query(COLUMNS, &[])?;
    let found: Vec<(String, String, bool, Option<String>, bool)> = rows
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4)))
        .collect();
    let describe = |name: &str, ty: &str, not_null: bool, default: Option<&str>, pk: bool| {
        let mut text = format!("{name} {ty}");
        if pk {
            text.push_str(" PRIMARY KEY");
        } else if not_null {
            text.push_str(" NOT NULL");
        }
        if let Some(default) = default {
            text.push_str(&format!(" DEFAULT {default}"));
        }
        text
    };
    // `'0'::double precision` and `0` are both a default of zero.
    let normalize = |default: &str| {
        let bare = default.split("::").next().unwrap_or(default);
        bare.trim_matches(['(', ')', '\'', ' ']).to_string()
    };
    let want: Vec<String> = EXPECTED_COLUMNS
        .iter()
        .map(|c| describe(c.0, c.1, c.2, c.3, c.4))
        .collect();
    let got: Vec<String> = found
        .iter()
        .map(|c| {
            describe(
                &c.0,
                &c.1,
                c.2,
                c.3.as_deref().map(normalize).as_deref(),
                c.4,
            )
        })
        .collect();
    let matches = found.len() == EXPECTED_COLUMNS.len()
        && found.iter().zip(EXPECTED_COLUMNS).all(|(c, w)| {
            c.0 == w.0
                && c.1 == w.1
                && c.2 == w.2
                && c.3.as_deref().map(normalize).as_deref() == w.3
                && c.4 == w.4
        });
    Ok(if matches {
        Ok(())
    } else {
        Err(format!(
            "its `jobs` table has columns ({}), the contract needs exactly ({})",
            got.join(", "),
            want.join(", ")
        ))
    })
}

/// Creates whatever is missing, in one transaction holding the schema lock.
fn create_schema(client: &mut Client) -> std::result::Result<(), postgres::Error> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])?;
    tx.batch_execute(CREATE_JOBS)?;
    tx.batch_execute(CREATE_COMPANIONS)?;
    tx.commit()
}

impl Leases for PgStore {
    fn init(&self) -> Result<()> {
        self.with_session("init", |session| {
            create_schema(&mut session.client).map_err(pg("init"))
        })
    }

    fn enqueue(&self, job: &str) -> Result<bool> {
        check_text("job", job)?;
        self.with_session("enqueue", |session| {
            let inserted = session
                .client
                .execute(&session.stmts.enqueue, &[&job])
                .map_err(pg("enqueue"))?;
            Ok(inserted == 1)
        })
    }

    fn state(&self, job: &str) -> Result<Option<JobState>> {
        check_text("job", job)?;
        self.with_session("state", |session| {
            let row = session
                .client
                .query_opt(&session.stmts.state, &[&job])
                .map_err(pg("state"))?;
            row.as_ref().map(job_state).transpose().map_err(pg("state"))
        })
    }

    fn jobs(&self) -> Result<Vec<JobState>> {
        self.with_session("jobs", |session| {
            let rows = session
                .client
                .query(&session.stmts.jobs, &[])
                .map_err(pg("jobs"))?;
            rows.iter()
                .map(job_state)
                .collect::<std::result::Result<_, _>>()
                .map_err(pg("jobs"))
        })
    }

    fn claim(&self, job: &str, owner: &str, now: f64, ttl: f64) -> Result<Outcome<Fence>> {
        let until = contract::lease_end(now, ttl)?;
        check_text("job", job)?;
        check_text("owner", owner)?;
        self.with_session("claim", |session| {
            for _ in 0..MAX_TRIES {
                let granted = session
                    .client
                    .query_opt(&session.stmts.claim, &[&job, &owner, &until, &now])
                    .map_err(pg("claim"))?;
                if let Some(row) = granted {
                    return Ok(Outcome::Granted(row.try_get(0).map_err(pg("claim"))?));
                }
                let lease = Self::read_lease(session, "claim", job)?;
                match contract::why_claim_refused(lease, now) {
                    ClaimRefusal::Rejected(reason) => return Ok(Outcome::Rejected(reason)),
                    ClaimRefusal::Exhausted => {
                        return Err(Error::FenceExhausted { job: job.into() })
                    }
                    // Claimable now: released or expired after the UPDATE looked. Try again.
                    ClaimRefusal::Claimable => continue,
                }
            }
            Err(unexplained("claim", job))
        })
    }

    fn renew(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> Result<Outcome<()>> {
        let until = contract::lease_end(now, ttl)?;
        check_text("job", job)?;
        check_text("owner", owner)?;
        self.fenced(
            "renew",
            |s| &s.renew,
            &[&job, &owner, &fence, &now, &until],
            (job, owner, fence),
            Some(now),
        )
    }

    fn complete(
        &self,
        job: &str,
        owner: &str,
        fence: Fence,
        now: f64,
        result: Option<&str>,
    ) -> Result<Outcome<()>> {
        contract::check_now(now)?;
        check_text("job", job)?;
        check_text("owner", owner)?;
        if let Some(result) = result {
            check_text("result", result)?;
        }
        self.fenced(
            "complete",
            |s| &s.complete,
            &[&job, &owner, &fence, &now, &result],
            (job, owner, fence),
            Some(now),
        )
    }

    fn release(&self, job: &str, owner: &str, fence: Fence) -> Result<Outcome<()>> {
        check_text("job", job)?;
        check_text("owner", owner)?;
        self.fenced(
            "release",
            |s| &s.release,
            &[&job, &owner, &fence],
            (job, owner, fence),
            None,
        )
    }

    fn claim_next(&self, owner: &str, now: f64, ttl: f64) -> Result<Option<ClaimedJob>> {
        let until = contract::lease_end(now, ttl)?;
        check_text("owner", owner)?;
        self.with_session("claim_next", |session| {
            for _ in 0..MAX_TRIES {
                // The next job no other transaction is writing, claimed in one statement.
                let row = session
                    .client
                    .query_opt(&session.stmts.claim_next, &[&owner, &until, &now])
                    .map_err(pg("claim_next"))?;
                if let Some(row) = row {
                    return Ok(Some(ClaimedJob {
                        job: row.try_get(0).map_err(pg("claim_next"))?,
                        fence: row.try_get(1).map_err(pg("claim_next"))?,
                    }));
                }
                // None free. Is any job claimable at all (every one locked right now)?
                let head: Option<String> = session
                    .client
                    .query_opt(&session.stmts.peek_next, &[&now])
                    .and_then(|row| row.map(|row| row.try_get(0)).transpose())
                    .map_err(pg("claim_next"))?;
                let Some(head) = head else {
                    return Ok(None);
                };
                // Then wait for the first one's writer by claiming it directly: one row lock
                // at a time, so waiting claimers can never deadlock. Its writer usually
                // claimed it; then look again.
                let fence: Option<Fence> = session
                    .client
                    .query_opt(&session.stmts.claim, &[&head, &owner, &until, &now])
                    .and_then(|row| row.map(|row| row.try_get(0)).transpose())
                    .map_err(pg("claim_next"))?;
                if let Some(fence) = fence {
                    return Ok(Some(ClaimedJob { job: head, fence }));
                }
            }
            Err(Error::Contended {
                operation: "claim_next",
            })
        })
    }

    /// Every owner's claim at once on its own connection (at most
    /// [`CLAIM_MANY_CONNECTIONS`]; more owners take turns on them), released together by a
    /// barrier so that they really race; answers in input order.
    fn claim_many(
        &self,
        job: &str,
        owners: &[&str],
        now: f64,
        ttl: f64,
    ) -> Result<Vec<Outcome<Fence>>> {
        contract::lease_end(now, ttl)?;
        if owners.len() > crate::MAX_CLAIM_MANY_OWNERS {
            return Err(Error::invalid(
                "owners",
                format!(
                    "{} owners given; at most {} run at once",
                    owners.len(),
                    crate::MAX_CLAIM_MANY_OWNERS
                ),
            ));
        }
        check_text("job", job)?;
        for owner in owners {
            check_text("owner", owner)?;
        }
        let lanes = owners.len().min(CLAIM_MANY_CONNECTIONS);
        if lanes == 0 {
            return Ok(Vec::new());
        }
        let barrier = Barrier::new(lanes);
        let lane_answers: Vec<LaneAnswers> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..lanes)
                .map(|lane| {
                    let barrier = &barrier;
                    scope.spawn(move || {
                        let store = self.unconnected_twin();
                        let connected = store.with_session("claim_many", |_| Ok(()));
                        // Wait even when connecting failed, so no thread waits forever.
                        barrier.wait();
                        connected?;
                        Ok((lane..owners.len())
                            .step_by(lanes)
                            .map(|i| (i, store.claim(job, owners[i], now, ttl)))
                            .collect())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle.join().unwrap_or_else(|_| {
                        Err(Error::Internal {
                            message: "a claim_many thread panicked".into(),
                        })
                    })
                })
                .collect()
        });
        let mut results: Vec<Option<Outcome<Fence>>> = owners.iter().map(|_| None).collect();
        for answers in lane_answers {
            for (i, answer) in answers? {
                results[i] = Some(answer?);
            }
        }
        results
            .into_iter()
            .map(|slot| {
                slot.ok_or_else(|| Error::Internal {
                    message: "claim_many lost an owner's answer".into(),
                })
            })
            .collect()
    }
}

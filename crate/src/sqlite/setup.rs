//! Connection set-up on SQLite, the same for every way a store gets its connection (a native
//! file, Node's `fs`, OPFS, or one the caller opened): the busy handler, the read-only check of
//! the file, the journal mode, `synchronous`, and the schema.

use rusqlite::config::DbConfig;
use rusqlite::Connection;

use super::schema::{check_schema, create_schema};
use crate::error::{Error, Result};
use crate::options::{Journal, OpenOptions};
use crate::sqlite::LeaseStore;

impl LeaseStore {
    /// Finishes opening a connection that a backend just opened on a file: checks the file by
    /// reading only, then (now known to be ours) sets the journal and durability and creates the
    /// schema. Every target's `open` ends here.
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) fn set_up(mut conn: Connection, label: &str, options: &OpenOptions) -> Result<Self> {
        set_busy_handler(&mut conn, options.busy_timeout)?;
        let ready = check_schema(&conn, label)?;
        // Only now, with the file known to be SQLite of the right shape (or empty), write to it.
        let journal = match options.journal {
            Journal::Wal => "WAL",
            Journal::Rollback => ROLLBACK_MODE,
        };
        let current: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(Error::storage("open"))?;
        if !ready || !current.eq_ignore_ascii_case(journal) {
            // First adoption of this file: we are about to write to it, so make sure it is
            // sound first. This full check runs once per file, not on every open.
            refuse_damaged(&conn, label)?;
        }
        let mode = set_journal_mode(&conn, &current, journal, options.busy_timeout)?;
        if !mode.eq_ignore_ascii_case(journal) {
            return Err(Error::Open {
                path: label.to_string(),
                problem: format!(
                    "SQLite refused journal_mode {journal} (the file stays in {mode} mode); \
                     another program may hold it open in that mode"
                ),
            });
        }
        set_synchronous(&conn, options.journal)?;
        // Statement journals in memory: a group commit runs each operation in a savepoint, and
        // SQLite keeps what a savepoint must undo in a temporary file otherwise (33 writes per
        // group of a Node worker at 64 in flight). It also serves WASI, which has no temporary
        // directory (SQLITE_IOERR_GETTEMPPATH on the first sort or statement journal that
        // spills). Our statements' temporary data is one operation's rows.
        conn.pragma_update(None, "temp_store", "MEMORY")
            .map_err(Error::storage("open"))?;
        LeaseStore::ready(conn, ready, options.clone())
    }

    /// [`LeaseStore::from_connection`]'s set-up: the busy handler and `synchronous` as
    /// [`set_up`](LeaseStore::set_up) sets them (for the journal the caller chose), the check,
    /// the schema; the journal mode and every other pragma stay the caller's.
    pub(crate) fn adopt(mut conn: Connection, label: &str) -> Result<Self> {
        let options = OpenOptions::default();
        set_busy_handler(&mut conn, options.busy_timeout)?;
        let ready = check_schema(&conn, label)?;
        let current: String = conn
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .map_err(Error::storage("open"))?;
        let journal = if current.eq_ignore_ascii_case("wal") {
            Journal::Wal
        } else {
            Journal::Rollback
        };
        set_synchronous(&conn, journal)?;
        LeaseStore::ready(conn, ready, options)
    }

    /// The last steps of every open: statements kept prepared, the schema created on a new
    /// file (`ready`: it was there already).
    fn ready(conn: Connection, ready: bool, options: OpenOptions) -> Result<LeaseStore> {
        set_statement_reuse(&conn)?;
        if !ready {
            create_schema(&conn)?;
        }
        Ok(LeaseStore {
            conn,
            path: None,
            options,
        })
    }
}

/// Statements prepared once per connection. First SQLite's query planner stability guarantee
/// (QPSG): a statement keeps the plan it was prepared with, whatever values are bound to it.
/// Without it SQLite may mark a bound value its planner looked at as one that could change the
/// plan, and then prepares the statement again whenever a new value is bound: the claim's two
/// probes of `leasefence_next` (bound queue, priority and time) were parsed and planned anew on
/// nearly every claim, about half the CPU time of a claim of 16 jobs. Our plans never depend on
/// a bound value (each names its index; the partial indexes' conditions are literals), so
/// nothing is lost. Then room in the statement cache for every statement a worker runs: at
/// rusqlite's default of 16 a worker's claims, writes, schedules and heartbeats pushed each
/// other out and were prepared again. crate/tests/prepared_once.rs checks both.
fn set_statement_reuse(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(Error::storage("open"))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(())
}

/// Statements a connection keeps prepared: the store has about 60 in all, and a worker's hot
/// path uses about 25.
const STATEMENT_CACHE: usize = 64;

/// One busy handler per connection: natively our patient one, in wasm SQLite's own. (Short sleeps
/// lost badly in Node: a try there is a dot-file lock attempt in JavaScript, and 64 processes
/// retrying every 1-2 ms drained 7 jobs/s with 205 busy errors where SQLite's 1-100 ms sleeps
/// drain about 100; docs/decisions/write-gate.md.) It is the only way a connection waits: SQLite's
/// blocking WAL locks are left out of the build, as on Linux they never block and lost under
/// contention (docs/decisions/blocking-locks.md).
fn set_busy_handler(conn: &mut Connection, timeout: std::time::Duration) -> Result<()> {
    #[cfg(not(web))]
    conn.busy_handler(Some(patient_busy_handler(timeout, None)))
        .map_err(Error::storage("open"))?;
    #[cfg(web)]
    conn.busy_timeout(timeout).map_err(Error::storage("open"))?;
    Ok(())
}

/// The rollback journal's mode. DELETE natively: the journal's unlink is the commit, made durable
/// by syncing the directory (`synchronous = EXTRA`, below). WASI cannot sync a directory (wasmtime
/// answers the fsync with an error, SQLite's `SQLITE_IOERR_DIR_FSYNC`), so there the journal stays
/// and the commit is the zeroing of its header, synced with the journal file itself (PERSIST).
#[cfg(not(target_os = "wasi"))]
const ROLLBACK_MODE: &str = "DELETE";
#[cfg(target_os = "wasi")]
const ROLLBACK_MODE: &str = "PERSIST";

/// Every commit is durable before claim() returns its fence; otherwise a power loss could roll
/// back a claim whose fence a worker already holds, and the fence be handed out again. WAL: FULL
/// syncs the WAL at every commit (with NORMAL, commits reach the disk only at checkpoints).
/// Rollback journal: the journal's unlink *is* the commit, and only EXTRA makes SQLite sync the
/// directory after it; under FULL the unlink can be lost, the journal come back, and the next
/// opener roll the acknowledged transaction back.
fn set_synchronous(conn: &Connection, journal: Journal) -> Result<()> {
    let synchronous = match journal {
        Journal::Wal => "FULL",
        Journal::Rollback => "EXTRA",
    };
    conn.pragma_update(None, "synchronous", synchronous)
        .map_err(Error::storage("open"))
}

/// Switches the journal mode from `current` (read by the caller) only if it differs. Switching
/// takes an exclusive lock, and when several processes open a new file at once SQLite answers
/// `busy` to the switch without calling the busy handler (waiting there could deadlock), so the
/// wait is ours, bounded by the timeout.
pub(crate) fn set_journal_mode(
    conn: &Connection,
    current: &str,
    journal: &str,
    timeout: std::time::Duration,
) -> Result<String> {
    let read = |sql: &str| conn.query_row(sql, [], |row| row.get::<_, String>(0));
    if current.eq_ignore_ascii_case(journal) {
        return Ok(current.to_string());
    }
    let mut waited_ms = 0u128;
    let mut pause_ms = 1;
    loop {
        match read(&format!("PRAGMA journal_mode = {journal}")) {
            Ok(mode) => return Ok(mode),
            Err(err) if crate::error::is_busy(&err) && waited_ms < timeout.as_millis() => {
                // SQLite's own sleep: it works on every target, wasm included.
                // SAFETY: sqlite3_sleep takes a plain integer and has no preconditions.
                unsafe { rusqlite::ffi::sqlite3_sleep(pause_ms) };
                waited_ms += pause_ms as u128;
                pause_ms = (pause_ms * 2).min(50);
            }
            Err(err) => return Err(Error::storage("open")(err)),
        }
    }
}

/// Refuses a damaged file (truncated, corrupted pages) before writing to it.
fn refuse_damaged(conn: &Connection, label: &str) -> Result<()> {
    let damaged = |problem: String| Error::NotLeasefenceDatabase {
        path: label.to_string(),
        problem,
    };
    let mut stmt = conn
        .prepare("PRAGMA quick_check(5)")
        .map_err(|e| damaged(format!("SQLite cannot check it: {e}")))?;
    let findings = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(|e| damaged(format!("SQLite finds it damaged: {e}")))?;
    if findings != ["ok"] {
        return Err(damaged(format!(
            "SQLite finds it damaged: {}",
            findings.join("; ")
        )));
    }
    Ok(())
}

/// Replaces the busy handler of a connection with a write gate (`gate.rs`) by one that counts
/// its timeout from `gate_start` when that is set: the time a write already waited at the gate.
#[cfg(target_os = "linux")]
pub(crate) fn set_gated_busy_handler(
    conn: &mut Connection,
    timeout: std::time::Duration,
    gate_start: super::gate::WaitStart,
) -> Result<()> {
    conn.busy_handler(Some(patient_busy_handler(timeout, Some(gate_start))))
        .map_err(Error::storage("open"))
}

/// A busy handler for many workers on one file. SQLite's default sleeps 1, 2, 5, ... 100 ms
/// between tries, so a waiter sleeps through most moments the lock is free, and under contention
/// throughput collapses. This one retries after short, growing, jittered sleeps (50 us up to
/// 2 ms) until `timeout` has passed since the first try of this wait, or since `gate_start`'s
/// instant when one is set (the write waited at the write gate first: one timeout for both).
#[cfg(not(web))]
fn patient_busy_handler(
    timeout: std::time::Duration,
    gate_start: Option<std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>>,
) -> impl FnMut(i32) -> bool + Send + 'static {
    use std::time::{Duration, Instant};
    let mut started = Instant::now();
    move |count| {
        let now = Instant::now();
        if count == 0 {
            let at_gate = gate_start
                .as_ref()
                .and_then(|start| *start.lock().unwrap_or_else(|e| e.into_inner()));
            started = at_gate.unwrap_or(now);
        }
        if now.duration_since(started) >= timeout {
            return false;
        }
        let base = (50u64 << count.clamp(0, 6)).min(2_000);
        // Jitter from the clock's low bits keeps waiters from retrying in lockstep.
        let jitter = u64::from(now.duration_since(started).subsec_nanos()) % (base / 2 + 1);
        std::thread::sleep(Duration::from_micros(base + jitter));
        true
    }
}

// Native only: the test needs a file (tempfile), and `wasm-pack test` builds this crate's tests too.
#[cfg(all(test, not(web)))]
mod tests {
    use super::*;

    fn synchronous(store: &LeaseStore) -> i64 {
        store
            .connection()
            .query_row("PRAGMA synchronous", [], |row| row.get(0))
            .unwrap()
    }

    /// Blocking WAL locks stay off (docs/decisions/blocking-locks.md): a build that compiles
    /// them in must be measured again first.
    #[test]
    fn bundled_sqlite_has_no_blocking_wal_locks() {
        // SAFETY: a NUL-terminated option name; the call only reads it.
        let used =
            unsafe { rusqlite::ffi::sqlite3_compileoption_used(c"ENABLE_SETLK_TIMEOUT".as_ptr()) };
        assert_eq!(
            used, 0,
            "SQLite is built with SQLITE_ENABLE_SETLK_TIMEOUT (LIBSQLITE3_FLAGS?); \
             see docs/decisions/blocking-locks.md"
        );
    }

    /// `from_connection` sets the connection up as `open` does, for the caller's journal.
    #[test]
    fn from_connection_sets_durability_for_the_callers_journal() {
        let conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "synchronous", "OFF").unwrap();
        let store = LeaseStore::from_connection(conn, "memory").unwrap();
        assert_eq!(synchronous(&store), 3, "EXTRA outside WAL");

        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("q.db")).unwrap();
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        conn.pragma_update(None, "synchronous", "NORMAL").unwrap();
        let store = LeaseStore::from_connection(conn, "q.db").unwrap();
        assert_eq!(synchronous(&store), 2, "FULL in WAL");
        let mode: String = store
            .connection()
            .query_row("PRAGMA journal_mode", [], |row| row.get(0))
            .unwrap();
        assert_eq!(mode, "wal", "the caller's journal is kept");
    }
}

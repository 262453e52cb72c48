//! The authorizer: what the caller's statements may not do (write `jobs` or the `leasefence_*`
//! tables, the planner's statistics, transaction control, `PRAGMA`, `ATTACH`, `CREATE TRIGGER`),
//! decided while SQLite compiles each statement, and its installation on the connection.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Arc, Mutex};

use rusqlite::{ffi, Connection};

use crate::rules::fenced::is_library_table;

/// Whose tables the caller's statements may not write.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Protected {
    /// A fenced write on the lease store's database: `jobs` and every `leasefence_*` table.
    #[default]
    LeaseStore,
    /// A guarded write on the application's own file (the fence guard): only the guard's
    /// `leasefence_*` tables; a `jobs` table there is the application's.
    #[cfg_attr(not(any(feature = "node", feature = "addon")), allow(dead_code))]
    GuardFile,
}

impl Protected {
    fn covers(self, table: &str) -> bool {
        match self {
            Protected::LeaseStore => is_library_table(table),
            Protected::GuardFile => !table.eq_ignore_ascii_case("jobs") && is_library_table(table),
        }
    }
}

/// What the caller phase learned: what the authorizer refused last (for the error message),
/// whether any statement failed (a failure the caller's code swallowed still rolls back), how many
/// statements were started (the index a failure names), and whether the statement being compiled
/// alters a table (its new name is checked after it ran).
#[derive(Debug, Default)]
pub(crate) struct PhaseState {
    pub(super) refused: Option<String>,
    pub(super) failed: bool,
    pub(super) started: usize,
    pub(super) alters_table: bool,
    pub(super) protect: Protected,
}

impl PhaseState {
    #[cfg_attr(not(web), allow(dead_code))]
    pub(crate) fn protecting(protect: Protected) -> Refusal {
        Arc::new(Mutex::new(PhaseState {
            protect,
            ..PhaseState::default()
        }))
    }
}

/// SQLite's planner statistics (`sqlite_stat1`, `sqlite_stat4`, ...): rows planted there steer
/// the plan of every later statement, the store's `claim_next` included (a full scan instead of
/// its index), so the caller's statements may neither write them nor run `ANALYZE`.
fn is_planner_statistics(table: &str) -> bool {
    const PREFIX: &str = "sqlite_stat";
    table.len() >= PREFIX.len()
        && table.is_char_boundary(PREFIX.len())
        && table[..PREFIX.len()].eq_ignore_ascii_case(PREFIX)
}

pub(crate) type Refusal = Arc<Mutex<PhaseState>>;

/// The authorizer's decision for one action: `Some(why)` refuses it. Pure, so it is tested alone.
fn refuse(
    action: c_int,
    first: Option<&str>,
    second: Option<&str>,
    protect: Protected,
) -> Option<String> {
    let table = |name: Option<&str>| {
        let name = name?;
        if protect.covers(name) {
            Some(format!("table:{name}"))
        } else if is_planner_statistics(name) {
            Some(format!(
                "statement:a write to {name}: the planner's statistics steer the plans of the \
                 store's own queries too"
            ))
        } else {
            None
        }
    };
    match action {
        ffi::SQLITE_INSERT | ffi::SQLITE_DELETE | ffi::SQLITE_UPDATE => table(first),
        ffi::SQLITE_CREATE_TABLE
        | ffi::SQLITE_CREATE_TEMP_TABLE
        | ffi::SQLITE_DROP_TABLE
        | ffi::SQLITE_DROP_TEMP_TABLE
        | ffi::SQLITE_CREATE_VIEW
        | ffi::SQLITE_CREATE_TEMP_VIEW
        | ffi::SQLITE_DROP_VIEW
        | ffi::SQLITE_DROP_TEMP_VIEW
        | ffi::SQLITE_CREATE_VTABLE
        | ffi::SQLITE_DROP_VTABLE
        | ffi::SQLITE_REINDEX => table(first),
        ffi::SQLITE_CREATE_INDEX
        | ffi::SQLITE_CREATE_TEMP_INDEX
        | ffi::SQLITE_DROP_INDEX
        | ffi::SQLITE_DROP_TEMP_INDEX
        | ffi::SQLITE_DROP_TRIGGER
        | ffi::SQLITE_DROP_TEMP_TRIGGER => table(first).or_else(|| table(second)),
        ffi::SQLITE_ALTER_TABLE => table(second),
        // A trigger's body is authorized when a statement fires it, not when it is created: one
        // created here could write `jobs` later, outside any fenced write.
        ffi::SQLITE_CREATE_TRIGGER | ffi::SQLITE_CREATE_TEMP_TRIGGER => Some(
            "statement:CREATE TRIGGER: create triggers outside fenced writes (their bodies are \
             checked when they fire)"
                .into(),
        ),
        ffi::SQLITE_TRANSACTION | ffi::SQLITE_SAVEPOINT => Some(
            "statement:transaction control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT): the library \
             opens, commits and rolls back the transaction itself"
                .into(),
        ),
        ffi::SQLITE_PRAGMA => Some(format!(
            "statement:PRAGMA {}: pragmas change the connection, not your tables",
            first.unwrap_or("")
        )),
        ffi::SQLITE_ATTACH | ffi::SQLITE_DETACH => {
            Some("statement:ATTACH/DETACH: fenced statements write this database only".into())
        }
        ffi::SQLITE_ANALYZE => Some(
            "statement:ANALYZE: the planner's statistics steer the plans of the store's own \
             queries too; run ANALYZE outside fenced writes"
                .into(),
        ),
        ffi::SQLITE_READ | ffi::SQLITE_SELECT | ffi::SQLITE_FUNCTION | ffi::SQLITE_RECURSIVE => {
            None
        }
        other => Some(format!(
            "statement:an action SQLite calls {other}, unknown here"
        )),
    }
}

unsafe extern "C" fn authorize(
    refusal: *mut c_void,
    action: c_int,
    first: *const c_char,
    second: *const c_char,
    _database: *const c_char,
    _trigger: *const c_char,
) -> c_int {
    let text = |p: *const c_char| {
        // SAFETY: SQLite passes NUL-terminated strings or null, alive for this call.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("\u{fffd}"))
    };
    // SAFETY: `refusal` is the Mutex that `CallerPhase` keeps alive while installed.
    let slot = unsafe { &*(refusal as *const Mutex<PhaseState>) };
    let Ok(mut slot) = slot.lock() else {
        return ffi::SQLITE_DENY;
    };
    match refuse(action, text(first), text(second), slot.protect) {
        None => {
            // The authorizer is told the table an ALTER TABLE changes, never the name a RENAME
            // gives it: that is checked once the statement ran.
            if action == ffi::SQLITE_ALTER_TABLE {
                slot.alters_table = true;
            }
            ffi::SQLITE_OK
        }
        Some(why) => {
            slot.refused.get_or_insert(why);
            ffi::SQLITE_DENY
        }
    }
}

/// The authorizer, installed while the caller's statements compile; removed on drop (also when
/// the caller's closure panics), before the library's own statements run.
pub(super) struct CallerPhase<'c> {
    conn: &'c Connection,
    _refusal: Refusal,
}

impl<'c> CallerPhase<'c> {
    pub(super) fn install(conn: &'c Connection, refusal: Refusal) -> Self {
        let slot = Arc::as_ptr(&refusal) as *mut c_void;
        // SAFETY: the handle is this open connection's; `slot` outlives the registration
        // (`self` holds the Arc and unregisters in Drop).
        unsafe { ffi::sqlite3_set_authorizer(conn.handle(), Some(authorize), slot) };
        CallerPhase {
            conn,
            _refusal: refusal,
        }
    }
}

impl Drop for CallerPhase<'_> {
    fn drop(&mut self) {
        // SAFETY: unregisters the callback on the same open connection.
        unsafe { ffi::sqlite3_set_authorizer(self.conn.handle(), None, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorizer_refuses_library_tables_and_transaction_control() {
        let refuse = |action, first, second| refuse(action, first, second, Protected::LeaseStore);
        assert!(refuse(ffi::SQLITE_INSERT, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_UPDATE, Some("Jobs"), Some("fence")).is_some());
        assert!(refuse(ffi::SQLITE_DELETE, Some("leasefence_order"), None).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TRIGGER, Some("t"), Some("jobs")).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TRIGGER, Some("t"), Some("counters")).is_some());
        assert!(refuse(ffi::SQLITE_CREATE_TEMP_TABLE, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_ALTER_TABLE, Some("main"), Some("jobs")).is_some());
        assert!(refuse(ffi::SQLITE_TRANSACTION, Some("COMMIT"), None).is_some());
        assert!(refuse(ffi::SQLITE_PRAGMA, Some("journal_mode"), None).is_some());
        assert!(refuse(ffi::SQLITE_INSERT, Some("counters"), None).is_none());
        assert!(refuse(ffi::SQLITE_READ, Some("jobs"), Some("fence")).is_none());
        assert!(refuse(ffi::SQLITE_CREATE_INDEX, Some("i"), Some("counters")).is_none());
        // The planner's statistics: ANALYZE and any write to sqlite_stat*.
        assert!(refuse(ffi::SQLITE_ANALYZE, Some("jobs"), None).is_some());
        assert!(refuse(ffi::SQLITE_INSERT, Some("sqlite_stat1"), None).is_some());
        assert!(refuse(ffi::SQLITE_DELETE, Some("SQLITE_STAT4"), None).is_some());
        assert!(refuse(ffi::SQLITE_DROP_TABLE, Some("sqlite_stat1"), None).is_some());
        assert!(refuse(ffi::SQLITE_READ, Some("sqlite_stat1"), Some("stat")).is_none());
    }

    #[test]
    fn on_the_guards_file_jobs_is_the_applications_table() {
        let guard = |action, first| refuse(action, first, None, Protected::GuardFile);
        assert!(guard(ffi::SQLITE_UPDATE, Some("jobs")).is_none());
        assert!(guard(ffi::SQLITE_INSERT, Some("leasefence_guard")).is_some());
        assert!(guard(ffi::SQLITE_DELETE, Some("Leasefence_guard")).is_some());
        assert!(guard(ffi::SQLITE_TRANSACTION, Some("COMMIT")).is_some());
    }
}

//! A statement trace on the store's connection: for each operation the playground can show the
//! statements that really ran, with their bound values and what they changed, read from SQLite
//! itself (`sqlite3_trace_v2`), not retold in JavaScript. The library's own browser build
//! compiles SQLite without the trace (`SQLITE_OMIT_TRACE`, scripts/build-wasm.sh); this crate's
//! build keeps it.
//!
//! Off by default, and then costs nothing: the hook is installed only by [`set`] and removed
//! again by `set(false)`. The recorder is a thread-local list: wasm32 runs the store on one
//! thread (the page's dedicated worker), and one connection at a time is traced.

use std::cell::RefCell;
use std::ffi::{c_int, c_uint, c_void, CStr};

use rusqlite::{ffi, Connection};

/// One statement that ran: its text as prepared (`?N` placeholders), the same text with the
/// bound values in place, the rows it returned and, for a write, the rows it changed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Statement {
    pub sql: String,
    pub expanded: Option<String>,
    pub rows: u32,
    pub changed: Option<i64>,
    #[serde(skip)]
    handle: usize,
    /// The connection's total of changed rows when the statement started (writes only).
    #[serde(skip)]
    changes_before: Option<(usize, i64)>,
}

/// Settles the rows changed by the last recorded statement: SQLite's count for the statement that
/// completed last (`sqlite3_changes64`), which is this one, as statements run one after another.
/// Its own rows only: the rows the store's triggers write (the queue side table) are not the
/// statement's, and a count of every change since it started (`sqlite3_total_changes64`) would
/// include them. Counted here and not when it finishes, because a statement left before its end
/// (`UPDATE ... RETURNING` read for one row) has its changes counted only as it is reset, after
/// the trace's end-of-statement event.
fn settle(recorded: &mut [Statement]) {
    if let Some(last) = recorded.last_mut() {
        if let Some((db, before)) = last.changes_before.take() {
            // SAFETY: the connection is open: statements are settled while it runs or is traced.
            let (total, own) = unsafe {
                let db = db as *mut ffi::sqlite3;
                (ffi::sqlite3_total_changes64(db), ffi::sqlite3_changes64(db))
            };
            // Nothing changed since it started (a write that matched no row): 0, whatever an
            // earlier statement's count says.
            last.changed = Some(if total == before { 0 } else { own });
        }
    }
}

thread_local! {
    static RECORDED: RefCell<Vec<Statement>> = const { RefCell::new(Vec::new()) };
}

fn text(ptr: *const std::ffi::c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: SQLite hands out NUL-terminated UTF-8 that stays valid during the callback.
    Some(
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The `sqlite3_trace_v2` callback: statement start, each result row, statement end.
unsafe extern "C" fn on_event(
    event: c_uint,
    _ctx: *mut c_void,
    p: *mut c_void,
    x: *mut c_void,
) -> c_int {
    let stmt = p.cast::<ffi::sqlite3_stmt>();
    match event {
        ffi::SQLITE_TRACE_STMT => {
            // x is the text being run: the statement's own, or "-- name" for a trigger's
            // sub-program, which is part of the statement already recorded.
            let started = text(x as *const std::ffi::c_char).unwrap_or_default();
            let sql = unsafe { text(ffi::sqlite3_sql(stmt)) }.unwrap_or_default();
            if started != sql && started.starts_with("--") {
                return 0;
            }
            let expanded = unsafe {
                let raw = ffi::sqlite3_expanded_sql(stmt);
                let owned = text(raw);
                ffi::sqlite3_free(raw.cast());
                owned
            };
            let db = unsafe { ffi::sqlite3_db_handle(stmt) };
            let changes_before =
                is_write(&sql).then(|| (db as usize, unsafe { ffi::sqlite3_total_changes64(db) }));
            RECORDED.with(|r| {
                let mut recorded = r.borrow_mut();
                settle(&mut recorded);
                recorded.push(Statement {
                    sql,
                    expanded,
                    rows: 0,
                    changed: None,
                    handle: stmt as usize,
                    changes_before,
                })
            });
        }
        ffi::SQLITE_TRACE_ROW => RECORDED.with(|r| {
            if let Some(last) = r
                .borrow_mut()
                .iter_mut()
                .rev()
                .find(|s| s.handle == stmt as usize)
            {
                last.rows += 1;
            }
        }),
        ffi::SQLITE_TRACE_PROFILE => RECORDED.with(|r| {
            if let Some(last) = r
                .borrow_mut()
                .iter_mut()
                .rev()
                .find(|s| s.handle == stmt as usize)
            {
                last.handle = 0; // finished: a later run of the same cached statement is new
            }
        }),
        _ => {}
    }
    0
}

/// Whether a statement writes rows (INSERT, UPDATE, DELETE, REPLACE), after its leading comments.
fn is_write(sql: &str) -> bool {
    let code = sql
        .lines()
        .map(str::trim_start)
        .find(|line| !line.is_empty() && !line.starts_with("--"))
        .unwrap_or("");
    let word: String = code.chars().take_while(char::is_ascii_alphabetic).collect();
    ["INSERT", "UPDATE", "DELETE", "REPLACE"]
        .iter()
        .any(|w| word.eq_ignore_ascii_case(w))
}

/// Turns the trace on or off for `conn`; either way the recorded statements are dropped.
pub(crate) fn set(conn: &Connection, on: bool) {
    RECORDED.with(|r| r.borrow_mut().clear());
    let mask = if on {
        (ffi::SQLITE_TRACE_STMT | ffi::SQLITE_TRACE_ROW | ffi::SQLITE_TRACE_PROFILE) as c_uint
    } else {
        0
    };
    // SAFETY: the handle belongs to an open connection. The callback is a plain function with no
    // context pointer, so nothing can dangle when the connection closes with the hook still set;
    // it reads only the statement it is given and that statement's connection.
    unsafe {
        ffi::sqlite3_trace_v2(
            conn.handle(),
            mask,
            on.then_some(on_event as _),
            std::ptr::null_mut(),
        );
    }
}

/// The statements recorded since the last call, oldest first.
pub(crate) fn take() -> Vec<Statement> {
    RECORDED.with(|r| {
        let mut recorded = r.borrow_mut();
        settle(&mut recorded);
        std::mem::take(&mut *recorded)
    })
}

//! Browser backend: SQLite on the Origin Private File System through the sahpool VFS.
//!
//! sahpool keeps a pool of OPFS files with synchronous access handles, which browsers grant only
//! to a dedicated Web Worker, and only to one worker at a time: a second tab cannot open the pool
//! while the first holds it. That is our cross-tab lock, and why the database cannot be
//! corrupted by two tabs writing at once.

use std::cell::Cell;

use rusqlite::{Connection, OpenFlags};
use sqlite_wasm_vfs::sahpool::{install, OpfsSAHError, OpfsSAHPoolCfgBuilder};
use wasm_bindgen::JsValue;

use super::js_error;
use crate::{Journal, LeaseStore, OpenOptions};

const VFS_NAME: &str = "leasefence-opfs";

thread_local! {
    static INSTALLED: Cell<bool> = const { Cell::new(false) };
}

fn explain(err: OpfsSAHError) -> JsValue {
    let text = err.to_string();
    let message = match &err {
        OpfsSAHError::NotSupported => format!(
            "OPFS is not available here ({text}). leasefence needs a dedicated Web Worker in a \
             secure context (https:// or http://localhost) on a browser with OPFS sync access \
             handles (Chrome 108+, Firefox 111+, Safari 16.4+)."
        ),
        _ if text.contains("NoModificationAllowed") || text.contains("InvalidState") => format!(
            "another tab or window of this site already holds the leasefence database ({text}). \
             Close the other tab, then reload this one."
        ),
        _ => format!("could not open OPFS storage: {text}"),
    };
    js_error("storage", &message)
}

/// Installs the VFS once per worker, then opens `/name` in the pool.
pub(crate) async fn open(name: &str) -> Result<LeaseStore, JsValue> {
    if name.is_empty() || name.len() > 200 || name.contains('/') || name.contains('\0') {
        return Err(js_error(
            "invalid_argument",
            "the database name must be 1 to 200 characters without '/' or NUL",
        ));
    }
    if !INSTALLED.with(Cell::get) {
        let config = OpfsSAHPoolCfgBuilder::new()
            .vfs_name(VFS_NAME)
            .directory(".leasefence")
            .initial_capacity(6)
            .build();
        install::<sqlite_wasm_rs::WasmOsCallback>(&config, false)
            .await
            .map_err(explain)?;
        INSTALLED.with(|done| done.set(true));
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs(format!("/{name}"), flags, VFS_NAME)
        .map_err(|err| js_error("storage", &format!("cannot open {name} in OPFS: {err}")))?;
    // The pool is exclusive to this worker, so the rollback journal is all the locking needed.
    let options = OpenOptions::new().journal(Journal::Rollback);
    LeaseStore::set_up(conn, name, &options).map_err(|err| super::error_to_js(&err))
}

//! Test builds only (feature `addon-faults`, never in the npm package): the library's
//! fault-injecting VFS (`crate/tests/support/fault_vfs.rs`) inside the addon, so that the power
//! losses and I/O errors the native library is tested with reach a Node process's file too
//! (`crate/tests/faults.rs`, the `node_*` tests, drive it).
//!
//! Set up from the environment at the first `NativeStore.open` of the process, before SQLite
//! opens anything:
//!
//! - `LEASEFENCE_FAULT_ROOT`: the watched directory (the database's); the VFS becomes the default,
//!   so the store's own open goes through it unchanged;
//! - `LEASEFENCE_FAULT_CUT` (N > 0) and `LEASEFENCE_FAULT_LOSS` (`forget`, or `torn` with
//!   `LEASEFENCE_FAULT_SEED`): cut the power before the Nth mutating call;
//! - `LEASEFENCE_FAULT_EVENTS`: a file that `close()` writes the count of mutating calls to.
//!
//! Every store checkpoints every few pages (as the native trials' connections do), so checkpoints
//! happen inside a short run. `faultArm`, `faultClear` and `faultTakeFired` arm the I/O errors of
//! the native trials from JavaScript.
//!
//! ```js
//! // LEASEFENCE_FAULT_ROOT=/dev/shm/t LEASEFENCE_FAULT_CUT=40 node child.mjs
//! const { NativeStore } = require('./leasefence.node');   // a build with addon-faults
//! const store = NativeStore.open('/dev/shm/t/power.db', 5000);  // on the fault VFS
//! ```

use std::path::Path;
use std::sync::OnceLock;

use napi_derive::napi;
use rusqlite::ffi;

#[allow(dead_code)] // the native tests use more of it than the addon does
#[path = "../../tests/support/fault_vfs.rs"]
mod fault_vfs;

use fault_vfs::{Fault, Kind, Loss};

/// Pages between checkpoints: the native trials' figure (crate/tests/faults.rs).
const CHECKPOINT_PAGES: i64 = 6;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// What the environment asked for, read once, at the first open of the process.
struct Setup {
    /// The watched directory; `None`: no faults in this process.
    root: Option<String>,
    /// Where `close()` writes the count of mutating calls.
    events: Option<String>,
}

fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| Setup {
        root: var("LEASEFENCE_FAULT_ROOT"),
        events: var("LEASEFENCE_FAULT_EVENTS"),
    })
}

/// Installs what the environment asks for, once per process; nothing when it asks for nothing.
pub(super) fn install_from_env() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let Some(root) = &setup().root else {
            return;
        };
        fault_vfs::register_as_default(Path::new(root));
        let cut: u64 = var("LEASEFENCE_FAULT_CUT")
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        if cut > 0 {
            let seed = var("LEASEFENCE_FAULT_SEED")
                .and_then(|n| n.parse().ok())
                .unwrap_or(1);
            let loss = match var("LEASEFENCE_FAULT_LOSS").as_deref() {
                Some("torn") => Loss::Torn { seed },
                _ => Loss::Forget,
            };
            fault_vfs::cut_power_at(cut, loss);
        }
    });
}

/// A checkpoint every few pages instead of every 1,000, on a store opened while faults are
/// installed. Set after the open: SQLite sets its default last thing in opening a connection
/// (after any auto-extension), so it is the store's connection that takes it.
pub(super) fn after_open(store: &crate::LeaseStore) {
    if setup().root.is_some() {
        let _ = store
            .connection()
            .pragma_update(None, "wal_autocheckpoint", CHECKPOINT_PAGES);
    }
}

/// Writes the count of mutating calls so far to `LEASEFENCE_FAULT_EVENTS`, if set (at close).
pub(super) fn note_events() {
    let setup = setup();
    if let (Some(file), Some(_)) = (&setup.events, &setup.root) {
        let _ = std::fs::write(file, fault_vfs::events().to_string());
    }
}

fn kind_of(name: &str) -> napi::Result<Kind> {
    Kind::ALL
        .into_iter()
        .find(|kind| format!("{kind:?}").eq_ignore_ascii_case(name))
        .ok_or_else(|| {
            napi::Error::from_reason(format!(
                "faultArm(): unknown kind {name:?}; one of read, write, sync, truncate"
            ))
        })
}

/// Arms one fault (replacing any other): the `nth` call of `kind` (`read`, `write`, `sync`,
/// `truncate`) from now fails with `full` (a write: disk full) or an I/O error, and with
/// `persistent` every later one too, until [`fault_clear`].
#[napi(js_name = "faultArm")]
pub fn fault_arm(kind: String, nth: u32, full: bool, persistent: bool) -> napi::Result<()> {
    let kind = kind_of(&kind)?;
    let code = if full && kind == Kind::Write {
        ffi::SQLITE_FULL
    } else {
        kind.io_error()
    };
    fault_vfs::arm(Fault {
        kind,
        nth: u64::from(nth.max(1)),
        code,
        persistent,
    });
    Ok(())
}

/// Disarms the fault: the "disk" works again.
#[napi(js_name = "faultClear")]
pub fn fault_clear() {
    fault_vfs::clear_faults();
}

/// The failures returned since the last call, as `[kind, sqliteCode]` pairs.
#[napi(js_name = "faultTakeFired")]
pub fn fault_take_fired() -> serde_json::Value {
    fault_vfs::take_fired()
        .into_iter()
        .map(|(kind, code)| serde_json::json!([format!("{kind:?}").to_lowercase(), code]))
        .collect()
}

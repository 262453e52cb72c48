//! `leasefence`: the lease store from the command line, and the JSON-lines `batch` server.

#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    std::process::exit(requests::run());
}

#[cfg(not(target_arch = "wasm32"))]
mod batch;
#[cfg(not(target_arch = "wasm32"))]
mod commands;
#[cfg(not(target_arch = "wasm32"))]
mod enqueue_stdin;
#[cfg(not(target_arch = "wasm32"))]
mod jobs_table;
#[cfg(not(target_arch = "wasm32"))]
mod requests;
#[cfg(not(target_arch = "wasm32"))]
mod ui;
#[cfg(not(target_arch = "wasm32"))]
mod unlock;
#[cfg(not(target_arch = "wasm32"))]
mod work;

/// Exit status: the operation was granted (or returned a value).
#[cfg(not(target_arch = "wasm32"))]
const EXIT_OK: i32 = 0;
/// Exit status: the store said no (`false` or `null`, with a reason).
#[cfg(not(target_arch = "wasm32"))]
const EXIT_REJECTED: i32 = 1;
/// Exit status: bad usage or an invalid argument; nothing changed.
#[cfg(not(target_arch = "wasm32"))]
const EXIT_INVALID: i32 = 2;
/// Exit status: storage failed; nothing changed.
#[cfg(not(target_arch = "wasm32"))]
const EXIT_STORAGE: i32 = 3;

/// The one rule from an error code to the exit status: `storage` (retrying may help) is 3,
/// every other code (the call itself is wrong) is 2.
#[cfg(not(target_arch = "wasm32"))]
fn exit_status_of(code: leasefence::ErrorCode) -> i32 {
    match code {
        leasefence::ErrorCode::Storage => EXIT_STORAGE,
        _ => EXIT_INVALID,
    }
}

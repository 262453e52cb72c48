//! The exit statuses of the command line, and the one rule from an error code to a status.

/// Exit status: the operation was granted (or returned a value).
pub(crate) const EXIT_OK: i32 = 0;
/// Exit status: the store said no (`false` or `null`, with a reason).
pub(crate) const EXIT_REJECTED: i32 = 1;
/// Exit status: bad usage or an invalid argument; nothing changed.
pub(crate) const EXIT_INVALID: i32 = 2;
/// Exit status: storage failed; nothing changed.
pub(crate) const EXIT_STORAGE: i32 = 3;

/// The one rule from an error code to the exit status: `storage` (retrying may help) is 3,
/// every other code (the call itself is wrong) is 2.
pub(crate) fn exit_status_of(code: leasefence::ErrorCode) -> i32 {
    match code {
        leasefence::ErrorCode::Storage => EXIT_STORAGE,
        _ => EXIT_INVALID,
    }
}

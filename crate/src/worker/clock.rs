//! The runtime's clock: the `now` it passes to the store, in seconds.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A clock shared by the runner, the heartbeat thread and the tokens.
pub(crate) type Clock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The wall clock in Unix seconds: the runtime's default, and what `leasefence` uses when no
/// `--now` is given, so workers of both agree.
///
/// ```
/// assert!(leasefence::worker::wall_clock() > 1.7e9);
/// ```
pub fn wall_clock() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

//! The wall clock the commands read when no `--now` is given: Unix seconds.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds (0 on a clock set before 1970).
pub(crate) fn wall_clock() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

//! The runtime's clock: the `now` it passes to the store, in seconds.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// A clock moved by hand, for running a worker on simulated time (deterministic tests of your
/// handlers, replaying a timeline). A worker given one with [`WorkerOptions::manual_clock`]
/// reads its time from it, and its waits (the next renew, the idle poll) end when the clock is
/// moved past their end rather than when real time passes: it looks at the clock again every
/// millisecond. Clones share one time. It never goes back unless [`set`](Self::set) says so.
///
/// ```
/// use leasefence::worker::ManualClock;
/// let clock = ManualClock::new(1_000.0);
/// let seen_by_the_worker = clock.clone();
/// clock.advance(2.5);
/// assert_eq!(seen_by_the_worker.now(), 1_002.5);
/// clock.set(10.0);
/// assert_eq!(clock.now(), 10.0);
/// ```
///
/// [`WorkerOptions::manual_clock`]: super::WorkerOptions::manual_clock
#[derive(Clone, Debug)]
pub struct ManualClock {
    now: Arc<Mutex<f64>>,
}

impl ManualClock {
    /// A clock standing at `start` seconds.
    ///
    /// ```
    /// assert_eq!(leasefence::worker::ManualClock::new(0.0).now(), 0.0);
    /// ```
    pub fn new(start: f64) -> Self {
        ManualClock {
            now: Arc::new(Mutex::new(start)),
        }
    }

    /// The time it shows.
    ///
    /// ```
    /// assert_eq!(leasefence::worker::ManualClock::new(7.0).now(), 7.0);
    /// ```
    pub fn now(&self) -> f64 {
        *self.lock()
    }

    /// Moves it to `seconds` (also backwards: a worker then sees time go back, as a wall clock
    /// can).
    ///
    /// ```
    /// let clock = leasefence::worker::ManualClock::new(0.0);
    /// clock.set(30.0);
    /// assert_eq!(clock.now(), 30.0);
    /// ```
    pub fn set(&self, seconds: f64) {
        *self.lock() = seconds;
    }

    /// Moves it on by `seconds`.
    ///
    /// ```
    /// let clock = leasefence::worker::ManualClock::new(1.0);
    /// clock.advance(0.5);
    /// assert_eq!(clock.now(), 1.5);
    /// ```
    pub fn advance(&self, seconds: f64) {
        *self.lock() += seconds;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, f64> {
        self.now
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// How long a wait of `seconds` on the worker's clock may last in real time: all of it on a
/// clock that follows real time, at most `recheck` on one moved by hand.
pub(crate) fn real_wait(seconds: f64, recheck: Option<Duration>) -> Duration {
    let wait = if seconds.is_finite() && seconds > 0.0 {
        Duration::from_secs_f64(seconds.min(3600.0))
    } else {
        Duration::ZERO
    };
    recheck.map_or(wait, |most| wait.min(most))
}

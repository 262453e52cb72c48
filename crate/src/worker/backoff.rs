//! How long a failed job waits before its next attempt.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::outcome::Fence;
use crate::rules::worker as rules;

/// The wait before the next attempt of a failed job: `fail` is called with
/// `retry_at = now + delay(attempt)`, `attempt` being the failed attempt (its fence, from 1).
///
/// ```
/// use std::time::Duration;
/// use leasefence::worker::Backoff;
/// let fixed = Backoff::Fixed(Duration::from_secs(5));
/// assert_eq!(fixed.delay(3), Duration::from_secs(5));
/// let exp = Backoff::exponential(Duration::from_secs(1), Duration::from_secs(60)).jitter(0.0);
/// assert_eq!((exp.delay(1), exp.delay(4), exp.delay(30)),
///            (Duration::from_secs(1), Duration::from_secs(8), Duration::from_secs(60)));
/// let custom = Backoff::function(|attempt| Duration::from_millis(100 * attempt as u64));
/// assert_eq!(custom.delay(2), Duration::from_millis(200));
/// ```
#[derive(Clone)]
pub enum Backoff {
    /// The same wait after every failure.
    Fixed(Duration),
    /// `base * 2^(attempt - 1)`, at most `max`, then shortened by a random fraction of up to
    /// `jitter` (0 to 1) so that jobs failing together do not come back together.
    Exponential {
        /// The wait after the first failure.
        base: Duration,
        /// The longest wait.
        max: Duration,
        /// How much of the wait may be cut at random: 0 none, 1 anything down to zero.
        jitter: f64,
    },
    /// Any rule: the wait for a failed attempt.
    Function(Arc<dyn Fn(Fence) -> Duration + Send + Sync>),
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Backoff::Fixed(wait) => f.debug_tuple("Fixed").field(wait).finish(),
            Backoff::Exponential { base, max, jitter } => f
                .debug_struct("Exponential")
                .field("base", base)
                .field("max", max)
                .field("jitter", jitter)
                .finish(),
            Backoff::Function(_) => f.write_str("Function(..)"),
        }
    }
}

impl Default for Backoff {
    /// Exponential from 1 s to 5 minutes, with jitter 0.5.
    fn default() -> Self {
        Backoff::exponential(Duration::from_secs(1), Duration::from_secs(300))
    }
}

impl Backoff {
    /// Exponential from `base` up to `max`, with jitter 0.5 (change it with [`Backoff::jitter`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = leasefence::worker::Backoff::exponential(Duration::from_secs(2), Duration::from_secs(10));
    /// assert!(b.delay(1) <= Duration::from_secs(2) && b.delay(1) >= Duration::from_secs(1));
    /// ```
    pub fn exponential(base: Duration, max: Duration) -> Self {
        Backoff::Exponential {
            base,
            max,
            jitter: 0.5,
        }
    }

    /// The same backoff with another jitter (clamped to 0..=1); other kinds are unchanged.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = leasefence::worker::Backoff::exponential(Duration::from_secs(1), Duration::from_secs(9)).jitter(0.0);
    /// assert_eq!(b.delay(2), Duration::from_secs(2));
    /// ```
    pub fn jitter(self, jitter: f64) -> Self {
        match self {
            Backoff::Exponential { base, max, .. } => Backoff::Exponential {
                base,
                max,
                jitter: if jitter.is_nan() {
                    0.0
                } else {
                    jitter.clamp(0.0, 1.0)
                },
            },
            other => other,
        }
    }

    /// A backoff computed by `rule` from the failed attempt.
    ///
    /// ```
    /// use std::time::Duration;
    /// let b = leasefence::worker::Backoff::function(|_| Duration::ZERO);
    /// assert_eq!(b.delay(7), Duration::ZERO);
    /// ```
    pub fn function(rule: impl Fn(Fence) -> Duration + Send + Sync + 'static) -> Self {
        Backoff::Function(Arc::new(rule))
    }

    /// The wait after attempt `attempt` (1 for the first) failed.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(leasefence::worker::Backoff::Fixed(Duration::ZERO).delay(1), Duration::ZERO);
    /// ```
    pub fn delay(&self, attempt: Fence) -> Duration {
        match self {
            Backoff::Fixed(wait) => *wait,
            Backoff::Function(rule) => rule(attempt),
            Backoff::Exponential { base, max, jitter } => {
                let seconds = rules::exponential_backoff(
                    base.as_secs_f64(),
                    2.0,
                    max.as_secs_f64(),
                    *jitter,
                    attempt,
                    unit_random(),
                );
                Duration::try_from_secs_f64(seconds).unwrap_or(*max)
            }
        }
    }
}

/// A number in [0, 1): splitmix64 over a counter seeded from the clock and the process, enough
/// to spread retries apart (no cryptographic use).
fn unit_random() -> f64 {
    static STATE: AtomicU64 = AtomicU64::new(0);
    let seed = STATE.load(Ordering::Relaxed);
    if seed == 0 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1);
        let _ = STATE.compare_exchange(
            0,
            nanos ^ ((std::process::id() as u64) << 32) | 1,
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }
    let mut z = STATE
        .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

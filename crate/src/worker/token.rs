//! The cancellation token a handler watches: cancelled the moment its lease is lost, cannot be
//! renewed in time, or the worker is interrupted.

use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::clock::Clock;
use crate::outcome::Reason;

/// Why a handler was told to stop ([`CancelToken::reason`]).
///
/// ```
/// use leasefence::worker::CancelReason;
/// use leasefence::Reason;
/// let lost = CancelReason::Lost(Reason::StaleFence { current: 3 });
/// assert_eq!(lost.to_string(), "lease lost: stale fence, current is 3");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum CancelReason {
    /// The store refused a renew with this reason, or the lease ran out (`Expired`) before a
    /// renew could be made (the worker was stopped, suspended, or starved).
    Lost(Reason),
    /// Every renew failed (a busy or unreachable database) until the lease ended; the last error.
    CouldNotRenew(String),
    /// The liveness rule stopped the renewals (the handler showed no progress, or ran past its
    /// maximum run time) and the lease then ended.
    Stalled(String),
    /// The worker was interrupted ([`StopHandle::interrupt`](super::StopHandle::interrupt));
    /// the lease is released, not lost.
    Stopping,
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CancelReason::Lost(reason) => write!(f, "lease lost: {reason}"),
            CancelReason::CouldNotRenew(error) => {
                write!(
                    f,
                    "lease ended: no renew succeeded before it ran out ({error})"
                )
            }
            CancelReason::Stalled(why) => write!(f, "lease ended: renewals stopped, {why}"),
            CancelReason::Stopping => write!(f, "the worker is stopping"),
        }
    }
}

/// The error a handler gets from [`CancelToken::checkpoint`] once it is cancelled; return it
/// (with `?`): the runtime discards the handler's result either way.
///
/// ```
/// use leasefence::worker::{CancelReason, Cancelled};
/// let err = Cancelled(CancelReason::Stopping);
/// assert_eq!(err.to_string(), "cancelled: the worker is stopping");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Cancelled(pub CancelReason);

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cancelled: {}", self.0)
    }
}

impl std::error::Error for Cancelled {}

#[derive(Debug)]
struct State {
    /// Set once, never cleared.
    cancelled: Option<CancelReason>,
    /// When the lease ends, by the worker's clock; moved on by each renew.
    deadline: f64,
    /// What to report when the deadline passes without an explicit reason (the last renew
    /// error, or the liveness rule's verdict); `Lost(Expired)` when none.
    at_deadline: Option<CancelReason>,
    /// The handler's latest sign of life: its start, or its latest `checkpoint`.
    last_progress: f64,
}

struct Inner {
    state: Mutex<State>,
    changed: Condvar,
    clock: Clock,
}

/// Tells a handler that it must stop: [`is_cancelled`](Self::is_cancelled) turns true, and
/// [`wait_timeout`](Self::wait_timeout) returns, the moment the lease is lost, can no longer be
/// renewed before it ends, or the worker is interrupted. It needs no thread to notice that the
/// lease ran out: the token knows the lease's end and compares it with the clock itself, so a
/// worker that was suspended sees it cancelled on its first look after waking.
///
/// Clones share one state. A handler shows that it is alive with [`checkpoint`](Self::checkpoint)
/// (the default liveness rule, [`Liveness::Progress`](super::Liveness::Progress), renews only
/// while it does).
///
/// ```
/// use leasefence::worker::CancelToken;
/// let token = CancelToken::for_lease(|| 100.0, 130.0);
/// assert!(!token.is_cancelled());
/// assert!(token.checkpoint().is_ok());
/// let expired = CancelToken::for_lease(|| 200.0, 130.0);
/// assert!(expired.is_cancelled());
/// assert_eq!(expired.reason().unwrap().to_string(), "lease lost: lease expired at t=130");
/// ```
#[derive(Clone)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelToken")
            .field("state", &*self.lock())
            .finish()
    }
}

impl CancelToken {
    /// A token for a lease ending at `deadline` on `clock` (seconds, the store's `now`). The
    /// runtime makes one per claimed job; tests and custom loops can make their own.
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// assert_eq!(token.deadline(), 30.0);
    /// ```
    pub fn for_lease(clock: impl Fn() -> f64 + Send + Sync + 'static, deadline: f64) -> Self {
        Self::with_clock(Arc::new(clock), deadline)
    }

    pub(crate) fn with_clock(clock: Clock, deadline: f64) -> Self {
        let now = clock();
        CancelToken {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    cancelled: None,
                    deadline,
                    at_deadline: None,
                    last_progress: now,
                }),
                changed: Condvar::new(),
                clock,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock leaves plain data behind; keep using it.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn settle(&self, state: &mut State) -> bool {
        if state.cancelled.is_none() && (self.inner.clock)() >= state.deadline {
            state.cancelled = Some(state.at_deadline.take().unwrap_or(CancelReason::Lost(
                Reason::Expired {
                    until: state.deadline,
                },
            )));
        }
        state.cancelled.is_some()
    }

    /// True once the handler must stop (and from then on).
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// assert!(!token.is_cancelled());
    /// ```
    pub fn is_cancelled(&self) -> bool {
        let mut state = self.lock();
        self.settle(&mut state)
    }

    /// Why the handler must stop; `None` while it may go on.
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// assert_eq!(token.reason(), None);
    /// ```
    pub fn reason(&self) -> Option<CancelReason> {
        let mut state = self.lock();
        self.settle(&mut state);
        state.cancelled.clone()
    }

    /// When the lease currently ends, by the worker's clock.
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 12.5);
    /// assert_eq!(token.deadline(), 12.5);
    /// ```
    pub fn deadline(&self) -> f64 {
        self.lock().deadline
    }

    /// Marks progress (for the liveness rule) and answers whether the handler may go on:
    /// `Err(Cancelled)` once it must stop, so a handler can write `token.checkpoint()?;`
    /// between steps.
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// token.checkpoint()?;
    /// # Ok::<(), leasefence::worker::Cancelled>(())
    /// ```
    pub fn checkpoint(&self) -> Result<(), Cancelled> {
        let mut state = self.lock();
        if self.settle(&mut state) {
            return Err(Cancelled(state.cancelled.clone().expect("settled")));
        }
        state.last_progress = (self.inner.clock)();
        Ok(())
    }

    /// Waits until the token is cancelled or `timeout` passes; true when cancelled. A handler
    /// that sleeps or polls uses this instead of `thread::sleep`, so it hears at once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// assert!(!token.wait_timeout(Duration::from_millis(1)));
    /// ```
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let start = std::time::Instant::now();
        let mut state = self.lock();
        loop {
            if self.settle(&mut state) {
                return true;
            }
            let elapsed = start.elapsed();
            if elapsed >= timeout {
                return false;
            }
            // Wake at the lease's end at the latest: nobody notifies when time runs out.
            let to_deadline = state.deadline - (self.inner.clock)();
            let mut wait = timeout - elapsed;
            if to_deadline.is_finite() && to_deadline >= 0.0 {
                // A little past the end, so that the clock has passed it on waking.
                wait = wait.min(Duration::from_secs_f64(to_deadline) + Duration::from_micros(200));
            }
            state = self
                .inner
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
    }

    /// Waits until the token is cancelled, and answers why.
    ///
    /// ```
    /// let token = leasefence::worker::CancelToken::for_lease(|| 0.0, 30.0);
    /// token.cancel(leasefence::worker::CancelReason::Stopping);
    /// assert_eq!(token.wait(), leasefence::worker::CancelReason::Stopping);
    /// ```
    pub fn wait(&self) -> CancelReason {
        while !self.wait_timeout(Duration::from_secs(3600)) {}
        self.reason().expect("cancelled")
    }

    /// Cancels with `reason` (the first reason given stays).
    ///
    /// ```
    /// use leasefence::worker::{CancelReason, CancelToken};
    /// let token = CancelToken::for_lease(|| 0.0, 30.0);
    /// token.cancel(CancelReason::Stopping);
    /// assert!(token.is_cancelled());
    /// ```
    pub fn cancel(&self, reason: CancelReason) {
        let mut state = self.lock();
        if !self.settle(&mut state) {
            state.cancelled = Some(reason);
        }
        drop(state);
        self.inner.changed.notify_all();
    }

    /// A renew went through: the lease now ends at `deadline`. Ignored once cancelled.
    pub(crate) fn extend(&self, deadline: f64) {
        let mut state = self.lock();
        if !self.settle(&mut state) {
            state.deadline = deadline;
            state.at_deadline = None;
        }
    }

    /// What to report if the lease runs out with nothing more said.
    pub(crate) fn explain_deadline(&self, reason: CancelReason) {
        let mut state = self.lock();
        if state.cancelled.is_none() {
            state.at_deadline = Some(reason);
        }
    }

    pub(crate) fn last_progress(&self) -> f64 {
        self.lock().last_progress
    }
}

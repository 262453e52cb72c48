//! Stopping a running worker from elsewhere: [`StopHandle`].

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::{CancelReason, CancelToken};

#[derive(Debug, Clone, Copy, PartialEq)]
enum StopMode {
    /// No new claims; the running handlers finish and their outcomes are written.
    AfterCurrent,
    /// The running handlers are cancelled (`Stopping`), their results discarded, their leases
    /// released.
    Interrupt,
}

#[derive(Default)]
struct StopState {
    mode: Option<StopMode>,
    /// The tokens of the handlers running now, by the key [`StopHandle::track`] gave them.
    running: HashMap<u64, CancelToken>,
    next_key: u64,
    /// Set by the store's watch when new work may have arrived (docs/contract.md section 11,
    /// waking); taken before each claim, so a wake-up during a claim is not lost.
    woken: bool,
}

/// Stops a running [`Worker`](super::Worker) from another thread (or a signal-watching one). Clones share it.
///
/// ```
/// use leasefence::worker::{Worker, WorkerOptions};
/// let dir = tempfile::tempdir().unwrap();
/// let db = dir.path().join("q.db");
/// let mut worker = Worker::open(&db, &leasefence::OpenOptions::new(), WorkerOptions::new("w"))?;
/// let stop = worker.stop_handle();
/// std::thread::spawn(move || stop.stop());
/// let counts = worker.run(|_| Ok(None))?; // nothing to do; returns once stopped
/// assert_eq!(counts.claimed, 0);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct StopHandle {
    inner: Arc<(Mutex<StopState>, Condvar)>,
}

impl std::fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StopHandle")
            .field("mode", &self.lock().mode)
            .finish()
    }
}

impl StopHandle {
    fn lock(&self) -> MutexGuard<'_, StopState> {
        self.inner
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Graceful stop: claim nothing more; the running handlers finish and their outcomes are
    /// written; then `run` returns.
    ///
    /// ```
    /// let stop = leasefence::worker::StopHandle::default();
    /// stop.stop();
    /// assert!(stop.is_stopping());
    /// ```
    pub fn stop(&self) {
        let mut state = self.lock();
        state.mode.get_or_insert(StopMode::AfterCurrent);
        drop(state);
        self.inner.1.notify_all();
    }

    /// Stop now: every running handler's token is cancelled ([`CancelReason::Stopping`]), their
    /// results discarded and their leases released (the job is claimable again at once); then `run`
    /// returns.
    ///
    /// ```
    /// let stop = leasefence::worker::StopHandle::default();
    /// stop.interrupt();
    /// assert!(stop.is_stopping());
    /// ```
    pub fn interrupt(&self) {
        let mut state = self.lock();
        state.mode = Some(StopMode::Interrupt);
        for token in state.running.values() {
            token.cancel(CancelReason::Stopping);
        }
        drop(state);
        self.inner.1.notify_all();
    }

    /// Whether a stop was asked for.
    ///
    /// ```
    /// assert!(!leasefence::worker::StopHandle::default().is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.lock().mode.is_some()
    }

    /// Records a running handler's token, so that an interrupt cancels it (at once, when one
    /// was already asked for); answers the key to [`untrack`](Self::untrack) it with.
    pub(super) fn track(&self, token: &CancelToken) -> u64 {
        let mut state = self.lock();
        if state.mode == Some(StopMode::Interrupt) {
            token.cancel(CancelReason::Stopping);
        }
        state.next_key += 1;
        let key = state.next_key;
        state.running.insert(key, token.clone());
        key
    }

    /// Forgets a handler's token once it has returned.
    pub(super) fn untrack(&self, key: u64) {
        self.lock().running.remove(&key);
    }

    /// Waits `wait` or until a stop is asked for (or, when `wakeable`, a wake-up came).
    pub(super) fn idle(&self, wait: Duration, wakeable: bool) {
        let state = self.lock();
        if state.mode.is_none() && !(wakeable && state.woken) {
            let _ = self.inner.1.wait_timeout(state, wait);
        }
    }

    /// New work may have arrived: an idle wait ends now.
    pub(super) fn wake(&self) {
        self.lock().woken = true;
        self.inner.1.notify_all();
    }

    /// Whether a wake-up came since the last [`take_wake`](Self::take_wake).
    pub(super) fn is_woken(&self) -> bool {
        self.lock().woken
    }

    /// Forgets the wake-ups so far (called before each claim, which sees what they announced).
    pub(super) fn take_wake(&self) -> bool {
        std::mem::take(&mut self.lock().woken)
    }
}

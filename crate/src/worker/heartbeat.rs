//! The heartbeat thread: renews the running job's lease on its own connection, and cancels the
//! job's token when a renew is refused.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::clock::{real_wait, Clock};
use super::counters::SharedCounters;
use super::token::{CancelReason, CancelToken};
use super::Liveness;
use crate::leases::Leases;
use crate::outcome::{Fence, Outcome};
use crate::rules::worker as rules;

pub(crate) struct Settings {
    pub owner: String,
    pub ttl: f64,
    pub every: f64,
    pub liveness: Liveness,
    pub clock: Clock,
    pub counters: Arc<SharedCounters>,
    /// The longest real-time wait before the clock is read again (a clock moved by hand).
    pub recheck: Option<Duration>,
}

struct Lease {
    job: String,
    fence: Fence,
    token: CancelToken,
    claimed_at: f64,
    /// When to try the next renew.
    next_at: f64,
    /// Renews that failed in a row (a busy or unreachable store).
    failed_renews: u32,
    /// The liveness rule stopped renewing; the lease is left to run out.
    given_up: bool,
}

#[derive(Default)]
struct State {
    lease: Option<Lease>,
    /// Changes with every begin and end, so that a renew answer for a finished job is dropped.
    generation: u64,
    shutdown: bool,
    /// The thread waits with no time-out (no lease, or nothing left to do for it): only then
    /// must `begin` wake it. Otherwise it wakes by itself no later than the new lease's first
    /// renew, so short jobs cost it no wake-up at all.
    idle: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One thread per worker run, serving its jobs one after the other.
pub(crate) struct Heartbeat {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    pub fn start(store: Box<dyn Leases>, settings: Settings) -> std::io::Result<Self> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("leasefence-heartbeat".into())
            .spawn(move || beat(&*store, &settings, &thread_shared))?;
        Ok(Heartbeat {
            shared,
            thread: Some(thread),
        })
    }

    /// Starts renewing `job`'s lease (claimed at `claimed_at`, first renew at `first_renew_at`).
    pub fn begin(
        &self,
        job: &str,
        fence: Fence,
        token: &CancelToken,
        claimed_at: f64,
        first_renew_at: f64,
    ) {
        let mut state = self.shared.lock();
        state.generation += 1;
        state.lease = Some(Lease {
            job: job.to_owned(),
            fence,
            token: token.clone(),
            claimed_at,
            next_at: first_renew_at,
            failed_renews: 0,
            given_up: false,
        });
        let wake = state.idle;
        drop(state);
        if wake {
            self.shared.changed.notify_all();
        }
    }

    /// Stops renewing; an answer to a renew still under way is then dropped unseen. The thread
    /// is not woken: it finds the lease gone when it next wakes.
    pub fn end(&self) {
        let mut state = self.shared.lock();
        state.generation += 1;
        state.lease = None;
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.shared.lock().shutdown = true;
        self.shared.changed.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Why the liveness rule stops renewing, or `None` to renew.
fn stalled(settings: &Settings, lease: &Lease, now: f64) -> Option<String> {
    match settings.liveness {
        Liveness::Unbounded => None,
        Liveness::MaxRunTime(limit) => (now - lease.claimed_at >= limit.as_secs_f64()).then(|| {
            format!(
                "the handler ran past its maximum run time of {} s",
                limit.as_secs_f64()
            )
        }),
        Liveness::Progress(stall) => {
            let stall = stall.map_or(settings.ttl, |s| s.as_secs_f64());
            (now - lease.token.last_progress() >= stall)
                .then(|| format!("the handler showed no progress (no checkpoint) for {stall} s"))
        }
    }
}

fn wait_idle<'a>(shared: &'a Shared, mut state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
    state.idle = true;
    let mut state = shared
        .changed
        .wait(state)
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    state.idle = false;
    state
}

fn beat(store: &dyn Leases, settings: &Settings, shared: &Shared) {
    let mut state = shared.lock();
    loop {
        if state.shutdown {
            return;
        }
        let now = (settings.clock)();
        let Some(lease) = state.lease.as_mut() else {
            state = wait_idle(shared, state);
            continue;
        };
        if lease.given_up || lease.token.is_cancelled() {
            // Nothing left to do for this lease: the token reports its end by itself.
            state = wait_idle(shared, state);
            continue;
        }
        if now < lease.next_at {
            // Wake for the next renew, or at the lease's end to stop trying.
            let wake = lease.next_at.min(lease.token.deadline());
            let wait = real_wait(wake - now, settings.recheck).max(Duration::from_micros(200));
            state = shared
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            continue;
        }
        if let Some(why) = stalled(settings, lease, now) {
            lease.token.explain_deadline(CancelReason::Stalled(why));
            lease.given_up = true;
            continue;
        }
        let (held, token, generation) = (
            crate::Lease::new(lease.job.as_str(), settings.owner.as_str(), lease.fence),
            lease.token.clone(),
            state.generation,
        );
        drop(state);
        let answer = store.renew(&held, now, settings.ttl);
        state = shared.lock();
        if state.generation != generation {
            continue;
        }
        let Some(lease) = state.lease.as_mut() else {
            continue;
        };
        match answer {
            Ok(Outcome::Granted(())) => {
                token.extend(now + settings.ttl);
                settings.counters.add(&settings.counters.renewals);
                lease.next_at = rules::next_renew_at(now, settings.every);
                lease.failed_renews = 0;
            }
            Ok(Outcome::Rejected(reason)) => token.cancel(CancelReason::Lost(reason)),
            Err(error) => {
                // Busy or unreachable: try again soon, for as long as the lease lasts; if it
                // runs out first, the token says why.
                token.explain_deadline(CancelReason::CouldNotRenew(error.to_string()));
                lease.failed_renews += 1;
                lease.next_at = (settings.clock)()
                    + rules::renew_retry_delay(lease.failed_renews, settings.every);
            }
        }
    }
}

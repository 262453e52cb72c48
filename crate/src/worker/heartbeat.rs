//! The heartbeat thread: renews the running jobs' leases on its own connection, and cancels a
//! job's token when its renew is refused. The leases due at one wake-up are renewed together:
//! one `renew` for one lease, one `renew_many` for several (docs/contract.md section 10). A
//! worker that records itself in the registry sends its beat in the same transaction
//! (`heartbeat`), and alone once a renew interval while it renews nothing.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::clock::{real_wait, Clock};
use super::counters::SharedCounters;
use super::token::{CancelReason, CancelToken};
use super::Liveness;
use crate::leases::Leases;
use crate::outcome::{Fence, Outcome};
use crate::registry::WorkerBeat;
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
    /// Who the worker is in the registry, or `None` for a worker that does not record itself.
    pub registry: Option<Registration>,
}

/// A worker's row in the registry, but for its counters and times: what each beat repeats.
pub(crate) struct Registration {
    pub host: String,
    pub pid: u32,
    pub started: f64,
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

impl Lease {
    /// Whether the heartbeat still has anything to do for this lease.
    fn active(&self) -> bool {
        !self.given_up && !self.token.is_cancelled()
    }
}

/// A lease renewed ahead of its time when another one is due: up to this fraction of the renew
/// interval early, so that leases claimed at nearly the same time share one `renew_many`.
const EARLY_FRACTION: f64 = 0.25;

struct State {
    /// The leases being renewed, by the key [`Heartbeat::begin`] answered. A key is never reused,
    /// so a renew answer for a lease whose job has ended finds no entry and is dropped.
    leases: HashMap<u64, Lease>,
    next_key: u64,
    shutdown: bool,
    /// When the thread wakes by itself next (infinite while it waits for a `begin`): `begin`
    /// wakes it only for a lease due before that, so short jobs cost it no wake-up at all.
    wakes_at: f64,
    /// When the worker's last beat went to the registry (it goes with every renewal, and alone
    /// once a renew interval when nothing is renewed).
    last_beat: f64,
}

impl Default for State {
    fn default() -> Self {
        State {
            leases: HashMap::new(),
            next_key: 0,
            shutdown: false,
            wakes_at: f64::INFINITY,
            last_beat: f64::NEG_INFINITY,
        }
    }
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

/// One thread per worker run, serving all its running jobs.
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

    /// Starts renewing `job`'s lease (claimed at `claimed_at`, first renew at `first_renew_at`);
    /// answers the key to [`end`](Self::end) it with.
    pub fn begin(
        &self,
        job: &str,
        fence: Fence,
        token: &CancelToken,
        claimed_at: f64,
        first_renew_at: f64,
    ) -> u64 {
        let mut state = self.shared.lock();
        state.next_key += 1;
        let key = state.next_key;
        state.leases.insert(
            key,
            Lease {
                job: job.to_owned(),
                fence,
                token: token.clone(),
                claimed_at,
                next_at: first_renew_at,
                failed_renews: 0,
                given_up: false,
            },
        );
        let wake = first_renew_at < state.wakes_at;
        drop(state);
        if wake {
            self.shared.changed.notify_all();
        }
        key
    }

    /// Stops renewing the lease of `key`; an answer to a renew still under way is then dropped
    /// unseen. The thread is not woken: it finds the lease gone when it next wakes.
    pub fn end(&self, key: u64) {
        self.shared.lock().leases.remove(&key);
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

/// The keys of the leases to renew at `now`: those due, and with them those due soon. A lease
/// the liveness rule stops renewing is given up here (its token then reports why at its end).
fn due_leases(settings: &Settings, state: &mut State, now: f64) -> Vec<u64> {
    let any_due = state
        .leases
        .values()
        .any(|lease| lease.active() && now >= lease.next_at);
    if !any_due {
        return Vec::new();
    }
    let early = now + settings.every * EARLY_FRACTION;
    let mut due = Vec::new();
    for (&key, lease) in state.leases.iter_mut() {
        if !lease.active() || lease.next_at > early {
            continue;
        }
        if let Some(why) = stalled(settings, lease, now) {
            lease.token.explain_deadline(CancelReason::Stalled(why));
            lease.given_up = true;
            continue;
        }
        due.push(key);
    }
    due.sort_unstable();
    due
}

/// When the thread must look again: the earliest next renew, a lease's end (to stop trying), or
/// the worker's next beat.
fn next_wake(settings: &Settings, state: &State) -> f64 {
    let beat = if settings.registry.is_some() {
        state.last_beat + settings.every
    } else {
        f64::INFINITY
    };
    state
        .leases
        .values()
        .filter(|lease| lease.active())
        .map(|lease| lease.next_at.min(lease.token.deadline()))
        .fold(beat, f64::min)
}

/// The beat of the worker at this moment, if it records itself.
fn worker_beat(settings: &Settings, stopping: bool) -> Option<WorkerBeat> {
    let registration = settings.registry.as_ref()?;
    Some(WorkerBeat {
        owner: settings.owner.clone(),
        host: registration.host.clone(),
        pid: registration.pid,
        started: registration.started,
        stopping,
        counters: settings.counters.snapshot(),
    })
}

/// The renewals, in lists of at most `MAX_BATCH`: with the worker's beat in the first list's
/// transaction (`heartbeat`, also with no lease at all), else one `renew` for one lease and
/// `renew_many` for several. The error of a list (its text) is the answer of each of its leases.
fn renew_all(
    store: &dyn Leases,
    held: &[crate::Lease],
    now: f64,
    ttl: f64,
    mut beat: Option<WorkerBeat>,
) -> Vec<Result<Outcome<()>, String>> {
    if beat.is_none() {
        if let [one] = held {
            return vec![store
                .renew(one, now, ttl)
                .map_err(|error| error.to_string())];
        }
    }
    let mut answers = Vec::with_capacity(held.len());
    let chunks: Vec<&[crate::Lease]> = if held.is_empty() {
        vec![&[]]
    } else {
        held.chunks(crate::MAX_BATCH).collect()
    };
    for chunk in chunks {
        let answer = match beat.take() {
            Some(beat) => store.heartbeat(&beat, chunk, now, ttl),
            None => store.renew_many(chunk, now, ttl),
        };
        match answer {
            Ok(outcomes) => answers.extend(outcomes.into_iter().map(Ok)),
            Err(error) => answers.extend(chunk.iter().map(|_| Err(error.to_string()))),
        }
    }
    answers
}

fn beat(store: &dyn Leases, settings: &Settings, shared: &Shared) {
    let mut state = shared.lock();
    loop {
        if state.shutdown {
            drop(state);
            // The last beat says the worker stopped, so the registry shows it gone at once; a
            // store that refuses it now leaves the row to run out by itself.
            if let Some(last) = worker_beat(settings, true) {
                let _ = store.heartbeat(&last, &[], (settings.clock)(), settings.ttl);
            }
            return;
        }
        let now = (settings.clock)();
        let due = due_leases(settings, &mut state, now);
        let beat_due = settings.registry.is_some() && now >= state.last_beat + settings.every;
        if due.is_empty() && !beat_due {
            let wake = next_wake(settings, &state);
            state.wakes_at = wake;
            state = if wake.is_infinite() {
                shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
            } else {
                let wait = real_wait(wake - now, settings.recheck).max(Duration::from_micros(200));
                shared
                    .changed
                    .wait_timeout(state, wait)
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .0
            };
            state.wakes_at = f64::INFINITY;
            continue;
        }
        let held: Vec<crate::Lease> = due
            .iter()
            .map(|key| {
                let lease = &state.leases[key];
                crate::Lease::new(lease.job.as_str(), settings.owner.as_str(), lease.fence)
            })
            .collect();
        let tokens: Vec<CancelToken> = due
            .iter()
            .map(|key| state.leases[key].token.clone())
            .collect();
        // Every renewal carries the beat; a failed beat is tried again a renew interval later.
        state.last_beat = now;
        drop(state);
        let beat = worker_beat(settings, false);
        let answers = renew_all(store, &held, now, settings.ttl, beat);
        state = shared.lock();
        for ((key, token), answer) in due.iter().zip(&tokens).zip(answers) {
            let Some(lease) = state.leases.get_mut(key) else {
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
                    token.explain_deadline(CancelReason::CouldNotRenew(error));
                    lease.failed_renews += 1;
                    lease.next_at = (settings.clock)()
                        + rules::renew_retry_delay(lease.failed_renews, settings.every);
                }
            }
        }
    }
}

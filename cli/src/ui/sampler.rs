//! The counts the page and `/metrics` show, taken by a thread of their own on a store handle of
//! their own, and the last minutes of them kept in memory for the page's chart.
//!
//! Counting reads every job (half a second at a million on SQLite), so requests do not wait for
//! it: the thread counts again every refresh interval (1 s, or four times what the last count
//! cost, so a big store is not counted without pause) and a request gets the latest sample; it
//! waits only for the first one, for a fresh one after a write through the dashboard, or after a
//! pause. Nobody looking, nothing is counted: the thread samples while a request asked within the
//! last minute.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use leasefence::{JobCounts, Leases, QueueCounts, QueueWaiting, WorkerInfo};

/// How long after the last request the thread keeps sampling.
const WATCHED: Duration = Duration::from_secs(60);
/// The shortest refresh interval.
const MIN_INTERVAL: Duration = Duration::from_secs(1);
/// How many samples the chart keeps (10 minutes at the shortest interval).
const HISTORY: usize = 600;
/// How long a request waits for a sample before it answers an error.
const WAIT: Duration = Duration::from_secs(60);

/// The counts at one moment.
pub(crate) struct Sample {
    /// The wall-clock time the counts are for (Unix seconds).
    pub(crate) at: f64,
    /// Every queue's counts summed.
    pub(crate) all: JobCounts,
    /// Each queue's counts, by name.
    pub(crate) queues: Vec<QueueCounts>,
    /// The worker registry at `at`.
    pub(crate) workers: Vec<WorkerInfo>,
    /// Each queue's longest wait: since when its oldest claimable job has waited.
    pub(crate) waiting: Vec<QueueWaiting>,
    /// The fence floor: the highest fence prune ever deleted (docs/contract.md section 13).
    pub(crate) floor: i64,
    /// What taking them cost.
    pub(crate) cost: Duration,
}

#[derive(Default)]
struct State {
    latest: Option<Result<Arc<Sample>, String>>,
    history: VecDeque<Arc<Sample>>,
    /// When the last request asked; sampling stops a minute later.
    wanted_until: Option<Instant>,
    /// The first sample that began after the last write through the dashboard: until it is
    /// taken, the latest counts are stale. (A number, not a flag the counting thread clears when
    /// it begins: a request in between would take the old counts as fresh.)
    needed: u64,
    in_progress: bool,
    /// Samples finished so far.
    generation: u64,
    taken_at: Option<Instant>,
    cost: Duration,
}

impl State {
    fn interval(&self) -> Duration {
        (self.cost * 4).max(MIN_INTERVAL)
    }

    fn fresh(&self) -> bool {
        !self.stale() && self.taken_at.is_some_and(|t| t.elapsed() < self.interval())
    }

    fn stale(&self) -> bool {
        self.generation < self.needed
    }
}

/// The sampling thread's shared state.
pub(crate) struct Sampler {
    state: Mutex<State>,
    changed: Condvar,
}

impl Sampler {
    /// Starts the thread, which counts through `store` (opened for it alone).
    pub(crate) fn start(store: Box<dyn Leases>) -> Arc<Sampler> {
        let sampler = Arc::new(Sampler {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let shared = Arc::clone(&sampler);
        std::thread::spawn(move || shared.run(&*store));
        sampler
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the counts half-written: take them as is.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn run(&self, store: &dyn Leases) {
        loop {
            let mut state = self.lock();
            loop {
                let wanted = state
                    .wanted_until
                    .is_some_and(|until| Instant::now() < until);
                let due = state.stale() || !state.fresh();
                if wanted && due {
                    break;
                }
                let wait = match (wanted, state.taken_at) {
                    (true, Some(taken)) => state.interval().saturating_sub(taken.elapsed()),
                    _ => WATCHED,
                };
                state = self
                    .changed
                    .wait_timeout(state, wait.max(Duration::from_millis(1)))
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0);
            }
            state.in_progress = true;
            drop(state);
            let started = Instant::now();
            let counted = count(store);
            let mut state = self.lock();
            state.in_progress = false;
            state.cost = started.elapsed();
            state.taken_at = Some(Instant::now());
            state.generation += 1;
            if let Ok(sample) = &counted {
                if state.history.len() == HISTORY {
                    state.history.pop_front();
                }
                state.history.push_back(Arc::clone(sample));
            }
            state.latest = Some(counted);
            drop(state);
            self.changed.notify_all();
        }
    }

    /// The latest counts, taken after the last write through the dashboard; waits for them when
    /// there are none such, or when the latest are older than two refresh intervals (nobody
    /// looked for a while, so the thread paused).
    pub(crate) fn current(&self) -> Result<Arc<Sample>, String> {
        let mut state = self.lock();
        state.wanted_until = Some(Instant::now() + WATCHED);
        let recent = state
            .taken_at
            .is_some_and(|t| t.elapsed() < state.interval() * 2);
        if !state.stale() && recent {
            if let Some(latest) = &state.latest {
                return latest.clone();
            }
        }
        // After a write, a count already under way may have begun before it: wait for the next.
        let target = state.needed.max(state.generation + 1);
        self.changed.notify_all();
        let deadline = Instant::now() + WAIT;
        while state.generation < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!(
                    "counting the jobs took over {} s; try again, or list them by state",
                    WAIT.as_secs()
                ));
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner().0);
        }
        state
            .latest
            .clone()
            .unwrap_or_else(|| Err("no count was taken".into()))
    }

    /// The samples kept, oldest first (the page's chart); asking counts as looking.
    pub(crate) fn history(&self) -> Vec<Arc<Sample>> {
        let mut state = self.lock();
        state.wanted_until = Some(Instant::now() + WATCHED);
        self.changed.notify_all();
        state.history.iter().cloned().collect()
    }

    /// A write through the dashboard: the next request waits for counts taken after it.
    pub(crate) fn invalidate(&self) {
        let mut state = self.lock();
        // A count under way may have read before the write: the one after it is needed.
        state.needed = state.generation + if state.in_progress { 2 } else { 1 };
        drop(state);
        self.changed.notify_all();
    }
}

/// The counts by state of every queue (`queue_stats`, one pass in the store) and their sum.
fn stats_per_queue(
    store: &dyn Leases,
    now: f64,
) -> leasefence::Result<(JobCounts, Vec<QueueCounts>)> {
    let queues = store.queue_stats(now)?;
    let mut all = JobCounts::default();
    for q in &queues {
        all.queued += q.counts.queued;
        all.scheduled += q.counts.scheduled;
        all.leased += q.counts.leased;
        all.done += q.counts.done;
        all.dead += q.counts.dead;
    }
    Ok((all, queues))
}

fn count(store: &dyn Leases) -> Result<Arc<Sample>, String> {
    let at = crate::clock::wall_clock();
    let started = Instant::now();
    let (all, queues) = stats_per_queue(store, at).map_err(|err| err.to_string())?;
    let workers = store.list_workers(at).map_err(|err| err.to_string())?;
    let waiting = store.oldest_waiting(at).map_err(|err| err.to_string())?;
    let floor = store.fence_floor().map_err(|err| err.to_string())?;
    Ok(Arc::new(Sample {
        at,
        all,
        queues,
        workers,
        waiting,
        floor,
        cost: started.elapsed(),
    }))
}

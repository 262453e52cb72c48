//! Waking idle workers (docs/contract.md section 11, waking; docs/decisions/waking.md): what a
//! store offers a worker so that it need not poll. [`Leases::watch`](crate::Leases::watch)
//! starts a watch that calls a [`Wakeup`] whenever new work may have arrived (an SQLite file was
//! written, a PostgreSQL enqueue was notified); the [`Watch`] it answers ends it when dropped.
//! A wake-up is a hint, never a promise: it may come for nothing (the worker's own commits
//! write the file too), and a store without notifications (another OS, a network file system)
//! answers no watch at all, so the worker keeps its poll interval as a fallback.

use std::sync::Arc;

/// Called by a watch, from a thread of its own, whenever new work may have arrived.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// let woken = Arc::new(AtomicBool::new(false));
/// let flag = Arc::clone(&woken);
/// let wakeup: leasefence::Wakeup = Arc::new(move || flag.store(true, Ordering::Release));
/// wakeup();
/// assert!(woken.load(Ordering::Acquire));
/// ```
pub type Wakeup = Arc<dyn Fn() + Send + Sync>;

/// A running watch: notifications go to its [`Wakeup`] until it is dropped (which stops its
/// thread and closes what it watched with).
///
/// ```
/// use std::sync::Arc;
/// use leasefence::{Leases, LeaseStore};
/// let dir = tempfile::tempdir().unwrap();
/// let store = LeaseStore::open(dir.path().join("q.db"))?;
/// let watch = store.watch(None, Arc::new(|| {}))?; // Some on Linux, None elsewhere
/// drop(watch); // watching ends here
/// # Ok::<(), leasefence::Error>(())
/// ```
pub struct Watch {
    _running: Box<dyn Send>,
}

impl Watch {
    /// A watch kept alive by `running` (whose drop ends it). The wasm builds watch nothing.
    #[cfg_attr(web, allow(dead_code))]
    pub(crate) fn new(running: impl Send + 'static) -> Watch {
        Watch {
            _running: Box::new(running),
        }
    }
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Watch")
    }
}

/// When an idle worker has something to look at again without being woken (docs/contract.md
/// section 11, waking): the protocol's `next_due` answer, and what the Rust worker's rest reads.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub(crate) struct NextDue {
    /// The earliest `until` of an open job of the worker's queues (a delayed job's run time, a
    /// retry time, a lease's end; at or before `now` when one is claimable already), if any.
    pub(crate) job: Option<f64>,
    /// The next slot of any schedule after `now`: the worker enqueues the slots as it ticks,
    /// whatever their queues.
    pub(crate) slot: Option<f64>,
}

/// Reads [`NextDue`] from `store`: one index probe per (queue, priority) for the job, the stored
/// schedules for the slot. (The worker runtime's; the protocol awaits the two parts itself.)
#[cfg(not(web))]
pub(crate) fn next_due(
    store: &(impl crate::Leases + ?Sized),
    now: f64,
    queues: Option<&[&str]>,
) -> crate::Result<NextDue> {
    Ok(NextDue {
        job: store.next_due_in(queues)?,
        slot: crate::rules::schedule::next_slot(&store.schedules()?, now),
    })
}

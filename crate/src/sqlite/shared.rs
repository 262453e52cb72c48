//! [`SharedStore`]: one SQLite writer connection shared by many threads, whose operations commit
//! together (group commit, docs/contract.md section 10 and issue 23).
//!
//! The design is leader/follower, with no timer. A caller queues its operation (an owned
//! closure over the [`LeaseStore`]); if no group is being committed it becomes the leader: it
//! takes everything pending, runs it as one [`Group`] (one transaction, a savepoint per
//! operation, in queue order), commits once, hands every answer out, and gives up the lead.
//! Callers that queued meanwhile wait on a condition variable; the first of them to wake leads
//! the next group. A lone caller finds only its own operation and runs it as a plain store
//! would (its own `BEGIN IMMEDIATE` and commit, no group around it): nothing ever waits for
//! company, and a lone operation costs what it costs on a [`LeaseStore`].
//!
//! Answers are handed out only after the commit that makes them durable. When the commit fails
//! (or SQLite rolls the group's transaction back under an operation), every operation of the
//! group gets the storage error and nothing of the group is applied.
//!
//! Reads (`state`, `jobs`, `inspect`, `stats`) join the group like writes rather than using a
//! second connection: a second connection would wait for the writer's lock anyway in rollback
//! mode and with dot-file locking (a file shared with Node), while in the group a read sees the
//! group's order and costs no sync (a transaction that wrote nothing commits without one).

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::ThreadId;

use super::write_tx::{immediate, Group};
use crate::call::{Call, Queues, Reply};
use crate::error::{Error, Result, SqliteError};
use crate::lease::Lease;
use crate::leases::Leases;
use crate::options::OpenOptions;
use crate::outcome::Outcome;
use crate::rules::fenced::{FencedHandle, Finish};
use crate::sqlite::LeaseStore;

/// The name the group's own transaction reports in its errors.
const GROUP: &str = "group_commit";

/// A lease store on one SQLite connection that many threads use at once: `Clone + Send + Sync`,
/// every clone the same store. Operations that arrive together share one transaction and one
/// commit (one sync), each in its own savepoint, each checked and answered exactly as if it ran
/// alone, in arrival order; no answer is given before the commit that makes it durable. A lone
/// operation commits at once.
///
/// It implements [`Leases`], so it answers exactly as a [`LeaseStore`] does.
///
/// ```
/// use leasefence::{Leases, NewJob, SharedStore};
///
/// let dir = tempfile::tempdir().unwrap();
/// let store = SharedStore::open(dir.path().join("queue.db"))?;
/// store.enqueue_many(&(0..8).map(|i| NewJob::new(format!("job-{i}"))).collect::<Vec<_>>())?;
/// let workers: Vec<_> = (0..4)
///     .map(|w| {
///         let store = store.clone();
///         std::thread::spawn(move || -> leasefence::Result<usize> {
///             let mut done = 0;
///             while let Some(job) = store.claim_next(&format!("w{w}"), 1.0, 30.0)? {
///                 done += usize::from(store.complete(&job.lease(), 2.0, Some("ok"))?.is_granted());
///             }
///             Ok(done)
///         })
///     })
///     .collect();
/// let done: usize = workers.into_iter().map(|w| w.join().unwrap().unwrap()).sum();
/// assert_eq!(done, 8);
/// # Ok::<(), leasefence::Error>(())
/// ```
#[derive(Clone)]
pub struct SharedStore {
    shared: Arc<Shared>,
}

struct Shared {
    /// Only the leader locks it, so it is never contended; the mutex makes the store `Sync`.
    writer: Mutex<LeaseStore>,
    queue: Mutex<Queue>,
    /// Signalled whenever a group has been answered and the lead is free.
    answered: Condvar,
    path: Option<PathBuf>,
    /// The store's limits (section 13), read without a turn in the queue.
    limits: crate::Limits,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Box<dyn Pending>>,
    /// The thread leading the group being committed, if any.
    leader: Option<ThreadId>,
    /// Callers with an operation that cannot be queued (a borrowed fenced closure) waiting for
    /// the lead: they get it first, so a steady stream of queued operations cannot starve them
    /// (whatever is queued rides along in their group).
    borrowed_waiting: usize,
}

/// A queued operation: run in the group, then settled once the group's fate is known.
trait Pending: Send {
    /// Runs the operation in the group (in the savepoint its own write opens) and keeps its
    /// answer. `Err` means the group's transaction is lost (SQLite rolled it back under the
    /// operation).
    fn run(&mut self, store: &LeaseStore, group: &Group<'_>) -> Result<()>;

    /// Runs the operation alone, as on a plain store (its own `BEGIN IMMEDIATE` and commit),
    /// and keeps its answer.
    fn run_alone(&mut self, store: &LeaseStore);

    /// Hands the answer to the waiting caller: the kept one when the group committed
    /// (`failure` is `None`), else the group's error.
    fn settle(self: Box<Self>, failure: Option<Error>);
}

type Slot<T> = Arc<Mutex<Option<Result<T>>>>;

struct Operation<T, F> {
    name: &'static str,
    work: Option<F>,
    answer: Option<Result<T>>,
    slot: Slot<T>,
}

impl<T, F> Pending for Operation<T, F>
where
    T: Send,
    F: FnOnce(&LeaseStore) -> Result<T> + Send,
{
    fn run(&mut self, store: &LeaseStore, group: &Group<'_>) -> Result<()> {
        let Some(work) = self.work.take() else {
            return Ok(());
        };
        self.answer = Some(group.run(|| work(store))?);
        Ok(())
    }

    fn run_alone(&mut self, store: &LeaseStore) {
        if let Some(work) = self.work.take() {
            self.answer = Some(work(store));
        }
    }

    fn settle(self: Box<Self>, failure: Option<Error>) {
        let answer = match (failure, self.answer) {
            (Some(error), _) => Err(error),
            (None, Some(answer)) => answer,
            (None, None) => Err(Error::Internal {
                message: format!("{} was settled without running", self.name),
            }),
        };
        *lock(&self.slot) = Some(answer);
    }
}

/// Runs `work`, an operation of several writes (`claim_many`, `init`), in one write of its own
/// (a savepoint in a group): its error undoes everything it wrote and leaves its neighbours'
/// writes alone. Every other operation of the store already opens exactly one write.
fn in_savepoint<T>(
    store: &LeaseStore,
    name: &'static str,
    work: impl FnOnce(&LeaseStore) -> Result<T>,
) -> Result<T> {
    let savepoint = immediate(&store.conn, name)?;
    let answer = work(store)?;
    savepoint.commit().map_err(Error::storage(name))?;
    Ok(answer)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nobody panics while holding these locks except through a caller's fenced closure, which
    // runs under the writer's lock with its group already rolled back by then.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A call from inside a fenced closure of the same store would wait for the group its own
/// thread leads, for ever: refused.
fn refuse_reentry(queue: &Queue) -> Result<()> {
    if queue.leader == Some(std::thread::current().id()) {
        return Err(Error::invalid(
            "store",
            "a shared store was called from inside one of its own fenced closures, which would \
             wait for itself; inside the closure, use only its handle",
        ));
    }
    Ok(())
}

/// The group's error for each of its operations: the same SQLite failure (code and message),
/// one copy per caller, as `Error` is not `Clone`.
fn copy_for_neighbour(error: &Error) -> Error {
    let failure = match error {
        Error::Storage { source, .. } => match &source.0 {
            rusqlite::Error::SqliteFailure(code, message) => {
                rusqlite::Error::SqliteFailure(*code, message.clone())
            }
            other => rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(other.to_string()),
            ),
        },
        other => rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT_ROLLBACK),
            Some(format!(
                "the group commit's transaction was rolled back ({other}); nothing of the \
                 group was applied: retry"
            )),
        ),
    };
    Error::Storage {
        operation: GROUP,
        source: SqliteError(failure),
    }
}

/// The lead, held while a group runs: whatever happens (a panicking fenced closure included),
/// every taken operation is settled and the lead is handed on.
struct Lead<'s> {
    shared: &'s Shared,
    batch: Vec<Box<dyn Pending>>,
}

impl Lead<'_> {
    fn settle(&mut self, failure: Option<&Error>) {
        for op in self.batch.drain(..) {
            op.settle(failure.map(copy_for_neighbour));
        }
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        for op in self.batch.drain(..) {
            op.settle(Some(Error::Internal {
                message: "the thread leading a group commit panicked (in a fenced closure); \
                          nothing of the group was applied: retry"
                    .into(),
            }));
        }
        lock(&self.shared.queue).leader = None;
        self.shared.answered.notify_all();
    }
}

impl SharedStore {
    /// Shares `store`'s connection: from now on every operation goes through this handle's
    /// group commit. Any [`LeaseStore`] will do (a file, a connection of your own, memory).
    ///
    /// ```
    /// use leasefence::{LeaseStore, Leases, SharedStore};
    /// let store = SharedStore::new(LeaseStore::open_in_memory()?);
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn new(store: LeaseStore) -> Self {
        let path = store.path().map(Path::to_path_buf);
        let limits = store.options.limits;
        SharedStore {
            shared: Arc::new(Shared {
                writer: Mutex::new(store),
                queue: Mutex::new(Queue::default()),
                answered: Condvar::new(),
                path,
                limits,
            }),
        }
    }

    /// Opens (creating if missing) the database file at `path` with the default
    /// [`OpenOptions`], shared.
    ///
    /// ```
    /// use leasefence::{Leases, SharedStore};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = SharedStore::open(dir.path().join("queue.db"))?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        OpenOptions::new().open_shared(path)
    }

    /// The file this store was opened on; `None` in memory.
    ///
    /// ```
    /// let store = leasefence::SharedStore::new(leasefence::LeaseStore::open_in_memory()?);
    /// assert_eq!(store.path(), None);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn path(&self) -> Option<&Path> {
        self.shared.path.as_deref()
    }

    /// How many operations wait for the next group (queued ones, and fenced closures waiting
    /// to lead it; not the group being committed now): how much company the next commit will
    /// have.
    ///
    /// ```
    /// let store = leasefence::SharedStore::new(leasefence::LeaseStore::open_in_memory()?);
    /// assert_eq!(store.pending(), 0);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn pending(&self) -> usize {
        let queue = lock(&self.shared.queue);
        queue.pending.len() + queue.borrowed_waiting
    }

    /// Queues `work` and waits for its answer, leading groups while the lead is free.
    fn call<T, F>(&self, name: &'static str, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&LeaseStore) -> Result<T> + Send + 'static,
    {
        let slot: Slot<T> = Arc::default();
        let mut queue = lock(&self.shared.queue);
        refuse_reentry(&queue)?;
        queue.pending.push(Box::new(Operation {
            name,
            work: Some(work),
            answer: None,
            slot: Arc::clone(&slot),
        }));
        loop {
            if let Some(answer) = lock(&slot).take() {
                return answer;
            }
            if queue.leader.is_some() || queue.borrowed_waiting > 0 {
                queue = self
                    .shared
                    .answered
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            queue.leader = Some(std::thread::current().id());
            let batch = std::mem::take(&mut queue.pending);
            drop(queue);
            // Its own answer is in `slot` now, settled like everyone else's.
            let _led = self.lead(batch, None::<fn(&LeaseStore) -> Result<()>>);
            queue = lock(&self.shared.queue);
        }
    }

    /// Runs `batch` and then `own` (the leader's own operation, which may borrow from the
    /// caller) as one group, each in its savepoint, commits, and settles every operation; `own`'s
    /// answer once the commit made it durable. A lone operation runs as on a plain store, with no
    /// group around it: the same statements, the same commit.
    fn lead<T>(
        &self,
        batch: Vec<Box<dyn Pending>>,
        own: Option<impl FnOnce(&LeaseStore) -> Result<T>>,
    ) -> Option<Result<T>> {
        let mut lead = Lead {
            shared: &self.shared,
            batch,
        };
        let writer = lock(&self.shared.writer);
        match (lead.batch.len(), own) {
            (0, Some(own)) => Some(own(&writer)),
            (1, None) => {
                lead.batch[0].run_alone(&writer);
                lead.settle(None);
                None
            }
            (_, own) => {
                let group = match Group::begin(&writer.conn, GROUP) {
                    Ok(group) => group,
                    Err(error) => {
                        lead.settle(Some(&error));
                        return own.map(|_| Err(error));
                    }
                };
                let ran = lead
                    .batch
                    .iter_mut()
                    .try_for_each(|op| op.run(&writer, &group))
                    .and_then(|()| own.map(|own| group.run(|| own(&writer))).transpose());
                match ran.and_then(|answer| group.commit().map(|()| answer)) {
                    Ok(answer) => {
                        lead.settle(None);
                        answer
                    }
                    Err(error) => {
                        lead.settle(Some(&error));
                        Some(Err(error))
                    }
                }
            }
        }
    }

    /// Waits for the lead, then runs `own` (which borrows from the caller, so it cannot be
    /// queued) in a group with everything pending, in its own savepoint, last.
    fn lead_with<T>(
        &self,
        name: &'static str,
        own: impl FnOnce(&LeaseStore) -> Result<T>,
    ) -> Result<T> {
        let mut queue = lock(&self.shared.queue);
        refuse_reentry(&queue)?;
        queue.borrowed_waiting += 1;
        while queue.leader.is_some() {
            queue = self
                .shared
                .answered
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        queue.borrowed_waiting -= 1;
        queue.leader = Some(std::thread::current().id());
        let batch = std::mem::take(&mut queue.pending);
        drop(queue);
        self.lead(batch, Some(own)).unwrap_or_else(|| {
            Err(Error::Internal {
                message: format!("{name} was not run in the group it led"),
            })
        })
    }
}

impl OpenOptions {
    /// Opens (creating if missing) the database file at `path` as
    /// [`open`](OpenOptions::open) does, as a [`SharedStore`] for many threads.
    ///
    /// ```
    /// use leasefence::{Leases, OpenOptions};
    /// let dir = tempfile::tempdir().unwrap();
    /// let store = OpenOptions::new().open_shared(dir.path().join("queue.db"))?;
    /// assert!(store.enqueue("job")?);
    /// # Ok::<(), leasefence::Error>(())
    /// ```
    pub fn open_shared(&self, path: impl AsRef<Path>) -> Result<SharedStore> {
        Ok(SharedStore::new(self.open(path)?))
    }
}

impl fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedStore")
            .field("path", &self.shared.path)
            .finish_non_exhaustive()
    }
}

/// Every call of [`LeaseStore`], through the group commit: the call is made owned and queued, as
/// it runs on the leader's thread.
impl Leases for SharedStore {
    fn execute(&self, call: Call<'_>) -> Result<Reply> {
        match call {
            // Several writes each: one savepoint around them, so that their error undoes only
            // their own writes.
            Call::Init => self.call("init", |store| {
                in_savepoint(store, "init", |store| store.execute(Call::Init))
            }),
            // Each owner's claim in turn on the one writer, in one savepoint: the same answers
            // as the racing threads of [`LeaseStore::claim_many`] (exactly one winner on a
            // claimable job), whose own connections would only wait for this writer's lock.
            Call::ClaimMany {
                job,
                owners,
                now,
                ttl,
            } => {
                let window = crate::rules::claim_many_window(owners.len(), now, ttl)?;
                let job = job.into_owned();
                let owners: Vec<String> = owners.into_iter().map(Cow::into_owned).collect();
                self.call("claim_many", move |store| {
                    in_savepoint(store, "claim_many", |store| {
                        let outcomes = owners
                            .iter()
                            .map(|owner| store.claim_within(&job, owner, window))
                            .collect::<Result<_>>()?;
                        Ok(Reply::Fences(outcomes))
                    })
                })
            }
            // The round's two calls, each queued: they may join different groups.
            call @ Call::CompleteThenClaim { .. } => call.answer_by_default(self),
            call => {
                let name = call.name();
                let call = call.into_owned();
                self.call(name, move |store| store.execute(call))
            }
        }
    }

    fn limits(&self) -> crate::Limits {
        self.shared.limits
    }

    fn watch(
        &self,
        queues: Option<&[&str]>,
        wakeup: crate::wake::Wakeup,
    ) -> Result<Option<crate::wake::Watch>> {
        // The writer connection's file: the same watch as the store's own.
        let queues = Queues::of(queues).into_owned();
        self.call("watch", move |store| {
            let names = queues.names();
            store.watch(names.as_deref(), wakeup)
        })
    }

    /// `work` borrows from the caller, so it cannot be queued for another thread: the caller
    /// waits for the lead and runs it in the group it leads, after what was pending, in its own
    /// savepoint.
    fn fenced_with(
        &self,
        lease: &Lease,
        now: f64,
        finish: Finish,
        work: &mut dyn FnMut(&mut dyn FencedHandle) -> Result<()>,
    ) -> Result<Outcome<()>> {
        self.lead_with("fenced", |store| {
            Leases::fenced_with(store, lease, now, finish, work)
        })
    }
}

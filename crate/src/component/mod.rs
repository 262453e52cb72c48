//! The WebAssembly component (feature `component`, WASI only): the world of `wit/leasefence.wit`,
//! bound by wit-bindgen, over the same store and the same protocol dispatch as every other
//! runtime (docs/contract.md section 14).
//!
//! A typed call is made a [`Request`], then run by the one dispatch ([`answer`]) that the JSON
//! protocol, the wasm engine and the Node addon run: the same checks in the same order, the same
//! answers. Only the shapes differ: this module turns the typed [`Answer`] into the WIT's records
//! and variants, so a host matches on `stale-fence`, never on text.
//!
//! Storage: SQLite built for WASI, on the host's files through `wasi:filesystem`. WASI has no file
//! locks and no shared memory, so the store opens with dot-file locking (the directory
//! `<db>.lock`, which SQLite's unix-dotfile VFS makes and the native and Node protocol also sees)
//! and the rollback journal.
//!
//! ```python
//! # Python, with PyPI's wasmtime: see docs/guide for the whole example.
//! store = leases.store_open(path)          # the resource
//! fence = store.claim("job", "A", 0.0, 30.0)
//! ```

mod convert;

use std::cell::RefCell;

use crate::protocol::{answer, Answer, Backend, Request};
use crate::{LeaseStore, OpenOptions, Result};

wit_bindgen::generate!({
    path: "wit",
    world: "leasefence",
});

use exports::leasefence::store::leases::{Guest as LeasesGuest, GuestStore};
use exports::leasefence::store::protocol::Guest as ProtocolGuest;
use exports::leasefence::store::types::{
    ClaimedJob, Fence, Inspection, JobCounts, JobState, LeaseItem, NewJob, NextDue,
    OpenOptions as WitOpenOptions, PruneOptions, QueueCounts, Reason, Schedule, StoreError,
    StoredSchedule,
};
use exports::leasefence::store::worker_rules::Guest as WorkerRulesGuest;

use convert::{bools, expect, fence_or_reason, per_lease, unit_or_reason};

/// The component's exports.
struct Component;

export!(Component);

/// How the component opens a file: dot-file locking and the rollback journal (the only ones WASI
/// can run; the options force them there), the library's defaults otherwise.
fn open_store(path: &str) -> Result<LeaseStore> {
    OpenOptions::new().open(path)
}

/// `open-with`'s options as the library's, checked: nothing is opened when one is out of range.
fn options_of(options: WitOpenOptions) -> Result<OpenOptions> {
    let mut opened = OpenOptions::new();
    if let Some(seconds) = options.busy_timeout {
        if !(seconds.is_finite() && (0.0..=86_400.0).contains(&seconds)) {
            return Err(crate::Error::invalid(
                "busy-timeout",
                format!("must be a number of seconds from 0 to 86400, got {seconds}"),
            ));
        }
        opened = opened.busy_timeout(std::time::Duration::from_secs_f64(seconds));
    }
    let bytes = |name: &'static str, value: Option<u64>| {
        value
            .map(|n| {
                usize::try_from(n).map_err(|_| {
                    crate::Error::invalid(
                        name,
                        format!(
                            "is {n} bytes, more than a component's memory can hold; 0 means no \
                             limit"
                        ),
                    )
                })
            })
            .transpose()
    };
    Ok(opened.limits(crate::Limits::given_or_default(
        bytes("payload-limit", options.payload_limit)?,
        bytes("result-limit", options.result_limit)?,
        bytes("error-limit", options.error_limit)?,
    )))
}

/// The one dispatch's backend on an open store.
struct Open<'a>(&'a LeaseStore);

impl Backend for Open<'_> {
    fn store(&mut self) -> Result<&LeaseStore> {
        Ok(self.0)
    }
}

/// The `store` resource: one open database file.
pub struct StoreResource {
    store: LeaseStore,
}

impl StoreResource {
    fn run(&self, request: Request) -> std::result::Result<Answer, StoreError> {
        answer(&mut Open(&self.store), &request).map_err(|err| convert::store_error(&err))
    }
}

impl LeasesGuest for Component {
    type Store = StoreResource;
}

impl GuestStore for StoreResource {
    fn open(
        path: String,
    ) -> std::result::Result<exports::leasefence::store::leases::Store, StoreError> {
        let store = open_store(&path).map_err(|err| convert::store_error(&err))?;
        Ok(exports::leasefence::store::leases::Store::new(
            StoreResource { store },
        ))
    }

    fn open_with(
        path: String,
        options: WitOpenOptions,
    ) -> std::result::Result<exports::leasefence::store::leases::Store, StoreError> {
        let store = options_of(options)
            .and_then(|options| options.open(&path))
            .map_err(|err| convert::store_error(&err))?;
        Ok(exports::leasefence::store::leases::Store::new(
            StoreResource { store },
        ))
    }

    fn init(&self) -> std::result::Result<(), StoreError> {
        self.run(Request::Init).map(|_| ())
    }

    fn enqueue(&self, job: NewJob) -> std::result::Result<bool, StoreError> {
        let answer = self.run(Request::Enqueue {
            job: job.job,
            run_at: job.run_at,
            payload: job.payload,
            queue: job.queue,
            priority: job.priority,
        })?;
        expect(answer, "enqueue", convert::bool_value)
    }

    fn state(&self, job: String) -> std::result::Result<Option<JobState>, StoreError> {
        expect(
            self.run(Request::State { job })?,
            "state",
            convert::optional_state,
        )
    }

    fn claim(
        &self,
        job: String,
        owner: String,
        now: f64,
        ttl: f64,
    ) -> std::result::Result<std::result::Result<Fence, Reason>, StoreError> {
        fence_or_reason(self.run(Request::Claim {
            job,
            owner,
            now,
            ttl,
        })?)
    }

    fn renew(
        &self,
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        ttl: f64,
    ) -> std::result::Result<std::result::Result<(), Reason>, StoreError> {
        unit_or_reason(self.run(Request::Renew {
            job,
            owner,
            fence,
            now,
            ttl,
        })?)
    }

    fn complete(
        &self,
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        result: Option<String>,
    ) -> std::result::Result<std::result::Result<(), Reason>, StoreError> {
        unit_or_reason(self.run(Request::Complete {
            job,
            owner,
            fence,
            now,
            result,
        })?)
    }

    fn release(
        &self,
        job: String,
        owner: String,
        fence: Fence,
    ) -> std::result::Result<std::result::Result<(), Reason>, StoreError> {
        unit_or_reason(self.run(Request::Release { job, owner, fence })?)
    }

    fn claim_many(
        &self,
        job: String,
        owners: Vec<String>,
        now: f64,
        ttl: f64,
    ) -> std::result::Result<Vec<Option<Fence>>, StoreError> {
        let answer = self.run(Request::ClaimMany {
            job,
            owners,
            now,
            ttl,
        })?;
        expect(answer, "claim-many", convert::fences)
    }

    fn claim_next(
        &self,
        owner: String,
        now: f64,
        ttl: f64,
        queues: Option<Vec<String>>,
    ) -> std::result::Result<Option<ClaimedJob>, StoreError> {
        let answer = self.run(Request::ClaimNext {
            owner,
            now,
            ttl,
            queues,
        })?;
        expect(answer, "claim-next", convert::optional_claimed)
    }

    fn fail(
        &self,
        job: String,
        owner: String,
        fence: Fence,
        now: f64,
        retry_at: Option<f64>,
        error: Option<String>,
    ) -> std::result::Result<std::result::Result<(), Reason>, StoreError> {
        unit_or_reason(self.run(Request::Fail {
            job,
            owner,
            fence,
            now,
            retry_at,
            error,
        })?)
    }

    fn revive(
        &self,
        job: String,
        now: f64,
    ) -> std::result::Result<std::result::Result<(), Reason>, StoreError> {
        unit_or_reason(self.run(Request::Revive { job, now })?)
    }

    fn inspect(&self, job: String) -> std::result::Result<Option<Inspection>, StoreError> {
        expect(
            self.run(Request::Inspect { job })?,
            "inspect",
            convert::optional_inspection,
        )
    }

    fn stats(&self, now: f64, queue: Option<String>) -> std::result::Result<JobCounts, StoreError> {
        expect(
            self.run(Request::Stats { now, queue })?,
            "stats",
            convert::counts,
        )
    }

    fn enqueue_many(&self, jobs: Vec<NewJob>) -> std::result::Result<Vec<bool>, StoreError> {
        let jobs = jobs.into_iter().map(convert::new_job).collect();
        let answer = self.run(Request::EnqueueMany {
            jobs,
            statements: Vec::new(),
        })?;
        expect(answer, "enqueue-many", bools)
    }

    fn claim_next_many(
        &self,
        owner: String,
        n: u32,
        now: f64,
        ttl: f64,
        queues: Option<Vec<String>>,
    ) -> std::result::Result<Vec<ClaimedJob>, StoreError> {
        let answer = self.run(Request::ClaimNextMany {
            owner,
            n: n as usize,
            now,
            ttl,
            queues,
        })?;
        expect(answer, "claim-next-many", convert::claimed_list)
    }

    fn renew_many(
        &self,
        owner: String,
        leases: Vec<LeaseItem>,
        now: f64,
        ttl: f64,
    ) -> std::result::Result<Vec<std::result::Result<(), Reason>>, StoreError> {
        let leases = leases.into_iter().map(convert::lease_item).collect();
        per_lease(self.run(Request::RenewMany {
            owner,
            leases,
            now,
            ttl,
        })?)
    }

    fn complete_many(
        &self,
        owner: String,
        leases: Vec<LeaseItem>,
        now: f64,
    ) -> std::result::Result<Vec<std::result::Result<(), Reason>>, StoreError> {
        let leases = leases.into_iter().map(convert::lease_item).collect();
        per_lease(self.run(Request::CompleteMany { owner, leases, now })?)
    }

    fn schedule(&self, schedule: Schedule) -> std::result::Result<(), StoreError> {
        let request = convert::schedule_request(schedule);
        self.run(request).map(|_| ())
    }

    fn unschedule(&self, name: String) -> std::result::Result<bool, StoreError> {
        expect(
            self.run(Request::Unschedule { name })?,
            "unschedule",
            convert::bool_value,
        )
    }

    fn schedules(&self) -> std::result::Result<Vec<StoredSchedule>, StoreError> {
        expect(
            self.run(Request::Schedules)?,
            "schedules",
            convert::schedules,
        )
    }

    fn enqueue_due(&self, now: f64) -> std::result::Result<Vec<String>, StoreError> {
        expect(
            self.run(Request::EnqueueDue { now })?,
            "enqueue-due",
            convert::strings,
        )
    }

    fn next_due(
        &self,
        now: f64,
        queues: Option<Vec<String>>,
    ) -> std::result::Result<NextDue, StoreError> {
        expect(
            self.run(Request::NextDue { now, queues })?,
            "next-due",
            convert::next_due,
        )
    }

    fn queue_stats(&self, now: f64) -> std::result::Result<Vec<QueueCounts>, StoreError> {
        expect(
            self.run(Request::QueueStats { now })?,
            "queue-stats",
            convert::queue_counts,
        )
    }

    fn prune(&self, options: PruneOptions) -> std::result::Result<u64, StoreError> {
        let answer = self.run(Request::Prune {
            before: options.before,
            keep_dead: Some(options.keep_dead),
            // More jobs than a table can hold: no limit at all.
            limit: options.limit.and_then(|n| i64::try_from(n).ok()),
            only_dead: Some(options.only_dead),
        })?;
        expect(answer, "prune", convert::count)
    }
}

impl WorkerRulesGuest for Component {
    fn exponential_backoff(
        base: f64,
        factor: f64,
        max: f64,
        jitter: f64,
        attempt: Fence,
        draw: f64,
    ) -> f64 {
        crate::rules::worker::exponential_backoff(base, factor, max, jitter, attempt, draw)
    }

    fn must_check_previous_attempt(attempt: Fence, max_attempts: Fence) -> bool {
        crate::rules::worker::must_check_previous_attempt(attempt, max_attempts)
    }

    fn next_renew_at(granted_at: f64, every: f64) -> f64 {
        crate::rules::worker::next_renew_at(granted_at, every)
    }

    fn claim_batch(free: u32, concurrency: u32) -> u32 {
        // Never more than `free`, so it fits in a u32.
        crate::rules::worker::claim_batch(free as usize, concurrency as usize) as u32
    }

    fn attempt_verdict(
        attempt: Fence,
        max_attempts: Fence,
        previous_attempt_failed: bool,
    ) -> Option<String> {
        use crate::rules::worker::AttemptVerdict;
        match crate::rules::worker::attempt_verdict(attempt, max_attempts, previous_attempt_failed)
        {
            AttemptVerdict::Run => None,
            AttemptVerdict::Poison { error } => Some(error),
        }
    }

    fn retry_at(now: f64, attempt: Fence, max_attempts: Fence, delay: f64) -> Option<f64> {
        crate::rules::worker::retry_at(now, attempt, max_attempts, delay)
    }

    fn renew_retry_delay(failed_renews: u32, every: f64) -> f64 {
        crate::rules::worker::renew_retry_delay(failed_renews, every)
    }

    fn write_retry_delay(failed_tries: u32) -> f64 {
        crate::rules::worker::write_retry_delay(failed_tries)
    }
}

thread_local! {
    /// The store `protocol.handle` runs on, once `protocol.open` opened it.
    static PROTOCOL_STORE: RefCell<Option<LeaseStore>> = const { RefCell::new(None) };
}

impl ProtocolGuest for Component {
    fn open(path: String) -> std::result::Result<(), String> {
        let store = open_store(&path).map_err(|err| err.to_string())?;
        PROTOCOL_STORE.with(|slot| *slot.borrow_mut() = Some(store));
        Ok(())
    }

    fn handle(request: String) -> String {
        PROTOCOL_STORE.with(|slot| match slot.borrow().as_ref() {
            Some(store) => crate::protocol::respond(&mut Open(store), &request).to_json(),
            None => crate::protocol::Response::Failed {
                code: "storage",
                message: "no database is open: call protocol.open(path) first".into(),
            }
            .to_json(),
        })
    }
}

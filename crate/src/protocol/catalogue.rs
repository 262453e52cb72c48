//! Every operation's signature, read off the one definition: its name (from [`OP_NAMES`]), its
//! parameters in positional order (by running the request reader, [`Request::read`], against a
//! source that only records what it is asked for), what it answers and what it does (the two
//! `match`es below, which the compiler makes complete). Bindings in other languages are generated
//! from it (`leasefence operations` prints it as JSON; `scripts/generate-operations.mjs` writes the
//! npm package's table of methods and its typings), so a new operation reaches them by being
//! added to [`Op`], the reader, the two `match`es, its SQL and the backends.

use super::read::{FencedArgs, Members, Op, Source, OP_NAMES};
use super::Request;
use crate::outcome::Fence;
use crate::rules::fenced::Statement;
use std::cell::RefCell;
use std::convert::Infallible;
use std::rc::Rc;

/// One operation as other languages bind it: names, positional parameters, answer, description.
///
/// ```
/// let ops = leasefence::protocol::operations();
/// let renew = ops.iter().find(|op| op.name == "renew").unwrap();
/// let names: Vec<_> = renew.parameters.iter().map(|p| p.name).collect();
/// assert_eq!(names, ["job", "owner", "fence", "now", "ttl"]);
/// assert_eq!(renew.answer, "bool");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    /// The protocol's name (`claim_next`).
    pub name: &'static str,
    /// JavaScript's name (`claimNext`).
    pub js_name: &'static str,
    /// The parameters, in positional order (docs/contract.md section 5).
    pub parameters: Vec<Parameter>,
    /// What it answers, in WIT's notation: `bool`, `u64`, `string`, `fence`, a record's name
    /// (`job-state`), `option<T>`, `list<T>`, and `answer<T>` for one item answered with its
    /// own reason; `unit` for nothing.
    pub answer: &'static str,
    /// What it does, naming parameters as the protocol spells them.
    pub doc: &'static str,
}

/// One parameter of an [`Operation`].
///
/// ```
/// let ops = leasefence::protocol::operations();
/// let enqueue = ops.iter().find(|op| op.name == "enqueue").unwrap();
/// let run_at = &enqueue.parameters[1];
/// assert_eq!((run_at.name, run_at.kind, run_at.optional, run_at.nullable), ("run_at", "number", true, true));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    /// The protocol's name (`run_at`).
    pub name: &'static str,
    /// `string`, `number`, `fence`, `integer`, `bool`, `count`, `strings`, `objects` (a list of
    /// objects with `members`), `object` (one object with `members`), `statements` (a fenced
    /// write's `{sql, params}` list), `fenced_options` (`{complete, result}`).
    pub kind: &'static str,
    /// May be left out (then it is null, or the default its operation documents).
    pub optional: bool,
    /// May be null.
    pub nullable: bool,
    /// For `objects` and `object`: the members each object may have.
    pub members: Vec<Parameter>,
}

/// Every operation of the protocol, in its order (the order of docs/contract.md).
///
/// ```
/// let ops = leasefence::protocol::operations();
/// assert_eq!(ops[0].name, "init");
/// assert!(ops.iter().any(|op| op.name == "claim_next" && op.js_name == "claimNext"));
/// ```
pub fn operations() -> Vec<Operation> {
    OP_NAMES
        .iter()
        .map(|&(op, name, js_name)| {
            let recorder = Recorder::default();
            let Ok(_) = Request::read(op, recorder.clone());
            Operation {
                name,
                js_name,
                parameters: recorder.taken(),
                answer: answer(op),
                doc: doc(op),
            }
        })
        .collect()
}

/// What `op` answers (see [`Operation::answer`]).
fn answer(op: Op) -> &'static str {
    match op {
        Op::Init => "unit",
        Op::Enqueue
        | Op::Renew
        | Op::Complete
        | Op::Release
        | Op::Fail
        | Op::Revive
        | Op::Fenced
        | Op::Schedule
        | Op::Unschedule => "bool",
        Op::State => "option<job-state>",
        Op::Claim => "option<fence>",
        Op::ClaimMany => "list<option<fence>>",
        Op::ClaimNext => "option<claimed-job>",
        Op::Inspect => "option<inspection>",
        Op::Stats => "job-counts",
        Op::EnqueueMany => "list<bool>",
        Op::ClaimNextMany => "list<claimed-job>",
        Op::RenewMany | Op::CompleteMany | Op::Heartbeat => "list<answer<bool>>",
        Op::Schedules => "list<stored-schedule>",
        Op::EnqueueDue => "list<string>",
        Op::NextDue => "next-due",
        Op::ListJobs => "job-page",
        Op::QueueStats => "list<queue-counts>",
        Op::ListWorkers => "list<worker-info>",
        Op::OldestWaiting => "list<queue-waiting>",
        Op::Prune => "u64",
        Op::FenceFloor => "fence",
    }
}

/// What `op` does (see [`Operation::doc`]).
fn doc(op: Op) -> &'static str {
    match op {
        Op::Init => "Creates the tables if missing; never touches existing rows.",
        Op::Enqueue => {
            "Adds a job; false when the id exists (nothing changes, its payload included). Nobody \
             can claim it before `run_at` (default: at once); `payload` is handed to whoever claims \
             it."
        }
        Op::State => "The stored row, or null.",
        Op::Claim => "The new fence, or null when missing, done or held.",
        Op::Renew => "Extends your live lease to `now + ttl`.",
        Op::Complete => {
            "Stores the result and marks the job done, for the current live lease only."
        }
        Op::Release => "Gives your lease up early; the fence is kept.",
        Op::ClaimMany => "Claims one job for every owner at once; on a claimable job exactly one \
                          gets a fence.",
        Op::ClaimNext => "Claims the next claimable job of `queues` (null: every queue): higher \
                          priority first, then the earliest due.",
        Op::Fail => {
            "Records a failure of your live lease (the checks of complete). With a `retry_at` the \
             job waits, unowned, until then (fence kept); with null it is dead: done with no \
             result, until `revive`."
        }
        Op::Revive => {
            "Brings a dead job back, claimable from `now`, its fence kept; reason `not_found` or \
             `not_dead`."
        }
        Op::Inspect => "Row, attempts, dead mark, payload and failures of a job, or null.",
        Op::Stats => "How many jobs are queued, scheduled, leased, done and dead at `now`.",
        Op::Fenced => {
            "Fenced write: runs your statements inside the transaction that checks your lease with \
             renew's checks, and commits them only if the lease is current; with `{complete: \
             true, result}` the job completes in the same commit. All or nothing: false (with the \
             reason) when the lease is not current. Writes to `jobs` or `leasefence_*` tables, \
             transaction control and PRAGMA are refused with `invalid_argument`; a failing \
             statement with `storage`."
        }
        Op::EnqueueMany => {
            "Many jobs in one transaction (one sync): `enqueue` of every job, answered in order \
             (false for an id that exists or appeared earlier in the list). At most 1024 jobs; a \
             longer list or a bad item is refused with `invalid_argument` and nothing changes. \
             With `statements` (a list of `{sql, params}`, as `fenced` takes) they run first in \
             the same transaction, without a lease: the jobs commit with your rows or not at all. \
             A statement writing `jobs` or a `leasefence_*` table, or controlling the \
             transaction, is refused with `invalid_argument`; a failing one fails with `storage` \
             naming its index (`statement`); either way nothing changes."
        }
        Op::ClaimNextMany => {
            "Up to `n` (1 to 1024) successive `claim_next` calls in one transaction; fewer (or \
             none) when fewer jobs are claimable."
        }
        Op::RenewMany => {
            "`renew` of each of your leases in one transaction: one `{value, reason}` per lease, \
             in order."
        }
        Op::CompleteMany => {
            "`complete` of each of your leases with its result in one transaction: one `{value, \
             reason}` per lease, in order."
        }
        Op::Schedule => {
            "Stores a recurring job (replacing one of the same name; its latest slot enqueued is \
             kept): a 5-field cron pattern (minute hour day-of-month month day-of-week) read in \
             the time zone `tz`. Each slot becomes the job `name@YYYY-MM-DDTHH:MM:SSZ` (the slot \
             in UTC, `run_at` the slot). A bad pattern, time zone or option is refused with \
             `invalid_argument` and nothing changes."
        }
        Op::Unschedule => "Removes a schedule: true, or false when there was none. Its jobs stay.",
        Op::Schedules => "Every stored schedule, by name.",
        Op::EnqueueDue => {
            "Enqueues every schedule's due slot at `now` in one transaction (the latest slot at or \
             before `now`; with `missed: \"all\"` every missed one) and answers the ids it added: \
             none when they exist already. A worker calls it as it ticks."
        }
        Op::NextDue => {
            "When an idle worker serving `queues` (every queue when null) has something to look at \
             again without being woken: `job`, the earliest time an open job of those queues \
             falls due (at or before `now` when one is claimable already), and `slot`, the next \
             slot of any schedule after `now`; each null when there is none."
        }
        Op::ListJobs => {
            "One page of jobs at `now` (of `status` and `queue` when given), read through an \
             index: newest enqueued first; `queued` longest due first, `scheduled` next due \
             first, `leased` next to expire first. `limit` 1 to 1000 (default 50); pass the \
             page's `next` as `after` for more."
        }
        Op::QueueStats => "Every queue that has a job, by name, with its jobs in each state at `now`.",
        Op::Heartbeat => {
            "The worker registry: records `owner`'s beat (alive until `now + ttl`, gone at once \
             when the worker is stopping) and renews `leases` to `now + ttl`, in one transaction: \
             one `{value, reason}` per lease, as `renew_many` answers. Rows of workers gone for \
             an hour are deleted by the next beat."
        }
        Op::ListWorkers => {
            "Every worker of the registry (alive first, then the latest seen; at most 1000) with \
             the live leases it holds."
        }
        Op::OldestWaiting => {
            "Each queue with a job claimable at `now`, with since when its longest-waiting \
             claimable job has waited: the later of the job's `until` and its enqueue time, \
             stamped by the store's clock. The age is `now - since`."
        }
        Op::Prune => {
            "Deletes jobs that finished (completed, or dead unless `keep_dead`) before `before`, \
             Unix seconds, with their payloads and failures, at most `limit` of them (null: all), \
             1,000 per transaction so workers go on meanwhile. Open and unfinished jobs are never \
             touched. Answers how many it deleted. The store's fence floor rises to the highest \
             fence deleted, so an id enqueued again starts above every fence it had. \
             `only_dead`: dead jobs only."
        }
        Op::FenceFloor => {
            "The store's fence floor: the highest fence `prune` ever deleted (0 before any). Every \
             job enqueued since starts above it, so no fence is ever handed out twice."
        }
    }
}

/// A [`Source`] that hands out placeholder values and records what it was asked for: the
/// reader's field order, read as a signature. Shared, because the reader takes its source by value.
#[derive(Default, Clone)]
struct Recorder {
    parameters: Rc<RefCell<Vec<Parameter>>>,
}

impl Recorder {
    fn taken(self) -> Vec<Parameter> {
        self.parameters.take()
    }

    fn record(&mut self, name: &'static str, kind: &'static str, optional: bool, nullable: bool) {
        self.parameters.borrow_mut().push(Parameter {
            name,
            kind,
            optional,
            nullable,
            members: Vec::new(),
        });
    }

    /// An object parameter, its members recorded by `read` on a recorder of their own; an
    /// `object` is optional when every member is.
    fn object<T>(
        &mut self,
        name: &'static str,
        kind: &'static str,
        read: impl FnOnce(&mut Recorder) -> Result<T, Infallible>,
    ) -> T {
        let mut item = Recorder::default();
        let Ok(value) = read(&mut item);
        let members = item.taken();
        let optional = kind == "object" && members.iter().all(|m| m.optional);
        self.parameters.borrow_mut().push(Parameter {
            name,
            kind,
            optional,
            nullable: optional,
            members,
        });
        value
    }
}

impl Members for Recorder {
    type Error = Infallible;
    fn string(&mut self, name: &'static str) -> Result<String, Infallible> {
        self.record(name, "string", false, false);
        Ok(String::new())
    }
    fn optional_string(&mut self, name: &'static str) -> Result<Option<String>, Infallible> {
        self.record(name, "string", false, true);
        Ok(None)
    }
    fn number(&mut self, name: &'static str) -> Result<f64, Infallible> {
        self.record(name, "number", false, false);
        Ok(0.0)
    }
    fn maybe_string(&mut self, name: &'static str) -> Result<Option<String>, Infallible> {
        self.record(name, "string", true, true);
        Ok(None)
    }
    fn maybe_number(&mut self, name: &'static str) -> Result<Option<f64>, Infallible> {
        self.record(name, "number", true, true);
        Ok(None)
    }
    fn nullable_number(&mut self, name: &'static str) -> Result<Option<f64>, Infallible> {
        self.record(name, "number", false, true);
        Ok(None)
    }
    fn fence(&mut self, name: &'static str) -> Result<Fence, Infallible> {
        self.record(name, "fence", false, false);
        Ok(0)
    }
    fn maybe_integer(&mut self, name: &'static str) -> Result<Option<i64>, Infallible> {
        self.record(name, "integer", true, true);
        Ok(None)
    }
    fn maybe_bool(&mut self, name: &'static str) -> Result<Option<bool>, Infallible> {
        self.record(name, "bool", true, true);
        Ok(None)
    }
}

impl Source for Recorder {
    type Item = Recorder;
    fn count(&mut self, name: &'static str) -> Result<usize, Infallible> {
        self.record(name, "count", false, false);
        Ok(0)
    }
    fn strings(&mut self, name: &'static str) -> Result<Vec<String>, Infallible> {
        self.record(name, "strings", false, false);
        Ok(Vec::new())
    }
    fn maybe_strings(&mut self, name: &'static str) -> Result<Option<Vec<String>>, Infallible> {
        self.record(name, "strings", true, true);
        Ok(None)
    }
    fn objects<T>(
        &mut self,
        name: &'static str,
        mut read: impl FnMut(&mut Recorder) -> Result<T, Infallible>,
    ) -> Result<Vec<T>, Infallible> {
        // One placeholder item is read for its members; the list answered is empty.
        self.object(name, "objects", |item| read(item).map(drop));
        Ok(Vec::new())
    }
    fn maybe_statements(
        &mut self,
        name: &'static str,
    ) -> Result<Option<Vec<Statement>>, Infallible> {
        self.record(name, "statements", true, true);
        Ok(None)
    }
    fn fenced_writes(&mut self) -> Result<FencedArgs, Infallible> {
        self.record("statements", "statements", false, false);
        self.record("options", "fenced_options", true, true);
        Ok(FencedArgs::default())
    }
    fn options<T>(
        &mut self,
        name: &'static str,
        read: impl FnOnce(&mut Recorder) -> Result<T, Infallible>,
    ) -> Result<T, Infallible> {
        Ok(self.object(name, "object", read))
    }
}

#[cfg(test)]
mod tests {
    use super::operations;
    use crate::protocol::{respond, Backend};
    use crate::LeaseStore;

    struct Memory(LeaseStore);
    impl Backend for Memory {
        fn store(&mut self) -> crate::Result<&LeaseStore> {
            Ok(&self.0)
        }
    }

    /// The signatures are what the protocol reads: a request with no fields is refused naming
    /// the first parameter the catalogue calls required, and one without parameters is not
    /// refused for its shape.
    #[test]
    fn the_catalogue_names_the_fields_the_protocol_requires_first() {
        let mut backend = Memory(LeaseStore::open_in_memory().unwrap());
        for op in operations() {
            let response = respond(&mut backend, &format!(r#"{{"op":"{}"}}"#, op.name));
            let first = op
                .parameters
                .iter()
                .find(|p| !p.optional && p.kind != "object");
            match first {
                Some(p) if !p.nullable => {
                    assert_eq!(response.code(), Some("bad_request"), "{}", op.name);
                    let text = response.to_json();
                    assert!(
                        text.contains(&format!(r#"\"{}\""#, p.name)),
                        "{}: {text}",
                        op.name
                    );
                }
                _ => assert_ne!(response.code(), Some("bad_request"), "{}", op.name),
            }
        }
    }

    #[test]
    fn lease_calls_start_with_job_owner_fence_and_answers_are_named() {
        let ops = operations();
        for name in ["renew", "complete", "release", "fail", "fenced"] {
            let op = ops.iter().find(|op| op.name == name).unwrap();
            let first: Vec<_> = op.parameters.iter().take(3).map(|p| p.name).collect();
            assert_eq!(first, ["job", "owner", "fence"], "{name}");
        }
        assert!(ops
            .iter()
            .all(|op| !op.answer.is_empty() && !op.doc.is_empty()));
        let fail = ops.iter().find(|op| op.name == "fail").unwrap();
        let retry_at = &fail.parameters[4];
        assert_eq!(
            (retry_at.name, retry_at.optional, retry_at.nullable),
            ("retry_at", false, true)
        );
    }
}

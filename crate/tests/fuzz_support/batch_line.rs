//! The checks of the `batch_line` fuzz target (fuzz/fuzz_targets/batch_line.rs), shared with
//! tests/fuzz_corpus.rs, which replays the committed corpus through them under `cargo test`.
//!
//! An input is read the way `leasefence batch` reads standard input: split at `\n`, one `\r`
//! stripped, every line answered on one in-memory store pre-seeded with a few jobs, so the
//! fuzzer can build multi-request sequences. A line that is not UTF-8 never reaches `respond`
//! (the server answers `bad_request` itself), so it is skipped here. For every line:
//!
//! - `respond` does not panic, and its response is one line of valid JSON: exactly
//!   `{"value": V}`, `{"value": false|null, "reason": R}` with R shaped as in
//!   tests/vectors/README.md, or `{"error": {"code": C, "message": M}}` with a known C;
//! - an error, a `false`/`null` value, a reason, `state` and `init` leave the jobs table unchanged;
//! - rows are never deleted or reordered; at most one row is inserted or changed; a done row never
//!   changes; a fence only grows, by exactly one, and only with a new lease;
//! - the line is rejected as "not valid JSON" exactly when serde_json also rejects it (after
//!   replacing numbers, which the protocol reads as f64 and serde_json may not), or nests deeper
//!   than the documented 64 levels;
//! - when serde_json can read a request of a single operation, the change to the table is
//!   exactly what the op and its arguments say (the job and owner as serde_json decodes them,
//!   `until = now + ttl`, ...).

use leasefence::protocol::{respond, Backend};
use leasefence::{JobState, Lease, LeaseStore};
use serde_json::{Map, Value};

/// A [`Backend`] on a private in-memory store (`claim_many` runs one owner after the other).
pub struct Memory(pub LeaseStore);

impl Backend for Memory {
    fn store(&mut self) -> leasefence::Result<&LeaseStore> {
        Ok(&self.0)
    }
}

/// The seeded store: `free` (never claimed), `held` (A's live lease, fence 1, until 100),
/// `done` (completed by A, result "r"), `released` (fence 2, released by B), `expired` (C's
/// lease ended at 5, fence 1), `exhausted` (E's lease until 50 with fence i64::MAX: usable until
/// 50, never claimable again) and `almost` (free, fence i64::MAX - 1: one claim left). The last
/// two are set with raw SQL, as no test could claim 2^63 times.
pub fn seeded() -> Memory {
    let store = LeaseStore::open_in_memory().expect("in-memory store");
    for job in [
        "free",
        "held",
        "done",
        "released",
        "expired",
        "exhausted",
        "almost",
    ] {
        assert!(store.enqueue(job).unwrap());
    }
    let claim = |job, owner, now, ttl| store.claim(job, owner, now, ttl).unwrap().granted();
    assert_eq!(claim("held", "A", 0.0, 100.0), Some(1));
    assert_eq!(claim("done", "A", 0.0, 100.0), Some(1));
    let done = store
        .complete(&Lease::new("done", "A", 1), 1.0, Some("r"))
        .unwrap();
    assert_eq!(claim("released", "A", 0.0, 1.0), Some(1));
    assert_eq!(claim("released", "B", 1.0, 10.0), Some(2));
    let released = store.release(&Lease::new("released", "B", 2)).unwrap();
    assert_eq!(claim("expired", "C", 0.0, 5.0), Some(1));
    assert!(done.is_granted() && released.is_granted());
    store
        .connection()
        .execute_batch(
            "UPDATE jobs SET owner = 'E', until = 50.0, fence = 9223372036854775807 \
             WHERE id = 'exhausted'; \
             UPDATE jobs SET fence = 9223372036854775806 WHERE id = 'almost';",
        )
        .unwrap();
    Memory(store)
}

/// The rows of [`seeded`], for [`reset`]; a test checks that both agree.
pub const SEED_SQL: &str = "DELETE FROM leasefence_floor; DELETE FROM jobs; \
    INSERT INTO jobs(id, owner, until, fence, result, done) VALUES \
    ('free', NULL, 0.0, 0, NULL, 0), ('held', 'A', 100.0, 1, NULL, 0), \
    ('done', 'A', 100.0, 1, 'r', 1), ('released', NULL, 0.0, 2, NULL, 0), \
    ('expired', 'C', 5.0, 1, NULL, 0), \
    ('exhausted', 'E', 50.0, 9223372036854775807, NULL, 0), \
    ('almost', NULL, 0.0, 9223372036854775806, NULL, 0);";

/// Puts a store back into the [`seeded`] state with raw SQL, much faster than opening a new one
/// (the fuzzer runs thousands of inputs a second on one store per thread).
pub fn reset(backend: &Memory) {
    backend
        .0
        .connection()
        .execute_batch(SEED_SQL)
        .expect("reset the seeded rows");
}

thread_local! {
    static BACKEND: std::cell::RefCell<Memory> = std::cell::RefCell::new(seeded());
}

/// Runs one fuzz input (see the module docs); panics on the first broken property.
pub fn check_input(data: &[u8]) {
    BACKEND.with(|backend| {
        let mut backend = backend.borrow_mut();
        reset(&backend);
        check_lines(&mut backend, data);
    });
}

/// Runs the lines of `data` on `backend`, as `leasefence batch` would.
pub fn check_lines(backend: &mut Memory, data: &[u8]) {
    let mut lines: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop(); // what follows the last newline, when nothing does, is end of input
    }
    for line in lines {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if let Ok(text) = std::str::from_utf8(line) {
            check_line(backend, text);
        }
    }
}

/// Answers one line on `backend` and checks everything the module docs list.
pub fn check_line(backend: &mut Memory, line: &str) {
    let before = snapshot(&backend.0);
    let placement = placements(&backend.0);
    let response = respond(backend, line);
    let text = response.to_json();
    let after = snapshot(&backend.0);
    let ctx = Ctx {
        line,
        response: &text,
        before: &before,
        after: &after,
        floor: leasefence::Leases::fence_floor(&backend.0).expect("read the fence floor"),
    };
    if text.contains('\n') || text.contains('\r') {
        ctx.fail("the response is more than one line");
    }
    let json: Value = serde_json::from_str(&text).unwrap_or_else(|_| ctx.fail("response not JSON"));
    let Some(object) = json.as_object() else {
        ctx.fail("the response is not an object")
    };
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    let unchanged_required = match keys.as_slice() {
        ["error"] => {
            let error = object["error"].as_object();
            let code = error.and_then(|e| e.get("code")).and_then(Value::as_str);
            let message = error.and_then(|e| e.get("message")).and_then(Value::as_str);
            if error.map(Map::len) != Some(2)
                || !matches!(code, Some("bad_request" | "invalid_argument" | "storage"))
                || message.is_none_or(str::is_empty)
            {
                ctx.fail("malformed error object");
            }
            if response.code() != code {
                ctx.fail("Response::code disagrees with the JSON");
            }
            check_json_acceptance(line, message.unwrap(), code == Some("bad_request"), &ctx);
            true
        }
        ["value"] => {
            check_json_acceptance(line, "", false, &ctx);
            matches!(object["value"], Value::Null | Value::Bool(false))
        }
        ["value", "reason"] => {
            check_json_acceptance(line, "", false, &ctx);
            if !matches!(object["value"], Value::Null | Value::Bool(false)) {
                ctx.fail("a reason given with a value that is not false or null");
            }
            check_reason(&object["reason"], &ctx);
            true
        }
        _ => ctx.fail("the response must have exactly `value` (maybe with `reason`) or `error`"),
    };
    if unchanged_required && after != before {
        ctx.fail("the table changed although the response says nothing happened");
    }
    // A batch operation (section 10) is many single operations in one transaction: the
    // one-operation model below does not describe it. Its answers and effects are checked against
    // successive single operations by the contract vectors and batch_ops.rs; here it still gets
    // the response-shape, acceptance and nothing-changed-on-error checks above.
    let op = op_of(line);
    if is_batch_op(op.as_deref()) {
        return;
    }
    if keys != ["error"] && op.as_deref() == Some("enqueue_due") {
        return check_enqueue_due(&object["value"], &before, &after, &ctx);
    }
    if keys != ["error"] && op.as_deref() == Some("prune") {
        return check_prune(&object["value"], &before, &after, &ctx);
    }
    let changes = check_table_invariants(&before, &after, &ctx);
    if keys != ["error"] {
        check_effects(line, &object["value"], &before, &placement, &changes, &ctx);
    }
}

/// The op serde_json reads in `line`, if any.
fn op_of(line: &str) -> Option<String> {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|request| request.get("op").and_then(Value::as_str).map(str::to_owned))
}

/// Whether `op` (as [`op_of`] read it) is one of the batch operations.
fn is_batch_op(op: Option<&str>) -> bool {
    matches!(
        op,
        Some("enqueue_many" | "claim_next_many" | "renew_many" | "complete_many" | "heartbeat")
    )
}

/// `enqueue_due` (section 11) adds a fresh job per due slot in one transaction: every row before
/// it is unchanged, and the rows added are exactly the ids it answers.
fn check_enqueue_due(value: &Value, before: &[JobState], after: &[JobState], ctx: &Ctx<'_>) {
    let Some(answered) = value.as_array() else {
        ctx.fail("enqueue_due answered something other than a list")
    };
    if after.len() < before.len() || after[..before.len()] != *before {
        ctx.fail("enqueue_due changed or removed an existing job");
    }
    let added: Vec<&str> = after[before.len()..]
        .iter()
        .map(|r| r.id.as_str())
        .collect();
    let answered: Vec<&str> = answered.iter().filter_map(Value::as_str).collect();
    if added != answered {
        ctx.fail("enqueue_due's answer is not the rows it added, in order");
    }
    for new in &after[before.len()..] {
        if new.owner.is_some() || new.fence != ctx.floor || new.result.is_some() || new.done {
            ctx.fail("a row enqueue_due added is not a fresh job (at the fence floor)");
        }
    }
}

/// `prune` (section 13) only deletes: the rows left are the rows before, unchanged and in order,
/// less exactly as many as it answers, each of them done; the floor is at least the fence of
/// every row it deleted.
fn check_prune(value: &Value, before: &[JobState], after: &[JobState], ctx: &Ctx<'_>) {
    let Some(count) = value.as_u64() else {
        ctx.fail("prune answered something other than a count")
    };
    let mut left = after.iter().peekable();
    let mut gone = Vec::new();
    for row in before {
        if left.peek() == Some(&row) {
            left.next();
        } else {
            gone.push(row);
        }
    }
    if left.next().is_some() {
        ctx.fail("prune changed, inserted or reordered a row");
    }
    if gone.len() as u64 != count {
        ctx.fail("prune's count is not the rows it deleted");
    }
    if gone.iter().any(|row| !row.done) {
        ctx.fail("prune deleted a job that was not done");
    }
    if gone.iter().any(|row| row.fence > ctx.floor) {
        ctx.fail("the fence floor is below a pruned job's fence");
    }
}

/// Every row in insertion order, like `LeaseStore::jobs`, on a cached statement (the fuzzer
/// takes two snapshots per line).
pub fn snapshot(store: &LeaseStore) -> Vec<JobState> {
    let mut stmt = store
        .connection()
        .prepare_cached("SELECT id, owner, until, fence, result, done FROM jobs ORDER BY rowid")
        .expect("prepare the snapshot");
    let rows = stmt
        .query_map([], |row| {
            Ok(JobState {
                id: row.get(0)?,
                owner: row.get(1)?,
                until: row.get(2)?,
                fence: row.get(3)?,
                result: row.get(4)?,
                done: row.get(5)?,
            })
        })
        .expect("read the jobs");
    rows.collect::<Result<_, _>>().expect("read the jobs")
}

/// Each job's queue and priority (section 11), by id: what `claim_next` orders by first.
pub fn placements(store: &LeaseStore) -> std::collections::HashMap<String, (String, i64)> {
    let mut stmt = store
        .connection()
        .prepare_cached("SELECT job, queue, priority FROM leasefence_order")
        .expect("prepare the placements");
    let rows = stmt
        .query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?))))
        .expect("read the placements");
    rows.collect::<Result<_, _>>().expect("read the placements")
}

/// What a failure report shows.
struct Ctx<'a> {
    line: &'a str,
    response: &'a str,
    before: &'a [JobState],
    after: &'a [JobState],
    /// The fence floor after the line (section 13): where an inserted row starts.
    floor: i64,
}

impl Ctx<'_> {
    fn fail(&self, what: &str) -> ! {
        panic!(
            "{what}\n  line: {:?}\n  response: {}\n  before: {:?}\n  after: {:?}",
            self.line, self.response, self.before, self.after
        )
    }
}

/// One row inserted or changed by a request: `(before, after)`.
type Change<'a> = (Option<&'a JobState>, &'a JobState);

fn check_table_invariants<'a>(
    before: &'a [JobState],
    after: &'a [JobState],
    ctx: &Ctx<'_>,
) -> Vec<Change<'a>> {
    if after.len() < before.len() || after.len() > before.len() + 1 {
        ctx.fail("rows disappeared, or more than one row was inserted");
    }
    let mut changes: Vec<Change<'a>> = Vec::new();
    for (old, new) in before.iter().zip(after) {
        if old.id != new.id {
            ctx.fail("rows were reordered or replaced");
        }
        if old == new {
            continue;
        }
        // Only revive changes a done row (checked in check_effects), and only to claimable.
        if old.done && (new.done || new.owner.is_some() || new.fence != old.fence) {
            ctx.fail("a done row changed");
        }
        let new_lease = new.fence == old.fence.wrapping_add(1) && old.fence != i64::MAX;
        if new.fence != old.fence && !new_lease {
            ctx.fail("a fence changed by something other than +1");
        }
        if new_lease && new.owner.is_none() {
            ctx.fail("a new fence without an owner");
        }
        if new.result != old.result && !new.done && !old.done {
            ctx.fail("the result changed without completing the job");
        }
        changes.push((Some(old), new));
    }
    if let Some(new) = after.get(before.len()) {
        // `until` is the enqueue's run_at (checked in check_effects).
        let fresh = JobState {
            id: new.id.clone(),
            owner: None,
            until: new.until,
            fence: ctx.floor,
            result: None,
            done: false,
        };
        if *new != fresh {
            ctx.fail("an inserted row is not a fresh job (at the fence floor)");
        }
        changes.push((None, new));
    }
    if changes.len() > 1 {
        ctx.fail("more than one row changed");
    }
    changes
}

fn check_reason(reason: &Value, ctx: &Ctx<'_>) {
    let Some(r) = reason.as_object() else {
        ctx.fail("the reason is not an object")
    };
    let mut keys: Vec<&str> = r.keys().map(String::as_str).collect();
    keys.sort_unstable();
    let number = |k: &str| r.get(k).is_some_and(Value::is_number);
    let ok = match r.get("code").and_then(Value::as_str) {
        Some("not_found" | "done" | "not_owner") => keys == ["code"],
        Some("held") => {
            keys == ["code", "owner", "until"]
                && (r["owner"].is_string() || r["owner"].is_null())
                && number("until")
        }
        Some("stale_fence") => keys == ["code", "fence"] && r["fence"].is_i64(),
        Some("expired" | "scheduled") => keys == ["code", "until"] && number("until"),
        Some("not_dead") => keys == ["code"],
        _ => false,
    };
    if !ok {
        ctx.fail("malformed reason");
    }
}

/// Which lines are JSON: the protocol's reader must agree with serde_json, once the numbers
/// (which the protocol reads as f64, with NaN/Infinity, and serde_json may refuse as out of
/// range) are replaced by `0`, except that nesting deeper than 64 levels is refused.
fn check_json_acceptance(line: &str, message: &str, bad_request: bool, ctx: &Ctx<'_>) {
    let rejected_as_not_json = bad_request && message.contains("not valid JSON");
    let sanitized = zero_numbers(line);
    let serde_accepts = match serde_json::from_str::<Value>(&sanitized) {
        Ok(value) => depth(&value, 0) <= 64,
        Err(_) => false,
    };
    if serde_accepts == rejected_as_not_json {
        ctx.fail(&format!(
            "the protocol's JSON reader and serde_json disagree on whether this is JSON \
             (serde_json on {sanitized:?}: {})",
            if serde_accepts { "accepts" } else { "rejects" }
        ));
    }
}

/// The deepest nesting of a value inside containers (the top level is 0).
fn depth(value: &Value, at: usize) -> usize {
    match value {
        Value::Array(items) => items.iter().map(|v| depth(v, at + 1)).max().unwrap_or(at),
        Value::Object(members) => members
            .values()
            .map(|v| depth(v, at + 1))
            .max()
            .unwrap_or(at),
        _ => at,
    }
}

/// `line` with every valid JSON number and every `NaN`, `Infinity`, `-Infinity` outside strings
/// replaced by `0 ` (the space keeps a token glued to the next one, like `NaNe5`, invalid), and
/// every malformed number by `#`. Anything else is kept as is, so serde_json still judges it.
pub fn zero_numbers(line: &str) -> String {
    let b = line.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        if b[i] == b'"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
            out.extend_from_slice(&b[start..i]);
        } else if let Some(word) = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|w| rest.starts_with(w))
        {
            out.extend_from_slice(b"0 ");
            i += word.len();
        } else if b[i] == b'-' || b[i].is_ascii_digit() {
            let start = i;
            while i < b.len() && matches!(b[i], b'0'..=b'9' | b'+' | b'-' | b'.' | b'e' | b'E') {
                i += 1;
            }
            // A malformed number can never be part of valid JSON: `#` keeps it invalid even
            // when a replaced token follows (`-NaN` must not become `-0`).
            out.extend_from_slice(if is_json_number(&b[start..i]) {
                b"0 "
            } else {
                b"#"
            });
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    // Only whole spans of the input and ASCII were copied, in order.
    String::from_utf8(out).expect("spans of a str")
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
fn is_json_number(t: &[u8]) -> bool {
    let mut i = usize::from(t.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let from = *i;
        while *i < t.len() && t[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - from
    };
    let int_start = i;
    let n = digits(&mut i);
    if n == 0 || (n > 1 && t[int_start] == b'0') {
        return false;
    }
    if t.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if matches!(t.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(t.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == t.len()
}

/// A fence as the protocol reads it: an integer, or an integral float inside i64.
fn as_fence(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|x| x.fract() == 0.0 && (-9.2e18..9.2e18).contains(x))
            .map(|x| x as i64)
    })
}

fn close(a: f64, b: f64) -> bool {
    // serde_json's float parsing may be one ulp off the correctly rounded value.
    a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
}

/// When serde_json can read the request, the table change must be exactly the op's effect.
fn check_effects(
    line: &str,
    value: &Value,
    before: &[JobState],
    placement: &std::collections::HashMap<String, (String, i64)>,
    changes: &[Change<'_>],
    ctx: &Ctx<'_>,
) {
    let Ok(Value::Object(req)) = serde_json::from_str::<Value>(line) else {
        return;
    };
    let Some(op) = req.get("op").and_then(Value::as_str) else {
        return;
    };
    let s = |k: &str| req.get(k).and_then(Value::as_str);
    let f = |k: &str| req.get(k).and_then(Value::as_f64);
    let row = |id: &str| before.iter().find(|r| r.id == id);
    let changed = changes.first();
    let must = |ok: bool, what: &str| {
        if !ok {
            ctx.fail(what)
        }
    };
    if op != "revive" && changed.is_some_and(|(old, _)| old.is_some_and(|old| old.done)) {
        ctx.fail("a done row changed, and not by revive");
    }
    match op {
        "init" => must(
            value.is_null() && changes.is_empty(),
            "init changed something",
        ),
        "enqueue" => {
            let job = s("job").unwrap_or_else(|| ctx.fail("enqueue answered without a job"));
            let exists = row(job).is_some();
            must(*value == Value::Bool(!exists), "enqueue's answer is wrong");
            must(
                exists || matches!(changed, Some((None, new)) if new.id == job),
                "enqueue inserted another id than the job decoded by serde_json",
            );
            if let Some((None, new)) = changed {
                must(
                    new.until == f("run_at").unwrap_or(0.0),
                    "enqueue's until is not its run_at",
                );
            }
        }
        "inspect" | "stats" | "schedules" | "queue_stats" | "list_workers" | "oldest_waiting" => {
            must(changes.is_empty(), "a read changed the table")
        }
        "fence_floor" => {
            must(changes.is_empty(), "fence_floor changed the table");
            must(
                value.as_i64() == Some(ctx.floor),
                "fence_floor is not the store's floor",
            );
        }
        "list_jobs" => {
            must(changes.is_empty(), "list_jobs changed the table");
            // Every job listed is a job of the table, as the table holds it.
            for job in value["jobs"].as_array().into_iter().flatten() {
                let held = job["id"].as_str().and_then(row);
                must(
                    held.is_some_and(|r| {
                        job["fence"].as_i64() == Some(r.fence) && job["done"] == Value::Bool(r.done)
                    }),
                    "list_jobs listed a job that is not the table's row",
                );
            }
        }
        "next_due" => {
            must(changes.is_empty(), "next_due changed the table");
            // Over every queue, the job's time is the earliest until of an open row.
            if req.get("queues").is_none_or(Value::is_null) {
                let earliest = before
                    .iter()
                    .filter(|r| !r.done)
                    .map(|r| r.until)
                    .reduce(f64::min);
                must(
                    value["job"].as_f64() == earliest,
                    "next_due's job is not the earliest until of an open job",
                );
            }
        }
        // Schedules live in their own table; storing or removing one touches no job.
        "schedule" | "unschedule" => must(changes.is_empty(), "a schedule change wrote jobs"),
        "fail" => {
            if *value != Value::Bool(true) {
                return must(changes.is_empty(), "a refused fail changed the table");
            }
            let Some((Some(old), new)) = changed else {
                ctx.fail("fail granted but no row changed")
            };
            must(
                Some(new.id.as_str()) == s("job")
                    && old.owner.as_deref() == s("owner")
                    && req.get("fence").and_then(as_fence) == Some(old.fence)
                    && new.fence == old.fence
                    && f("now").is_none_or(|now| old.until > now),
                "fail granted to someone who does not hold a live lease",
            );
            match f("retry_at") {
                Some(retry_at) => must(
                    new.owner.is_none() && new.until == retry_at && !new.done,
                    "fail with retry_at did something else than wait until retry_at",
                ),
                None => must(
                    new.done && new.result.is_none() && new.owner == old.owner,
                    "fail without retry_at did something else than make the job dead",
                ),
            }
        }
        "revive" => {
            if *value != Value::Bool(true) {
                return must(changes.is_empty(), "a refused revive changed the table");
            }
            let Some((Some(old), new)) = changed else {
                ctx.fail("revive granted but no row changed")
            };
            must(
                Some(new.id.as_str()) == s("job")
                    && old.done
                    && old.result.is_none()
                    && !new.done
                    && new.owner.is_none()
                    && new.fence == old.fence
                    && f("now").is_none_or(|now| new.until == now),
                "revive did something else than make a dead job claimable at now",
            );
        }
        "state" => {
            let job = s("job").unwrap_or_else(|| ctx.fail("state answered without a job"));
            match row(job) {
                None => must(value.is_null(), "state of a missing job is not null"),
                Some(r) => {
                    let v = value.as_object();
                    let field = |k: &str| v.and_then(|v| v.get(k));
                    must(
                        v.is_some_and(|v| v.len() == 6)
                            && field("id") == Some(&Value::from(r.id.as_str()))
                            && field("owner") == Some(&r.owner.clone().into())
                            && field("until").and_then(Value::as_f64) == Some(r.until)
                            && field("fence").and_then(Value::as_i64) == Some(r.fence)
                            && field("result") == Some(&r.result.clone().into())
                            && field("done") == Some(&Value::Bool(r.done)),
                        "state does not show the stored row",
                    );
                }
            }
        }
        "claim" | "claim_next" | "claim_many" => {
            let granted: Vec<i64> = match op {
                "claim_next" => value
                    .get("fence")
                    .and_then(Value::as_i64)
                    .into_iter()
                    .collect(),
                "claim_many" => {
                    let list = value
                        .as_array()
                        .unwrap_or_else(|| ctx.fail("claim_many: not a list"));
                    must(
                        list.iter().all(|v| v.is_null() || v.is_i64()),
                        "claim_many: not a list of fences and nulls",
                    );
                    list.iter().filter_map(Value::as_i64).collect()
                }
                _ => value.as_i64().into_iter().collect(),
            };
            must(granted.len() <= 1, "more than one owner got a fence");
            let Some(&fence) = granted.first() else {
                return must(
                    changes.is_empty(),
                    "no fence handed out, yet the table changed",
                );
            };
            let Some((Some(old), new)) = changed else {
                ctx.fail("a fence was handed out but no row changed")
            };
            let job = match op {
                "claim_next" => value.get("job").and_then(Value::as_str),
                _ => s("job"),
            };
            must(
                job == Some(new.id.as_str()),
                "the claimed row is not the job",
            );
            must(
                new.fence == fence && Some(fence) == old.fence.checked_add(1),
                "the fence is not old + 1",
            );
            let owner_ok = match op {
                "claim_many" => req
                    .get("owners")
                    .and_then(Value::as_array)
                    .is_some_and(|o| o.iter().any(|o| o.as_str() == new.owner.as_deref())),
                _ => new.owner.as_deref() == s("owner"),
            };
            must(owner_ok, "the new lease's owner is not the caller");
            if let (Some(now), Some(ttl)) = (f("now"), f("ttl")) {
                must(old.until <= now, "a live lease was taken over");
                must(close(new.until, now + ttl), "until is not now + ttl");
            }
            if op == "claim_next" {
                // Among the claimable rows of the queues asked for (every queue when none): the
                // highest priority, then the smallest until, then the first inserted.
                let now = f("now").unwrap_or(f64::NAN);
                let default = (leasefence::DEFAULT_QUEUE.to_owned(), 0);
                let place = |id: &str| placement.get(id).unwrap_or(&default);
                let queues: Option<Vec<&str>> = req
                    .get("queues")
                    .and_then(Value::as_array)
                    .map(|q| q.iter().filter_map(Value::as_str).collect());
                let first = before
                    .iter()
                    .filter(|r| !r.done && r.until <= now && r.fence < i64::MAX)
                    .filter(|r| {
                        queues
                            .as_ref()
                            .is_none_or(|q| q.contains(&place(&r.id).0.as_str()))
                    })
                    .min_by(|a, b| {
                        (place(&b.id).1)
                            .cmp(&place(&a.id).1)
                            .then(a.until.total_cmp(&b.until))
                    });
                must(
                    first.map(|r| r.id.as_str()) == Some(new.id.as_str()),
                    "claim_next did not pick the first claimable job",
                );
            }
        }
        "renew" | "complete" | "release" => {
            if *value != Value::Bool(true) {
                return;
            }
            // A renew to the lease end it already has changes nothing.
            let unchanged = s("job").and_then(row).filter(|_| op == "renew");
            let (old, new) = match (changed, unchanged) {
                (Some((Some(old), new)), _) => (*old, *new),
                (None, Some(row)) => (row, row),
                _ => ctx.fail("granted but nothing changed"),
            };
            must(
                Some(new.id.as_str()) == s("job")
                    && old.owner.as_deref() == s("owner")
                    && req.get("fence").and_then(as_fence) == Some(old.fence)
                    && new.fence == old.fence,
                "granted to someone who does not hold the lease",
            );
            let now = f("now");
            match op {
                "renew" => must(
                    now.zip(f("ttl"))
                        .is_none_or(|(now, ttl)| old.until > now && close(new.until, now + ttl))
                        && new.owner == old.owner
                        && !new.done,
                    "renew did something else than extend a live lease",
                ),
                "complete" => must(
                    now.is_none_or(|now| old.until > now)
                        && new.done
                        && new.result.as_deref() == s("result")
                        && new.until == old.until,
                    "complete did something else than store the result",
                ),
                _ => must(
                    new.owner.is_none() && new.until == 0.0 && !new.done,
                    "release did something else than drop the lease",
                ),
            }
        }
        "fenced" => {
            // A refusal, or a fenced write that keeps the lease, leaves `jobs` as it was.
            let completes = req.get("complete") == Some(&Value::Bool(true));
            if *value != Value::Bool(true) || !completes {
                return must(
                    changes.is_empty(),
                    "a fenced write changed jobs without completing",
                );
            }
            let Some((Some(old), new)) = changed else {
                ctx.fail("a fenced complete was granted but no row changed")
            };
            must(
                Some(new.id.as_str()) == s("job")
                    && old.owner.as_deref() == s("owner")
                    && req.get("fence").and_then(as_fence) == Some(old.fence)
                    && f("now").is_none_or(|now| old.until > now)
                    && new.done
                    && new.result.as_deref() == s("result")
                    && new.fence == old.fence,
                "a fenced complete did something else than complete the current lease",
            );
        }
        _ => ctx.fail("an unknown op was answered with a value"),
    }
}

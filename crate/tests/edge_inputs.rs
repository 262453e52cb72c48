#![cfg(not(target_arch = "wasm32"))]
//! Edge inputs, through the Rust API and through the JSON-lines protocol: odd job ids and owners
//! (empty, 1 MB, SQL and quotes, NUL, every Unicode plane), 10 MB results on a file database,
//! times at the limits of f64, and a fence at `i64::MAX`.

use leasefence::protocol::{respond, Backend, TargetBackend};
use leasefence::{ClaimedJob, Error, JobState, Lease, LeaseStore, OpenOptions, Outcome, Reason};
use serde_json::{json, Value};

struct Memory(LeaseStore);

impl Backend for Memory {
    fn store(&mut self) -> leasefence::Result<&LeaseStore> {
        Ok(&self.0)
    }
}

/// Sends one request line and returns the parsed response.
fn call(backend: &mut dyn Backend, line: &str) -> Value {
    let text = respond(backend, line).to_json();
    assert!(!text.contains('\n'), "a response is one line: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("response {text} is not JSON: {e}"))
}

fn error_code(response: &Value) -> Option<&str> {
    response["error"]["code"].as_str()
}

/// A JSON string literal with every character written as a `\u` escape (astral ones as surrogate
/// pairs), to exercise the protocol's escape decoding rather than raw UTF-8.
fn escaped(s: &str) -> String {
    let mut out = String::from("\"");
    for unit in s.encode_utf16() {
        out.push_str(&format!("\\u{unit:04x}"));
    }
    out.push('"');
    out
}

fn raw(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// One character from every Unicode plane, the edges of the BMP and of the surrogate gap, and a
/// few characters that are easy to mangle.
fn every_plane() -> String {
    let mut s: String = (0..=16u32)
        .flat_map(|plane| {
            let base = plane << 16;
            [base + 1, base + 0x7fff, base + 0xfffd]
        })
        .filter_map(char::from_u32)
        .collect();
    s.extend([
        '\u{0}',
        '\u{7f}',
        '\u{80}',
        '\u{7ff}',
        '\u{800}',
        '\u{d7ff}',
        '\u{e000}',
        '\u{fffe}',
        '\u{ffff}',
        '\u{10000}',
        '\u{10ffff}',
        '\u{feff}',
        '\u{200b}',
        '\u{2028}',
        '\u{2029}',
        '\u{1f600}',
        '\u{202e}',
        '\n',
        '\r',
        '\t',
        '\\',
        '"',
        '\'',
    ]);
    s
}

/// Every 251st Unicode scalar value, from U+0000 to U+10FFFF.
fn unicode_sample() -> String {
    (0..=0x10ffffu32)
        .step_by(251)
        .chain([0x10ffff])
        .filter_map(char::from_u32)
        .collect()
}

/// Ids and owners that a careless implementation would mangle, truncate or confuse.
fn odd_strings() -> Vec<(&'static str, String)> {
    vec![
        ("empty", String::new()),
        ("space", " ".into()),
        ("sql-drop", "'; DROP TABLE jobs; --".into()),
        ("sql-or", "\" OR 1=1".into()),
        ("sql-or-quoted", "' OR '1'='1".into()),
        ("sql-params", "?1 :owner @x $y".into()),
        ("like-wildcards", "%_%".into()),
        ("backslashes", "\\\\\\'\\\"".into()),
        ("nul-only", "\0".into()),
        ("nul-inside", "a\0b".into()),
        ("nul-prefix", "\0a".into()),
        ("nul-suffix", "a\0".into()),
        ("nuls", "\0\0\0".into()),
        ("json-like", r#"{"op":"release"}"#.into()),
        ("newlines", "line1\nline2\r\n".into()),
        ("every-plane", every_plane()),
        ("unicode-sample", unicode_sample()),
        ("nfc", "\u{e9}".into()),
        ("nfd", "e\u{301}".into()),
        ("1mb-ascii", "x".repeat(1 << 20)),
        ("1mb-astral", "\u{1f600}".repeat((1 << 20) / 4)),
    ]
}

/// Every odd string works as a job id and as an owner through the whole lifecycle of the Rust
/// API, and is stored and returned byte for byte; ids that differ only by a NUL, a combining
/// mark or a trailing space are different jobs.
#[test]
fn odd_ids_and_owners_through_the_rust_api() {
    let store = LeaseStore::open_in_memory().unwrap();
    let cases = odd_strings();
    for (name, s) in &cases {
        assert!(store.enqueue(s).unwrap(), "{name}: enqueue");
        assert!(!store.enqueue(s).unwrap(), "{name}: re-enqueue");
    }
    // All distinct rows: nothing was truncated at a NUL or normalized.
    assert_eq!(store.jobs().unwrap().len(), cases.len(), "one row per id");
    for (name, s) in &cases {
        let owner = s.as_str();
        let fence = store.claim(s, owner, 0.0, 10.0).unwrap().granted();
        assert_eq!(fence, Some(1), "{name}: claim");
        let other = if s.is_empty() { "x" } else { "" };
        assert_eq!(
            store.claim(s, other, 1.0, 10.0).unwrap(),
            Outcome::Rejected(Reason::Held {
                owner: Some(s.clone()),
                until: 10.0
            }),
            "{name}: held by the odd owner"
        );
        assert_eq!(
            store.renew(&Lease::new(s, other, 1), 1.0, 10.0).unwrap(),
            Outcome::Rejected(Reason::NotOwner),
            "{name}: another owner"
        );
        assert!(
            store
                .renew(&Lease::new(s, owner, 1), 1.0, 10.0)
                .unwrap()
                .is_granted(),
            "{name}"
        );
        assert!(
            store
                .complete(&Lease::new(s, owner, 1), 2.0, Some(s))
                .unwrap()
                .is_granted(),
            "{name}: complete"
        );
        let row = store.state(s).unwrap().unwrap();
        assert_eq!(
            row,
            JobState {
                id: s.clone(),
                owner: Some(s.clone()),
                until: 11.0,
                fence: 1,
                result: Some(s.clone()),
                done: true
            },
            "{name}: state"
        );
    }
    // The table is still there and intact after the SQL-looking ids.
    assert_eq!(store.jobs().unwrap().len(), cases.len());
    assert!(store.jobs().unwrap().iter().all(|row| row.done));
    // Ids that are prefixes of an odd id are not found.
    assert_eq!(store.state("a").unwrap(), None);
    assert_eq!(
        store.claim("a", "w", 0.0, 1.0).unwrap(),
        Outcome::Rejected(Reason::NotFound)
    );
}

/// claim_next hands out odd ids intact, in insertion order.
#[test]
fn claim_next_returns_odd_ids_intact() {
    let store = LeaseStore::open_in_memory().unwrap();
    let cases = odd_strings();
    for (_, s) in &cases {
        store.enqueue(s).unwrap();
    }
    for (name, s) in &cases {
        let next = store.claim_next(s, 0.0, 1.0).unwrap();
        assert_eq!(
            next,
            Some(ClaimedJob {
                job: s.clone(),
                owner: s.clone(),
                fence: 1,
                payload: None,
                base: 0,
            }),
            "{name}"
        );
        assert_eq!(
            store.state(s).unwrap().unwrap().owner.as_deref(),
            Some(s.as_str())
        );
    }
    assert_eq!(store.claim_next("w", 0.0, 1.0).unwrap(), None);
}

/// The same through the protocol, once with raw UTF-8 in the line and once with every character
/// `\u`-escaped (astral characters as surrogate pairs).
#[test]
fn odd_ids_and_owners_through_the_protocol() {
    for (encoding, encode) in [("raw", raw as fn(&str) -> String), ("escaped", escaped)] {
        let mut backend = Memory(LeaseStore::open_in_memory().unwrap());
        for (name, s) in odd_strings() {
            let id = encode(&s);
            let ctx = format!("{name} ({encoding})");
            let line = |rest: &str| format!(r#"{{"op":{rest}}}"#);
            assert_eq!(
                call(&mut backend, &line(&format!(r#""enqueue","job":{id}"#))),
                json!({"value": true}),
                "{ctx}"
            );
            assert_eq!(
                call(&mut backend, &line(&format!(r#""enqueue","job":{id}"#))),
                json!({"value": false}),
                "{ctx}"
            );
            let claim = format!(r#""claim","job":{id},"owner":{id},"now":0,"ttl":10"#);
            assert_eq!(
                call(&mut backend, &line(&claim)),
                json!({"value": 1}),
                "{ctx}"
            );
            let held = call(&mut backend, &line(&claim));
            assert_eq!(held["value"], Value::Null, "{ctx}");
            assert_eq!(
                held["reason"],
                json!({"code": "held", "owner": s, "until": 10.0}),
                "{ctx}: the reason names the odd owner exactly"
            );
            let complete =
                format!(r#""complete","job":{id},"owner":{id},"fence":1,"now":1,"result":{id}"#);
            assert_eq!(
                call(&mut backend, &line(&complete)),
                json!({"value": true}),
                "{ctx}"
            );
            let state = call(&mut backend, &line(&format!(r#""state","job":{id}"#)));
            assert_eq!(
                state,
                json!({"value": {"id": s, "owner": s, "until": 10.0, "fence": 1,
                                 "result": s, "done": true}}),
                "{ctx}: state"
            );
            // And the Rust API sees exactly the same bytes.
            let row = backend.0.state(&s).unwrap().unwrap();
            assert_eq!((row.id, row.result), (s.clone(), Some(s.clone())), "{ctx}");
        }
        assert_eq!(backend.0.jobs().unwrap().len(), odd_strings().len());
    }
}

/// A lone surrogate cannot be a Rust string; the protocol refuses it as a bad request instead of
/// storing something else, and changes nothing.
#[test]
fn lone_surrogates_are_bad_requests() {
    let mut backend = Memory(LeaseStore::open_in_memory().unwrap());
    for job in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""a\ud83d""#,
        r#""\ud83d\u0041""#,
    ] {
        let response = call(&mut backend, &format!(r#"{{"op":"enqueue","job":{job}}}"#));
        assert_eq!(
            error_code(&response),
            Some("bad_request"),
            "{job}: {response}"
        );
    }
    assert!(backend.0.jobs().unwrap().is_empty());
}

/// A 10 MB result (every Unicode scalar value, then padding) is stored and read back intact on a
/// file database: through the same store, through a fresh connection, and through the protocol
/// (complete with a 10 MB line, state answering a 10 MB line).
#[test]
fn ten_megabyte_results_on_a_file_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.db");
    let mut result: String = (0..=0x10ffffu32).filter_map(char::from_u32).collect();
    while result.len() < 10 << 20 {
        result.push_str("0123456789abcdef");
    }
    assert!(result.len() >= 10 << 20);

    // Over the default result limit (1 MiB, docs/contract.md section 13): refused, nothing
    // changes; a store opened with a higher limit keeps it intact.
    let defaults = LeaseStore::open(&path).unwrap();
    defaults.enqueue("big").unwrap();
    let lease = defaults
        .claim("big", "w", 0.0, 60.0)
        .unwrap()
        .lease("big", "w")
        .unwrap();
    let refused = defaults.complete(&lease, 1.0, Some(&result)).unwrap_err();
    assert_eq!(refused.code(), "invalid_argument");
    assert!(!defaults.state("big").unwrap().unwrap().done);
    assert!(defaults.release(&lease).unwrap().is_granted());
    drop(defaults);
    let options = OpenOptions::new().limits(leasefence::Limits::default().result(16 << 20));
    let store = options.open(&path).unwrap();
    let fence = store
        .claim("big", "w", 0.0, 60.0)
        .unwrap()
        .granted()
        .unwrap();
    assert_eq!(fence, 2);
    assert!(store
        .complete(&Lease::new("big", "w", fence), 1.0, Some(&result))
        .unwrap()
        .is_granted());
    assert_eq!(
        store.state("big").unwrap().unwrap().result.as_ref(),
        Some(&result)
    );
    drop(store);
    let reopened = options.open(&path).unwrap();
    let row = reopened.state("big").unwrap().unwrap();
    assert!(row.done);
    assert!(
        row.result.as_ref() == Some(&result),
        "10 MB result read back intact"
    );
    drop(reopened);

    // The protocol, on the same file.
    let mut backend = TargetBackend::new(&path, options.clone());
    assert_eq!(
        call(&mut backend, r#"{"op":"enqueue","job":"big2"}"#),
        json!({"value": true})
    );
    assert_eq!(
        call(
            &mut backend,
            r#"{"op":"claim","job":"big2","owner":"w","now":0,"ttl":60}"#
        ),
        json!({"value": 1})
    );
    let line = format!(
        r#"{{"op":"complete","job":"big2","owner":"w","fence":1,"now":1,"result":{}}}"#,
        raw(&result)
    );
    assert!(line.len() > 10 << 20);
    assert_eq!(call(&mut backend, &line), json!({"value": true}));
    for job in ["big", "big2"] {
        let state = call(&mut backend, &format!(r#"{{"op":"state","job":"{job}"}}"#));
        assert!(
            state["value"]["result"].as_str() == Some(result.as_str()),
            "{job}: 10 MB result through the protocol"
        );
    }
    // A stale complete with another 10 MB result leaves the stored one alone.
    let stale = line.replace("\"fence\":1", "\"fence\":0");
    let response = call(&mut backend, &stale);
    assert_eq!(response["reason"], json!({"code": "done"}));
    drop(backend);
    let row = LeaseStore::open(&path)
        .unwrap()
        .state("big2")
        .unwrap()
        .unwrap();
    assert!(row.result.as_ref() == Some(&result));
}

fn invalid_argument(err: Error) -> &'static str {
    match err {
        Error::InvalidArgument { argument, .. } => argument,
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

/// `now + ttl` overflowing to infinity is an invalid argument (naming `ttl`) for claim, renew,
/// claim_next and claim_many, and nothing changes; at `f64::MAX` a small ttl does not overflow
/// (`f64::MAX + 1 == f64::MAX`) but is lost to rounding, which is invalid too.
#[test]
fn now_at_f64_max_and_overflowing_lease_ends() {
    let store = LeaseStore::open_in_memory().unwrap();
    store.enqueue("j").unwrap();
    let fresh = store.jobs().unwrap();
    let max = f64::MAX;
    for ttl in [max, max / 2.0 + max / 4.0, 1e300_f64.max(max * 0.01)] {
        assert!((max + ttl).is_infinite(), "{ttl} must overflow");
        assert_eq!(
            invalid_argument(store.claim("j", "a", max, ttl).unwrap_err()),
            "ttl"
        );
        assert_eq!(
            invalid_argument(store.claim_next("a", max, ttl).unwrap_err()),
            "ttl"
        );
        assert_eq!(
            invalid_argument(store.renew(&Lease::new("j", "a", 0), max, ttl).unwrap_err()),
            "ttl"
        );
        assert_eq!(
            store.jobs().unwrap(),
            fresh,
            "an invalid argument changes nothing"
        );
    }
    // Through the protocol: the same, and 1e400 parses to infinity, which is invalid too.
    let mut backend = Memory(store);
    for line in [
        r#"{"op":"claim","job":"j","owner":"a","now":1.7976931348623157e308,"ttl":1.7976931348623157e308}"#,
        r#"{"op":"claim_next","owner":"a","now":1.7976931348623157e308,"ttl":1e308}"#,
        r#"{"op":"renew","job":"j","owner":"a","fence":0,"now":1e308,"ttl":1e308}"#,
        r#"{"op":"claim","job":"j","owner":"a","now":1e400,"ttl":1}"#,
        r#"{"op":"claim","job":"j","owner":"a","now":0,"ttl":1e400}"#,
        r#"{"op":"complete","job":"j","owner":"a","fence":0,"now":-1e400,"result":null}"#,
        r#"{"op":"claim_many","job":"j","owners":["a","b"],"now":1e308,"ttl":1e308}"#,
    ] {
        let response = call(&mut backend, line);
        assert_eq!(
            error_code(&response),
            Some("invalid_argument"),
            "{line}: {response}"
        );
    }
    assert_eq!(backend.0.jobs().unwrap(), fresh);

    // now = f64::MAX with a small ttl does not overflow: f64::MAX + 1 == f64::MAX, so the lease
    // would end as it starts: invalid, like ttl = 0, and no fence is burnt.
    let store = &backend.0;
    store.enqueue("m").unwrap();
    assert_eq!(
        invalid_argument(store.claim("m", "a", max, 1.0).unwrap_err()),
        "ttl"
    );
    assert_eq!(store.state("m").unwrap().unwrap().fence, 0);
    // A lease ending exactly at f64::MAX is fine, and survives the JSON round trip.
    assert_eq!(
        store
            .claim("m", "a", max / 2.0, max / 2.0)
            .unwrap()
            .granted(),
        Some(1)
    );
    assert_eq!(
        call(&mut backend, r#"{"op":"state","job":"m"}"#)["value"]["until"].as_f64(),
        Some(max),
        "f64::MAX survives the JSON round trip"
    );

    // A large but finite lease end: a claim is granted, complete has no ttl and works.
    let store = &backend.0;
    assert_eq!(
        store
            .claim("j", "a", max / 2.0, max / 4.0)
            .unwrap()
            .granted(),
        Some(1)
    );
    assert_eq!(
        store.state("j").unwrap().unwrap().until,
        max / 2.0 + max / 4.0
    );
    assert!(store
        .complete(&Lease::new("j", "a", 1), max / 2.0, Some("r"))
        .unwrap()
        .is_granted());
    let state = call(&mut backend, r#"{"op":"state","job":"j"}"#);
    assert_eq!(
        state["value"]["until"].as_f64(),
        Some(max / 2.0 + max / 4.0)
    );
}

/// Negative times down to `-f64::MAX` are accepted, but a fresh job has `until = 0`, and SPEC 2
/// says a job with `until > now` cannot be claimed: before time 0, no job can ever be claimed, and
/// as nobody holds it, the reason is `scheduled` (section 7), until 0.
#[test]
fn negative_now_down_to_minus_f64_max() {
    let store = LeaseStore::open_in_memory().unwrap();
    store.enqueue("j").unwrap();
    let fresh = store.jobs().unwrap();
    for now in [-f64::MAX, -1e300, -1.0, -f64::MIN_POSITIVE, -5e-324] {
        // A ttl big enough to move `until` past `now` at this magnitude.
        let ttl = (-now / 2.0).max(1.0);
        assert_eq!(
            store.claim("j", "a", now, ttl).unwrap(),
            Outcome::Rejected(Reason::Scheduled { until: 0.0 }),
            "now = {now}"
        );
        assert_eq!(
            store.claim_next("a", now, ttl).unwrap(),
            None,
            "now = {now}"
        );
        assert_eq!(
            store
                .renew(&Lease::new("j", "a", 0), now, f64::MAX)
                .unwrap(),
            Outcome::Rejected(Reason::NotOwner),
            "now = {now}"
        );
        assert_eq!(store.jobs().unwrap(), fresh);
    }
    // -f64::MAX - ttl cannot overflow for a positive ttl; -f64::MAX + f64::MAX is 0.
    assert!(store
        .claim("j", "a", -f64::MAX, f64::MAX)
        .unwrap()
        .reason()
        .is_some());
    // -0.0 is time zero: claimable (until 0 <= -0.0).
    assert_eq!(store.claim("j", "a", -0.0, 1.0).unwrap().granted(), Some(1));
    let mut backend = Memory(store);
    let response = call(
        &mut backend,
        r#"{"op":"claim","job":"j","owner":"b","now":-1.7976931348623157e308,"ttl":1e308}"#,
    );
    assert_eq!(
        response,
        json!({"value": null, "reason": {"code": "held", "owner": "a", "until": 1.0}})
    );
}

/// A ttl so small that `now + ttl == now` (5e-324 at any now >= 2^-1021, 100 at now = 1.7e18)
/// would give a lease that is over before it starts: the same effect as ttl = 0, so the same
/// answer, `invalid_argument`, and nothing changes (no fence is burnt). At now = 0 the same ttl
/// gives a real, if tiny, lease.
#[test]
fn a_ttl_lost_to_rounding_is_invalid_and_burns_no_fence() {
    let tiny = 5e-324_f64;
    assert!(tiny > 0.0 && 1.0 + tiny == 1.0);
    let store = LeaseStore::open_in_memory().unwrap();
    store.enqueue("j").unwrap();
    for (now, ttl) in [(1.0, tiny), (1.7e18, 100.0), (-1.0, tiny)] {
        let err = store.claim("j", "a", now, ttl).unwrap_err();
        assert!(
            matches!(
                err,
                leasefence::Error::InvalidArgument {
                    argument: "ttl",
                    ..
                }
            ),
            "{now} + {ttl}: {err}"
        );
        assert!(store.claim_next("a", now, ttl).is_err());
    }
    assert_eq!(
        store.state("j").unwrap().unwrap().fence,
        0,
        "a fence was burnt"
    );
    let fence = store.claim("j", "a", 1.0, 10.0).unwrap().granted().unwrap();
    let err = store
        .renew(&Lease::new("j", "a", fence), 1.0, tiny)
        .unwrap_err();
    assert_eq!(err.code(), "invalid_argument");
    assert_eq!(
        store.state("j").unwrap().unwrap().until,
        11.0,
        "renew changed until"
    );

    // At now = 0, 0 + 5e-324 = 5e-324 > 0: a live lease, stored exactly.
    store.enqueue("zero").unwrap();
    assert_eq!(
        store.claim("zero", "a", 0.0, tiny).unwrap().granted(),
        Some(1)
    );
    assert_eq!(store.state("zero").unwrap().unwrap().until, tiny);
    assert!(store
        .renew(&Lease::new("zero", "a", 1), 0.0, tiny)
        .unwrap()
        .is_granted());
    assert_eq!(
        store.claim("zero", "b", 0.0, 1.0).unwrap(),
        Outcome::Rejected(Reason::Held {
            owner: Some("a".into()),
            until: tiny
        })
    );

    // The protocol reads 5e-324 exactly and answers the same.
    let mut backend = Memory(LeaseStore::open_in_memory().unwrap());
    let lines = [
        (r#"{"op":"enqueue","job":"j"}"#, json!({"value": true})),
        (
            r#"{"op":"claim","job":"j","owner":"a","now":1,"ttl":5e-324}"#,
            json!({"error": {"code": "invalid_argument"}}),
        ),
        (
            r#"{"op":"claim","job":"j","owner":"a","now":0,"ttl":5e-324}"#,
            json!({"value": 1}),
        ),
        (
            r#"{"op":"claim","job":"j","owner":"c","now":1,"ttl":1e-400}"#,
            json!({"error": {"code": "invalid_argument"}}),
        ),
    ];
    for (line, want) in lines {
        let mut got = call(&mut backend, line);
        if let Some(error) = got.get_mut("error").and_then(Value::as_object_mut) {
            error.remove("message");
        }
        assert_eq!(got, want, "{line}");
    }
}

const MAX: i64 = i64::MAX;

fn set_row(store: &LeaseStore, job: &str, owner: Option<&str>, until: f64, fence: i64) {
    let changed = store
        .connection()
        .execute(
            "UPDATE jobs SET owner = ?2, until = ?3, fence = ?4 WHERE id = ?1",
            rusqlite::params![job, owner, until, fence],
        )
        .unwrap();
    assert_eq!(changed, 1);
}

fn fence_type(store: &LeaseStore, job: &str) -> String {
    store
        .connection()
        .query_row("SELECT typeof(fence) FROM jobs WHERE id = ?1", [job], |r| {
            r.get(0)
        })
        .unwrap()
}

/// A fence at `i64::MAX`: the current lease keeps working (renew, complete, release with that
/// fence), but no further lease can ever be handed out: claim fails with FenceExhausted (a
/// storage error, never a wrap to a negative or a REAL fence), the row is unchanged, and
/// claim_next skips the job.
#[test]
fn fence_at_i64_max_through_the_rust_api() {
    let store = LeaseStore::open_in_memory().unwrap();
    for job in ["max", "before-max", "other"] {
        store.enqueue(job).unwrap();
    }
    set_row(&store, "max", Some("A"), 10.0, MAX);
    set_row(&store, "before-max", None, 0.0, MAX - 1);
    set_row(&store, "other", Some("Z"), 20.0, 4);

    // The last fence is handed out normally.
    assert_eq!(
        store.claim("before-max", "B", 0.0, 5.0).unwrap().granted(),
        Some(MAX)
    );
    assert_eq!(fence_type(&store, "before-max"), "integer");

    // While the lease is live, claim reports it as held (held comes before exhaustion).
    assert_eq!(
        store.claim("max", "B", 5.0, 5.0).unwrap(),
        Outcome::Rejected(Reason::Held {
            owner: Some("A".into()),
            until: 10.0
        })
    );
    // The current lease works with the i64::MAX fence; stale and wrapped fences do not.
    assert!(store
        .renew(&Lease::new("max", "A", MAX), 5.0, 5.0)
        .unwrap()
        .is_granted());
    for stale in [MAX - 1, i64::MIN, 0, -1] {
        assert_eq!(
            store
                .renew(&Lease::new("max", "A", stale), 5.0, 5.0)
                .unwrap(),
            Outcome::Rejected(Reason::StaleFence { current: MAX }),
            "fence {stale}"
        );
    }
    assert_eq!(store.state("max").unwrap().unwrap().until, 10.0);

    // Once the lease has ended: FenceExhausted, nothing changes, claim_next skips it.
    let before = store.jobs().unwrap();
    let err = store.claim("max", "B", 10.0, 5.0).unwrap_err();
    assert!(
        matches!(&err, Error::FenceExhausted { job } if job == "max"),
        "{err:?}"
    );
    assert_eq!(err.code(), "storage");
    assert_eq!(
        store.jobs().unwrap(),
        before,
        "an exhausted claim changes nothing"
    );
    assert_eq!(fence_type(&store, "max"), "integer");
    // claim_next skips both exhausted jobs ("before-max" ended at 5, "max" at 10), although they
    // sort first, and "other" is still held until 20.
    assert_eq!(store.claim_next("N", 15.0, 1.0).unwrap(), None);
    assert_eq!(store.jobs().unwrap(), before, "claim_next changed nothing");
    // Later jobs are still handed out, in order, around the exhausted ones.
    store.enqueue("later").unwrap();
    let next = |now| {
        store
            .claim_next("N", now, 1.0)
            .unwrap()
            .map(|c| (c.job, c.fence))
    };
    assert_eq!(next(20.0), Some(("later".into(), 1)));
    assert_eq!(next(20.0), Some(("other".into(), 5)));
    assert_eq!(next(20.0), None);
    assert_eq!(fence_type(&store, "max"), "integer");

    // Release with the i64::MAX fence works and keeps the fence; claim is still exhausted.
    set_row(&store, "max", Some("A"), 30.0, MAX);
    assert!(store
        .release(&Lease::new("max", "A", MAX))
        .unwrap()
        .is_granted());
    let row = store.state("max").unwrap().unwrap();
    assert_eq!((row.owner, row.until, row.fence), (None, 0.0, MAX));
    assert!(matches!(
        store.claim("max", "B", 31.0, 1.0),
        Err(Error::FenceExhausted { .. })
    ));
    // Complete with the i64::MAX fence for a live lease works.
    set_row(&store, "max", Some("A"), 40.0, MAX);
    assert!(store
        .complete(&Lease::new("max", "A", MAX), 35.0, Some("last"))
        .unwrap()
        .is_granted());
    assert_eq!(
        store.claim("max", "B", 50.0, 1.0).unwrap(),
        Outcome::Rejected(Reason::Done),
        "done comes before exhaustion"
    );
    assert_eq!(fence_type(&store, "max"), "integer");
}

/// The same through the protocol: 9223372036854775807 is read and written exactly, never through
/// an f64 (which would turn it into 9223372036854775808).
#[test]
fn fence_at_i64_max_through_the_protocol() {
    let mut backend = Memory(LeaseStore::open_in_memory().unwrap());
    call(&mut backend, r#"{"op":"enqueue","job":"j"}"#);
    set_row(&backend.0, "j", Some("A"), 10.0, MAX);
    let exact = |text: &str| {
        assert!(
            text.contains("9223372036854775807") && !text.contains("9223372036854775808"),
            "{text}"
        )
    };

    let state = respond(&mut backend, r#"{"op":"state","job":"j"}"#).to_json();
    exact(&state);
    let state: Value = serde_json::from_str(&state).unwrap();
    assert_eq!(state["value"]["fence"].as_i64(), Some(MAX));

    let stale = respond(
        &mut backend,
        r#"{"op":"renew","job":"j","owner":"A","fence":9223372036854775806,"now":1,"ttl":1}"#,
    )
    .to_json();
    exact(&stale);
    assert_eq!(
        serde_json::from_str::<Value>(&stale).unwrap()["reason"]["fence"].as_i64(),
        Some(MAX)
    );
    for line in [
        r#"{"op":"renew","job":"j","owner":"A","fence":9223372036854775807,"now":1,"ttl":1}"#,
        r#"{"op":"release","job":"j","owner":"A","fence":9223372036854775807}"#,
    ] {
        assert_eq!(call(&mut backend, line), json!({"value": true}), "{line}");
    }
    // Out of i64 range, or a float that rounds to 2^63: invalid, never wrapped or saturated.
    for fence in [
        "9223372036854775808",
        "18446744073709551615",
        "-9223372036854775809",
        "9.223372036854775807e18",
        "9223372036854775807.0",
        "1e19",
    ] {
        let line = format!(r#"{{"op":"release","job":"j","owner":"A","fence":{fence}}}"#);
        let response = call(&mut backend, &line);
        assert_eq!(
            error_code(&response),
            Some("invalid_argument"),
            "{fence}: {response}"
        );
    }
    // i64::MIN is a valid (stale) fence.
    assert_eq!(
        call(
            &mut backend,
            r#"{"op":"release","job":"j","owner":"A","fence":-9223372036854775808}"#
        )["reason"],
        json!({"code": "stale_fence", "fence": MAX})
    );

    // Claim on the exhausted job: a storage error; claim_next: null. Nothing changes.
    let before = backend.0.jobs().unwrap();
    let response = call(
        &mut backend,
        r#"{"op":"claim","job":"j","owner":"B","now":20,"ttl":1}"#,
    );
    assert_eq!(error_code(&response), Some("storage"), "{response}");
    assert!(response["error"]["message"]
        .as_str()
        .unwrap()
        .contains("i64::MAX"));
    assert_eq!(
        call(
            &mut backend,
            r#"{"op":"claim_next","owner":"B","now":20,"ttl":1}"#
        ),
        json!({"value": null})
    );
    assert_eq!(backend.0.jobs().unwrap(), before);

    // A live lease at i64::MAX completes through the protocol.
    set_row(&backend.0, "j", Some("A"), 100.0, MAX);
    assert_eq!(
        call(
            &mut backend,
            r#"{"op":"complete","job":"j","owner":"A","fence":9223372036854775807,"now":50,"result":"ok"}"#
        ),
        json!({"value": true})
    );
    let state = respond(&mut backend, r#"{"op":"state","job":"j"}"#).to_json();
    exact(&state);
}

/// claim_many on an exhausted job, on a file database with real threads: every owner fails the
/// same way, so the whole request is a storage error and nothing changes.
#[test]
fn fence_at_i64_max_with_claim_many() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("max.db");
    let store = LeaseStore::open(&path).unwrap();
    store.enqueue("j").unwrap();
    set_row(&store, "j", None, 0.0, MAX);
    let before = store.jobs().unwrap();
    let err = store
        .claim_many("j", &["a", "b", "c"], 1.0, 1.0)
        .unwrap_err();
    assert!(matches!(err, Error::FenceExhausted { .. }), "{err:?}");
    let mut backend = TargetBackend::new(&path, OpenOptions::new());
    let response = call(
        &mut backend,
        r#"{"op":"claim_many","job":"j","owners":["a","b"],"now":1,"ttl":1}"#,
    );
    assert_eq!(error_code(&response), Some("storage"), "{response}");
    assert_eq!(store.jobs().unwrap(), before);
    // One fence below the limit: exactly one owner gets i64::MAX.
    set_row(&store, "j", None, 0.0, MAX - 1);
    let outcomes = store.claim_many("j", &["a", "b", "c"], 1.0, 1.0).unwrap();
    let granted: Vec<_> = outcomes.into_iter().filter_map(Outcome::granted).collect();
    assert_eq!(granted, [MAX]);
}

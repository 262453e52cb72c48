#![cfg(not(target_arch = "wasm32"))]
//! Replays the fuzz corpus (`fuzz/corpus/batch_line/`, kept small by `scripts/fuzz.sh cmin`)
//! through the exact checks of the `batch_line` fuzz target, so every input the fuzzer once found
//! interesting stays a regression test under plain `cargo test`, without libFuzzer or nightly.

#[path = "fuzz_support/batch_line.rs"]
mod batch_line;

use std::path::{Path, PathBuf};

fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/batch_line");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_input_passes_the_fuzz_checks() {
    let files = corpus_files();
    assert!(
        files.len() >= 50,
        "only {} corpus files: the regression corpus is missing",
        files.len()
    );
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| batch_line::check_input(&data));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!("{}: {message}", file.display());
        }
    }
}

/// Artifacts the fuzzer reported as crashes live in fuzz/artifacts (not committed); once fixed,
/// copy them into the corpus. This test makes sure each op of the protocol is in the corpus, so
/// the replay above exercises dispatch, not only the JSON reader.
#[test]
fn the_corpus_reaches_every_op() {
    let mut missing = protocol_ops();
    assert!(
        missing.len() >= 14 && missing.contains(&"claim_next".to_string()),
        "the protocol's list of ops is unreadable: {missing:?}"
    );
    for file in corpus_files() {
        let data = std::fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&data);
        missing.retain(|op| {
            !text.contains(&format!("\"op\":\"{op}\""))
                && !text.contains(&format!("\"op\": \"{op}\""))
        });
    }
    assert!(missing.is_empty(), "no corpus input runs {missing:?}");
}

/// The ops as the protocol itself lists them, to a request with an unknown op ("unknown op ...;
/// use one of init, enqueue, ..."): the list a client is told, so a new op cannot be missed here.
fn protocol_ops() -> Vec<String> {
    let mut store = batch_line::seeded();
    let response = leasefence::protocol::respond(&mut store, r#"{"op":"?"}"#).to_json();
    let value: serde_json::Value = serde_json::from_str(&response).unwrap();
    let message = value["error"]["message"].as_str().unwrap_or_default();
    let list = message
        .split_once("use one of ")
        .map_or("", |(_, list)| list);
    list.split(", ").map(str::to_string).collect()
}

/// The fast reset the fuzzer uses gives exactly the rows the API builds.
#[test]
fn the_fast_reset_matches_the_seeded_store() {
    let seeded = batch_line::seeded();
    let reset = batch_line::seeded();
    reset
        .0
        .claim_next("someone", 1000.0, 1.0)
        .unwrap()
        .expect("something to claim");
    batch_line::reset(&reset);
    assert_eq!(reset.0.jobs().unwrap(), seeded.0.jobs().unwrap());
}

/// The checker itself catches what it claims to: a few hand-made inputs.
#[test]
fn the_checks_accept_known_good_sequences() {
    batch_line::check_input(
        b"{\"op\":\"enqueue\",\"job\":\"x\"}\n{\"op\":\"claim\",\"job\":\"x\",\"owner\":\"o\",\"now\":0,\"ttl\":1}\r\n\
          {\"op\":\"complete\",\"job\":\"x\",\"owner\":\"o\",\"fence\":1.0,\"now\":0.5,\"result\":\"\\u0000\"}\n\
          {\"op\":\"claim_next\",\"owner\":\"w\",\"now\":1e2,\"ttl\":1}\n\
          {\"op\":\"claim_many\",\"job\":\"free\",\"owners\":[\"a\",\"b\"],\"now\":0,\"ttl\":NaN}\n\
          [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n\
          \xff\xfe\n{\"op\":\"state\",\"job\":\"x\"}\n",
    );
}

/// The number rewriting that lets serde_json judge the protocol's JSON reader keeps invalid text
/// invalid and valid text valid.
#[test]
fn number_rewriting_for_the_json_oracle() {
    for (line, want) in [
        (
            r#"{"a":[1,-2.5e3,NaN,Infinity,-Infinity]}"#,
            r#"{"a":[0 ,0 ,0 ,0 ,0 ]}"#,
        ),
        (
            r#"{"n":1e400,"s":"NaN 1 \" 2"}"#,
            r#"{"n":0 ,"s":"NaN 1 \" 2"}"#,
        ),
        ("-NaN", "#0 "),
        ("01", "#"),
        ("1.", "#"),
        ("NaNe5", "0 e0 "),
        ("[1-2]", "[#]"),
    ] {
        assert_eq!(batch_line::zero_numbers(line), want, "{line}");
    }
}

//! Arbitrary bytes as request lines of `leasefence batch`, answered by
//! `leasefence::protocol::respond` on a pre-seeded in-memory store. The checks (no panic, one
//! line of valid JSON with exactly `value` or `error`, an error changes nothing, ...) live in
//! crate/tests/fuzz_support/batch_line.rs, shared with crate/tests/fuzz_corpus.rs, which replays
//! this target's corpus under plain `cargo test`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../crate/tests/fuzz_support/batch_line.rs"]
mod batch_line;

fuzz_target!(|data: &[u8]| {
    batch_line::check_input(data);
});

#!/usr/bin/env bash
# Fuzzes the JSON-lines protocol (parsing and dispatch of `leasefence batch`) with libFuzzer.
#
#   scripts/fuzz.sh [SECONDS]      # default 60
#   scripts/fuzz.sh cmin           # fold new finds into the committed corpus (see below)
#
# Installs cargo-fuzz if it is missing. cargo-fuzz needs nightly-only rustc flags (sanitizers,
# coverage); RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them, so no nightly is needed.
# The committed corpus (fuzz/corpus/batch_line) is the seed and is left untouched; new inputs go
# to fuzz/target/corpus-scratch/batch_line (kept between runs, not committed). A crash is saved
# under fuzz/artifacts/batch_line/ and makes this script fail.
#
# Environment: FUZZ_SANITIZER=address|none (default address; `none` runs about twice as fast),
# FUZZ_JOBS=N runs N fuzzing processes (libFuzzer -fork=N), FUZZ_MAX_LEN=BYTES bounds an input
# (default 1024: about ten request lines, long enough for sequences, short enough to stay fast).
#
# `scripts/fuzz.sh cmin` folds what the fuzzer found into the committed regression corpus and
# minimizes it: the named inputs (seed-*, regression-*) are kept as they are, and of everything
# else only inputs that reach new code edges are kept (libFuzzer -merge=1 with hit counters off;
# plain `cargo fuzz cmin` keeps ~4x more files, one per hit-count bucket). Commit the result; it
# stays a few hundred small files, and crate/tests/fuzz_corpus.rs replays it under `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi
export RUSTC_BOOTSTRAP=1
scratch=target/corpus-scratch/batch_line
mkdir -p "$scratch"

if [ "${1:-}" = "cmin" ]; then
    cargo fuzz build batch_line
    fuzzer="target/$(rustc -vV | sed -n 's/^host: //p')/release/batch_line"
    kept="$(mktemp -d)"
    trap 'rm -rf "$kept"' EXIT
    cp corpus/batch_line/seed-* corpus/batch_line/regression-* "$kept"/ 2>/dev/null || true
    "$fuzzer" -merge=1 -use_counters=0 -use_value_profile=0 "$kept" corpus/batch_line "$scratch"
    rm -rf corpus/batch_line
    mkdir corpus/batch_line
    cp "$kept"/* corpus/batch_line/
    echo "== corpus/batch_line: $(ls corpus/batch_line | wc -l) files," \
        "$(cat corpus/batch_line/* | wc -c) bytes"
    exit 0
fi

seconds="${1:-60}"
case "$seconds" in
    '' | *[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] | scripts/fuzz.sh cmin" >&2; exit 2 ;;
esac

log="$(mktemp)"
trap 'rm -f "$log"' EXIT

extra=()
if [ -n "${FUZZ_JOBS:-}" ]; then
    extra+=("-fork=${FUZZ_JOBS}")
fi

echo "== fuzzing batch_line for ${seconds}s (sanitizer: ${FUZZ_SANITIZER:-address})"
status=0
cargo fuzz run --sanitizer "${FUZZ_SANITIZER:-address}" batch_line "$scratch" corpus/batch_line -- \
    -dict=batch_line.dict -max_len="${FUZZ_MAX_LEN:-1024}" -max_total_time="$seconds" -timeout=10 \
    -print_final_stats=1 \
    "${extra[@]}" 2>&1 | tee "$log" || status=$?

runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
rate="$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)"
if [ -z "$runs" ]; then
    # -fork mode prints no final stats; take the last status line (`#N ... exec/s: R`).
    runs="$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')"
    rate="$(grep -o 'exec/s: [0-9]*' "$log" | tail -1 | sed 's/exec\/s: //')"
fi
echo "== batch_line: ${runs:-?} executions in ${seconds}s (${rate:-?} exec/s)"
if [ "$status" -ne 0 ]; then
    echo "== the fuzzer stopped with status $status: see the crash above and fuzz/artifacts/batch_line/" >&2
fi
exit "$status"

#!/usr/bin/env bash
# Sets up and runs every test suite. Safe to run again: each step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "leasefence: '$1' is required ($2)" >&2; exit 1; }; }
need cargo "install the Rust toolchain with rustup"
need python3 "install Python 3: the interop tests run the seed module on Python's sqlite3"

step() { printf '\n== %s\n' "$*"; }

step "format and lints"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p leasefence

step "native: unit, doc, vector, thread, process, interop and protocol tests"
cargo test --workspace

step "python seed module against the same vectors"
python3 tests/interop/run_vectors.py

step "node package: build, then vectors, arguments, threads, stress, crash, native mix, tarball"
bash scripts/package.sh
command -v strace >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; }
node --test tests/node/

step "browser: the crate on OPFS in a dedicated worker (wasm-bindgen-test), vectors and playground in Chromium"
bash scripts/setup-browser.sh
bash scripts/build-web.sh
wasm-pack test --headless --chrome crate --features browser --test browser_worker
node --test tests/browser/

step "fuzz: a short libFuzzer run on the batch protocol (scripts/fuzz.sh SECONDS for longer)"
FUZZ_SANITIZER=none bash scripts/fuzz.sh "${LEASEFENCE_FUZZ_SECONDS:-30}"

step "postgres: the same contract on a real PostgreSQL server"
bash scripts/postgres.sh

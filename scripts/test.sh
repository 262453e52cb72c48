#!/usr/bin/env bash
# Sets up and runs every test suite. Safe to run again: each step skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1 || { echo "leasefence: '$1' is required ($2)" >&2; exit 1; }; }
need cargo "install the Rust toolchain with rustup"
need python3 "install Python 3: the interop tests run the seed module on Python's sqlite3"

step() { printf '\n== %s\n' "$*"; }

# Runs a test command under a time limit, so that a hang fails this run with a clear message
# instead of eating CI's whole budget. The limits are several times a normal run here.
bounded() {
  local minutes=$1
  shift
  local status=0
  timeout --kill-after=30s "${minutes}m" "$@" || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "leasefence: '$*' did not finish within ${minutes} minutes: a test hangs (see the output above)" >&2
  fi
  return "$status"
}
# --test-force-exit: a child or handle that a failed test leaves open cannot keep the runner alive.
NODE_TEST=(node --test --test-force-exit --test-timeout=900000)

step "format and lints"
rustup component add rustfmt clippy >/dev/null 2>&1 || true
cargo fmt --all -- --check
node scripts/check-imports.mjs
# The npm package's operation table and typings are generated from the crate's catalogue.
node scripts/generate-operations.mjs --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The Node-API addon (feature addon) is no workspace default: lint it as scripts/build-addon.sh builds it,
# with the test-only fault VFS of tests/node/native-faults.test.mjs (addon-faults, a superset).
cargo clippy -p leasefence --no-default-features --features addon-faults --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p leasefence

step "docs: the guide builds and every link resolves"
node scripts/check-docs.mjs
bash scripts/setup-docs.sh
mdbook build docs/guide

step "native: unit, doc, vector, thread, process, interop and protocol tests"
bounded 40 cargo test --workspace

step "publishing: the crate and the CLI as crates.io would get them (cargo package builds the packaged copies)"
# The npm package is packed (npm pack) by scripts/package.sh below, and
# tests/node/package.test.mjs installs that tarball.
bash scripts/package-cli.sh
# The playground's code lives in playground/ (never published); none of it may ship in the crate.
playground_files=$(cargo package --list --allow-dirty -p leasefence | grep -Ei 'playground|lease_only|trace\.rs|app_data' || true)
if [ -n "$playground_files" ]; then
  echo "leasefence: the published crate would ship playground code; move it to playground/:" >&2
  echo "$playground_files" >&2
  exit 1
fi
if cargo tree -p leasefence -e normal --prefix none | grep -q '^clap '; then
  echo "leasefence: clap is a dependency of the library; only the CLI (cli/) may have it" >&2
  exit 1
fi

step "python seed module against the same vectors"
bounded 10 python3 tests/interop/run_vectors.py

step "node package: build, then vectors, arguments, threads, stress, crash, native mix, tarball, typings (tsc)"
bash scripts/package.sh
command -v strace >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; }
# Twice: on the native engine (the default: the addon in the package) and on the wasm engine (the
# fallback where no addon loads). A test of what only one engine does says so and is skipped on the
# other (onlyOn in tests/node/helpers.mjs).
step "node package on the native engine (the Node-API addon)"
bounded 25 "${NODE_TEST[@]}" tests/node/
step "node package on the wasm engine (the fallback)"
bounded 25 env LEASEFENCE_ENGINE=wasm "${NODE_TEST[@]}" tests/node/

step "browser: the crate on OPFS in a dedicated worker (wasm-bindgen-test), vectors and playground in Chromium"
bash scripts/setup-browser.sh
bash scripts/build-web.sh
bounded 25 wasm-pack test --headless --chrome crate --features browser --test browser_worker
bounded 20 "${NODE_TEST[@]}" tests/browser/

step "component: the WebAssembly component on wasmtime (Python) and jco (Node): vectors, reasons, processes, a crash"
bash scripts/build-component.sh
WASI_SYSROOT="$PWD/target/wasi-sysroot" cargo clippy -p leasefence --target wasm32-wasip1 \
  --no-default-features --features component --quiet -- -D warnings
python3 -c 'import wasmtime.component' 2>/dev/null || python3 -m pip install --quiet 'wasmtime==51.0.0'
bounded 10 python3 tests/component/test_component.py
bounded 10 "${NODE_TEST[@]}" tests/component/

step "fuzz: a short libFuzzer run on the batch protocol (scripts/fuzz.sh SECONDS for longer)"
FUZZ_SANITIZER=none bash scripts/fuzz.sh "${LEASEFENCE_FUZZ_SECONDS:-30}"

step "postgres: the same contract on a real PostgreSQL server"
bash scripts/postgres.sh

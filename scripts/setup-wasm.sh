#!/usr/bin/env bash
# Installs what the wasm builds need, idempotently: the wasm32 target, clang (sqlite-wasm-rs
# compiles SQLite with it), the wasm-bindgen CLI at exactly the version in Cargo.lock (wasm-pack
# uses it from PATH and downloads nothing), binaryen's wasm-opt (npm), and wasm-pack (it builds
# both wasm packages, scripts/build-wasm.sh, and runs `wasm-pack test`).
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target list --installed | grep -qx wasm32-unknown-unknown || rustup target add wasm32-unknown-unknown

if ! command -v clang >/dev/null 2>&1; then
  echo "== installing clang (sqlite-wasm-rs builds SQLite for wasm with it)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null
fi

# The CLI must match the wasm-bindgen crate exactly, or the generated glue does not fit.
want=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/"/, "", $3); print $3; exit }' Cargo.lock)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ -z "$want" ]; then
  echo "leasefence: no wasm-bindgen in Cargo.lock; run 'cargo generate-lockfile'" >&2
  exit 1
fi
if [ "$want" != "$have" ]; then
  echo "== installing wasm-bindgen-cli $want (about 3.5 min, once)"
  # Not --locked: one of its locked dependencies is not served by the registry here.
  cargo install -q wasm-bindgen-cli --version "$want"
fi
if [ ! -x node_modules/.bin/wasm-opt ]; then
  # The builds need only binaryen, the workspace's one `dependencies` entry; the test and bench
  # tools (playwright-core, better-sqlite3, @sqlite.org/sqlite-wasm) are devDependencies, which
  # scripts/setup-browser.sh and bench/run.sh install when they run.
  echo "== installing binaryen's wasm-opt (npm)"
  npm ci --omit=dev --no-audit --no-fund --silent
fi
if ! command -v wasm-pack >/dev/null 2>&1; then
  echo "== installing wasm-pack (about 2.5 min, once)"
  cargo install -q wasm-pack
fi

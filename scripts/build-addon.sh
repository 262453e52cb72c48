#!/usr/bin/env bash
# Builds the npm package's native engine: the crate as a Node-API addon (feature `addon`,
# crate/src/addon/), for the platform this runs on, into OUT/leasefence.node (default
# target/addon). Only the Rust toolchain is needed: napi-rs links against nothing of Node's at
# build time (the addon finds Node's functions when Node loads it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/addon}
# No postgres feature: Node's PostgreSQL store runs in the wasm with `pg` (docs/postgres.md).
cargo build --quiet --release -p leasefence --no-default-features --features addon
mkdir -p "$out"
# Without the static symbol table (Node finds the addon through its dynamic symbols, which
# strip keeps): 4.4 MB -> 3.9 MB.
if command -v strip >/dev/null 2>&1; then
  strip -o "$out/leasefence.node" target/release/libleasefence.so
else
  cp target/release/libleasefence.so "$out/leasefence.node"
fi

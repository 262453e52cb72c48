#!/usr/bin/env bash
# Builds the npm package for Node from the crate (wasm32 + the Node VFS) and leaves exactly one
# dist/leasefence-<version>.tgz. The staged package is also left in target/npm/leasefence, which
# the Node tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh node target/wasm-node

stage=target/npm/leasefence
rm -rf "$stage" && mkdir -p "$stage/wasm"
cp node/package.json node/index.cjs node/index.mjs node/index.d.ts node/claim-worker.cjs node/README.md "$stage/"
cp LICENSE-MIT LICENSE-APACHE "$stage/"
cp target/wasm-node/leasefence.js target/wasm-node/leasefence_bg.wasm "$stage/wasm/"

mkdir -p dist
rm -f dist/leasefence-*.tgz
(cd dist && npm pack --silent "../$stage" >/dev/null)
ls dist/leasefence-*.tgz

#!/usr/bin/env bash
# Builds the crate for the browser (wasm32 + OPFS sahpool VFS) into web/pkg, served by the
# playground and used by the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-wasm.sh
echo "== building the wasm for the browser"
wasm-pack --quiet build crate --release --target web --no-typescript \
  --out-dir ../web/pkg --out-name leasefence -- --features browser
rm -f web/pkg/.gitignore web/pkg/package.json web/pkg/README.md

#!/usr/bin/env bash
# Builds the crate for the browser (wasm32 + OPFS sahpool VFS) into web/pkg, served by the
# playground and used by the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh browser web/pkg

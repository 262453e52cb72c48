#!/usr/bin/env bash
# Builds the browser wasm: the library's (wasm32 + OPFS sahpool VFS) into web/pkg, what
# web/store/ runs, and the playground's (playground/: the library's plus the playground's calls)
# into web/app/pkg, what the playground page runs. Both are served by web/server.mjs and used by
# the browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-wasm.sh browser web/pkg
bash scripts/build-wasm.sh playground web/app/pkg

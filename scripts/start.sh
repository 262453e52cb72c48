#!/usr/bin/env bash
# The main job: builds the browser wasm (the library's and the playground's) and serves the
# playground on http://localhost:${PORT:-8080}/ (the URL is printed when it is ready).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "leasefence: install the Rust toolchain (rustup) first" >&2; exit 1; }
command -v node >/dev/null || { echo "leasefence: install Node.js 20 first" >&2; exit 1; }
bash scripts/build-web.sh
exec node web/server.mjs

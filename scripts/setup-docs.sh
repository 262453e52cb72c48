#!/usr/bin/env bash
# Installs mdBook, which builds the guide (docs/guide), idempotently: `cargo install` runs only when
# `mdbook --version` does not already say the pinned version. Built from crates.io without its
# `serve` and `watch` features (an HTTP server and a file watcher the build does not need), which
# keeps the one-time build near 3 minutes on one core. Then `mdbook build docs/guide`.
set -euo pipefail
cd "$(dirname "$0")/.."
want=0.4.52
have=$(mdbook --version 2>/dev/null || true)
if [ "$have" != "mdbook v$want" ]; then
  echo "== installing mdbook $want (cargo install, a few minutes once)"
  cargo install -q mdbook --version "$want" --locked --no-default-features --features search
fi

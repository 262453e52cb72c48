#!/usr/bin/env bash
# Installs what the browser tests need, idempotently: Debian's Chromium (driven by
# playwright-core; never a downloaded browser) and the project's npm dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium (Debian's package)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if [ ! -d node_modules/playwright-core ]; then
  echo "== installing npm dev dependencies"
  npm ci --no-audit --no-fund --silent
fi

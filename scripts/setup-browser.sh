#!/usr/bin/env bash
# Installs what the browser tests need, idempotently: Debian's Chromium (driven by
# playwright-core; never a downloaded browser), a CJK font (the playground speaks Japanese and
# Chinese; without one its screenshots show boxes) and the project's npm dev dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  echo "== installing chromium (Debian's package)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
fi
if ! fc-list 2>/dev/null | grep -qi 'wqy\|noto sans cjk'; then
  echo "== installing a CJK font (Debian's fonts-wqy-zenhei)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-wqy-zenhei >/dev/null
fi
if [ ! -d node_modules/playwright-core ]; then
  echo "== installing npm dev dependencies"
  npm ci --no-audit --no-fund --silent
fi

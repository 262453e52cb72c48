#!/usr/bin/env bash
# `npm run demo`: the stale-worker story played through the CLI
# on a real database file, step by step.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo >/dev/null || { echo "leasefence: install the Rust toolchain (rustup) first" >&2; exit 1; }

cargo build --release --quiet -p leasefence-cli
bin="$PWD/target/release/leasefence"
db="${LEASEFENCE_DEMO_DB:-$(mktemp -d)/demo.db}"
export LEASEFENCE_DB="$db"

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
run() {
  printf '$ leasefence %s\n' "$*"
  local status=0
  "$bin" "$@" || status=$?
  printf '  (exit %s)\n' "$status"
}

say "The stale-worker story, on $db"
say "1. A job arrives."
run enqueue invoice-42
say "2. Worker A claims it at t=0 for 10 s and gets fence 1. Then A stalls (GC pause, lost network)."
run claim invoice-42 --owner A --ttl 10 --now 0
say "3. At t=5 worker B tries too: the lease is live, so the store says held."
run claim invoice-42 --owner B --ttl 10 --now 5
say "4. A's lease expires at t=10. At t=12 B claims and gets fence 2."
run claim invoice-42 --owner B --ttl 10 --now 12
say "5. A wakes for a moment at t=13 and tries to renew with fence 1: stale, B holds fence 2."
run renew invoice-42 --owner A --fence 1 --ttl 10 --now 13
say "6. B completes with its fence."
run complete invoice-42 --owner B --fence 2 --now 14 --result "B's invoice"
say "7. A wakes up at t=15 and writes its result with fence 1. The store checks the fence and refuses."
run complete invoice-42 --owner A --fence 1 --now 15 --result "A's stale invoice"
say "8. B's result is what is stored."
run state invoice-42
run jobs --now 15
say "No lease length could have prevented step 7; only the fence check at the store does."

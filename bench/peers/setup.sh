#!/usr/bin/env bash
# Installs what bench/peers measures, idempotently, at the versions pinned here:
#   - Debian's redis-server (BullMQ's store), if missing;
#   - the npm peers of bench/peers/package.json (package-lock.json pins every version) into
#     target/bench/peers/node_modules, never into the repository's node_modules;
#   - the Python peers of bench/peers/requirements.txt into the venv target/bench/peers/venv;
#   - the native leasefence worker (target/release/leasefence-peer-worker).
# A second run does nothing but check. PostgreSQL comes from scripts/postgres.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

say() { printf 'bench/peers/setup.sh: %s\n' "$*" >&2; }
here=bench/peers
dest=target/bench/peers
mkdir -p "$dest"

if ! command -v redis-server >/dev/null 2>&1; then
  say "installing redis-server from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server >/dev/null
fi
# bench/peers/bench.mjs starts its own server on a free port, with its own data directory, and
# stops it; a system-wide Redis, if one runs, is left alone.

# npm: reinstall only when the pinned list changed (a stamp holds the lock file's checksum).
stamp="$dest/.npm-installed"
want=$(cat "$here/package.json" "$here/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || [ ! -d "$dest/node_modules/bullmq" ]; then
  say "installing the npm peers into $dest (better-sqlite3 11 builds from source once, for liteque)"
  cp "$here/package.json" "$here/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --legacy-peer-deps --no-audit --no-fund --silent)
  echo "$want" >"$stamp"
fi

# Python: a venv of its own, the pinned requirements.
venv="$dest/venv"
pystamp="$venv/.installed"
pywant=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ] || [ ! -f "$pystamp" ] || [ "$(cat "$pystamp")" != "$pywant" ]; then
  say "installing the Python peers into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$here/requirements.txt"
  echo "$pywant" >"$pystamp"
fi

cargo build -q --release -p leasefence-pg-bench --bin leasefence-peer-worker

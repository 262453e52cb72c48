#!/usr/bin/env bash
# The PostgreSQL test suite on a throwaway local server. Installs PostgreSQL from Debian's
# packages if missing, starts a server on 127.0.0.1 on a free port in a temporary data directory,
# runs `cargo test --test postgres` (and the worker, batch and dashboard tests' PostgreSQL variants,
# the dashboard's in Chromium too) with these
# variables exported, and stops the server and
# removes its directory on exit, whatever happens. Safe to run again: each run has its own server.
#
#   LEASEFENCE_PG_URL      postgres://postgres@127.0.0.1:PORT/postgres
#   LEASEFENCE_PG_RESTART  a shell command that crash-restarts that server (pg_ctl -m immediate)
#   LEASEFENCE_PG_TLS_DIR  the TLS test material: ca.pem (signed the server's certificate, for
#                          DNS:localhost only, and client.crt/.key, CN lf_cert), other-ca.pem
#                          (signed only other-client.crt/.key, CN lf_cert). pg_hba.conf lets the
#                          role lf_tls in over TLS only, lf_cert only with a client
#                          certificate the server trusts (method cert), and lf_scram only over
#                          TLS with its password (scram-sha-256), so the TLS tests can tell what
#                          the server saw
#
# Usage:
#   bash scripts/postgres.sh              run the PostgreSQL tests
#   bash scripts/postgres.sh CMD ARGS...  run CMD instead, with the same server and variables
#                                         (e.g. the benchmark: bash scripts/postgres.sh \
#                                          cargo run --release -p leasefence-pg-bench)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'postgres.sh: %s\n' "$*" >&2; }

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

bin=$(pg_bin)
if [ -z "$bin" ] || [ ! -x "$bin/pg_ctl" ] || [ ! -x "$bin/initdb" ]; then
  say "installing PostgreSQL from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
  bin=$(pg_bin)
fi
[ -n "$bin" ] && [ -x "$bin/pg_ctl" ] || { say "no pg_ctl found under /usr/lib/postgresql"; exit 1; }

# The server refuses to run as root: as root, run it as the `postgres` user the package creates.
if [ "$(id -u)" = 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql postgres
  as_pg=(runuser -u postgres --)
else
  as_pg=()
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/leasefence-pg.XXXXXX")
data="$dir/data"
mkdir -p "$dir/sock"
if [ "$(id -u)" = 0 ]; then chown -R postgres: "$dir"; fi

stop() {
  local status=$?
  if [ -f "$data/postmaster.pid" ]; then
    "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || \
      "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  if [ "$status" != 0 ] && [ -f "$dir/server.log" ]; then
    say "server log (last lines):"
    tail -n 30 "$dir/server.log" >&2 || true
  fi
  rm -rf "$dir"
  exit "$status"
}
trap stop EXIT

"${as_pg[@]}" "$bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --no-locale --no-sync \
  >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }

command -v openssl >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null; }
# The several-hosts test makes network namespaces (ip, sysctl), as root.
if [ "$(id -u)" = 0 ] && ! { command -v ip && command -v sysctl; } >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iproute2 procps >/dev/null
fi
# TLS: a throwaway CA, a server certificate for DNS:localhost signed by it, and a second CA that
# signs only a client certificate the server must refuse.
tls="$dir/tls"
mkdir -p "$tls"
make_ca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout "$tls/$1.key" -out "$tls/$1.pem" -subj "/CN=leasefence test $1" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
}
make_ca ca
make_ca other-ca
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$data/server.key" \
  -out "$tls/server.csr" -subj "/CN=localhost" 2>/dev/null
printf 'subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' \
  >"$tls/server.ext"
openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial \
  -days 2 -extfile "$tls/server.ext" -out "$data/server.crt" 2>/dev/null
# Client certificates for the role lf_cert: one from the CA the server trusts, one from the other.
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' \
  >"$tls/client.ext"
for who in client:ca other-client:other-ca; do
  name=${who%%:*} signer=${who##*:}
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tls/$name.key" \
    -out "$tls/$name.csr" -subj "/CN=lf_cert" 2>/dev/null
  openssl x509 -req -in "$tls/$name.csr" -CA "$tls/$signer.pem" -CAkey "$tls/$signer.key" \
    -CAcreateserial -days 2 -extfile "$tls/client.ext" -out "$tls/$name.crt" 2>/dev/null
done
cp "$tls/ca.pem" "$data/root.crt" # the server trusts client certificates signed by ca.pem
chmod 600 "$data/server.key"
if [ "$(id -u)" = 0 ]; then chown -R postgres: "$data" "$tls"; fi
chmod 644 "$tls"/*.pem "$tls"/*.crt
chmod 600 "$tls"/*.key
# lf_tls may connect over TLS only, lf_cert only with a trusted client certificate; everyone else
# as initdb set up (trust on loopback).
{
  echo "hostnossl all lf_tls all reject"
  echo "hostssl all lf_cert all cert"
  echo "host all lf_cert all reject"
  echo "hostssl all lf_scram all scram-sha-256"
  echo "host all lf_scram all reject"
  cat "$data/pg_hba.conf"
} >"$tls/pg_hba.conf"
cp "$tls/pg_hba.conf" "$data/pg_hba.conf"

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# A free port can be taken by someone else before the server binds it: try a few.
started=
for _ in 1 2 3 4 5; do
  port=$(free_port)
  if "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c max_connections=300 -c ssl=on -c ssl_ca_file=root.crt" \
      start >/dev/null; then
    started=1
    break
  fi
done
[ -n "$started" ] || { say "the server did not start"; exit 1; }
say "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (data in $data)"

export LEASEFENCE_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
export LEASEFENCE_PG_TLS_DIR="$tls"
# pg_ctl restart reuses the options the server was started with (postmaster.opts).
restart=$(printf '%q ' "${as_pg[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
  -m immediate restart)
export LEASEFENCE_PG_RESTART="$restart >/dev/null"

if [ "$#" -gt 0 ]; then
  "$@"
else
  # Bounded so that a hang fails the run (and the EXIT trap still stops the server).
  status=0
  # The tests drive the CLI, which is its own package (cli/).
  cargo build -q -p leasefence-cli
  # The worker runtime's PostgreSQL variants (worker.rs, work_cli.rs, worker_postgres.rs), the
  # batch operations' (batch_ops.rs, batch_ops_postgres.rs), enqueue in your own transaction
  # (enqueue_in_tx.rs), recurring jobs (schedules.rs), waking (waking.rs) and the dashboard's
  # listings (listing.rs) run here too.
  # The statement catalogue as Node's `pg` prepares it (crate/src/postgres/wire.rs, --lib).
  timeout --kill-after=30s 20m cargo test -p leasefence --lib --test postgres --test worker --test work_cli \
    --test worker_postgres --test batch_ops --test batch_ops_postgres --test enqueue_in_tx \
    --test schedules --test waking --test listing \
    -- --ignored --nocapture || status=$?
  [ "$status" -ne 124 ] || say "the PostgreSQL tests did not finish within 20 minutes: a test hangs"
  # The dashboard's PostgreSQL variant (cli/tests/ui.rs).
  if [ "$status" -eq 0 ]; then
    timeout --kill-after=30s 5m cargo test -p leasefence-cli --test ui -- --ignored --nocapture || \
      status=$?
  fi
  # The dashboard in Chromium over the server (tests/browser/dashboard-postgres.test.mjs), when
  # the browser step has set Chromium up (scripts/setup-browser.sh; npm test runs it first).
  if [ "$status" -eq 0 ]; then
    if command -v chromium >/dev/null 2>&1 && [ -d node_modules/playwright-core ]; then
      timeout --kill-after=30s 5m node --test tests/browser/dashboard-postgres.test.mjs || status=$?
    else
      say "no Chromium set up (bash scripts/setup-browser.sh): the dashboard's browser test skipped"
    fi
  fi
  # The npm package on PostgreSQL (tests/node/postgres.test.mjs): vectors, Node and native
  # processes on one database, JobWorkers, a server restart, TLS; and Node workers on two hosts
  # (network namespaces, as root; tests/node/postgres-hosts.test.mjs). Needs the staged package.
  if [ "$status" -eq 0 ]; then
    [ -f target/npm/leasefence/index.cjs ] || bash scripts/package.sh
    timeout --kill-after=30s 10m node --test --test-force-exit tests/node/postgres.test.mjs \
      tests/node/postgres-hosts.test.mjs || status=$?
  fi
  # The lost-increment proof on PostgreSQL (crate/tests/lost_increments.rs; about a minute).
  if [ "$status" -eq 0 ]; then
    timeout --kill-after=30s 10m cargo test -p leasefence --test lost_increments postgres -- \
      --ignored --nocapture || status=$?
  fi
  exit "$status"
fi

#!/usr/bin/env bash
# `npm run bench`: every benchmark on this machine in one run, then docs/bench (results.md, the
# SVG charts and the README section). Each figure is a ratio to a baseline measured in the same
# run, as a median with its spread over repeats. See docs/bench/results.md for what is measured.
#
# Environment:
#   BENCH_REPEATS=5        repeats of every measurement
#   BENCH_ONLY=native,...  run only some sections (native contention processes throughput scale node
#                          browser size postgres waking dashboard peers); the report then goes to target/bench/report, not docs/bench
#   BENCH_PEERS_JOBS=N     jobs per peers run (default 300; 50 in the quick mode, BENCH_ONLY=peers,
#                          about 7 minutes here with its installs checked and its profile)
#   BENCH_PEERS_REPEATS=3  repeats of the peers section (2 in the quick mode; its own, as it is the
#                          slowest section: 64 worker processes per system take a while to start)
#   BENCH_PEERS_WORKERS=1,8,64  worker-process counts of the peers section (1,8 in the quick mode)
#   BENCH_PEERS_BEST=64    jobs in flight in the peers section's second table (each system in one
#                          process at its best settings, each job held 5 ms, the same job count);
#                          on in the quick mode too; 0 leaves the table out
#   BENCH_PROCESSES_JOBS=600, BENCH_PROCESSES_WORKERS=1,8,64,256  jobs per drain and worker-process
#                          counts of the processes section (native and npm)
#   BENCH_THROUGHPUT_JOBS=2000, BENCH_THROUGHPUT_NODE_JOBS=1000  jobs per drain of the throughput
#                          section, native (SQLite and PostgreSQL) and npm
#   BENCH_THROUGHPUT_NO_PG=1  the throughput section without its PostgreSQL drains
#   BENCH_WAKING_IDLE_SECS=60, BENCH_WAKING_ENQUEUES=50  the waking section: how long 8 idle
#                          workers are watched for CPU, and how many enqueues wake them
#   BENCH_NODE_LOOP_JOBS=1000  jobs per drain of the node section's W = 1 loop (bench/node/loop.mjs)
#   BENCH_SKIP_BUILD=1     measure the builds already in web/pkg and target/npm/leasefence
set -euo pipefail
cd "$(dirname "$0")/.."

repeats=${BENCH_REPEATS:-5}
only=${BENCH_ONLY:-native,contention,processes,throughput,scale,node,browser,size,postgres,waking,dashboard,peers}
# Databases live on the repository's disk (a real fsync), never on a tmpfs.
tmp=target/bench-tmp
out=target/bench
mkdir -p "$tmp" "$out"
results="$out/results-$(date +%Y%m%d-%H%M%S).jsonl"
: >"$results"
wants() { [[ ",$only," == *",$1,"* ]]; }
step() { printf '\n== %s\n' "$*" >&2; }
started=$SECONDS

need() { command -v "$1" >/dev/null 2>&1 || { echo "bench: '$1' is required ($2)" >&2; exit 1; }; }
need cargo "the Rust toolchain"
need node "Node 20 or later"
need python3 "Python 3 runs the seed module, the native anchor"
need gzip "gzip measures the compressed .wasm sizes"

step "setting up (builds are incremental; BENCH_SKIP_BUILD=1 skips the wasm ones)"
if [ ! -d node_modules/better-sqlite3 ] || [ ! -d node_modules/@sqlite.org/sqlite-wasm ]; then
  echo "  installing npm dev dependencies (better-sqlite3 builds from source once)" >&2
  npm ci --no-audit --no-fund --silent
fi
cargo build -q --release -p leasefence-bench
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  if wants browser || wants size; then bash scripts/build-web.sh >&2; fi
  if wants node || wants size || wants peers || wants throughput || wants processes || wants waking || wants postgres; then bash scripts/package.sh >/dev/null; fi
fi
# The peer queues (Redis, npm and PyPI packages at pinned versions) and the native peers worker.
if wants peers; then bash bench/peers/setup.sh; fi
if wants browser; then bash scripts/setup-browser.sh >&2; fi

env_record() {
  node -e '
    const os = require("node:os");
    console.log(JSON.stringify({ section: "env", case: process.argv[1], when: new Date().toISOString(),
      cpus: os.cpus().length, cpu: os.cpus()[0]?.model, kernel: os.release(), loadavg: os.loadavg(),
      memory_gb: Math.round(os.totalmem() / 2 ** 30), node: process.version, repeats: Number(process.argv[2]) }));
  ' "$1" "$repeats"
}
env_record start >>"$results"
bin=target/release/leasefence-bench

if wants native; then
  step "1. native: claim-then-complete cycles; raw rusqlite floor, store, seed-parity functions, Python seed"
  "$bin" native --dir "$tmp" --repeats "$repeats" --cycles 400 --seed-cycles 160 --blocks 80 >>"$results"
fi
if wants contention; then
  step "2. contention: threads on claim_next + complete (store and floor); claim_many with 64 owners"
  "$bin" contention --dir "$tmp" --repeats "$repeats" --cycles 300 --threads 1,2,4,8,16,64 \
    --cases store,floor,store-short-sleeps >>"$results"
fi
if wants processes; then
  step "2b. processes: W processes drain one file: native (write gate, SQLite's blocking WAL locks, busy-handler sleeps) and the npm package"
  # Blocking locks need SQLite built with SQLITE_ENABLE_SETLK_TIMEOUT, which the shipped builds
  # leave out (docs/decisions/blocking-locks.md): this section's binary is built with it, apart.
  LIBSQLITE3_FLAGS="-DSQLITE_ENABLE_SETLK_TIMEOUT=1" CARGO_TARGET_DIR=target/setlk \
    cargo build -q --release -p leasefence-bench
  # Three repeats at most: at 256 processes one drain can take minutes. The npm case's workers
  # are Node processes (bench/node/processes-worker.mjs on target/npm/leasefence); a W whose Node
  # processes would not fit in the free memory is skipped and the report says so.
  target/setlk/release/leasefence-bench processes --dir "$tmp" --repeats "$(( repeats < 3 ? repeats : 3 ))" \
    --jobs "${BENCH_PROCESSES_JOBS:-600}" --workers "${BENCH_PROCESSES_WORKERS:-1,8,64,256}" \
    --cases gated,blocking,sleeping,npm,npm-ungated,mixed,mixed-ungated --node "$(command -v node)" --npm-worker bench/node/processes-worker.mjs >>"$results"
fi
if wants throughput; then
  step "2c. throughput: one process, a worker at concurrency 1, 8, 64, 256, each job held 5 ms (native on SQLite and PostgreSQL, npm)"
  # Natively the syncs are the drain process's fsync + fdatasync calls, counted by strace (-c,
  # seccomp-bpf: only those calls stop it); in Node, the wasm VFS's own count (vfsStats).
  sync_counter=()
  if command -v strace >/dev/null 2>&1; then sync_counter=(--strace "$(command -v strace)"); fi
  tp_args=(throughput --dir "$tmp" --repeats "$repeats" --jobs "${BENCH_THROUGHPUT_JOBS:-2000}" --hold-ms 5
    --concurrency 1,8,64,256 "${sync_counter[@]}")
  # PostgreSQL's drains take turns with the SQLite file's, on a throwaway server (scripts/postgres.sh
  # installs it if it can; without it the section runs on SQLite alone). Their syncs are the
  # server's WAL syncs, pg_stat_wal.wal_sync, across each drain.
  tp_pg=
  if [ -z "${BENCH_THROUGHPUT_NO_PG:-}" ]; then
    if bash scripts/postgres.sh true >/dev/null 2>&1; then tp_pg=1; else
      echo "  PostgreSQL could not be installed or started (bash scripts/postgres.sh true says why): the throughput section runs without it" >&2
    fi
  fi
  if [ -n "$tp_pg" ]; then
    bash scripts/postgres.sh bash -c '"$@" --pg-url "$LEASEFENCE_PG_URL"' throughput "$bin" "${tp_args[@]}" >>"$results"
  else
    "$bin" "${tp_args[@]}" >>"$results"
  fi
  node bench/node/concurrency.mjs --dir "$tmp" --repeats "$repeats" --jobs "${BENCH_THROUGHPUT_NODE_JOBS:-1000}" --hold 5 \
    --levels 1,8,64,256 --records >>"$results"
fi
if wants scale; then
  step "3. scale: claim_next and claim at 1,000, 100,000 and 1,000,000 jobs"
  "$bin" scale --dir "$tmp" --repeats "$repeats" --ops 100 --sizes 1000,100000,1000000 >>"$results"
fi
if wants node; then
  step "4. node: the npm package's W = 1 loop on its native and wasm engines vs the Rust library's; the wasm engine vs better-sqlite3 with the same SQL (journal DELETE, synchronous EXTRA)"
  # Its own table (docs/bench/node-native.md, or target/bench/report/ for a partial run).
  loop_out=docs/bench/node-native.md
  if [ -n "${BENCH_ONLY:-}" ]; then mkdir -p "$out/report"; loop_out="$out/report/node-native.md"; fi
  node bench/node/loop.mjs --dir "$tmp" --repeats "$repeats" --jobs "${BENCH_NODE_LOOP_JOBS:-1000}" --bin "$bin" --out "$loop_out" >>"$results"
  LEASEFENCE_ENGINE=wasm node bench/node/bench.mjs --dir "$tmp" --repeats "$repeats" --cycles 150 --blocks 15 >>"$results"
fi
if wants browser; then
  step "5. browser: leasefence on OPFS vs the official sqlite-wasm on opfs-sahpool (headless Chromium)"
  node bench/browser/bench.mjs --repeats "$repeats" --cycles 120 --blocks 12 >>"$results"
fi
if wants size; then
  step "6. size: the shipped .wasm, raw and gzip -9"
  node bench/size.mjs >>"$results"
fi
if wants postgres; then
  step "7. PostgreSQL: the same contract on a throwaway local server, next to the SQLite file"
  # Writes its own table (docs/bench/postgres.md, or target/bench/report/postgres.md for a
  # partial run): the server, its durability settings and the workload differ enough to keep apart.
  pg_out=docs/bench/postgres.md
  if [ -n "${BENCH_ONLY:-}" ]; then mkdir -p "$out/report"; pg_out="$out/report/postgres.md"; fi
  bash scripts/postgres.sh cargo run -q --release -p leasefence-pg-bench --bin leasefence-pg-bench -- --out "$pg_out" >&2
  # The npm package on the same server, next to the Rust backend (cost per operation; JobWorker
  # jobs/s at concurrency 1 and 64, in one process and across 8).
  cargo build -q --release -p leasefence-cli
  bash scripts/postgres.sh node bench/node/pg-ops.mjs --repeats "$repeats" --out "${pg_out%postgres.md}node-postgres.md" >&2
fi
if wants waking; then
  step "7b. waking: 8 idle worker processes (native inotify, npm fs.watch, PostgreSQL LISTEN): wake latency of a job enqueued by another process, and their CPU while idle"
  cargo build -q --release -p leasefence-cli
  waking_args=(waking --dir "$tmp" --workers 8 --enqueues "${BENCH_WAKING_ENQUEUES:-50}"
    --idle-secs "${BENCH_WAKING_IDLE_SECS:-60}" --cli target/release/leasefence --node "$(command -v node)")
  if bash scripts/postgres.sh true >/dev/null 2>&1; then
    bash scripts/postgres.sh bash -c '"$@" --pg-url "$LEASEFENCE_PG_URL"' waking "$bin" "${waking_args[@]}" >>"$results"
  else
    "$bin" "${waking_args[@]}" --cases native,npm >>"$results"
  fi
fi
if wants dashboard; then
  step "7c. dashboard: leasefence ui's requests at 1,000 and 1,000,000 jobs"
  cargo build -q --release -p leasefence-cli
  node bench/dashboard.mjs --cli target/release/leasefence --dir "$tmp" --repeats "$repeats" >>"$results"
fi
if wants peers; then
  step "8. peers: leasefence next to BullMQ, pg-boss, graphile-worker, plainjob, liteque, litequeue, huey, persist-queue"
  # The quick mode (BENCH_ONLY=peers alone) drains fewer jobs with fewer workers; the full run
  # adds W=64. Both add the best-settings table (one process per system, 64 jobs in flight).
  peer_jobs=${BENCH_PEERS_JOBS:-300} peer_repeats=${BENCH_PEERS_REPEATS:-3} peer_workers=${BENCH_PEERS_WORKERS:-1,8,64}
  if [ "${BENCH_ONLY:-}" = peers ]; then
    peer_jobs=${BENCH_PEERS_JOBS:-50} peer_repeats=${BENCH_PEERS_REPEATS:-2} peer_workers=${BENCH_PEERS_WORKERS:-1,8}
  fi
  peer_best=${BENCH_PEERS_BEST:-64}
  if [ "$peer_best" = 0 ]; then peer_best_args="--no-best"; else peer_best_args="--best $peer_best --hold-ms 5"; fi
  BENCH_PEERS_ARGS="--dir $tmp/peers --repeats $peer_repeats --jobs $peer_jobs --workers $peer_workers $peer_best_args" \
    bash scripts/postgres.sh bash -c 'node bench/peers/bench.mjs $BENCH_PEERS_ARGS --pg-url "$LEASEFENCE_PG_URL"' >>"$results"
  # Where the SQLite-file systems' time goes (syncs and system calls per job, under strace).
  bash bench/peers/profile.sh 100 >>"$results"
fi
env_record end >>"$results"

step "report"
cp "$results" "$out/latest.jsonl"
# Only a full run replaces the published docs/bench.
docs=docs/bench
if [ -n "${BENCH_ONLY:-}" ]; then docs="$out/report"; fi
if [ "$only" != peers ]; then node bench/report.mjs "$results" "$docs"; fi
if wants peers; then node bench/peers/report.mjs "$results" "$docs"; fi
echo "  $((SECONDS - started)) s in all; raw results in $results" >&2

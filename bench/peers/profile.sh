#!/usr/bin/env bash
# Where a drain's time goes, per job, for the SQLite-file systems of bench/peers: one worker
# (W=1) drains N jobs under `strace -f -c -w`; reports syncs (fsync + fdatasync), all system
# calls, and the wall time spent in sync calls, each per job, then the wall time per job without
# strace. One JSON line per system on stdout (section peers_profile, read by report.mjs), a table
# on stderr.
#
#   bash bench/peers/profile.sh [N] [SYSTEMS...]    (after bench/peers/setup.sh)
#   default: 300 leasefence-native leasefence-node leasefence-node-wasm plainjob liteque litequeue huey persist-queue,
#   and leasefence-native-fdatasync when that build exists (below)
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v strace >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; }

jobs=${1:-300}
shift || true
systems=("$@")
if [ ${#systems[@]} -eq 0 ]; then
  systems=(leasefence-native leasefence-node leasefence-node-wasm plainjob liteque litequeue huey persist-queue)
  if [ -x target/fdatasync-exp/release/leasefence-peer-worker ]; then systems+=(leasefence-native-fdatasync); fi
fi
dir=target/bench-tmp/peers-profile
mkdir -p "$dir"
py=target/bench/peers/venv/bin/python

worker() { # SYSTEM MODE TARGET ARGS...
  local system=$1 mode=$2 target=$3
  shift 3
  case $system in
    leasefence-native) target/release/leasefence-peer-worker "$mode" --db "$target" "$@" ;;
    # The same worker with SQLite built to use fdatasync (the fix idea; see report.mjs), built by
    #   LIBSQLITE3_FLAGS=-DHAVE_FDATASYNC=1 CARGO_TARGET_DIR=target/fdatasync-exp \
    #     cargo build --release -p leasefence-pg-bench --bin leasefence-peer-worker
    leasefence-native-fdatasync) target/fdatasync-exp/release/leasefence-peer-worker "$mode" --db "$target" "$@" ;;
    leasefence-node) LEASEFENCE_ENGINE=native node bench/peers/node_worker.mjs leasefence "$mode" --target "$target" "$@" ;;
    leasefence-node-wasm) LEASEFENCE_ENGINE=wasm node bench/peers/node_worker.mjs leasefence "$mode" --target "$target" "$@" ;;
    plainjob | liteque) node bench/peers/node_worker.mjs "$system" "$mode" --target "$target" "$@" ;;
    litequeue | huey | persist-queue) "$py" bench/peers/py_worker.py "$system" "$mode" --target "$target" "$@" ;;
    *) echo "profile.sh: unknown system $system" >&2; exit 2 ;;
  esac
}

fresh() {
  rm -rf "$dir/$1" "$dir/$1"-journal "$dir/$1"-wal "$dir/$1"-shm "$dir/$1".lock
  if [ "$1" = persist-queue ]; then mkdir -p "$dir/$1"; fi
  echo "$dir/$1"
}

printf '%-18s %8s %10s %12s %12s %s\n' >&2 system syncs/job calls/job 'sync ms/job' 'wall ms/job' 'top calls per job'
for system in "${systems[@]}"; do
  target=$(fresh "$system")
  worker "$system" enqueue "$target" --jobs "$jobs"
  trace="$dir/$system.strace"
  echo go | strace -f -c -w -o "$trace" bash -c "$(declare -f worker); $(declare -p py); worker $system work $target --owner profile" >/dev/null
  target=$(fresh "$system")
  worker "$system" enqueue "$target" --jobs "$jobs"
  wall=$(echo go | worker "$system" work "$target" --owner profile | node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      const r = JSON.parse(s.trim().split("\n").pop()); console.log(((r.end_ms - r.start_ms) / r.jobs).toFixed(2)); });')
  node -e '
    const [file, jobs, system, wall] = process.argv.slice(1);
    const rows = require("fs").readFileSync(file, "utf8").split("\n")
      .map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 5 && /^\d/.test(f[0]) && f.at(-1) !== "total");
    const calls = (f) => Number(f[3]);
    const syncRows = rows.filter((f) => /^f(data)?sync$/.test(f.at(-1)));
    const syncs = syncRows.reduce((a, f) => a + calls(f), 0);
    const syncMs = syncRows.reduce((a, f) => a + Number(f[1]) * 1e3, 0);
    const all = rows.reduce((a, f) => a + calls(f), 0);
    const top = rows.sort((a, b) => calls(b) - calls(a)).slice(0, 6).map((f) => `${f.at(-1)} ${(calls(f) / jobs).toFixed(1)}`).join(", ");
    const perJob = Object.fromEntries(rows.map((f) => [f.at(-1), calls(f) / jobs]));
    console.log(JSON.stringify({ section: "peers_profile", case: system, jobs: Number(jobs), syncs_per_job: syncs / jobs,
      fsync_per_job: perJob.fsync ?? 0, fdatasync_per_job: perJob.fdatasync ?? 0, calls_per_job: all / jobs,
      sync_ms_per_job: syncMs / jobs, wall_ms_per_job: Number(wall), pwrite_per_job: perJob.pwrite64 ?? 0, top: top }));
    console.error(`${system.padEnd(18)} ${(syncs / jobs).toFixed(2).padStart(8)} ${(all / jobs).toFixed(1).padStart(10)} ${(syncMs / jobs).toFixed(2).padStart(12)} ${wall.padStart(12)} ${top}`);
  ' "$trace" "$jobs" "$system" "$wall"
done

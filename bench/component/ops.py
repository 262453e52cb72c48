#!/usr/bin/env python3
"""Per-operation cost of the component from Python (PyPI wasmtime) next to the native CLI, on the
same disk with real fsync: N jobs enqueued one commit each, then each claimed with claim_next and
completed (two more commits). Four runs, each on a fresh file:

- native `leasefence batch` on a WAL file (the native default);
- native `leasefence batch --locking dotfile`: the rollback journal with dot-file locks, the kind
  of file the component writes (its commits sync the journal and the database, as the
  component's do);
- the component's typed `store` resource, called from Python;
- the component's `protocol.handle`, the same JSON lines the CLI reads.

    python3 bench/component/ops.py [N]        (build first: npm run component; cargo build --release)
    LEASEFENCE_BENCH_DIR=/dev/shm python3 bench/component/ops.py [N]
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "component"))
sys.dont_write_bytecode = True

from host import Host, new_job  # noqa: E402

# Where the files go: LEASEFENCE_BENCH_DIR=/dev/shm (no fsync cost) shows the CPU part alone.
BASE = os.environ.get("LEASEFENCE_BENCH_DIR", str(ROOT / "target"))
CLI = os.environ.get("LEASEFENCE_BIN", str(ROOT / "target" / "release" / "leasefence"))


def lines(n):
    out = [json.dumps({"op": "enqueue", "job": f"j{i}"}) for i in range(n)]
    for i in range(n):
        out.append(json.dumps({"op": "claim_next", "owner": "w", "now": 1, "ttl": 60}))
        out.append(json.dumps({"op": "complete", "job": f"j{i}", "owner": "w", "fence": 1,
                               "now": 2, "result": "ok"}))
    return out


def native(n, extra):
    with tempfile.TemporaryDirectory(dir=BASE) as tmp:
        db = Path(tmp) / "q.db"
        subprocess.run([CLI, "--db", str(db), *extra, "init"], check=True, capture_output=True)
        text = "\n".join(lines(n)) + "\n"
        start = time.perf_counter()
        done = subprocess.run([CLI, "batch", "--db", str(db), *extra], input=text, text=True,
                              capture_output=True, check=True)
        elapsed = time.perf_counter() - start
        answers = done.stdout.splitlines()
        assert len(answers) == 3 * n and '"error"' not in done.stdout, done.stdout[:500]
        return elapsed


def component_typed(n):
    with tempfile.TemporaryDirectory(dir=BASE) as tmp:
        store = Host(tmp).open_store("/data/q.db")
        store.init()
        start = time.perf_counter()
        for i in range(n):
            assert store.enqueue(new_job(f"j{i}"))
        for i in range(n):
            job = store.claim_next("w", 1.0, 60.0, None)
            assert store.complete(job.job, "w", job.fence, 2.0, "ok") is None
        return time.perf_counter() - start


def component_protocol(n):
    with tempfile.TemporaryDirectory(dir=BASE) as tmp:
        host = Host(tmp)
        assert host.protocol_open("/data/q.db") is None
        todo = lines(n)
        start = time.perf_counter()
        for line in todo:
            answer = host.handle(line)
            assert '"error"' not in answer, answer
        return time.perf_counter() - start


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = [
        ("native CLI batch, WAL (default)", lambda: native(n, [])),
        ("native CLI batch, --locking dotfile (rollback journal)",
         lambda: native(n, ["--locking", "dotfile"])),
        ("component, typed store (Python wasmtime)", lambda: component_typed(n)),
        ("component, protocol.handle (Python wasmtime)", lambda: component_protocol(n)),
    ]
    print(f"{n} jobs: enqueue, claim_next, complete ({3 * n} operations, each its own commit)")
    base = None
    for label, run in runs:
        elapsed = run()
        per_op = elapsed / (3 * n) * 1e6
        base = base or per_op
        print(f"  {label:58} {per_op:8.0f} us/op  {per_op / base:5.2f}x")


if __name__ == "__main__":
    main()

"""The Python anchor of `npm run bench`: times the seed module (tests/interop/seed.py, imported,
not copied) on a database that leasefence-bench prepared. Prints one JSON object.

    seed_bench.py settings   --db PATH                 journal mode, synchronous, SQLite version
    seed_bench.py cycles     --db PATH --cycles N      claim + complete of job-0 .. job-(N-1)
    seed_bench.py claim_many --db PATH --owners N      seed.claim_many of job-0 by N owners
    seed_bench.py serve                                one JSON command per stdin line, e.g.
        {"op": "cycles", "db": PATH, "start": 0, "count": 50} -> {"cycles": 50, "seconds": ...}
"""

import argparse
import json
import os
import sqlite3
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
import seed  # noqa: E402  (the seed module itself)

NOW = 1000.0
TTL = 30.0


def settings(db):
    # The seed leaves the journal mode and synchronous alone: read what its connections get.
    conn = sqlite3.connect(db, timeout=seed.TIMEOUT_SECONDS, isolation_level=None)
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    finally:
        conn.close()
    return {"journal_mode": mode.lower(), "synchronous": sync, "sqlite": sqlite3.sqlite_version,
            "python": sys.version.split()[0]}


def cycles(db, n, first=0):
    jobs = ["job-%d" % i for i in range(first, first + n)]
    start = time.perf_counter()
    for job in jobs:
        fence = seed.claim(db, job, "worker", NOW, TTL)
        if fence is None:
            raise SystemExit("seed: claim of %s refused" % job)
        if not seed.complete(db, job, "worker", fence, NOW + 1.0, "ok"):
            raise SystemExit("seed: complete of %s refused" % job)
    seconds = time.perf_counter() - start
    done = seed.state(db, jobs[-1])["done"]
    if not done:
        raise SystemExit("seed: last job not done")
    return {"cycles": n, "seconds": seconds}


def claim_many(db, owners):
    names = ["owner-%d" % i for i in range(owners)]
    start = time.perf_counter()
    fences = seed.claim_many(db, "job-0", names, NOW, TTL)
    seconds = time.perf_counter() - start
    return {"owners": owners, "seconds": seconds, "winners": sum(f is not None for f in fences)}


def serve():
    """Timed blocks on request, so the caller can interleave them with its own."""
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "cycles":
            out = cycles(command["db"], command["count"], command.get("start", 0))
        elif command["op"] == "settings":
            out = settings(command["db"])
        else:
            raise SystemExit("unknown op %r" % command["op"])
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def main():
    if sys.argv[1:] == ["serve"]:
        serve()
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["settings", "cycles", "claim_many"])
    parser.add_argument("--db", required=True)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--owners", type=int, default=64)
    args = parser.parse_args()
    if args.what == "settings":
        out = settings(args.db)
    elif args.what == "cycles":
        out = cycles(args.db, args.cycles)
    else:
        out = claim_many(args.db, args.owners)
    print(json.dumps(out))


if __name__ == "__main__":
    main()

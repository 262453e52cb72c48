#!/usr/bin/env python3
"""Run every contract vector in tests/vectors/ against the Python seed (seed.py).

Each vector runs on a fresh database in a temporary directory. The seed has neither reasons nor
claim_next, so:

- ``reason`` members are not checked (``--reasons`` checks them against a reason derived from the
  stored row before the step, following the table in tests/vectors/README.md);
- a ``claim_next`` step is not run against the seed. So that the later steps see the same database,
  an expected ``{"job": J, "fence": F}`` is replayed as ``seed.claim(J, owner, now, ttl)``, which
  must return F, after checking against the stored rows that J is indeed the first claimable job
  (``until`` ascending, then insertion order); an expected ``null`` is checked against the stored
  rows (nothing claimable); an expected error is checked against the seed's argument validation.

A vector that uses what the seed does not have (section 7: ``fail``, ``revive``, ``inspect``,
``stats``, ``enqueue`` with ``run_at`` or ``payload``; section 8: ``fenced``; section 10: the ``*_many``
batch operations) is skipped and reported as skipped; the Rust,
Node and browser runners run it.

Prints one line per vector and a final line ``N passed, M failed``; exits non-zero on any failure.
Options: ``--wal`` puts each fresh database in WAL mode first (as the Rust side may do),
``--reasons`` as above, and vector file names or paths to run only those.
"""

import json
import os
import sqlite3
import sys
import tempfile
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.dont_write_bytecode = True  # leave no __pycache__ in the work tree

import seed  # noqa: E402

VECTORS = HERE.parent / "vectors"

NONFINITE = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}

# Arguments of each protocol op, in the seed's order (after the path).
ARGS = {
    "init": [],
    "enqueue": ["job"],
    "state": ["job"],
    "claim": ["job", "owner", "now", "ttl"],
    "renew": ["job", "owner", "fence", "now", "ttl"],
    "complete": ["job", "owner", "fence", "now", "result"],
    "release": ["job", "owner", "fence"],
    "claim_many": ["job", "owners", "now", "ttl"],
    "claim_next": ["owner", "now", "ttl"],
}

# What the seed does not have: a vector using any of it is skipped here.
BEYOND_SEED_OPS = {"fail", "revive", "inspect", "stats", "fenced",
                   "enqueue_many", "claim_next_many", "renew_many", "complete_many",
                   "schedule", "unschedule", "schedules", "enqueue_due", "next_due",
                   "list_jobs", "queue_stats", "heartbeat", "list_workers", "oldest_waiting",
                   "prune", "fence_floor"}
BEYOND_SEED_ARGS = {"enqueue": {"run_at", "payload", "queue", "priority"},
                    "claim_next": {"queues"}}

SEED_FUNCS = {
    "init": seed.init_db,
    "enqueue": seed.enqueue,
    "state": seed.state,
    "claim": seed.claim,
    "renew": seed.renew,
    "complete": seed.complete,
    "release": seed.release,
    "claim_many": seed.claim_many,
}

ERROR_CODES = {"invalid_argument", "bad_request", "storage"}
REASON_CODES = {"not_found", "done", "held", "stale_fence", "not_owner", "expired"}
REASON_OPS = {"claim", "renew", "complete", "release"}


class VectorError(Exception):
    """The vector file itself is malformed."""


class Mismatch(Exception):
    """The seed's answer differs from the vector's expectation."""


def same(a, b):
    """JSON equality: numbers compare as numbers, booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return False


def show(value):
    return json.dumps(value, ensure_ascii=False)


def rows(path):
    """Every stored row in insertion order, as (rowid, id, owner, until, fence, result, done)."""
    conn = sqlite3.connect(path, timeout=10, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        return conn.execute(
            "SELECT rowid, id, owner, until, fence, result, done FROM jobs ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def row_of(path, job):
    for r in rows(path):
        if r[1] == job:
            return {"owner": r[2], "until": r[3], "fence": r[4], "done": bool(r[6])}
    return None


def derive_reason(op, row, args):
    """The reason the README's table gives for a false/null answer, from the row before the step."""
    if row is None:
        return {"code": "not_found"}
    if row["done"]:
        return {"code": "done"}
    if op == "claim":
        if row["until"] > args["now"]:
            return {"code": "held", "owner": row["owner"], "until": row["until"]}
        return None
    if args["fence"] != row["fence"]:
        return {"code": "stale_fence", "fence": row["fence"]}
    if args["owner"] != row["owner"]:
        return {"code": "not_owner"}
    if op in ("renew", "complete") and row["until"] <= args["now"]:
        return {"code": "expired", "until": row["until"]}
    return None


def lint_step(step):
    """Check the step's shape; return (op, args dict in protocol names, expect)."""
    if not isinstance(step, dict):
        raise VectorError("step is not an object")
    op = step.get("op")
    if op not in ARGS:
        raise VectorError("unknown op %r" % (op,))
    if "expect" not in step:
        raise VectorError("step has no expect")
    expect = step["expect"]
    names = ARGS[op]
    extra = set(step) - set(names) - {"op", "expect", "nonfinite"}
    if extra:
        raise VectorError("unexpected members %s" % sorted(extra))
    missing = [n for n in names if n not in step]
    if missing:
        raise VectorError("missing members %s" % missing)
    args = {n: step[n] for n in names}
    for name, kind in step.get("nonfinite", {}).items():
        if name not in ("now", "ttl") or name not in args or kind not in NONFINITE:
            raise VectorError("bad nonfinite member %r: %r" % (name, kind))
        args[name] = NONFINITE[kind]

    if not isinstance(expect, dict):
        raise VectorError("expect is not an object")
    keys = set(expect)
    if keys == {"error"}:
        if expect["error"] not in ERROR_CODES:
            raise VectorError("unknown error code %r" % (expect["error"],))
    elif keys == {"winners", "fence"}:
        if op != "claim_many" or expect["winners"] != 1:
            raise VectorError("winners expectation only for claim_many, with winners 1")
    elif keys in ({"value"}, {"value", "reason"}):
        if "reason" in expect:
            if op not in REASON_OPS:
                raise VectorError("op %s never carries a reason" % op)
            if expect["value"] is not None and expect["value"] is not False:
                raise VectorError("reason given with value %s" % show(expect["value"]))
            reason = expect["reason"]
            if not isinstance(reason, dict) or reason.get("code") not in REASON_CODES:
                raise VectorError("bad reason %s" % show(reason))
            allowed = {
                "not_found": set(), "done": set(), "not_owner": set(),
                "held": {"owner", "until"}, "stale_fence": {"fence"}, "expired": {"until"},
            }[reason["code"]]
            if set(reason) - {"code"} != allowed:
                raise VectorError("reason %s needs exactly %s" % (show(reason), sorted(allowed)))
            if reason["code"] == "held" and op != "claim":
                raise VectorError("held is a claim-only reason")
            if reason["code"] == "expired" and op not in ("renew", "complete"):
                raise VectorError("expired is a renew/complete-only reason")
            if op == "claim" and reason["code"] in ("stale_fence", "not_owner", "expired"):
                raise VectorError("claim has no %s reason" % reason["code"])
    else:
        raise VectorError("bad expect %s" % show(expect))
    return op, args, expect


def error_code(exc):
    if isinstance(exc, ValueError):
        return "invalid_argument"
    if isinstance(exc, sqlite3.Error):
        return "storage"
    if isinstance(exc, (TypeError, KeyError)):
        return "bad_request"
    return None


def run_claim_next(path, args, expect):
    """claim_next is not in the seed: check the expectation against the rows, replay its effect."""
    if "error" in expect:
        try:
            seed._check_now(args["now"])
            seed._check_ttl(args["ttl"])
        except ValueError:
            if expect["error"] != "invalid_argument":
                raise Mismatch("arguments are invalid, expected error %s" % expect["error"])
            return
        raise Mismatch("arguments are valid, expected error %s" % expect["error"])
    if "reason" in expect:
        raise VectorError("claim_next never carries a reason")
    seed._check_now(args["now"])
    seed._check_ttl(args["ttl"])
    claimable = [r for r in rows(path) if not r[6] and r[3] <= args["now"]]
    claimable.sort(key=lambda r: (r[3], r[0]))
    first = claimable[0] if claimable else None
    value = expect["value"]
    if value is None:
        if first is not None:
            raise Mismatch("expected null but %s is claimable (until %s)" % (show(first[1]), first[3]))
        return
    if not (isinstance(value, dict) and set(value) == {"job", "fence", "payload"}):
        raise VectorError("claim_next value must be null or {job, fence, payload}")
    if value["payload"] is not None:
        raise VectorError("a payload needs enqueue with payload, which the seed does not have")
    if first is None:
        raise Mismatch("expected %s but nothing is claimable" % show(value))
    if first[1] != value["job"]:
        raise Mismatch("expected %s but the first claimable job is %s" % (show(value), show(first[1])))
    got = seed.claim(path, value["job"], args["owner"], args["now"], args["ttl"])
    if not same(got, value["fence"]):
        raise Mismatch("replayed claim of %s returned %s, expected fence %s"
                       % (show(value["job"]), show(got), show(value["fence"])))


def run_step(path, op, args, expect, stats, check_reasons):
    if op == "claim_next":
        run_claim_next(path, args, expect)
        stats["claim_next"] += 1
        return
    call_args = [args[n] for n in ARGS[op]]
    before = rows(path)
    row_before = row_of(path, args["job"]) if op in REASON_OPS else None
    try:
        got = SEED_FUNCS[op](path, *call_args)
    except Exception as exc:  # noqa: BLE001 - every failure is compared with the expectation
        code = error_code(exc)
        if expect.get("error") is None:
            raise Mismatch("raised %s: %s" % (type(exc).__name__, exc))
        if code != expect["error"]:
            raise Mismatch("raised %s (%s), expected error %s" % (type(exc).__name__, code, expect["error"]))
        after = rows(path)
        if after != before:
            raise Mismatch("error %s but the database changed" % code)
        return
    if "error" in expect:
        raise Mismatch("returned %s, expected error %s" % (show(got), expect["error"]))
    if "winners" in expect:
        if not isinstance(got, list):
            raise Mismatch("returned %s, expected a list" % show(got))
        winners = [g for g in got if g is not None]
        if len(winners) != 1 or not same(winners[0], expect["fence"]):
            raise Mismatch("returned %s, expected exactly one %s and the rest null"
                           % (show(got), show(expect["fence"])))
        return
    if not same(got, expect["value"]):
        raise Mismatch("returned %s, expected %s" % (show(got), show(expect["value"])))
    if "reason" in expect:
        if check_reasons:
            derived = derive_reason(op, row_before, args)
            if not same(derived, expect["reason"]):
                raise Mismatch("reason %s, the README's table gives %s"
                               % (show(expect["reason"]), show(derived)))
            stats["reasons_checked"] += 1
        else:
            stats["reasons_skipped"] += 1


def run_vector(file, wal, check_reasons):
    """Return (ok, message)."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return False, "cannot read: %s" % exc
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        return False, "not a vector (needs a non-empty steps list)"
    if not isinstance(data.get("name"), str) or not isinstance(data.get("covers"), list):
        return False, "a vector needs name (string) and covers (list)"
    beyond = sorted({step.get("op") for step in data["steps"] if isinstance(step, dict)
                     and (step.get("op") in BEYOND_SEED_OPS or "sized" in step
                          or set(step) & BEYOND_SEED_ARGS.get(step.get("op"), set()))})
    if beyond:
        return True, "skipped: uses %s beyond the seed" % ", ".join(beyond)
    stats = {"claim_next": 0, "reasons_checked": 0, "reasons_skipped": 0}
    with tempfile.TemporaryDirectory(prefix="leasefence-vectors-") as tmp:
        path = os.path.join(tmp, "jobs.db")
        if wal:
            conn = sqlite3.connect(path, isolation_level=None)
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            conn.close()
            if mode.lower() != "wal":
                return False, "could not put the database in WAL mode (%s)" % mode
        seed.init_db(path)
        seed.init_db(path)  # idempotent
        for number, step in enumerate(data["steps"], start=1):
            try:
                op, args, expect = lint_step(step)
                run_step(path, op, args, expect, stats, check_reasons)
            except VectorError as exc:
                return False, "step %d: malformed: %s" % (number, exc)
            except Mismatch as exc:
                return False, "step %d (%s): %s" % (number, show(step), exc)
            except Exception:  # noqa: BLE001
                return False, "step %d (%s): crashed:\n%s" % (number, show(step), traceback.format_exc())
    notes = ["%d steps" % len(data["steps"])]
    if stats["claim_next"]:
        notes.append("%d claim_next replayed" % stats["claim_next"])
    if stats["reasons_checked"]:
        notes.append("%d reasons checked" % stats["reasons_checked"])
    if stats["reasons_skipped"]:
        notes.append("%d reasons not checked" % stats["reasons_skipped"])
    return True, ", ".join(notes)


def main(argv):
    wal = "--wal" in argv
    check_reasons = "--reasons" in argv
    names = [a for a in argv if not a.startswith("--")]
    unknown = [a for a in argv if a.startswith("--") and a not in ("--wal", "--reasons")]
    if unknown:
        print("unknown option(s): %s" % " ".join(unknown), file=sys.stderr)
        return 2
    if names:
        files = [Path(n) if os.sep in n or Path(n).exists() else VECTORS / n for n in names]
    else:
        files = sorted(VECTORS.glob("*.json"))
    passed = failed = 0
    for file in files:
        ok, message = run_vector(file, wal, check_reasons)
        label = "FAIL" if not ok else "SKIP" if message.startswith("skipped") else "PASS"
        print("%s %s: %s" % (label, file.name, message), flush=True)
        if ok:
            passed += 1
        else:
            failed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The seed of the leasefence contract (SPEC section 2) on Python's standard ``sqlite3``.

Plain functions taking the database path first. Every call opens its own connection, so ``state``
shows what is stored. The journal mode is left alone: a file that the Rust side put in WAL mode
works as it is.

Invalid arguments (``ttl <= 0``; a ``now`` or ``ttl`` that is NaN or infinite) raise ``ValueError``
before the database is touched.
"""

import math
import sqlite3
import threading
from contextlib import closing

__all__ = ["init_db", "enqueue", "state", "claim", "renew", "complete", "release", "claim_many"]

TIMEOUT_SECONDS = 10
BUSY_TIMEOUT_MS = TIMEOUT_SECONDS * 1000

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS jobs("
    "id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, "
    "fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)"
)


def _connect(path):
    conn = sqlite3.connect(path, timeout=TIMEOUT_SECONDS, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = %d" % BUSY_TIMEOUT_MS)
    except BaseException:
        conn.close()
        raise
    return conn


def _finite(name, value):
    """Return ``value`` as a float, or raise ValueError when it is not a finite number."""
    if isinstance(value, bool):
        raise ValueError("%s must be a number, not a boolean" % name)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (name, value)) from None
    if not math.isfinite(number):
        raise ValueError("%s must be finite, got %r" % (name, value))
    return number


def _check_now(now):
    _finite("now", now)


def _check_ttl(ttl):
    if _finite("ttl", ttl) <= 0:
        raise ValueError("ttl must be > 0, got %r" % (ttl,))


def init_db(path):
    """Create the jobs table if it is missing; existing rows are never touched."""
    with closing(_connect(path)) as conn:
        conn.execute(SCHEMA)


def enqueue(path, job):
    """Insert a missing job with the defaults: True. An existing job: False, nothing changes."""
    with closing(_connect(path)) as conn:
        cur = conn.execute("INSERT OR IGNORE INTO jobs(id) VALUES (?)", (job,))
        return cur.rowcount == 1


def state(path, job):
    """The stored row as a dict (``done`` as a bool), or None when the job is missing."""
    with closing(_connect(path)) as conn:
        row = conn.execute(
            "SELECT id, owner, until, fence, result, done FROM jobs WHERE id = ?", (job,)
        ).fetchone()
    if row is None:
        return None
    return {
        "id": row[0],
        "owner": row[1],
        "until": float(row[2]),
        "fence": int(row[3]),
        "result": row[4],
        "done": bool(row[5]),
    }


def claim(path, job, owner, now, ttl):
    """Take the lease when the job exists, is not done and ``until <= now``: the new fence.

    Otherwise None. Read and write happen in one BEGIN IMMEDIATE transaction.
    """
    _check_now(now)
    _check_ttl(ttl)
    with closing(_connect(path)) as conn:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT until, fence, done FROM jobs WHERE id = ?", (job,)
            ).fetchone()
            if row is None or row[2] or row[0] > now:
                conn.execute("ROLLBACK")
                return None
            fence = int(row[1]) + 1
            conn.execute(
                "UPDATE jobs SET owner = ?, until = ?, fence = ? WHERE id = ?",
                (owner, float(now) + float(ttl), fence, job),
            )
            conn.execute("COMMIT")
            return fence
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise


def renew(path, job, owner, fence, now, ttl):
    """Extend the current, live lease to ``now + ttl``: True; otherwise False (never revives)."""
    _check_now(now)
    _check_ttl(ttl)
    with closing(_connect(path)) as conn:
        cur = conn.execute(
            "UPDATE jobs SET until = ? "
            "WHERE id = ? AND owner = ? AND fence = ? AND done = 0 AND until > ?",
            (float(now) + float(ttl), job, owner, fence, now),
        )
        return cur.rowcount == 1


def complete(path, job, owner, fence, now, result):
    """Store ``result`` and ``done = 1`` for the current, live lease: True; otherwise False."""
    _check_now(now)
    with closing(_connect(path)) as conn:
        cur = conn.execute(
            "UPDATE jobs SET result = ?, done = 1 "
            "WHERE id = ? AND owner = ? AND fence = ? AND done = 0 AND until > ?",
            (result, job, owner, fence, now),
        )
        return cur.rowcount == 1


def release(path, job, owner, fence):
    """Give the lease back (owner NULL, until 0, fence kept) when owner and fence match."""
    with closing(_connect(path)) as conn:
        cur = conn.execute(
            "UPDATE jobs SET owner = NULL, until = 0 "
            "WHERE id = ? AND owner = ? AND fence = ? AND done = 0",
            (job, owner, fence),
        )
        return cur.rowcount == 1


def claim_many(path, job, owners, now, ttl):
    """Call ``claim`` for every owner at once, each on its own thread and connection.

    Returns the results in the order of ``owners``.
    """
    _check_now(now)
    _check_ttl(ttl)
    owners = list(owners)
    results = [None] * len(owners)
    errors = []
    if not owners:
        return results
    start = threading.Barrier(len(owners))

    def worker(index, owner):
        try:
            start.wait(timeout=60)
            results[index] = claim(path, job, owner, now, ttl)
        except BaseException as exc:  # re-raised in the calling thread below
            errors.append(exc)

    threads = [
        threading.Thread(target=worker, args=(i, owner), name="claim_many-%d" % i)
        for i, owner in enumerate(owners)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results

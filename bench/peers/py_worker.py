"""One process of bench/peers for the Python systems on SQLite: litequeue, huey, persist-queue.

bench/peers/bench.mjs runs it with the venv that bench/peers/setup.sh makes, in one of three modes
(the same protocol as node_worker.mjs):

    py_worker.py SYSTEM enqueue --target FILE --jobs N    add N jobs (untimed set-up)
    py_worker.py SYSTEM work --target FILE --owner NAME   print "ready", wait for a line on stdin,
        claim + complete one job at a time until nothing is left, print one JSON line
    py_worker.py huey best --target FILE --jobs N --concurrency C --hold-ms H   one process at
        huey's best settings for throughput: its consumer with C worker threads (huey_consumer
        -w C -k thread), each task holding its job H ms; "ready", go, drain the N tasks; the same
        JSON line as work plus "setting". Latency: from the dequeue call that took the task to
        its SIGNAL_COMPLETE (sent once the result is stored). litequeue and persist-queue have
        no concurrency option and no best mode.
    py_worker.py SYSTEM stale --target FILE               the stale-worker story, orders "after"
        and "during", one JSON line per order

Every call on a peer is its own public API. Durability: each is WAL with synchronous=FULL, set
by the bench where the peer's default is lower (read back and reported).
"""

import argparse
import json
import sqlite3
import sys
import threading
import time


def wall_ms():
    return time.time() * 1e3


def emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def is_busy(error):
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def drain(claim, complete, id_of):
    """The measured loop: claim one job (None when drained), complete it; busy errors retried."""
    emit("ready")
    sys.stdin.readline()
    latencies, ids, errors = [], [], 0
    start = wall_ms()
    while True:
        began = time.perf_counter()
        try:
            handle = claim()
        except sqlite3.OperationalError as error:
            if not is_busy(error):
                raise
            errors += 1
            time.sleep(0.001)
            continue
        if handle is None:
            break
        while True:
            try:
                complete(handle)
                break
            except sqlite3.OperationalError as error:
                if not is_busy(error):
                    raise
                errors += 1
                time.sleep(0.001)
        latencies.append((time.perf_counter() - began) * 1e3)
        ids.append(str(id_of(handle)))
    return {"jobs": len(latencies), "errors": errors, "start_ms": start, "end_ms": wall_ms(),
            "latencies_ms": latencies, "ids": ids}


def settle(fn):
    try:
        value = fn()
        return {"ok": True, "value": value if isinstance(value, (int, str, bool, dict, type(None))) else repr(value)}
    except Exception as error:  # the story records whatever the peer answers
        return {"ok": False, "error": f"{type(error).__name__}: {error}"[:200]}


def story(setup):
    for order in ("after", "during"):
        s = setup(order)
        a = s["claim_a"]()
        s["stall"]()
        b = s["claim_b"]()
        b_call = settle(lambda: s["complete"](b, "B")) if order == "after" else None
        a_call = settle(lambda: s["complete"](a, "A"))
        if order == "during":
            b_call = settle(lambda: s["complete"](b, "B"))
        emit({"order": order, "same_job": s["same_job"](a, b), "a_call": a_call, "b_call": b_call,
              "final": s["inspect"](), "how": s["how"]})


def changes(conn, fn, queue):
    """Runs fn(queue) and answers how many rows it changed on that connection."""
    before = conn.total_changes
    fn(queue)
    return {"changed": conn.total_changes - before}


def persist_changes(queue, item):
    conns = {id(queue._getter): queue._getter, id(queue._putter): queue._putter}.values()
    before = sum(c.total_changes for c in conns)
    queue.ack(id=item["pqid"])
    return {"changed": sum(c.total_changes for c in conns) - before}


# --- litequeue: WAL; it sets synchronous=NORMAL, the bench raises it to FULL ---------------------
def litequeue_open(target):
    from litequeue import LiteQueue

    queue = LiteQueue(target, queue_name="peers", timeout=10)
    queue.conn.execute("PRAGMA synchronous = FULL")
    return queue


def litequeue_main(mode, target, jobs):
    if mode == "enqueue":
        queue = litequeue_open(target)
        for k in range(jobs):
            queue.put(str(k))
    elif mode == "work":
        queue = litequeue_open(target)
        result = drain(queue.pop, lambda m: queue.done(m.message_id), lambda m: m.message_id)
        sync = queue.conn.execute("PRAGMA synchronous").fetchone()[0]
        result["durability"] = f"journal_mode=WAL, synchronous={sync} (FULL set by the bench; litequeue sets NORMAL)"
        emit(result)
    else:
        def setup(order):
            a, b = litequeue_open(target), litequeue_open(target)
            a.put(f"stale-{order}")

            def stall():
                time.sleep(0.7)
                # Its recovery: list what has been locked longer than the threshold, retry it.
                for message in b.list_locked(0.5):
                    b.retry(message.message_id)

            return {
                "how": "pop(); real sleep 0.7 s; list_locked(0.5) + retry(message_id) (its stale-lock recovery); "
                       "pop() by B; done(message_id) for each",
                "claim_a": a.pop, "stall": stall, "claim_b": b.pop,
                "same_job": lambda x, y: bool(x and y and x.message_id == y.message_id),
                "complete": lambda m, who: changes((a if who == "A" else b).conn, lambda q: q.done(m.message_id),
                                                   a if who == "A" else b),
                "inspect": lambda: dict(a.conn.execute(
                    "SELECT status, done_time FROM [peers] WHERE data = ?", (f"stale-{order}",)).fetchone()),
            }

        story(setup)


# --- huey: SqliteHuey(fsync=True) = WAL, synchronous=FULL -----------------------------------------
def huey_open(target, hold_s=0.0):
    from huey import SqliteHuey

    huey = SqliteHuey("peers", filename=target, fsync=True, timeout=10, results=True)

    @huey.task()
    def job(k):
        if hold_s:
            time.sleep(hold_s)  # best mode: the handler holds its job (a stand-in for I/O)
        return "ok"

    return huey, job


def huey_best(target, jobs, concurrency, hold_ms):
    """Its own consumer, in this process, with `concurrency` worker threads."""
    from huey import signals

    huey, _ = huey_open(target, hold_ms / 1e3)
    lock = threading.Lock()
    asked, latencies, ids, errors = {}, [], [], []
    drained = threading.Event()
    dequeue = huey.dequeue

    def timed_dequeue():  # the consumer's worker threads call huey.dequeue(): note when
        at = wall_ms()
        task = dequeue()
        if task is not None:
            with lock:
                asked[task.id] = at
        return task

    huey.dequeue = timed_dequeue

    @huey.signal(signals.SIGNAL_COMPLETE)
    def completed(signal, task, *args):
        at = wall_ms()
        with lock:
            latencies.append(at - asked[task.id])
            ids.append(task.id)
            if len(ids) >= jobs:
                drained.set()

    @huey.signal(signals.SIGNAL_ERROR, signals.SIGNAL_INTERRUPTED, signals.SIGNAL_CANCELED)
    def failed(signal, task, *args):
        with lock:
            errors.append(signal)
            drained.set()

    consumer = huey.create_consumer(workers=concurrency, worker_type="thread", periodic=False,
                                    initial_delay=0.001, max_delay=0.01, check_worker_health=False)
    emit("ready")
    sys.stdin.readline()
    start = wall_ms()
    consumer.start()
    if not drained.wait(timeout=600):
        raise RuntimeError(f"huey best: {len(ids)} of {jobs} tasks completed in 10 minutes")
    end = wall_ms()
    consumer.stop(graceful=True)
    if errors:
        raise RuntimeError(f"huey best: tasks ended with {errors[:3]}")
    sync = huey.storage.conn.execute("PRAGMA synchronous").fetchone()[0]
    emit({"jobs": len(ids), "errors": 0, "start_ms": start, "end_ms": end, "latencies_ms": latencies, "ids": ids,
          "durability": f"journal_mode=WAL, synchronous={sync} (SqliteHuey fsync=True)",
          "setting": f"its consumer: workers={concurrency}, worker_type='thread' (huey_consumer -w {concurrency} -k thread)"})


def huey_main(mode, target, jobs):
    if mode == "enqueue":
        huey, job = huey_open(target)
        for k in range(jobs):
            job(k)
    elif mode == "work":
        huey, _ = huey_open(target)
        # Its consumer's own step, without the consumer's polling: dequeue, then execute (runs the
        # task and stores its result).
        result = drain(huey.dequeue, huey.execute, lambda task: task.id)
        sync = huey.storage.conn.execute("PRAGMA synchronous").fetchone()[0]
        result["durability"] = f"journal_mode=WAL, synchronous={sync} (SqliteHuey fsync=True)"
        emit(result)
    else:
        def setup(order):
            a, job_a = huey_open(target)
            b, _ = huey_open(target)
            handle = job_a(order)
            return {
                "how": "huey has no lease, visibility timeout or lock: dequeue() deletes the task. dequeue() by A; "
                       "real sleep 0.7 s; dequeue() by B; execute(task) stores the result",
                "claim_a": a.dequeue, "stall": lambda: time.sleep(0.7), "claim_b": b.dequeue,
                "same_job": lambda x, y: bool(x and y and x.id == y.id),
                "complete": lambda task, who: (a if who == "A" else b).execute(task) if task else "nothing to complete",
                "inspect": lambda: {"result": handle.get(), "queued": a.pending_count()},
            }

        story(setup)


# --- persist-queue: SQLiteAckQueue, WAL; synchronous=FULL set by the bench (also SQLite's default) -
def persist_open(target, auto_resume):
    from persistqueue import SQLiteAckQueue

    queue = SQLiteAckQueue(target, multithreading=True, auto_resume=auto_resume, timeout=10)
    for conn in {id(queue._getter): queue._getter, id(queue._putter): queue._putter}.values():
        conn.execute("PRAGMA synchronous = FULL")
    return queue


def persist_main(mode, target, jobs):
    from persistqueue import Empty

    def get(queue):
        try:
            return queue.get(block=False, raw=True)
        except Empty:
            return None

    if mode == "enqueue":
        queue = persist_open(target, auto_resume=False)
        for k in range(jobs):
            queue.put({"k": k})
    elif mode == "work":
        queue = persist_open(target, auto_resume=False)
        result = drain(lambda: get(queue), lambda item: queue.ack(id=item["pqid"]), lambda item: item["pqid"])
        sync = queue._getter.execute("PRAGMA synchronous").fetchone()[0]
        result["durability"] = f"journal_mode=WAL, synchronous={sync} (set by the bench; SQLite's default)"
        emit(result)
    else:
        def setup(order):
            a = persist_open(target, auto_resume=False)
            a.put({"order": order})
            state = {}

            def claim_b():
                # persist-queue has no timeout: its recovery is auto_resume, which on open puts
                # every unacknowledged item back to ready. B opening the queue is that recovery.
                state["b"] = persist_open(target, auto_resume=True)
                return get(state["b"])

            return {
                "how": "get(raw=True) by A; real sleep 0.7 s; B opens SQLiteAckQueue(auto_resume=True) (its only "
                       "recovery: every unacked item back to ready); get() by B; ack(id=pqid) for each",
                "claim_a": lambda: get(a), "stall": lambda: time.sleep(0.7), "claim_b": claim_b,
                "same_job": lambda x, y: bool(x and y and x["pqid"] == y["pqid"]),
                "complete": lambda item, who: persist_changes(a if who == "A" else state["b"], item),
                "inspect": lambda: {"acked": a.acked_count(), "unacked": a.unack_count(), "ready": a.ready_count()},
            }

        story(setup)


SYSTEMS = {"litequeue": litequeue_main, "huey": huey_main, "persist-queue": persist_main}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("system", choices=SYSTEMS)
    parser.add_argument("mode", choices=["enqueue", "work", "best", "stale"])
    parser.add_argument("--target", required=True)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--owner", default="w")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--hold-ms", type=int, default=5)
    args = parser.parse_args()
    if args.mode == "best":
        if args.system != "huey":
            parser.error(f"{args.system} has no concurrency option: no best mode (see bench/peers/bench.mjs)")
        huey_best(args.target, args.jobs, args.concurrency, args.hold_ms)
    else:
        SYSTEMS[args.system](args.mode, args.target, args.jobs)


if __name__ == "__main__":
    main()

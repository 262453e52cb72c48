"""The WebAssembly component (dist/leasefence.wasm, docs/contract.md section 14) on PyPI's
wasmtime: the shared contract vectors through the `protocol` interface, every refusal reason as a
typed variant through the `store` resource, the worker rules against their shared vectors, two
component processes on one file, hostile request lines, and a process killed while it holds the
file's lock.

Run by scripts/test.sh after scripts/build-component.sh; `python3 -m unittest
tests/component/test_component.py` runs it alone. The crash test needs the native CLI
(target/debug/leasefence, or LEASEFENCE_BIN).
"""

import json
import math
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "interop"))
sys.dont_write_bytecode = True

import host  # noqa: E402
from host import Host, StoreError, new_job, record  # noqa: E402
# The Python vector runner's JSON equality and non-finite spellings (tests/interop).
from run_vectors import NONFINITE, VECTORS, same  # noqa: E402

ROOT = HERE.parents[1]
RULES = ROOT / "tests" / "worker-vectors" / "rules" / "rules.json"


def request_line(step):
    """The step as a protocol line: `nonfinite` members as bare NaN / Infinity tokens (Python's
    json writes them so), `sized` members as strings of that many `x`."""
    request = {k: v for k, v in step.items() if k not in ("expect", "nonfinite", "sized")}
    for key, token in step.get("nonfinite", {}).items():
        request[key] = NONFINITE[token]
    for key, size in step.get("sized", {}).items():
        request[key] = "x" * size
    return json.dumps(request)


def check_step(step, got):
    """None when the response `got` is what the step expects, else what differs."""
    expect = step["expect"]
    if "error" in expect:
        code = got.get("error", {}).get("code")
        return None if code == expect["error"] else f"expected error {expect['error']}"
    if "error" in got:
        return f"expected {expect}"
    value = got["value"]
    if "winners" in expect:
        won = [v for v in value if v is not None]
        ok = len(won) == expect["winners"] and all(same(v, expect["fence"]) for v in won)
        return None if ok else f"expected {expect['winners']} winner(s) with fence {expect['fence']}"
    if not same(value, expect["value"]):
        return f"expected value {expect['value']}"
    if "reason" in expect and not same(got.get("reason"), expect["reason"]):
        return f"expected reason {expect['reason']}"
    refused = value is None or value is False
    if refused and step["op"] in ("claim", "renew", "complete", "release", "fail", "revive") \
            and "reason" not in got:
        return "a refusal came without a reason"
    if "reason" in got and not refused:
        return "a reason came with a granted value"
    return None


def rows(path):
    """Every row of every table, read by Python's own sqlite3 (the file is plain SQLite)."""
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


class ContractVectors(unittest.TestCase):
    def test_every_vector_through_the_protocol_interface(self):
        files = sorted(VECTORS.glob("*.json"))
        self.assertGreater(len(files), 30, "the shared vectors are there")
        failures = []
        with tempfile.TemporaryDirectory() as tmp:
            for file in files:
                vector = json.loads(file.read_text())
                component = Host(tmp)
                self.assertIsNone(component.protocol_open(f"/data/{file.stem}.db"))
                for index, step in enumerate(vector["steps"]):
                    got = json.loads(component.handle(request_line(step)))
                    problem = check_step(step, got)
                    if problem:
                        failures.append(f"{file.name} step {index} ({step['op']}): {problem}, "
                                        f"got {got}")
                        break
        self.assertEqual(failures, [], "\n".join(failures))

    def test_a_line_before_open_is_an_error_not_a_trap(self):
        with tempfile.TemporaryDirectory() as tmp:
            got = json.loads(Host(tmp).handle('{"op":"enqueue","job":"j"}'))
            self.assertEqual(got["error"]["code"], "storage")
            self.assertIn("open", got["error"]["message"])


class TypedStore(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.store = Host(self.tmp.name).open_store("/data/q.db")

    def tearDown(self):
        self.tmp.cleanup()

    def reason(self, value):
        self.assertIsInstance(value, host.wc.Variant, f"a refusal, got {value!r}")
        return value.tag, value.payload

    def test_a_stale_worker_is_refused_with_stale_fence_and_the_newer_result_stays(self):
        s = self.store
        self.assertTrue(s.enqueue(new_job("j")))
        self.assertEqual(s.claim("j", "A", 0.0, 10.0), 1)
        self.assertEqual(s.claim("j", "B", 20.0, 10.0), 2)
        # A wakes up after its lease ended and B claimed: the store refuses A's write.
        self.assertEqual(self.reason(s.complete("j", "A", 1, 21.0, "A's")), ("stale-fence", 2))
        self.assertIsNone(s.complete("j", "B", 2, 22.0, "B's"))
        self.assertEqual(self.reason(s.complete("j", "A", 1, 23.0, "A's")), ("done", None))
        state = s.state("j")
        self.assertEqual((state.result, state.done, state.fence), ("B's", True, 2))

    def test_every_reason_is_a_typed_variant(self):
        s = self.store
        self.assertEqual(self.reason(s.claim("nope", "A", 0.0, 10.0)), ("not-found", None))
        s.enqueue(new_job("j"))
        self.assertEqual(s.claim("j", "A", 0.0, 10.0), 1)
        tag, holder = self.reason(s.claim("j", "B", 5.0, 10.0))
        self.assertEqual((tag, holder.owner, holder.until), ("held", "A", 10.0))
        self.assertEqual(self.reason(s.renew("j", "B", 1, 5.0, 10.0)), ("not-owner", None))
        self.assertEqual(self.reason(s.renew("j", "A", 1, 12.0, 10.0)), ("expired", 10.0))
        self.assertIsNone(s.complete("j", "A", 1, 9.0, "done"))
        self.assertEqual(self.reason(s.release("j", "A", 1)), ("done", None))
        self.assertEqual(self.reason(s.revive("j", 9.0)), ("not-dead", None))
        s.enqueue(new_job("later", run_at=100.0))
        self.assertEqual(self.reason(s.claim("later", "A", 0.0, 10.0)), ("scheduled", 100.0))

    def test_a_failed_job_dies_and_is_revived(self):
        s = self.store
        s.enqueue(new_job("j", payload="p", queue="mail", priority=3))
        job = s.claim_next("w", 0.0, 10.0, ["mail"])
        self.assertEqual((job.job, job.fence, job.payload), ("j", 1, "p"))
        self.assertIsNone(s.fail("j", "w", 1, 1.0, None, "boom"))
        seen = s.inspect("j")
        self.assertTrue(seen.dead)
        self.assertEqual([(f.fence, f.error) for f in seen.failures], [(1, "boom")])
        self.assertEqual((seen.queue, seen.priority), ("mail", 3))
        self.assertIsNone(s.revive("j", 2.0))
        self.assertEqual(s.claim("j", "w", 2.0, 10.0), 2)

    def test_batches_answer_per_item(self):
        s = self.store
        self.assertEqual(s.enqueue_many([new_job("a"), new_job("b"), new_job("a")]),
                         [True, True, False])
        claimed = s.claim_next_many("w", 5, 0.0, 10.0, None)
        self.assertEqual([(c.job, c.fence) for c in claimed], [("a", 1), ("b", 1)])
        items = [record(job="a", fence=1, result="ra"), record(job="b", fence=7, result="rb")]
        done = s.complete_many("w", items, 1.0)
        self.assertIsNone(done[0])
        self.assertEqual(self.reason(done[1]), ("stale-fence", 1))
        counts = s.stats(1.0, None)
        self.assertEqual((counts.done, counts.leased), (1, 1))

    def test_schedules_and_prune(self):
        s = self.store
        s.schedule(record(name="hourly", cron="0 * * * *", tz=None, queue=None, priority=None,
                          payload=None, missed="latest"))
        self.assertEqual([x.schedule.name for x in s.schedules()], ["hourly"])
        self.assertEqual(len(s.enqueue_due(7200.0)), 1)
        self.assertTrue(s.unschedule("hourly"))
        job = s.claim_next("w", 7200.0, 10.0, None)
        self.assertIsNone(s.complete(job.job, "w", job.fence, 7201.0, None))
        pruned = s.prune(record(before=8000.0, keep_dead=False, only_dead=False, limit=None))
        self.assertEqual(pruned, 1)
        self.assertIsNone(s.state(job.job))

    def test_an_invalid_argument_is_a_typed_error_and_changes_nothing(self):
        s = self.store
        s.enqueue(new_job("j"))
        before = rows(Path(self.tmp.name) / "q.db")
        for call in (lambda: s.claim("j", "A", 0.0, -1.0),
                     lambda: s.claim("j", "A", math.nan, 10.0),
                     lambda: s.claim_many("j", ["A"] * 1025, 0.0, 10.0),
                     lambda: s.enqueue(new_job("k", payload="x" * (1 << 20 | 1)))):
            with self.assertRaises(StoreError) as caught:
                call()
            self.assertEqual(caught.exception.code, "invalid-argument")
            self.assertFalse(caught.exception.retryable)
        self.assertEqual(rows(Path(self.tmp.name) / "q.db"), before)

    def test_a_file_that_is_not_sqlite_is_refused_and_left_as_it_was(self):
        path = Path(self.tmp.name) / "notes.txt"
        path.write_text("not a database")
        with self.assertRaises(StoreError) as caught:
            Host(self.tmp.name).open_store("/data/notes.txt")
        self.assertEqual(caught.exception.code, "storage")
        self.assertEqual(path.read_text(), "not a database")


class OpenOptions(unittest.TestCase):
    def test_limits_of_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = Host(tmp).open_store_with("/data/q.db", payload_limit=10, result_limit=0)
            self.assertTrue(store.enqueue(new_job("fits", payload="x" * 10)))
            with self.assertRaises(StoreError) as caught:
                store.enqueue(new_job("big", payload="x" * 11))
            self.assertEqual(caught.exception.code, "invalid-argument")
            self.assertIn("payload", caught.exception.message)
            self.assertIsNone(store.state("big"))
            # result-limit 0: no limit at all.
            self.assertEqual(store.claim("fits", "A", 0.0, 10.0), 1)
            self.assertIsNone(store.complete("fits", "A", 1, 1.0, "r" * (2 << 20)))

    def test_a_bad_option_opens_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            for options in ({"busy_timeout": -1.0}, {"busy_timeout": math.nan},
                            {"busy_timeout": math.inf}):
                with self.assertRaises(StoreError) as caught:
                    Host(tmp).open_store_with("/data/q.db", **options)
                self.assertEqual(caught.exception.code, "invalid-argument")
                self.assertIn("busy-timeout", caught.exception.message)
            self.assertEqual(os.listdir(tmp), [], "no file was created")

    def test_the_busy_timeout_bounds_the_wait_for_a_held_lock(self):
        with tempfile.TemporaryDirectory() as tmp:
            Host(tmp).open_store("/data/q.db")
            # A holder's lock, as SQLite's unix-dotfile makes it (a directory).
            (Path(tmp) / "q.db.lock").mkdir()
            start = time.monotonic()
            with self.assertRaises(StoreError) as caught:
                Host(tmp).open_store_with("/data/q.db", busy_timeout=0.3)
            waited = time.monotonic() - start
            self.assertTrue(caught.exception.retryable)
            self.assertIn("<db>.lock", caught.exception.message)
            self.assertLess(waited, 5.0, "the default 10 s was not used")
            (Path(tmp) / "q.db.lock").rmdir()
            self.assertTrue(Host(tmp).open_store_with("/data/q.db", busy_timeout=0.3)
                            .enqueue(new_job("j")))


class WorkerRules(unittest.TestCase):
    def test_the_shared_rule_vectors(self):
        cases = json.loads(RULES.read_text())["cases"]
        with tempfile.TemporaryDirectory() as tmp:
            component = Host(tmp)
            for case in cases:
                rule, args, expect = case["rule"], case["args"], case["expect"]
                name = rule.replace("_", "-")
                if rule in ("exponential_backoff", "retry_at", "next_renew_at",
                            "renew_retry_delay"):
                    args = [float(a) if i not in INT_ARGS[rule] else a for i, a in enumerate(args)]
                got = component.call("worker-rules", name, *args)
                if rule == "attempt_verdict":
                    got = {"run": True} if got is None else {"run": False, "error": got}
                self.assertTrue(same(got, expect), f"{rule}{tuple(args)}: {got!r} != {expect!r}")


# Which arguments of each rule are integers (attempts, counts); the rest are seconds.
INT_ARGS = {"exponential_backoff": {4}, "retry_at": {1, 2}, "next_renew_at": set(),
            "renew_retry_delay": {0}}


def cli():
    return os.environ.get("LEASEFENCE_BIN", str(ROOT / "target" / "debug" / "leasefence"))


class Processes(unittest.TestCase):
    def test_two_component_processes_hand_each_job_out_once(self):
        with tempfile.TemporaryDirectory() as tmp:
            store = Host(tmp).open_store("/data/q.db")
            jobs = [f"j{i}" for i in range(600)]
            self.assertTrue(all(store.enqueue_many([new_job(j) for j in jobs])))
            outs = [Path(tmp) / f"{owner}.txt" for owner in ("A", "B")]
            children = [subprocess.Popen([sys.executable, str(HERE / "host.py"), "claim-all", tmp,
                                          "q.db", owner, str(out)], stdout=subprocess.PIPE,
                                         text=True)
                        for owner, out in zip(("A", "B"), outs)]
            for child in children:
                self.assertEqual(child.stdout.readline().strip(), "ready")
            (Path(tmp) / "go").touch()
            for child in children:
                self.assertEqual(child.wait(timeout=600), 0)
                child.stdout.close()
            a, b = (set(out.read_text().split()) for out in outs)
            self.assertEqual(a & b, set(), "no job was handed to both processes")
            self.assertEqual(a | b, set(jobs), "every job was handed out")
            self.assertTrue(a and b, "both processes took part")
            with sqlite3.connect(Path(tmp) / "q.db") as conn:
                self.assertEqual(conn.execute("SELECT count(*) FROM jobs WHERE done = 1 AND "
                                              "fence = 1").fetchone()[0], len(jobs))

    def test_hostile_lines_change_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            component = Host(tmp)
            self.assertIsNone(component.protocol_open("/data/q.db"))
            component.handle('{"op":"enqueue","job":"j"}')
            component.handle('{"op":"claim","job":"j","owner":"A","now":0,"ttl":10}')
            before = rows(Path(tmp) / "q.db")
            hostile = [
                "", "{", "null", "[]", '"op"', "\x00", '{"op":"drop"}', '{"op":"claim"}',
                '{"op":"claim","job":"j","owner":"B","now":1e400,"ttl":10}',
                '{"op":"enqueue","job":"x\'); DROP TABLE jobs; --","run_at":NaN}',
                '{"op":"complete","job":"j","owner":"A","fence":9223372036854775808,"now":1}',
                '{"op":"fenced","job":"j","owner":"A","fence":1,"now":1,'
                '"statements":[{"sql":"DROP TABLE jobs","params":[]}]}',
                '{"op":"fenced","job":"j","owner":"A","fence":1,"now":1,'
                '"statements":[{"sql":"UPDATE jobs SET fence = 0","params":[]}]}',
                "[" * 100000,
                '{"op":"enqueue","job":"big","payload":"' + "y" * (1 << 21) + '"}',
            ]
            for line in hostile:
                got = json.loads(component.handle(line))
                self.assertIn("error", got, f"{line[:80]!r} answered {got}")
                self.assertIn(got["error"]["code"], ("bad_request", "invalid_argument"),
                              f"{line[:80]!r}: {got}")
            self.assertEqual(rows(Path(tmp) / "q.db"), before)

    def test_a_killed_holder_leaves_a_lock_the_error_names_and_unlock_clears(self):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "q.db"
            lock = Path(tmp) / "q.db.lock"
            Host(tmp).open_store("/data/q.db")
            # Kill a writer at a random moment until it dies holding the lock (a batch of 1000
            # jobs keeps it most of the time).
            for _ in range(30):
                child = subprocess.Popen([sys.executable, str(HERE / "host.py"),
                                          "enqueue-forever", tmp, "q.db"],
                                         stdout=subprocess.PIPE, text=True)
                self.assertTrue(child.stdout.readline().startswith("batch"))
                time.sleep(random.uniform(0.05, 0.4))
                child.send_signal(signal.SIGKILL)
                child.wait()
                child.stdout.close()
                if lock.exists():
                    break
            self.assertTrue(lock.exists(), "no kill landed while the lock was held")
            # The next opener waits out the busy timeout, then says what holds the file and how to
            # clear it.
            with self.assertRaises(StoreError) as caught:
                Host(tmp).open_store("/data/q.db")
            self.assertEqual(caught.exception.code, "storage")
            self.assertTrue(caught.exception.retryable)
            self.assertIn("<db>.lock", caught.exception.message)
            self.assertIn("leasefence --db FILE unlock", caught.exception.message)
            # No process has the file open any more: the native CLI clears the lock...
            subprocess.run([cli(), "--db", str(db), "unlock"], check=True)
            self.assertFalse(lock.exists())
            # ... and the next opener goes on, with every committed batch whole (the hot journal
            # of the killed one rolled back) and the file sound.
            store = Host(tmp).open_store("/data/q.db")
            total = store.stats(0.0, None).queued
            self.assertGreater(total, 0)
            self.assertEqual(total % 1000, 0, f"{total} jobs: a batch was partly stored")
            with sqlite3.connect(db) as conn:
                self.assertEqual(conn.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            # The component marked the file for dot-file locking: the native CLI, opening it next,
            # takes the same lock and reads the same jobs.
            out = subprocess.run([cli(), "--db", str(db), "stats", "--now", "0"], check=True,
                                 capture_output=True, text=True).stdout
            self.assertIn(str(total), out)


def readme_block(language):
    """The README's `language` example in its "WebAssembly component" section."""
    section = (ROOT / "README.md").read_text().split("## WebAssembly component", 1)[1]
    section = section.split("\n## ", 1)[0]
    return section.split(f"```{language}\n", 1)[1].split("```", 1)[0]


class ReadmeExamples(unittest.TestCase):
    """The README's two examples run as written, from a folder laid out as a user's would be."""

    def folder(self, tmp):
        (Path(tmp) / "data").mkdir()
        (Path(tmp) / "dist").symlink_to(ROOT / "dist")
        (Path(tmp) / "node_modules").symlink_to(ROOT / "node_modules")
        (Path(tmp) / "leasefence-js").symlink_to(ROOT / "target" / "component-js")

    def test_the_python_example(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.folder(tmp)
            (Path(tmp) / "example.py").write_text(readme_block("python"))
            subprocess.run([sys.executable, "example.py"], cwd=tmp, check=True)
            self.assertTrue((Path(tmp) / "data" / "queue.db").is_file())

    def test_the_node_example(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.folder(tmp)
            lines = readme_block("js").splitlines()
            # Each commented call's answer, checked: `x; // { ... }` becomes an assertion.
            checked = []
            for line in lines:
                call, _, answer = line.partition("; // ")
                if answer.startswith("{"):
                    checked.append(f"assert.deepEqual({call}, {answer});")
                else:
                    checked.append(line)
            script = "import assert from 'node:assert/strict';\n" + "\n".join(checked) + "\n"
            (Path(tmp) / "example.mjs").write_text(script)
            subprocess.run(["node", "example.mjs"], cwd=tmp, check=True)
            self.assertTrue((Path(tmp) / "data" / "queue.db").is_file())


if __name__ == "__main__":
    unittest.main()

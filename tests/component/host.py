"""The leasefence component (dist/leasefence.wasm) on PyPI's wasmtime: what the tests use, and a
small command line the process tests start as children.

    python3 host.py claim-all DIR FILE OWNER OUT    prints "ready", waits for DIR/go, then claims
                                                    jobs with claim_next until none is left,
                                                    writing one claimed job id per line to OUT
    python3 host.py enqueue-forever DIR FILE        enqueues batches of 1000 jobs until killed,
                                                    printing "batch N" after each commit

wasmtime's component API returns a result's value either way (an `ok` as its value, an `err` as
the error's value), and as a `Variant` tagged `ok` or `err` only when the two could not be told
apart by their Python class: `Host.call` raises a `store-error` as StoreError and returns the
rest, so a refusal is the `reason` variant (`Variant(tag='stale-fence', payload=2)`).
"""

import os
import sys
import time
from pathlib import Path

import wasmtime
import wasmtime.component as wc

ROOT = Path(__file__).resolve().parents[2]
COMPONENT = Path(os.environ.get("LEASEFENCE_COMPONENT", ROOT / "dist" / "leasefence.wasm"))
PACKAGE = "leasefence:store"
VERSION = "0.1.0"


class StoreError(Exception):
    """The component's `store-error`: code (`invalid-argument` or `storage`), message, retryable."""

    def __init__(self, record):
        super().__init__(f"{record.code}: {record.message}")
        self.code = record.code
        self.message = record.message
        self.retryable = record.retryable


def _engine_and_component():
    engine = wasmtime.Engine()
    return engine, wc.Component.from_file(engine, str(COMPONENT))


class Host:
    """One instance of the component, with `directory` preopened as `/data`."""

    _compiled = None

    def __init__(self, directory):
        if Host._compiled is None:
            Host._compiled = _engine_and_component()
        engine, component = Host._compiled
        self.store = wasmtime.Store(engine)
        wasi = wasmtime.WasiConfig()
        wasi.preopen_dir(str(directory), "/data")
        wasi.inherit_stderr()
        self.store.set_wasi(wasi)
        linker = wc.Linker(engine)
        linker.add_wasip2()
        self.instance = linker.instantiate(self.store, component)
        self._funcs = {}

    def func(self, interface, name):
        key = (interface, name)
        if key not in self._funcs:
            self._funcs[key] = self._lookup(interface, name)
        return self._funcs[key]

    def _lookup(self, interface, name):
        scope = self.instance.get_export_index(self.store, f"{PACKAGE}/{interface}@{VERSION}")
        index = self.instance.get_export_index(self.store, name, scope)
        if index is None:
            raise KeyError(f"the component exports no {interface}.{name}")
        return self.instance.get_func(self.store, index)

    def call(self, interface, name, *args):
        """Calls an export; a `store-error` is raised as StoreError."""
        value = self.func(interface, name)(self.store, *args)
        # Tagged when the ok and err values could be told apart by their Python class alone.
        if isinstance(value, wc.Variant) and value.tag in ("ok", "err"):
            if value.tag == "err":
                raise StoreError(value.payload)
            return value.payload
        if isinstance(value, wc.Record) and hasattr(value, "retryable"):
            raise StoreError(value)
        return value

    # The protocol interface: one JSON line in, one out.
    def protocol_open(self, path):
        """None when open, else the error's text."""
        return self.func("protocol", "open")(self.store, path)

    def handle(self, line):
        return self.func("protocol", "handle")(self.store, line)

    # The typed store.
    def open_store(self, path):
        return TypedStore(self, self.call("leases", "[static]store.open", path))

    def open_store_with(self, path, busy_timeout=None, payload_limit=None, result_limit=None,
                        error_limit=None):
        options = record(busy_timeout=busy_timeout, payload_limit=payload_limit,
                         result_limit=result_limit, error_limit=error_limit)
        return TypedStore(self, self.call("leases", "[static]store.open-with", path, options))


class TypedStore:
    """The `store` resource: `store.claim(...)` calls `[method]store.claim` on it."""

    def __init__(self, host, resource):
        self.host = host
        self.resource = resource

    def __getattr__(self, name):
        method = f"[method]store.{name.replace('_', '-')}"

        def call(*args):
            return self.host.call("leases", method, self.resource, *args)

        return call


def new_job(job, run_at=None, payload=None, queue=None, priority=None):
    """A `new-job` record."""
    return record(job=job, run_at=run_at, payload=payload, queue=queue, priority=priority)


def record(**fields):
    """A WIT record: wasmtime reads its fields by their WIT names (`run-at`)."""
    value = wc.Record()
    for name, field in fields.items():
        setattr(value, name.replace("_", "-"), field)
    return value


def _claim_all(directory, file, owner, out):
    store = Host(directory).open_store(f"/data/{file}")
    # Start together: say so once compiled and open, then wait for the go file.
    print("ready", flush=True)
    while not (Path(directory) / "go").exists():
        time.sleep(0.01)
    claimed = []
    now = 0.0
    while True:
        job = store.claim_next(owner, now, 3600.0, None)
        if job is None:
            break
        claimed.append(job.job)
        # The fence guards the write: complete only with the fence claim_next handed out.
        assert store.complete(job.job, owner, job.fence, now, f"by {owner}") is None
    Path(out).write_text("".join(f"{j}\n" for j in claimed))


def _enqueue_forever(directory, file):
    store = Host(directory).open_store(f"/data/{file}")
    n = 0
    while True:
        jobs = [new_job(f"p{os.getpid()}-b{n}-{i}", payload="x" * 200) for i in range(1000)]
        added = store.enqueue_many(jobs)
        assert all(added), "a batch's jobs are new"
        n += 1
        print(f"batch {n}", flush=True)


if __name__ == "__main__":
    command, *rest = sys.argv[1:]
    if command == "claim-all":
        _claim_all(*rest)
    elif command == "enqueue-forever":
        _enqueue_forever(*rest)
    else:
        sys.exit(f"unknown command {command!r}: use claim-all or enqueue-forever")

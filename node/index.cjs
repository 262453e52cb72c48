'use strict';
// leasefence for Node: the Rust crate compiled to wasm, on an ordinary SQLite file shared by
// processes and worker threads. The contract, argument checks and error codes live in Rust; this
// file adds the class shape of docs/contract.md section 5 and runs claimMany on worker threads.
// scripts/package.sh bundles it (esbuild) with the JavaScript it shares with the browser
// (web/store/) into the package's index.cjs; `./wasm/leasefence.js` stays a file of its own.

const path = require('node:path');
const { Worker } = require('node:worker_threads');
const wasm = require('./wasm/leasefence.js');
const { LeaseStoreCore, LeaseError, leaseErrors, wasmRuleName, workerRulesOver } = require('../web/store/core.js');

// The worker rules on this thread's wasm (the same for every store): see WORKER_RULES in core.js.
const WORKER_RULES = workerRulesOver((rule, args) => wasm[wasmRuleName(rule)](...args));
const { JobWorker: CoreJobWorker, LeaseLostError, ManualClock, fixedBackoff, exponentialBackoff, fencedResult } = require('../web/store/job-worker.js');

const DEFAULT_BUSY_TIMEOUT_MS = 10_000;
const CONSTRUCT = Symbol('LeaseStore.open');
let busyTimeoutOf; // (store) => its busyTimeoutMs, for the heartbeat thread's own connection

// Every error this package throws is a LeaseError (web/store/core.js): these two for the checks
// made here, and `leaseErrors(() => wasm...)` for what the wasm throws (the store's operations
// are wrapped by the core).
function invalidArgument(message) {
  return new LeaseError(message, { code: 'invalid_argument', retryable: false });
}

function storageError(message) {
  return new LeaseError(message, { code: 'storage', retryable: false });
}

/**
 * A lease store on one SQLite file. Open it with `await LeaseStore.open(path)`.
 * Every method runs one transaction; fences are checked by the store, inside the transaction
 * that writes, so a stale worker's write is refused whatever the worker believes.
 *
 * The operations and `withReason` come from the shared core (web/store/core.js)
 * over a synchronous transport: the wasm store on this thread, and worker threads for claimMany.
 * `lastReason` (deprecated: use `withReason`) is kept because calls here are synchronous.
 */
class LeaseStore extends LeaseStoreCore {
  #inner;
  #path;
  #busyTimeoutMs;

  static {
    busyTimeoutOf = (store) => store.#busyTimeoutMs;
  }

  /**
   * Opens (creating if missing) the database file at `path`.
   * @param {string} file
   * @param {{busyTimeoutMs?: number}} [options]
   */
  static async open(file, options = {}) {
    if (typeof file !== 'string' || file === '') {
      throw invalidArgument('LeaseStore.open(): `path` must be a non-empty string (a database file path)');
    }
    if (options === null || typeof options !== 'object') {
      throw invalidArgument('LeaseStore.open(): `options` must be an object');
    }
    const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (typeof busyTimeoutMs !== 'number' || !Number.isFinite(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw invalidArgument('LeaseStore.open(): `busyTimeoutMs` must be a finite number >= 0');
    }
    const absolute = path.resolve(file);
    const inner = leaseErrors(() => wasm.WasmStore.openFile(absolute, busyTimeoutMs));
    return new LeaseStore(CONSTRUCT, inner, absolute, busyTimeoutMs);
  }

  /**
   * Frees the file lock of a worker thread that was stopped with `worker.terminate()` while it
   * had a store open on `file`: its process lives on, so the lock cannot be proven stale
   * otherwise. Call it from the worker's `exit` handler. Resolves to whether a lock was freed.
   * @param {string} file
   * @param {number} threadId
   */
  static async releaseTerminatedWorkerLock(file, threadId) {
    if (typeof file !== 'string' || file === '') {
      throw invalidArgument('releaseTerminatedWorkerLock(): `file` must be a non-empty string');
    }
    if (!Number.isInteger(threadId) || threadId < 1) {
      throw invalidArgument('releaseTerminatedWorkerLock(): `threadId` must be a worker\'s threadId');
    }
    return leaseErrors(() => wasm.breakDeadThreadLock(path.resolve(file), threadId));
  }

  constructor(token, inner, file, busyTimeoutMs) {
    if (token !== CONSTRUCT) {
      throw new TypeError('use `await LeaseStore.open(path)` to open a store');
    }
    let self;
    super(
      {
        call: (op, args) => {
          if (op === 'claimMany') return self.#claimMany(...args);
          if (op === 'fenced' && typeof args[4] === 'function') return self.#fencedWith(...args);
          if (!self.#inner) throw storageError(`${op}(): the store is closed; open it again`);
          return self.#inner.call(op, args);
        },
      },
      { trackLastReason: true },
    );
    self = this;
    this.#inner = inner;
    this.#path = file;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /** The worker runtime's rules (backoff, attempts, renew times), computed by the crate's core. */
  get workerRules() {
    return WORKER_RULES;
  }

  /** The absolute path of the database file. */
  get path() {
    return this.#path;
  }

  /**
   * Claims `job` for every owner at the same moment, each on its own worker thread with its own
   * connection. Resolves to the fences in input order; exactly one on a claimable job.
   * (The method itself comes from the core; this runs it.)
   */
  async #claimMany(job, owners, now, ttl) {
    leaseErrors(() => wasm.checkArguments('claimMany', [job, owners, now, ttl]));
    if (!this.#inner) throw storageError('claimMany(): the store is closed; open it again');
    this.lastReason = null;
    if (owners.length === 0) return { value: [], reasons: [] };
    const gate = new Int32Array(new SharedArrayBuffer(8)); // [ready count, go flag]
    const file = this.#path;
    const workers = owners.map(
      (owner) =>
        new Worker(path.join(__dirname, 'claim-worker.cjs'), {
          workerData: { file, busyTimeoutMs: this.#busyTimeoutMs, job, owner, now, ttl, gate },
        }),
    );
    const answers = workers.map(
      (worker, index) =>
        new Promise((resolve, reject) => {
          let answered = false;
          worker.on('message', (message) => {
            if (message.type === 'ready') {
              // Every worker has opened its connection: release them all at once.
              if (Atomics.add(gate, 0, 1) + 1 === workers.length) {
                Atomics.store(gate, 1, 1);
                Atomics.notify(gate, 1);
              }
            } else if (message.type === 'answer') {
              answered = true;
              if (message.error) {
                // This owner never reached the gate: open it, or the others would wait forever.
                Atomics.store(gate, 1, 1);
                Atomics.notify(gate, 1);
              }
              resolve(message);
            }
          });
          worker.on('error', reject);
          worker.on('exit', (code) => {
            // A worker that died holding the file lock would block everyone: free it.
            wasm.breakDeadThreadLock(file, worker.threadId);
            if (!answered) reject(storageError(`claimMany(): the worker for owner #${index} exited (${code})`));
          });
        }),
    );
    const settled = await Promise.allSettled(answers);
    const failed = settled.find((s) => s.status === 'rejected' || s.value.error);
    if (failed) {
      // Let go of workers still waiting at the gate.
      Atomics.store(gate, 1, 1);
      Atomics.notify(gate, 1);
      const error = failed.status === 'rejected' ? failed.reason : failed.value.error;
      if (error instanceof LeaseError) throw error;
      throw new LeaseError(String(error?.message ?? error), { code: error?.code ?? 'storage', retryable: Boolean(error?.retryable) });
    }
    return {
      value: settled.map((s) => s.value.value),
      reasons: settled.map((s) => s.value.reason),
    };
  }

  /**
   * The callback form of `fenced`: `work(tx)` runs synchronously inside the transaction that
   * then checks the lease; `tx.run(sql, params)` answers `{changes}`, `tx.all(sql, params)` the
   * rows as objects, `tx.get(sql, params)` the first row or undefined. A throw rolls back and
   * is rethrown; a returned Promise is refused (the transaction cannot wait for it).
   */
  #fencedWith(job, owner, fence, now, work, options) {
    if (!this.#inner) throw storageError('fenced(): the store is closed; open it again');
    const inner = this.#inner;
    let open = true;
    const need = (method) => {
      if (!open) throw invalidArgument(`tx.${method}(): the fenced callback has returned; the transaction is over`);
    };
    const tx = Object.freeze({
      run(sql, params = []) {
        need('run');
        return { changes: leaseErrors(() => inner.fencedRun(sql, params)) };
      },
      all(sql, params = []) {
        need('all');
        return leaseErrors(() => inner.fencedAll(sql, params));
      },
      get(sql, params = []) {
        need('get');
        return leaseErrors(() => inner.fencedAll(sql, params))[0];
      },
    });
    try {
      return inner.fencedWith(job, owner, fence, now, options, () => {
        const returned = work(tx);
        if (returned !== null && typeof returned === 'object' && typeof returned.then === 'function') {
          throw invalidArgument('fenced(): the callback returned a Promise; it must be synchronous (the transaction cannot wait)');
        }
      });
    } finally {
      open = false;
    }
  }

  /** Closes the connection. Later calls throw an error with code `storage`. */
  close() {
    if (this.#inner) {
      this.#inner.close();
      this.#inner.free();
      this.#inner = undefined;
    }
  }
}

/**
 * The heartbeat source of `heartbeat: 'thread'`: one worker thread (heartbeat-thread.cjs) with its
 * own connection renews the leases of one JobWorker, so a handler that blocks this thread keeps
 * its lease (and a hung one keeps it too: that is the price). Started with the first job, closed
 * when run() returns; the thread keeps the process alive only while it holds a lease.
 */
class ThreadHeartbeat {
  #file;
  #busyTimeoutMs;
  #thread = null;
  #leases = new Map(); // id -> {events, onStopped}
  #nextId = 1;
  #ready = null; // settles once the thread has opened its connection

  constructor(file, busyTimeoutMs) {
    this.#file = file;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  #ensure() {
    if (this.#thread) return this.#thread;
    const thread = new Worker(path.join(__dirname, 'heartbeat-thread.cjs'), {
      workerData: { file: this.#file, busyTimeoutMs: this.#busyTimeoutMs },
    });
    thread.unref();
    let ready;
    this.#ready = new Promise((resolve, reject) => (ready = { resolve, reject }));
    this.#ready.catch(() => {});
    thread.on('message', (message) => {
      if (message.type === 'ready') ready.resolve();
      const lease = this.#leases.get(message.id);
      if (!lease) return;
      if (message.type === 'renewed') lease.events.renewed(message.end);
      else if (message.type === 'error') lease.events.error(new LeaseError(message.error.message, { code: message.error.code, retryable: Boolean(message.error.retryable) }));
      else if (message.type === 'lost') lease.events.lost(message.reason, message.message);
      else if (message.type === 'stopped') this.#settle(message.id);
    });
    const failed = (why) => {
      ready.reject(storageError(`JobWorker: the heartbeat thread ${why}`));
      for (const [id, lease] of this.#leases) {
        lease.events.lost(null, `the heartbeat thread ${why}`);
        this.#settle(id);
      }
      this.#thread = null;
    };
    thread.on('error', (error) => failed(`failed: ${error.message}`));
    thread.on('exit', (code) => {
      // A thread that died holding the file lock would block everyone: free it.
      wasm.breakDeadThreadLock(this.#file, thread.threadId);
      if (this.#thread === thread) failed(`exited (${code})`);
    });
    this.#thread = thread;
    return thread;
  }

  #settle(id) {
    const lease = this.#leases.get(id);
    if (!lease) return;
    this.#leases.delete(id);
    if (this.#leases.size === 0) this.#thread?.unref();
    lease.onStopped();
  }

  /** Starts the thread and waits until it has its connection (run() calls this first). */
  async open() {
    this.#ensure();
    await this.#ready;
  }

  start(info, events) {
    const thread = this.#ensure();
    const id = this.#nextId++;
    let onStopped;
    const stopped = new Promise((resolve) => (onStopped = resolve));
    this.#leases.set(id, { events, onStopped });
    thread.ref();
    thread.postMessage({ type: 'start', id, ...info });
    return {
      stop: () => {
        if (this.#leases.has(id)) this.#thread?.postMessage({ type: 'stop', id });
        return stopped;
      },
    };
  }

  async close() {
    const thread = this.#thread;
    if (!thread) return;
    this.#thread = null;
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    thread.ref(); // until it has closed its connection and exited
    thread.postMessage({ type: 'close' });
    await exited;
  }
}

/**
 * The worker runtime (web/store/job-worker.js), with one Node option more:
 * `heartbeat: 'thread'` renews from a worker thread with its own connection (see index.d.ts).
 */
class JobWorker extends CoreJobWorker {
  constructor(store, options = {}) {
    if (options !== null && typeof options === 'object' && options.heartbeat === 'thread') {
      if (!(store instanceof LeaseStore)) {
        throw invalidArgument("JobWorker: `heartbeat: 'thread'` needs a LeaseStore of this package (it opens the same file)");
      }
      if (options.clock !== undefined) {
        throw invalidArgument("JobWorker: `heartbeat: 'thread'` renews by the system clock; leave `clock` out");
      }
      options = { ...options, heartbeat: new ThreadHeartbeat(store.path, busyTimeoutOf(store)) };
    }
    super(store, options);
  }
}

/**
 * A fence guard on an SQLite file that a store other than the lease store keeps: a write for a
 * key runs only with a fence at least the highest accepted for that key, checked and recorded in
 * the write's own transaction (table `leasefence_guard`). Open it with `await FenceGuard.open(path)`.
 */
class FenceGuard {
  #inner;

  /**
   * Opens (creating if missing) the SQLite file at `path` for guarded writes.
   * @param {string} file
   * @param {{busyTimeoutMs?: number}} [options]
   */
  static async open(file, options = {}) {
    if (typeof file !== 'string' || file === '') {
      throw invalidArgument('FenceGuard.open(): `path` must be a non-empty string (a database file path)');
    }
    const busyTimeoutMs = options?.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    if (typeof busyTimeoutMs !== 'number' || !Number.isFinite(busyTimeoutMs) || busyTimeoutMs < 0) {
      throw invalidArgument('FenceGuard.open(): `busyTimeoutMs` must be a finite number >= 0');
    }
    const guard = new FenceGuard(CONSTRUCT);
    guard.#inner = leaseErrors(() => wasm.WasmGuard.openFile(path.resolve(file), busyTimeoutMs));
    return guard;
  }

  constructor(token) {
    if (token !== CONSTRUCT) throw new TypeError('use `await FenceGuard.open(path)` to open a guard');
  }

  /**
   * Runs `statements` ([{sql, params}], `$1`, `$2`, ...) in one transaction if `fence` is at
   * least the highest accepted for `key`: `{accepted: true, rows}` (the rows of the last
   * statement), else `{accepted: false, current, rows: []}` and nothing is written.
   */
  write(key, fence, statements) {
    if (!this.#inner) throw storageError('FenceGuard.write(): the guard is closed; open it again');
    return leaseErrors(() => this.#inner.write(key, fence, statements));
  }

  /** Closes the connection. */
  close() {
    if (this.#inner) {
      this.#inner.close();
      this.#inner.free();
      this.#inner = undefined;
    }
  }
}

module.exports = { LeaseStore, FenceGuard, JobWorker, ManualClock, LeaseError, LeaseLostError, fixedBackoff, exponentialBackoff, fencedResult };

'use strict';
// LeaseStore for Node: the shared core (web/store/core.js) over the engine's store on this thread
// (node/engine.cjs: the native addon or the wasm), with
// claimMany on worker threads (claim-worker.cjs) and the callback form of fenced writes.
const fs = require('node:fs');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { engine } = require('./engine.cjs');
const { LeaseStoreCore, LeaseError, leaseErrors, wasmRuleName, workerRulesOver } = require('../web/store/core.js');
const { invalidArgument, storageError } = require('./errors.cjs');
const { openPostgres, refuseUrlAsPath, connectArguments } = require('./pg-store.cjs');
const { busyTimeoutMsOf } = require('./busy-timeout.cjs');

// The worker rules computed by this process's engine (the same for every store): see WORKER_RULES
// in core.js.
const WORKER_RULES = workerRulesOver((rule, args) => engine().rule(wasmRuleName(rule), args));

const CONSTRUCT = Symbol('LeaseStore.open');
let busyTimeoutOf; // (store) => its busyTimeoutMs, for the heartbeat thread's own connection
let exclusiveOf; // (store) => whether it owns its file alone (no second connection can open it)
let writeGateOf; // (store) => whether its connections queue on the write gate, for those it opens

/**
 * A lease store on one SQLite file. Open it with `await LeaseStore.open(path)` (a PostgreSQL
 * server: `await LeaseStore.connect(url)`, a store whose operations answer Promises).
 * Every method runs one transaction; fences are checked by the store, inside the transaction
 * that writes, so a stale worker's write is refused whatever the worker believes.
 *
 * The operations and `withReason` come from the shared core (web/store/core.js)
 * over a synchronous transport: the engine's store on this thread, and worker threads for claimMany.
 */
class LeaseStore extends LeaseStoreCore {
  #inner;
  #path;
  #busyTimeoutMs;
  #exclusive;
  #writeGate;

  static {
    busyTimeoutOf = (store) => store.#busyTimeoutMs;
    exclusiveOf = (store) => store.#exclusive;
    writeGateOf = (store) => store.#writeGate;
  }

  /**
   * Opens (creating if missing) the database file at `path`.
   *
   * `exclusive: true`: this store owns the file alone until `close()`, in WAL mode with one sync
   * per commit (instead of four); every other opener, in any process, is refused with an error
   * saying so, and `claimMany` and `heartbeat: 'thread'` (which open connections of their own)
   * are refused too. A file its exclusive owner left by dying is recovered by the next opener.
   *
   * A URL is refused (`invalid_argument`): this answers the synchronous file store, whatever the
   * string holds, so a PostgreSQL URL goes to `LeaseStore.connect`.
   * @param {string} file
   * `limits`: the largest payload, result and error text the store accepts, in bytes
   * (docs/contract.md section 13; defaults 1 MiB, 1 MiB, 64 KiB; 0: no limit).
   * `writeGate` (default true): on the native engine, this store's writers queue first-come,
   * first-served on `<file>-leasefence-gate` before they take SQLite's write lock, as the Rust
   * library's do (docs/decisions/write-gate.md); `false` leaves every wait to SQLite's busy
   * handler. The wasm engine has no gate (its writers queue on its dot-file lock) and ignores it.
   * @param {{busyTimeout?: number, exclusive?: boolean, limits?: {payload?: number, result?: number, error?: number}, writeGate?: boolean}} [options]
   */
  static async open(file, options = {}) {
    if (typeof file !== 'string' || file === '') {
      throw invalidArgument('LeaseStore.open(): `path` must be a non-empty string (a database file path)');
    }
    refuseUrlAsPath(file, 'LeaseStore');
    if (options === null || typeof options !== 'object') {
      throw invalidArgument('LeaseStore.open(): `options` must be an object');
    }
    const busyTimeoutMs = busyTimeoutMsOf(options, 'LeaseStore.open()');
    const exclusive = options.exclusive ?? false;
    if (typeof exclusive !== 'boolean') {
      throw invalidArgument('LeaseStore.open(): `exclusive` must be true or false');
    }
    const limits = options.limits ?? {};
    if (limits === null || typeof limits !== 'object' || Object.keys(limits).some((k) => !['payload', 'result', 'error'].includes(k))) {
      throw invalidArgument('LeaseStore.open(): `limits` must be an object with `payload`, `result` and `error` in bytes (each optional)');
    }
    const writeGate = options.writeGate ?? true;
    if (typeof writeGate !== 'boolean') {
      throw invalidArgument('LeaseStore.open(): `writeGate` must be true or false');
    }
    const absolute = path.resolve(file);
    const inner = leaseErrors(() => engine().openStore(absolute, busyTimeoutMs, exclusive, limits, writeGate));
    return new LeaseStore(CONSTRUCT, inner, absolute, busyTimeoutMs, exclusive, writeGate);
  }

  /**
   * Opens a store on the PostgreSQL server at `url` (postgres:// or postgresql://; needs the `pg`
   * package, an optional peer dependency). Its operations answer Promises (docs/postgres.md). The
   * schema is checked (and made where missing) on a first connection, so a wrong password or an
   * unreachable server rejects here. A file path is refused: that is `LeaseStore.open`.
   * @param {string} url
   * @param {{busyTimeout?: number, maxConnections?: number}} [options]
   */
  static async connect(url, options = {}) {
    return openPostgres(url, connectArguments(url, options, 'LeaseStore'));
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
    return leaseErrors(() => engine().breakDeadThreadLock(path.resolve(file), threadId));
  }

  constructor(token, inner, file, busyTimeoutMs, exclusive = false, writeGate = true) {
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
        callGroup: (calls) => {
          if (!self.#inner) throw storageError('grouped calls: the store is closed; open it again');
          return self.#inner.callGroup(calls);
        },
      },
    );
    self = this;
    this.#inner = inner;
    this.#path = file;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#exclusive = exclusive;
    this.#writeGate = writeGate;
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
   * Which engine runs this store: `'native'` (the Node-API addon: the library's own SQLite, WAL,
   * POSIX locks, shared with native processes) or `'wasm'` (its own file format: rollback journal
   * and dot-file locks). One per process; `LEASEFENCE_ENGINE` chooses (node/engine.cjs).
   */
  get engine() {
    return engine().name;
  }

  /**
   * Watches the database file for commits by any process or thread (docs/contract.md section 11,
   * waking): `onChange()` is called when the file, its `-wal` or its `-journal` changes (false
   * alarms included: this store's own commits count too). `fs.watch` on the file's directory
   * (inotify on Linux), which does not keep the process alive. Answers `{close()}`, or null where
   * the directory cannot be watched (a JobWorker then polls). JobWorker calls it while it runs.
   * @param {() => void} onChange
   */
  watch(onChange) {
    if (typeof onChange !== 'function') throw invalidArgument('watch(onChange): `onChange` must be a function');
    const base = path.basename(this.#path);
    const names = new Set([base, `${base}-wal`, `${base}-journal`]);
    let watcher;
    try {
      watcher = fs.watch(path.dirname(this.#path), { persistent: false }, (_event, name) => {
        if (name === null || names.has(String(name))) onChange();
      });
    } catch {
      return null;
    }
    watcher.on('error', () => watcher.close()); // the directory went away: polling remains
    return { close: () => watcher.close() };
  }

  /**
   * Claims `job` for every owner at the same moment, each on its own worker thread with its own
   * connection. Resolves to the fences in input order; exactly one on a claimable job.
   * (The method itself comes from the core; this runs it.)
   */
  async #claimMany(job, owners, now, ttl) {
    leaseErrors(() => engine().checkArguments('claimMany', [job, owners, now, ttl]));
    if (!this.#inner) throw storageError('claimMany(): the store is closed; open it again');
    if (this.#exclusive) {
      throw invalidArgument(
        'claimMany(): each owner claims on a connection of its own, which a store opened with `exclusive: true` admits none of; open the store without `exclusive` to race claims',
      );
    }
    if (owners.length === 0) return { value: [], reasons: [] };
    const gate = new Int32Array(new SharedArrayBuffer(8)); // [ready count, go flag]
    const file = this.#path;
    const workers = owners.map(
      (owner) =>
        new Worker(path.join(__dirname, 'claim-worker.cjs'), {
          workerData: { file, busyTimeoutMs: this.#busyTimeoutMs, writeGate: this.#writeGate, job, owner, now, ttl, gate },
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
            engine().breakDeadThreadLock(file, worker.threadId);
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

module.exports = {
  LeaseStore,
  busyTimeoutOf: (store) => busyTimeoutOf(store),
  exclusiveOf: (store) => exclusiveOf(store),
  writeGateOf: (store) => writeGateOf(store),
};

// The browser face of leasefence (docs/contract.md section 5), for pages: every call crosses to the
// store's dedicated worker, so every method returns a Promise. Errors are LeaseErrors, as in Node.
// The operations and `withReason` come from the core shared with Node (./core.js), over a
// transport of messages to the worker. `withReason.<op>(...)` resolves to `{value, reason}` with
// the reason of that call.
//
// Why the request/response plumbing below (#send, the worker's onmessage) is hand-written rather
// than comlink 4.4.2, the well-kept library for it (measured for issue 13):
// - Errors lose their `code`. Comlink's throw handler sends only `message`, `name` and `stack`
//   (dist/esm/comlink.mjs, throwTransferHandler), so every `invalid_argument` / `storage` error
//   would need a custom transfer handler registered on both sides, about as long as this code.
// - A worker that fails to start or crashes leaves comlink's calls pending forever: its
//   requestResponseMessage only listens for replies. Here `onerror` rejects every pending call
//   with a `storage` error, and later calls fail at once.
// - Size: comlink.min.mjs is 4,485 bytes (2,014 gzipped) and would have to be vendored into web/
//   (the page is served without a bundler or node_modules); the plumbing here is about 30 lines of
//   this 4.2 kB file (1.8 kB gzipped, with the class around it).
// The open() retry while a reloaded page's worker still holds the OPFS handles stays ours either way.
import { LeaseStoreCore, LeaseError, toLeaseError, workerRulesOver } from './core.js';

export { LeaseError };

// Every error this store throws is a LeaseError (./core.js), also those that cross from the worker.
function makeError(code, message, retryable = false) {
  return new LeaseError(message, { code, retryable });
}

// The operations after which a job may be claimable that was not (docs/contract.md section 11,
// waking): their success is announced to the JobWorkers of this origin.
const WAKING_OPS = new Set(['enqueue', 'enqueueMany', 'revive', 'release', 'fail']);

/** The BroadcastChannel of the database `name`: every context of the origin that uses it. */
const channelName = (name) => `leasefence:${name}`;

export class LeaseStore extends LeaseStoreCore {
  /**
   * The worker script `open` starts: ./worker.js, the library's wasm. A subclass whose worker
   * answers more requests (./worker-host.js's `serveStore` with extra methods, on a wasm built on
   * the library's) names its own, and sends them with `request`.
   */
  static workerUrl = new URL('./worker.js', import.meta.url);

  #worker;
  #pending = new Map();
  #nextId = 1;
  #failed = null;
  #name = null; // the database's name, once open
  #announce = null; // the BroadcastChannel this store posts its waking operations on

  /**
   * Opens (creating if missing) the database `name` in this origin's OPFS, in a new worker.
   * Rejects with code `storage` where OPFS is unavailable or another tab holds the database.
   */
  static async open(name) {
    if (typeof name !== 'string' || name === '') {
      throw makeError('invalid_argument', 'LeaseStore.open(): `name` must be a non-empty string');
    }
    if (!globalThis.isSecureContext) {
      throw makeError('storage',
        'leasefence needs a secure context for OPFS: open the page over https:// or http://localhost');
    }
    if (typeof Worker === 'undefined') {
      throw makeError('storage', 'this browser cannot start Web Workers, which OPFS needs');
    }
    const worker = new Worker(this.workerUrl, { type: 'module' });
    const store = new this(worker);
    // Right after a reload the previous page's worker may still hold the OPFS handles for a
    // moment: wait a little before telling the user that another tab holds the database.
    for (let attempt = 0; ; attempt++) {
      try {
        await store.#send('open', [name]);
        store.#name = name;
        return store;
      } catch (error) {
        if (attempt >= 12 || !/another tab/.test(error.message)) {
          worker.terminate();
          throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    }
  }

  constructor(worker) {
    let self;
    super({
      call: (op, args) => {
        if (op === 'fenced' && typeof args[4] === 'function') {
          return Promise.reject(makeError('invalid_argument',
            'fenced(): pass a list of {sql, params}; a callback cannot cross to the store\'s worker'));
        }
        const answer = self.#send('call', [op, args]);
        return WAKING_OPS.has(op) ? answer.then((value) => (self.#woke(), value)) : answer;
      },
      callGroup: (calls) => {
        const answer = self.#send('callGroup', [calls]);
        return calls.some(([op]) => WAKING_OPS.has(op))
          ? answer.then((value) => (self.#woke(), value))
          : answer;
      },
      promised: true,
    });
    self = this;
    this.#worker = worker;
    /** The worker runtime's rules (backoff, attempts, renew times), computed by the crate's core in the store's worker. */
    this.workerRules = workerRulesOver((rule, args) => this.#send('rule', [rule, args]));
    worker.onmessage = (event) => {
      const { id, ok, value, error } = event.data;
      const pending = this.#pending.get(id);
      if (!pending) return;
      this.#pending.delete(id);
      if (ok) pending.resolve(value);
      else pending.reject(toLeaseError({ ...error, retryable: Boolean(error.retryable) }));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.#failed = makeError('storage', `the store's worker failed: ${event.message || 'could not start'}`);
      for (const pending of this.#pending.values()) pending.reject(this.#failed);
      this.#pending.clear();
    };
  }

  /**
   * Tells the JobWorkers of this origin that a job may have become claimable, on the database's
   * BroadcastChannel: every other channel object of that name hears it, in this context too (so
   * this store's own watchers), in other pages and workers of the origin. A hint: a worker that
   * misses it still polls.
   */
  #woke() {
    if (this.#name === null || typeof BroadcastChannel === 'undefined') return;
    this.#announce ??= new BroadcastChannel(channelName(this.#name));
    this.#announce.postMessage('enqueued');
  }

  /**
   * Calls `onChange` when a job may have become claimable in this database (docs/contract.md
   * section 11, waking): after an enqueue, enqueueMany, revive, release or fail of this store or
   * of another page or worker of the origin, announced on the database's BroadcastChannel
   * (`leasefence:NAME`). Answers `{close()}`, or null without BroadcastChannel. JobWorker calls it
   * while it runs (option `wake`).
   */
  watch(onChange) {
    if (typeof onChange !== 'function') {
      throw makeError('invalid_argument', 'watch(onChange): `onChange` must be a function');
    }
    if (this.#name === null || typeof BroadcastChannel === 'undefined') return null;
    const channel = new BroadcastChannel(channelName(this.#name));
    channel.onmessage = () => onChange();
    return { close: () => channel.close() };
  }

  #send(method, args) {
    if (this.#failed) return Promise.reject(this.#failed);
    if (!this.#worker) return Promise.reject(makeError('storage', 'the store is closed; open it again'));
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, method, args });
    });
  }

  // enqueue, state, claim, renew, complete, release, claimNext, claimMany and fenced (its list of
  // statements; the callback form is Node's) come from the core.
  // One tab holds one connection (OPFS access handles are exclusive), so claimMany's owners claim
  // one after another on it: the same answers as Node's threads, without the parallelism.

  /**
   * Sends the request `method` with `args` to the store's worker and resolves to its answer (or
   * rejects with a LeaseError): how a subclass reaches the methods its own worker adds. This
   * store's worker answers none beyond the methods above: any other is `invalid_argument`.
   */
  request(method, args = []) {
    if (typeof method !== 'string' || !Array.isArray(args)) {
      return Promise.reject(makeError('invalid_argument',
        'request(method, args): `method` must be a string and `args` an array'));
    }
    return this.#send(method, args);
  }

  /**
   * The fence guard, in a table of this database (`leasefence_guard`): runs `statements`
   * (`[{sql, params}]`) in one transaction if `fence` is at least the highest accepted for `key`:
   * `{accepted: true, rows}` (the rows of the last statement) or `{accepted: false, current}`
   * with nothing written. Node's `FenceGuard.write` in the browser.
   */
  guardWrite(key, fence, statements) { return this.#send('guardWrite', [key, fence, statements]); }

  /** This origin's storage, from the worker: `{usage, quota, persisted}` (bytes; null if unknown). */
  storageEstimate() { return this.#send('storage', []); }

  /** Closes the database and stops the worker, freeing the OPFS handles for other tabs. */
  async close() {
    if (!this.#worker) return;
    try {
      await this.#send('close', []);
    } finally {
      this.#worker.terminate();
      this.#worker = null;
      this.#announce?.close();
      this.#announce = null;
    }
  }
}

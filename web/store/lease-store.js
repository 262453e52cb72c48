// The browser face of leasefence (docs/contract.md section 5), for pages: every call crosses to the
// store's dedicated worker, so every method returns a Promise. Errors carry `code` like in Node.

function makeError(code, message) {
  return Object.assign(new Error(message), { code });
}

export class LeaseStore {
  #worker;
  #pending = new Map();
  #nextId = 1;
  #failed = null;

  /** Why the last operation returned false or null (`{code, ...}`), or null. */
  lastReason = null;

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
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    const store = new LeaseStore(worker);
    // Right after a reload the previous page's worker may still hold the OPFS handles for a
    // moment: wait a little before telling the user that another tab holds the database.
    for (let attempt = 0; ; attempt++) {
      try {
        await store.#send('open', [name]);
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
    this.#worker = worker;
    worker.onmessage = (event) => {
      const { id, ok, value, error } = event.data;
      const pending = this.#pending.get(id);
      if (!pending) return;
      this.#pending.delete(id);
      if (ok) pending.resolve(value);
      else pending.reject(makeError(error.code, error.message));
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.#failed = makeError('storage', `the store's worker failed: ${event.message || 'could not start'}`);
      for (const pending of this.#pending.values()) pending.reject(this.#failed);
      this.#pending.clear();
    };
    this.withReason = Object.freeze({
      enqueue: (job) => this.#call('enqueue', [job]),
      state: (job) => this.#call('state', [job]),
      claim: (job, owner, now, ttl) => this.#call('claim', [job, owner, now, ttl]),
      renew: (job, owner, fence, now, ttl) => this.#call('renew', [job, owner, fence, now, ttl]),
      complete: (job, owner, fence, now, result) => this.#call('complete', [job, owner, fence, now, result]),
      release: (job, owner, fence) => this.#call('release', [job, owner, fence]),
      claimNext: (owner, now, ttl) => this.#call('claimNext', [owner, now, ttl]),
      claimMany: (job, owners, now, ttl) => this.#call('claimMany', [job, owners, now, ttl]),
    });
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

  async #call(op, args) {
    const answer = await this.#send('call', [op, args]);
    this.lastReason = answer.reason ?? null;
    return { value: answer.value, reason: answer.reason ?? null };
  }

  async enqueue(job) { return (await this.#call('enqueue', [job])).value; }
  async state(job) { return (await this.#call('state', [job])).value; }
  async claim(job, owner, now, ttl) { return (await this.#call('claim', [job, owner, now, ttl])).value; }
  async renew(job, owner, fence, now, ttl) { return (await this.#call('renew', [job, owner, fence, now, ttl])).value; }
  async complete(job, owner, fence, now, result) {
    return (await this.#call('complete', [job, owner, fence, now, result])).value;
  }
  async release(job, owner, fence) { return (await this.#call('release', [job, owner, fence])).value; }
  async claimNext(owner, now, ttl) { return (await this.#call('claimNext', [owner, now, ttl])).value; }
  /**
   * One tab holds one connection (OPFS access handles are exclusive), so the owners' claims run
   * one after another on it: the same answers as Node's threads, without the parallelism.
   */
  async claimMany(job, owners, now, ttl) { return (await this.#call('claimMany', [job, owners, now, ttl])).value; }

  /** Reads a string the application stored next to the jobs, or null. */
  appGet(key) { return this.#send('appGet', [key]); }
  /** Stores a string next to the jobs. */
  appSet(key, value) { return this.#send('appSet', [key, value]); }
  /** This origin's storage, from the worker: `{usage, quota, persisted}` (bytes; null if unknown). */
  storageEstimate() { return this.#send('storage', []); }
  /** Erases every job and the application data: a brand-new database (playground reset). */
  eraseEverything() { return this.#send('erase', []); }

  /** Closes the database and stops the worker, freeing the OPFS handles for other tabs. */
  async close() {
    if (!this.#worker) return;
    try {
      await this.#send('close', []);
    } finally {
      this.#worker.terminate();
      this.#worker = null;
    }
  }
}

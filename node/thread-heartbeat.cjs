'use strict';
// The main thread's side of `heartbeat: 'thread'`: starts the heartbeat thread
// (heartbeat-thread.cjs) and turns its messages into the runtime's heartbeat events.
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { engine } = require('./engine.cjs');
const { LeaseError } = require('../web/store/core.js');
const { storageError } = require('./errors.cjs');

/**
 * The heartbeat source of `heartbeat: 'thread'`: one worker thread (heartbeat-thread.cjs) with its
 * own connection renews the leases of one JobWorker, so a handler that blocks this thread keeps
 * its lease (and a hung one keeps it too: that is the price). Started with the first job, closed
 * when run() returns; the thread keeps the process alive only while it holds a lease.
 */
class ThreadHeartbeat {
  #file;
  #busyTimeoutMs;
  #writeGate;
  #thread = null;
  #leases = new Map(); // id -> {events, onStopped}
  #nextId = 1;
  #ready = null; // settles once the thread has opened its connection

  constructor(file, busyTimeoutMs, writeGate = true) {
    this.#file = file;
    this.#busyTimeoutMs = busyTimeoutMs;
    this.#writeGate = writeGate;
  }

  #ensure() {
    if (this.#thread) return this.#thread;
    const thread = new Worker(path.join(__dirname, 'heartbeat-thread.cjs'), {
      workerData: { file: this.#file, busyTimeoutMs: this.#busyTimeoutMs, writeGate: this.#writeGate },
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
      else if (message.type === 'error') lease.events.error(new LeaseError(message.error.message, { code: message.error.code, retryable: Boolean(message.error.retryable) }), message.retryIn);
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
      engine().breakDeadThreadLock(this.#file, thread.threadId);
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

module.exports = { ThreadHeartbeat };

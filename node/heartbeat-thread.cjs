'use strict';
// The heartbeat of a JobWorker made with `heartbeat: 'thread'`: a worker thread with its own
// connection to the file, renewing the worker's lease on its own timers, so a handler that blocks
// the main thread keeps its lease. Messages from the main thread: {type: 'start', id, job, owner,
// fence, end, ttl, every}, {type: 'stop', id}, {type: 'close'}. To it: {type: 'renewed', id,
// end}, {type: 'lost', id, reason, message}, {type: 'error', id, error}, {type: 'stopped', id}.
const { workerData, parentPort } = require('node:worker_threads');
const wasm = require('./wasm/leasefence.js');

const store = wasm.WasmStore.openFile(workerData.file, workerData.busyTimeoutMs);
const leases = new Map();
const now = () => Date.now() / 1000;

function end(lease, type, extra = {}) {
  clearTimeout(lease.timer);
  clearTimeout(lease.watchdog);
  leases.delete(lease.id);
  parentPort.postMessage({ type, id: lease.id, ...extra });
}

function watch(lease) {
  clearTimeout(lease.watchdog);
  lease.watchdog = setTimeout(() => {
    if (leases.has(lease.id)) end(lease, 'lost', { reason: { code: 'expired', until: lease.end }, message: 'the lease ended before a renew got through' });
  }, Math.min(0x7fffffff, Math.max(0, lease.end - now()) * 1000)); // capped where timers overflow
}

function tick(lease) {
  if (!leases.has(lease.id)) return;
  const at = now();
  if (at >= lease.end) {
    end(lease, 'lost', { reason: { code: 'expired', until: lease.end }, message: 'the lease ended before it could be renewed (the process was paused)' });
    return;
  }
  let answer;
  try {
    answer = store.call('renew', [lease.job, lease.owner, lease.fence, at, lease.ttl]);
  } catch (error) {
    if (error.code !== 'storage') {
      end(lease, 'lost', { reason: null, message: `the renew failed: ${error.message}` });
      return;
    }
    // A busy file: again soon, within the lease; the watchdog tells the end.
    parentPort.postMessage({ type: 'error', id: lease.id, error: { code: error.code, message: error.message, retryable: Boolean(error.retryable) } });
    // The waits are the crate's rules (crate/src/rules/worker.rs), as for the Rust heartbeat.
    lease.failedRenews += 1;
    lease.timer = setTimeout(() => tick(lease), wasm.workerRenewRetryDelay(lease.failedRenews, lease.every) * 1000);
    return;
  }
  if (answer.value) {
    lease.end = at + lease.ttl;
    lease.failedRenews = 0;
    parentPort.postMessage({ type: 'renewed', id: lease.id, end: lease.end });
    watch(lease);
    lease.timer = setTimeout(() => tick(lease), Math.max(0, wasm.workerNextRenewAt(at, lease.every) - now()) * 1000);
  } else {
    end(lease, 'lost', { reason: answer.reason ?? null, message: `the store refused the renew (${answer.reason?.code ?? 'no reason'})` });
  }
}

parentPort.on('message', (message) => {
  if (message.type === 'start') {
    const lease = { ...message, failedRenews: 0, timer: null, watchdog: null };
    leases.set(lease.id, lease);
    watch(lease);
    lease.timer = setTimeout(() => tick(lease), lease.every * 1000);
  } else if (message.type === 'stop') {
    const lease = leases.get(message.id);
    if (lease) end(lease, 'stopped');
    else parentPort.postMessage({ type: 'stopped', id: message.id });
  } else if (message.type === 'close') {
    for (const lease of leases.values()) end(lease, 'stopped');
    store.close();
    store.free();
    parentPort.close();
  }
});
parentPort.postMessage({ type: 'ready' });

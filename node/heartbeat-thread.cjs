'use strict';
// The heartbeat of a JobWorker made with `heartbeat: 'thread'`: a worker thread with its own
// connection to the file, renewing the worker's leases on its own timers, so a handler that blocks
// the main thread keeps its lease. Lease keeping itself (the renew schedule, busy retries, the
// watchdog, the lost-lease signal) is the runtime's keepLease (web/store/job-worker/heartbeat.js),
// the same as on the event loop; this file drives it from here and reports by message.
// Messages from the main thread: {type: 'start', id, job, owner, fence, end, ttl, every},
// {type: 'stop', id}, {type: 'close'}. To it: {type: 'renewed', id, end}, {type: 'lost', id,
// reason, message}, {type: 'error', id, error, retryIn}, {type: 'stopped', id}.
const { workerData, parentPort } = require('node:worker_threads');
const { engine } = require('./engine.cjs');
const { keepLease } = require('../web/store/job-worker/heartbeat.js');
const { wasmRuleName, workerRulesOver } = require('../web/store/core.js');

// The renew times are the crate's rules on this thread's engine, as on the main thread.
const rules = workerRulesOver((rule, args) => engine().rule(wasmRuleName(rule), args));

const store = engine().openStore(workerData.file, workerData.busyTimeoutMs, false, {}, workerData.writeGate);
const beats = new Map(); // id -> {stop}: the leases kept now

/** Stops keeping lease `id` and tells the main thread why (`lost` or `stopped`). */
function finish(id, type, extra = {}) {
  beats.get(id)?.stop();
  beats.delete(id);
  parentPort.postMessage({ type, id, ...extra });
}

function start({ id, job, owner, fence, end, ttl, every }) {
  const beat = { stop: () => {} };
  beats.set(id, beat);
  beat.stop = keepLease({
    // This thread's clock is real time (the main thread's may be driven by hand): the first renew
    // is due `every` after the lease reached it.
    claimedAt: Date.now() / 1000,
    end,
    ttl,
    every,
    rules,
    clock: () => Date.now() / 1000,
    renew: (now) => store.call('renew', [job, owner, fence, now, ttl]),
    active: () => beats.get(id) === beat,
    events: {
      renewed: (until) => parentPort.postMessage({ type: 'renewed', id, end: until }),
      lost: (reason, message) => finish(id, 'lost', { reason, message }),
      error: (error, retryIn) =>
        parentPort.postMessage({ type: 'error', id, retryIn, error: { code: error.code, message: error.message, retryable: Boolean(error.retryable) } }),
    },
  }).stop;
}

parentPort.on('message', (message) => {
  if (message.type === 'start') start(message);
  else if (message.type === 'stop') finish(message.id, 'stopped');
  else if (message.type === 'close') {
    for (const id of [...beats.keys()]) finish(id, 'stopped');
    store.close();
    store.free();
    parentPort.close();
  }
});
parentPort.postMessage({ type: 'ready' });

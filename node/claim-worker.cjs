'use strict';
// One claim of LeaseStore.claimMany: its own thread, its own connection, released by the gate
// together with every other owner's claim.
const { workerData, parentPort } = require('node:worker_threads');
const { engine } = require('./engine.cjs');

const { file, busyTimeoutMs, writeGate, job, owner, now, ttl, gate } = workerData;
let store;
try {
  // The same engine as the main thread's (chosen by the same environment).
  store = engine().openStore(file, busyTimeoutMs, false, {}, writeGate);
} catch (error) {
  parentPort.postMessage({ type: 'answer', error: { code: error.code, message: error.message, retryable: Boolean(error.retryable) } });
}
if (store) {
  parentPort.postMessage({ type: 'ready' });
  Atomics.wait(gate, 1, 0);
  try {
    const answer = store.call('claim', [job, owner, now, ttl]);
    parentPort.postMessage({ type: 'answer', value: answer.value, reason: answer.reason ?? null });
  } catch (error) {
    parentPort.postMessage({ type: 'answer', error: { code: error.code, message: error.message, retryable: Boolean(error.retryable) } });
  } finally {
    store.close();
    store.free();
  }
}

'use strict';
// leasefence for Node: the Rust crate, run natively (the Node-API addon) or compiled to wasm
// (node/engine.cjs chooses), on an ordinary SQLite file shared by processes and worker threads. The contract, argument checks and error codes live in Rust; node/
// adds the class shape of docs/contract.md section 5 and the worker threads:
//
//   lease-store.cjs       LeaseStore (claimMany on worker threads: claim-worker.cjs)
//   job-worker.cjs        JobWorker, with `heartbeat: 'thread'`
//   thread-heartbeat.cjs  the main thread's side of that heartbeat (heartbeat-thread.cjs)
//   fence-guard.cjs       FenceGuard
//   errors.cjs            the LeaseErrors made here
//
// scripts/package.sh bundles this file (esbuild) with the rest of node/ and the JavaScript shared
// with the browser (web/store/) into the package's index.cjs; `./wasm/leasefence.js` stays a file
// of its own.
const { LeaseError } = require('../web/store/core.js');
const { LeaseLostError, ManualClock, fixedBackoff, exponentialBackoff, fencedResult } = require('../web/store/job-worker.js');
const { LeaseStore } = require('./lease-store.cjs');
const { JobWorker } = require('./job-worker.cjs');
const { FenceGuard } = require('./fence-guard.cjs');

module.exports = { LeaseStore, FenceGuard, JobWorker, ManualClock, LeaseError, LeaseLostError, fixedBackoff, exponentialBackoff, fencedResult };

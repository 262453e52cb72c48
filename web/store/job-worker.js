// The worker runtime of leasefence (docs/contract.md section 9), shared by Node (bundled into the
// npm package by scripts/package.sh) and the browser (served as is): a loop over claimNext that
// renews the lease while a handler runs, tells the handler through an AbortSignal the moment the
// lease is lost, completes on success, fails with backoff, and makes a job dead at its maximum
// number of attempts. The parts, by responsibility, are in ./job-worker/:
//
//   loop.js           JobWorker: claim, run the handler, complete / fail / release
//   options.js        JobWorker's options, checked
//   heartbeat.js      lease keeping (renews, busy retries, watchdog, loss), one rule for the event
//                     loop and for Node's heartbeat thread (node/heartbeat-thread.cjs)
//   lease.js          the held lease: the handler's AbortSignal, its timers, renewals in flight
//   attempt.js        what the attempt rules read: did the previous attempt fail
//   backoff.js        fixedBackoff, exponentialBackoff
//   fenced-result.js  a handler's result: as text, or fencedResult (writes with the completion)
//   errors.js         LeaseLostError and the runtime's other errors (all LeaseErrors)
//   timers.js         timers in seconds on the worker's clock; ManualClock, a clock moved by hand
export { JobWorker } from './job-worker/loop.js';
export { LeaseError, LeaseLostError } from './job-worker/errors.js';
export { fixedBackoff, exponentialBackoff } from './job-worker/backoff.js';
export { fencedResult } from './job-worker/fenced-result.js';
export { ManualClock } from './job-worker/timers.js';

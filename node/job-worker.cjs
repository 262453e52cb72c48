'use strict';
// JobWorker for Node: the shared worker runtime (web/store/job-worker.js) with the Node-only
// option `heartbeat: 'thread'`.
const os = require('node:os');
const { JobWorker: CoreJobWorker } = require('../web/store/job-worker.js');
const { invalidArgument } = require('./errors.cjs');
const { LeaseStore, busyTimeoutOf, exclusiveOf, writeGateOf } = require('./lease-store.cjs');
const { ThreadHeartbeat } = require('./thread-heartbeat.cjs');

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
      if (exclusiveOf(store)) {
        throw invalidArgument(
          "JobWorker: `heartbeat: 'thread'` renews on a connection of its own, which a store opened with `exclusive: true` admits none of; leave `heartbeat` out, or open the store without `exclusive`",
        );
      }
      if (options.clock !== undefined) {
        throw invalidArgument("JobWorker: `heartbeat: 'thread'` renews by the system clock; leave `clock` out");
      }
      options = { ...options, heartbeat: new ThreadHeartbeat(store.path, busyTimeoutOf(store), writeGateOf(store)) };
    }
    // The worker registry shows the machine and the process.
    if (options !== null && typeof options === 'object' && options.host === undefined) options = { ...options, host: os.hostname() };
    super(store, options);
  }
}

module.exports = { JobWorker };

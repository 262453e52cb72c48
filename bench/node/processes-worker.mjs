// One worker process of the `processes` section's `npm` case (bench/native/src/processes.rs
// spawns W of these on one file): the native `worker` mode's loop, with the npm package. Opens the
// store with `LeaseStore.open`, prints `ready`, waits for a line on stdin, then claims and
// completes one job at a time until nothing is left; prints one JSON line with its cycles'
// latencies (ms) and its end (seconds after its release), as the native worker does.
//
// A cycle's latency starts at the claimNext that got the job and ends when its complete was
// granted, retries of that complete included; a busy error (retryable: the lock stayed taken past
// the busy timeout) decides nothing, so it is counted and the call made again, as natively.
//
//   node bench/node/processes-worker.mjs --db FILE [--owner w0] [--busy-timeout-ms 10000] [--write-gate on|off]
//   (LEASEFENCE_PKG: another package; the busy timeout is the package's default, as natively)
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { LeaseStore } = require(process.env.LEASEFENCE_PKG ?? path.join(repo, 'target/npm/leasefence'));

// The native worker's clock and lease: leases never end during a drain.
const NOW = 1000;
const TTL = 30;

const { values } = parseArgs({
  options: {
    db: { type: 'string' },
    owner: { type: 'string', default: 'w' },
    'busy-timeout-ms': { type: 'string', default: '10000' },
    // on: the package's default, writers queue on the write gate; off: LeaseStore.open's `writeGate: false`.
    'write-gate': { type: 'string', default: 'on' },
  },
});
if (!values.db) throw new Error('processes-worker: --db FILE is required');
if (!['on', 'off'].includes(values['write-gate'])) throw new Error('processes-worker: --write-gate on|off');
const owner = values.owner;

/** Runs `call` until it answers without a busy error; returns its answer and the busy errors. */
function retried(call) {
  for (let errors = 0; ; errors++) {
    try {
      return { value: call(), errors };
    } catch (error) {
      if (!error?.retryable) throw error;
    }
  }
}

// Opening writes too (the schema check, the journal mode), so many workers starting at once meet
// a busy file here: 256 Node processes on 2 cores kept some busy through 10 tries of 10 s. That is
// before the release and counts nowhere, so a busy open is tried again for up to 30 minutes.
let store;
const openBy = Date.now() + 30 * 60 * 1000;
while (!store) {
  try {
    store = await LeaseStore.open(values.db, {
      busyTimeout: Number(values['busy-timeout-ms']) / 1000,
      writeGate: values['write-gate'] === 'on',
    });
  } catch (error) {
    if (!error?.retryable || Date.now() > openBy) throw error;
  }
}

process.stdout.write('ready\n');
await new Promise((resolve) => {
  let text = '';
  const onData = (chunk) => {
    text += chunk;
    if (!text.includes('\n')) return;
    process.stdin.off('data', onData);
    process.stdin.destroy();
    resolve();
  };
  process.stdin.setEncoding('utf8').on('data', onData);
});

const released = performance.now();
const latencies = [];
let errors = 0;
for (;;) {
  let began;
  const claim = retried(() => {
    began = performance.now();
    return store.claimNext(owner, NOW, TTL);
  });
  errors += claim.errors;
  const claimed = claim.value;
  if (!claimed) break;
  const done = retried(() => store.complete(claimed.job, owner, claimed.fence, NOW + 1, 'ok'));
  errors += done.errors;
  if (!done.value) throw new Error(`complete of ${claimed.job} refused (the lease should be current: nothing else claims it)`);
  latencies.push(performance.now() - began);
}
const endS = (performance.now() - released) / 1000;
process.stdout.write(`${JSON.stringify({ errors, latencies_ms: latencies, end_s: endS })}\n`);
store.close();

// A Node process whose store runs on the engine LEASEFENCE_ENGINE names, driven one request at a
// time: it prints {ready, engine} once open, then for each line {op, args, grouped?} read from
// standard input one line {value, reason} or {error: {code, message}}. `grouped` sends the call
// through `store.grouped` (a Promise, off the event loop on the native engine); the line then also
// carries `lagMs`, the longest the event loop went without running a 10 ms timer meanwhile. The op
// `runWorker` (args: [options]) runs a JobWorker with those options until nothing is left to do,
// each handler answering 'done', and answers {handled: [{job, at}] in the order handled (at: Unix
// seconds), stats},
// with `lagMs` measured the same way.
import readline from 'node:readline';

import { eventLoopLag, loadPackage } from './helpers.mjs';

const { LeaseStore, JobWorker } = loadPackage();
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const store = await LeaseStore.open(process.argv[2]);
print({ ready: true, engine: store.engine });
for await (const line of readline.createInterface({ input: process.stdin })) {
  const { op, args, grouped } = JSON.parse(line);
  const lag = eventLoopLag();
  try {
    const { value, reason } = op === 'runWorker' ? { value: await runWorker(args[0]) } : await (grouped ? store.grouped : store).withReason[op](...args);
    print({ value, reason: reason ?? null, lagMs: lag.stop() });
  } catch (error) {
    print({ error: { code: error.code, message: error.message } });
  } finally {
    lag.stop();
  }
}
store.close();

/** A JobWorker with `options` until nothing is queued, scheduled or leased: what it handled, and its counters. */
async function runWorker(options) {
  const worker = new JobWorker(store, options);
  const handled = [];
  await worker.run(
    async (job) => {
      handled.push({ job, at: Date.now() / 1000 });
      return 'done';
    },
    { untilDrained: true },
  );
  return { handled, stats: worker.stats };
}

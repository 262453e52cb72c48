// An idle JobWorker in its own process, for tests/node/waking.test.mjs and bench/node/waking.mjs
// (not a test file itself):
//   node waking-child.mjs DB OWNER IDLE WAKE
// polls every IDLE seconds; WAKE 'true' or 'false' is JobWorker's `wake`. Prints {ready} once its
// first claim found nothing, then {started, at} for each job it handles (at: Unix seconds), and
// {stats} on SIGTERM.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { LeaseStore, JobWorker } = require(process.env.LEASEFENCE_PKG);

const [db, owner, idleText, wakeText] = process.argv.slice(2);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const store = await LeaseStore.open(db);
const worker = new JobWorker(store, { owner, ttl: 30, idle: Number(idleText), wake: wakeText === 'true' });
process.on('SIGTERM', () => worker.stop());
// Ready once run() has looked for a job and found none (the first idle wait has begun). The worker
// claims through `store.grouped` on the native engine (off the event loop), else through the store.
let ready = false;
const claimer = store.engine === 'native' ? store.grouped : store;
const claimNext = claimer.claimNext.bind(claimer);
claimer.claimNext = async (...args) => {
  const claimed = await claimNext(...args);
  if (!ready && claimed === null) {
    ready = true;
    setImmediate(() => print({ ready: owner }));
  }
  return claimed;
};
const stats = await worker.run(async (job) => {
  print({ started: job, at: Date.now() / 1000 });
  return 'done';
});
print({ stats });
store.close();

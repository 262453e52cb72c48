// A JobWorker whose clock runs a minute behind (a machine with a skewed clock), for the
// dashboard's stalled-worker test: it serves the queue `skew`, holds its job until the file
// `RELEASE` exists, then completes it. By its own clock its lease still runs, so the runtime
// writes; the store has given the job to another worker meanwhile and refuses the late write,
// which the worker counts and reports in its last beat. Prints its counters as JSON at the end.
// argv: PKG DB RELEASE OWNER QUEUE
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const [pkg, db, release, owner, queue] = process.argv.slice(2);
const { LeaseStore, JobWorker } = createRequire(import.meta.url)(pkg);
const store = await LeaseStore.open(db);
const worker = new JobWorker(store, {
  owner,
  ttl: 20,
  queues: [queue],
  clock: () => Date.now() / 1000 - 60,
});
const stats = await worker.run(async () => {
  console.log(JSON.stringify({ holding: true }));
  while (!existsSync(release)) await new Promise((resolve) => setTimeout(resolve, 50));
  return 'C, a minute late';
}, { untilEmpty: true });
console.log(JSON.stringify(stats));
store.close();

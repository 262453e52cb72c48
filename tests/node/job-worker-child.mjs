// A JobWorker in its own process, for tests/node/job-worker.test.mjs (not a test file itself).
//   node job-worker-child.mjs held   DB OWNER TTL            handles jobs until SIGTERM; each handler
//                                                          waits for its signal, then returns 'A'
//   node job-worker-child.mjs poison DB OWNER TTL MAX HOW   handles jobs until none is claimable; a
//                                                          job named poison* kills this process
//                                                          (HOW: exit or sigkill)
// Prints JSON lines: {started}, {aborted}, and {stats} at the end.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { LeaseStore, JobWorker } = require(process.env.LEASEFENCE_PKG);

const [mode, db, owner, ttlText, maxText, how] = process.argv.slice(2);
const ttl = Number(ttlText);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const store = await LeaseStore.open(db, { busyTimeout: 0.05 });

if (mode === 'held') {
  // Renews late in the lease: the test pauses this process between renews, never holding the file's lock.
  const worker = new JobWorker(store, { owner, ttl, heartbeatEvery: ttl * 0.75, idle: 0.01 });
  process.on('SIGTERM', () => worker.stop());
  const stats = await worker.run(async (job, { signal, fence }) => {
    print({ started: job, fence, at: Date.now() / 1000 });
    await new Promise((resolve) => {
      const giveUp = setTimeout(resolve, 20_000);
      signal.addEventListener('abort', () => {
        clearTimeout(giveUp);
        resolve();
      });
    });
    print({
      aborted: job,
      fence,
      signalled: signal.aborted,
      at: Date.now() / 1000,
      code: signal.reason?.code ?? null,
      reason: signal.reason?.reason ?? null,
    });
    return 'A'; // must be discarded: the lease is gone
  });
  print({ stats });
} else if (mode === 'poison') {
  const worker = new JobWorker(store, { owner, ttl, maxAttempts: Number(maxText), backoff: 0, idle: 0.01 });
  const stats = await worker.run(
    async (job, { attempt }) => {
      print({ started: job, attempt });
      if (job.startsWith('poison')) {
        if (how === 'exit') process.exit(3);
        process.kill(process.pid, 'SIGKILL');
      }
      return `ok:${job}`;
    },
    { untilEmpty: true },
  );
  print({ stats });
} else {
  throw new Error(`unknown mode ${mode}`);
}
store.close();

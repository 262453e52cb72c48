// A child for exclusive.test.mjs (not a test file itself).
//
//   node exclusive-child.mjs open  DB EXCLUSIVE(0|1) [busyTimeoutMs]
//       tries to open DB; prints {"opened": true, "jobs": n, "ms": ...} (and closes) or
//       {"error": {code, message}, "ms": ...}
//   node exclusive-child.mjs owner DB
//       opens DB with exclusive: true and runs until killed, writing every answer to stdout
//       (fs.writeSync) before it does anything else:
//         {"ready": pid}                             opened
//         {"batch": n, "jobs": [ids]}                enqueueMany of 3 jobs answered (one commit)
//         {"done": [job, fence, result]}             claimNext + complete of that job answered
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKG = process.env.LEASEFENCE_PKG || path.resolve(HERE, '../../target/npm/leasefence');
const require = createRequire(import.meta.url);
const { LeaseStore } = require(PKG);

const [mode, db, flag, timeout] = process.argv.slice(2);
const say = (obj) => fs.writeSync(1, `${JSON.stringify(obj)}\n`);

if (mode === 'open') {
  const started = performance.now();
  try {
    const store = await LeaseStore.open(db, { exclusive: flag === '1', busyTimeout: Number(timeout ?? 10_000) / 1000 });
    const jobs = store.stats(1e9);
    store.close();
    say({ opened: true, stats: jobs, ms: performance.now() - started });
  } catch (e) {
    say({ error: { code: e.code, message: e.message }, ms: performance.now() - started });
  }
} else if (mode === 'owner') {
  const store = await LeaseStore.open(db, { exclusive: true });
  say({ ready: process.pid });
  for (let n = 0; ; n++) {
    const jobs = [0, 1, 2].map((i) => `b${n}-${i}`);
    const added = store.enqueueMany(jobs.map((job) => ({ job, payload: `p-${job}` })));
    if (added.every(Boolean)) say({ batch: n, jobs });
    const claimed = store.claimNext('owner', n + 1, 1_000_000);
    if (claimed) {
      const result = `r-${claimed.job}`;
      if (store.complete(claimed.job, 'owner', claimed.fence, n + 1, result)) say({ done: [claimed.job, claimed.fence, result] });
    }
  }
} else {
  throw new Error(`exclusive-child.mjs: unknown mode ${mode}`);
}

// One worker of tests/node/lost-increments.test.mjs (a process of its own): takes turns on the
// lease of the job `counter`, reads the counter, sometimes stalls past the lease, writes
// counter + 1 back and releases; prints `ACKED n STALLS s` at the end.
// Usage: node counter-worker.mjs JSON  with {variant, dir, me, target, seed, deadline, ttl, pkg}.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';

const spec = JSON.parse(process.argv[2]);
const require = createRequire(import.meta.url);
const { LeaseStore, FenceGuard } = require(spec.pkg);
const JOB = 'counter';
const now = () => Date.now() / 1000;
const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

let rng = spec.seed | 1;
const next = () => {
  rng ^= rng << 13;
  rng ^= rng >>> 17;
  rng ^= rng << 5;
  return rng >>> 0;
};

const store = await LeaseStore.open(path.join(spec.dir, 'leases.db'));
const guard = spec.variant === 'guard' ? await FenceGuard.open(path.join(spec.dir, 'counter.db')) : null;
const file = path.join(spec.dir, 'counter.json');

function read(fence) {
  if (spec.variant === 'unfenced') return JSON.parse(fs.readFileSync(file, 'utf8')).n;
  if (spec.variant === 'guard') {
    const answer = guard.write(JOB, fence, [{ sql: 'SELECT n FROM counter' }]);
    return answer.accepted ? answer.rows[0].n : null;
  }
  let n = null;
  store.fenced(JOB, spec.me, fence, now(), (tx) => {
    n = tx.get('SELECT n FROM counter').n;
  });
  return n;
}

function write(fence, n) {
  if (spec.variant === 'unfenced') {
    // Atomic replace: a reader never sees half a file.
    fs.writeFileSync(`${file}.${spec.me}`, JSON.stringify({ n }));
    fs.renameSync(`${file}.${spec.me}`, file);
    return true;
  }
  const statements = [{ sql: 'UPDATE counter SET n = $1', params: [n] }];
  if (spec.variant === 'guard') return guard.write(JOB, fence, statements).accepted;
  return store.fenced(JOB, spec.me, fence, now(), statements);
}

let acked = 0;
let stalls = 0;
while (acked < spec.target && now() < spec.deadline) {
  const fence = store.claim(JOB, spec.me, now(), spec.ttl);
  if (fence === null) {
    sleep(1 + (next() % 2));
    continue;
  }
  const n = read(fence);
  if (n === null) continue;
  if (next() % 100 < 8) {
    stalls += 1;
    sleep(Math.round(spec.ttl * 1000 * (1.5 + (next() % 250) / 100)));
  }
  if (write(fence, n + 1)) acked += 1;
  store.release(JOB, spec.me, fence);
}
store.close();
guard?.close();
process.stdout.write(`ACKED ${acked} STALLS ${stalls}\n`);

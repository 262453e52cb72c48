// The component's per-operation cost in Node through jco (target/component-js, built by
// `npm run component`), the run of bench/component/ops.py: N jobs enqueued, then each claimed with
// claimNext and completed, each operation its own commit, on a file in target/ (real fsync).
//   node bench/component/ops-node.mjs [N]        LEASEFENCE_BENCH_DIR=/dev/shm for no fsync
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { _setPreopens } from '@bytecodealliance/preview2-shim/filesystem';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const n = Number(process.argv[2] ?? 1000);
const dir = fs.mkdtempSync(path.join(process.env.LEASEFENCE_BENCH_DIR ?? path.join(root, 'target'), 'component-ops-'));
_setPreopens({ '/data': dir });
const { leases } = await import(pathToFileURL(path.join(root, 'target/component-js/leasefence.js')));
const store = leases.Store.open('/data/q.db');
const start = process.hrtime.bigint();
for (let i = 0; i < n; i++) if (!store.enqueue({ job: `j${i}` })) throw new Error('enqueue refused');
for (let i = 0; i < n; i++) {
  const job = store.claimNext('w', 1, 60, undefined);
  const done = store.complete(job.job, 'w', job.fence, 2, 'ok');
  if (done.tag !== 'ok') throw new Error(`complete refused: ${JSON.stringify(done)}`);
}
const us = Number(process.hrtime.bigint() - start) / 1000 / (3 * n);
console.log(`component, typed store (Node, jco): ${us.toFixed(0)} us/op over ${3 * n} operations`);
fs.rmSync(dir, { recursive: true, force: true });

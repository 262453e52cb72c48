// Multi-process stress on one file: child Node processes (and worker threads inside processes)
// claim, renew, complete, release and come back stale, each on its own logical clock with ttl of
// a few ticks, so leases expire and are stolen. Every grant and every successful complete is
// reported; the parent checks no (job, fence) was granted twice, the fences of every job are
// exactly 1..fence, nothing was completed twice, the final rows agree with the completes, and
// PRAGMA integrity_check (Python's sqlite3) is ok.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';

import { HERE, jsonLines, runNode, tempDir } from './helpers.mjs';
import { POOL, checkRun, seedPool } from './stress-lib.mjs';

const dir = tempDir();
const WORKER = path.join(HERE, 'stress-worker.mjs');

async function runWorkers(db, configs) {
  const started = performance.now();
  const runs = await Promise.all(configs.map((c) => runNode(WORKER, [JSON.stringify({ db, pool: POOL, ...c })])));
  const ms = performance.now() - started;
  const reports = [];
  for (const [i, run] of runs.entries()) {
    assert.equal(run.code, 0, `worker ${configs[i].id} exited ${run.code} ${run.signal}: ${run.stderr}`);
    reports.push(...jsonLines(run.stdout));
  }
  return { reports, ms };
}

function summary(label, reports, ms, totals) {
  const ops = reports.reduce((n, r) => n + r.ops, 0);
  const busy = reports.reduce((n, r) => n + r.vfs.busy, 0);
  const counts = {};
  for (const r of reports) for (const [k, v] of Object.entries(r.counts)) counts[k] = (counts[k] ?? 0) + v;
  console.log(
    `${label}: ${reports.length} workers, ${ops} ops in ${(ms / 1000).toFixed(1)} s = ${(ops / (ms / 1000)).toFixed(0)} ops/s; ` +
      `${totals.grants} grants (${totals.stolen} re-claims after expiry or release), ${totals.completes} completes, ` +
      `${counts.stale} stale completes refused, ${counts.renewOk}/${counts.renew} renews, ${counts.releaseOk}/${counts.release} releases, ` +
      `${totals.enqueued} extra enqueues, ${busy} busy waits`,
  );
  return ops;
}

test('4 processes x 3000 operations on one file', { timeout: 150_000 }, async () => {
  const db = path.join(dir, 'processes.db');
  await seedPool(db);
  const configs = [1, 2, 3, 4].map((n) => ({ id: `p${n}`, ops: 3000, seed: n }));
  const { reports, ms } = await runWorkers(db, configs);
  assert.equal(reports.length, 4);
  const totals = checkRun(db, reports);
  const ops = summary('stress, 4 processes', reports, ms, totals);
  assert.equal(ops, 12000);
  assert.ok(totals.grants > 500, `only ${totals.grants} grants`);
  assert.ok(totals.completes > 150, `only ${totals.completes} completes`);
  assert.ok(totals.stolen > 20, `only ${totals.stolen} leases were re-claimed: clocks not interleaving`);
});

test('2 processes x 2 worker_threads x 300 operations on one file', { timeout: 150_000 }, async () => {
  const db = path.join(dir, 'threads.db');
  await seedPool(db);
  const configs = [1, 2].map((n) => ({ id: `q${n}`, ops: 300, seed: 10 + n, threads: 2 }));
  const { reports, ms } = await runWorkers(db, configs);
  assert.equal(reports.length, 4);
  assert.deepEqual(reports.map((r) => r.id).sort(), ['q1.t0', 'q1.t1', 'q2.t0', 'q2.t1']);
  const totals = checkRun(db, reports);
  const ops = summary('stress, 2 processes x 2 threads', reports, ms, totals);
  assert.equal(ops, 1200);
  assert.ok(totals.grants > 250 && totals.completes > 60, JSON.stringify(totals));
});

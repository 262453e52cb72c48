// The worker registry from Node (docs/contract.md, the worker registry): a JobWorker records
// itself in the store (owner, this machine, this process, its counters), sends its beat in the
// transaction of its renewals (`heartbeat`), shows alive while it runs with the leases it holds,
// and gone with its final counters once it stops. A real file, the real package.
import assert from 'node:assert/strict';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';

import { loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore, JobWorker } = loadPackage();

/** The registry's counters: the worker's own, spelled the same (one casing in JavaScript). */
const asStored = (stats) => ({ ...stats });

test('a JobWorker is alive in the registry while it runs, holding its leases, and gone with its counters after', async () => {
  const db = path.join(tempDir(), 'q.db');
  const store = await LeaseStore.open(db);
  store.enqueueMany([{ job: 'slow' }, { job: 'quick' }]);
  // Count the calls that renew: every renewal must carry the worker's beat. The worker gets the
  // store's operations through a plain object that counts them (the store's own are frozen).
  const calls = { renew: 0, heartbeat: 0, leased: 0 };
  const counted = { withReason: {}, workerRules: store.workerRules };
  for (const name of Object.keys(store.withReason)) {
    counted[name] = (...args) => store[name](...args);
    counted.withReason[name] = (...args) => {
      if (name === 'renew') calls.renew += 1;
      if (name === 'heartbeat') {
        calls.heartbeat += 1;
        calls.leased += args[1].length;
      }
      return store.withReason[name](...args);
    };
  }
  const worker = new JobWorker(counted, { owner: 'node-w', ttl: 0.6, heartbeatEvery: 0.15, wake: false });
  let seen = null;
  const run = worker.run(async (job) => {
    if (job !== 'slow') return 'ok';
    await new Promise((resolve) => setTimeout(resolve, 1200));
    // Mid-run, through a second handle on the file: this worker, alive, holding this job.
    const other = await LeaseStore.open(db);
    seen = other.listWorkers(Date.now() / 1000);
    other.close();
    return 'done';
  }, { untilEmpty: true });
  const stats = await run;
  assert.ok(seen, 'the handler looked at the registry');
  const row = seen.find((w) => w.owner === 'node-w');
  assert.ok(row, `node-w is not in the registry: ${JSON.stringify(seen)}`);
  assert.equal(row.alive, true);
  assert.equal(typeof row.lastSeen, 'number', 'a worker row is spelled as JavaScript spells the rest (lastSeen)');
  assert.equal('last_seen' in row, false);
  assert.equal(row.host, os.hostname());
  assert.equal(row.pid, process.pid);
  assert.deepEqual(row.holding.map((l) => l.job), ['slow']);
  assert.ok(row.counters.renewals >= 3, `only ${row.counters.renewals} renewals recorded mid-run`);
  // Every renew went with a beat (one transaction): no plain renew at all.
  assert.equal(calls.renew, 0, `${calls.renew} renewals went without the worker's beat`);
  assert.ok(calls.leased >= 5, `only ${calls.leased} renewals rode with a beat`);
  const after = store.listWorkers(Date.now() / 1000);
  assert.equal(after.length, 1);
  assert.equal(after[0].alive, false, 'the worker stopped but shows alive');
  assert.notEqual(after[0].stopped, null);
  assert.deepEqual(after[0].counters, asStored(stats));
  assert.equal(after[0].counters.completed, 2);
  store.close();
});

test('register: false leaves the registry alone; a bad host is refused by the constructor', async () => {
  const db = path.join(tempDir(), 'q.db');
  const store = await LeaseStore.open(db);
  store.enqueue('a');
  await new JobWorker(store, { ttl: 5, register: false }).run(() => 'ok', { untilEmpty: true });
  assert.deepEqual(store.listWorkers(Date.now() / 1000), []);
  assert.throws(() => new JobWorker(store, { ttl: 5, host: '' }), (e) => e.code === 'invalid_argument' && /host/.test(e.message));
  assert.throws(() => new JobWorker(store, { ttl: 5, pid: -1 }), (e) => e.code === 'invalid_argument' && /pid/.test(e.message));
  store.close();
});

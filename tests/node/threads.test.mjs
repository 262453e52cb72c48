// claimMany on real worker threads: exactly one winner among 32 owners on a fresh job (fence 1,
// 31 nulls), answers in input order, repeated on 5 jobs; all null on held, done and missing jobs;
// [] for no owners. Input order is checked through the winner: the owner at the winning index is
// the one stored, and every loser's reason names that same owner.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { assertIntegrity, loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const dir = tempDir();
const OWNERS = Array.from({ length: 32 }, (_, i) => `owner-${String(i).padStart(2, '0')}`);

test('claimMany with 32 owners on 5 fresh jobs: one fence 1 and 31 nulls each, in input order', { timeout: 120_000 }, async () => {
  const db = path.join(dir, 'many.db');
  const store = await LeaseStore.open(db);
  const winners = [];
  try {
    for (let j = 0; j < 5; j++) {
      const job = `job-${j}`;
      assert.equal(store.enqueue(job), true);
      // A different owner order every time, so "input order" is not the identity by luck.
      const owners = OWNERS.map((o, i) => OWNERS[(i * 5 + j * 3) % OWNERS.length]);
      assert.equal(new Set(owners).size, 32);
      const started = performance.now();
      const { value, reasons } = await store.withReason.claimMany(job, owners, 100 + j, 60);
      const ms = performance.now() - started;
      assert.equal(value.length, 32);
      const won = value.map((v, i) => [v, i]).filter(([v]) => v !== null);
      assert.equal(won.length, 1, `exactly one winner: ${JSON.stringify(value)}`);
      const [fence, index] = won[0];
      assert.equal(fence, 1);
      assert.equal(value.filter((v) => v === null).length, 31);
      const state = store.state(job);
      assert.equal(state.owner, owners[index], 'the owner at the winning index holds the job');
      assert.equal(state.fence, 1);
      assert.equal(state.until, 160 + j);
      assert.equal(reasons[index], null);
      for (const [i, reason] of reasons.entries()) {
        if (i === index) continue;
        assert.deepEqual(reason, { code: 'held', owner: owners[index], until: 160 + j }, `reason of ${owners[i]}`);
      }
      winners.push(owners[index]);
      console.log(`claimMany x32 on ${job}: winner ${owners[index]} (index ${index}) in ${ms.toFixed(0)} ms`);
    }

    // A held job: everybody loses, nothing changes.
    const before = store.state('job-0');
    const held = await store.withReason.claimMany('job-0', OWNERS, 110, 60);
    assert.deepEqual(held.value, Array(32).fill(null));
    assert.ok(held.reasons.every((r) => r.code === 'held' && r.owner === before.owner));
    assert.deepEqual(store.state('job-0'), before);

    // When the lease has expired, one new winner, fence 2.
    const expired = await store.claimMany('job-0', OWNERS.slice(0, 8), 160, 60);
    assert.deepEqual(expired.filter((v) => v !== null), [2]);
    assert.equal(expired.filter((v) => v === null).length, 7);

    // A done job and a missing job: all null.
    const owner = store.state('job-1').owner;
    assert.equal(store.complete('job-1', owner, 1, 102, 'done'), true);
    assert.deepEqual(await store.claimMany('job-1', OWNERS.slice(0, 6), 1000, 60), Array(6).fill(null));
    const done = await store.withReason.claimMany('job-1', ['x', 'y'], 1000, 60);
    assert.deepEqual(done.reasons, [{ code: 'done' }, { code: 'done' }]);
    const missing = await store.withReason.claimMany('nope', ['x', 'y', 'z'], 0, 60);
    assert.deepEqual(missing.value, [null, null, null]);
    assert.deepEqual(missing.reasons, Array(3).fill({ code: 'not_found' }));
    assert.equal(store.state('nope'), null);

    // No owners: no threads, an empty answer.
    assert.deepEqual(await store.claimMany('job-2', [], 1000, 60), []);
    assert.deepEqual(await store.withReason.claimMany('job-2', [], 1000, 60), { value: [], reasons: [] });
    assert.equal(store.state('job-2').fence, 1);
  } finally {
    store.close();
  }
  assert.equal(fs.existsSync(`${db}.lock`), false, 'a worker left the lock behind');
  const info = assertIntegrity(db);
  assert.equal(info.rows.length, 5);
  console.log(`winners: ${winners.join(', ')}`);
});

test('claimMany with the same owner 8 times: one fence, stored for that owner', async () => {
  const db = path.join(dir, 'same.db');
  const store = await LeaseStore.open(db);
  try {
    store.enqueue('j');
    const value = await store.claimMany('j', Array(8).fill('W'), 0, 10);
    assert.deepEqual(value.filter((v) => v !== null), [1]);
    assert.equal(store.state('j').owner, 'W');
  } finally {
    store.close();
  }
});

test('concurrent claimMany calls from one store on different jobs each have exactly one winner', { timeout: 120_000 }, async () => {
  const db = path.join(dir, 'parallel.db');
  const store = await LeaseStore.open(db);
  try {
    for (let j = 0; j < 4; j++) store.enqueue(`p${j}`);
    const answers = await Promise.all(
      [0, 1, 2, 3].map((j) => store.claimMany(`p${j}`, OWNERS.slice(0, 8), 0, 10)),
    );
    for (const [j, value] of answers.entries()) {
      assert.deepEqual(value.filter((v) => v !== null), [1], `p${j}: ${JSON.stringify(value)}`);
      assert.equal(store.state(`p${j}`).owner, OWNERS[value.findIndex((v) => v !== null)]);
    }
  } finally {
    store.close();
  }
  assertIntegrity(db);
});

// The batch methods in Node beyond the shared vectors: the JavaScript spelling of item members
// (a misspelt one is refused, not ignored), the bare methods' answers next to withReason's, and
// the syncs of one commit per call (syncCounter: the wasm VFS's count, or strace's natively): a 1024-job enqueueMany against enqueue
// calls on the same file.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';

import { hasStrace, engine, loadPackage, syncCounter, tempDir } from './helpers.mjs';

const { LeaseStore, LeaseError } = loadPackage();
const dir = tempDir('leasefence-batch-');

async function open(name) {
  return LeaseStore.open(path.join(dir, name));
}

test('items take the JavaScript names; a misspelt or foreign member refuses the whole call', async () => {
  const store = await open('names.db');
  try {
    assert.deepEqual(store.enqueueMany([{ job: 'a', runAt: 50, payload: 'p' }]), [true]);
    assert.equal(store.state('a').until, 50);
    for (const [call, says] of [
      [() => store.enqueueMany([{ job: 'b' }, { job: 'c', run_at: 5 }]), /jobs\[1\] has the member `run_at`.*runAt/],
      [() => store.enqueueMany([{ job: 'b' }, 'c']), /jobs\[1\] must be an object, got a string/],
      [() => store.enqueueMany([{ job: 'b' }, { job: 'c', runAt: '5' }]), /jobs\[1\]\.runAt must be a number/],
      [() => store.enqueueMany([{ job: 'b' }, { job: 'c', runAt: NaN }]), /run_at.*finite/],
      [() => store.renewMany('w', [{ job: 'a' }], 0, 10), /leases\[0\]\.fence must be an integer number/],
      [() => store.renewMany('w', [{ job: 'a', fence: 1, result: 'r' }], 0, 10), /has the member `result`/],
      [() => store.claimNextMany('w', 1.5, 0, 10), /argument `n` must be a whole number/],
      [() => store.claimNextMany('w', 1025, 0, 10), /`n`.*1024/],
      [() => store.enqueueMany(Array.from({ length: 1025 }, (_, i) => ({ job: `x${i}` }))), /1025 items.*split it/],
    ]) {
      assert.throws(call, (error) => error instanceof LeaseError && error.code === 'invalid_argument' && says.test(error.message));
    }
    assert.equal(store.state('b'), null, 'a refused list added nothing');
    assert.equal(store.state('x0'), null, 'a refused list added nothing');
  } finally {
    store.close();
  }
});

test('bare methods answer the value; renewMany and completeMany items are {value, reason}', async () => {
  const store = await open('answers.db');
  try {
    assert.deepEqual(store.enqueueMany([{ job: 'a' }, { job: 'b', payload: 'pb' }, { job: 'a' }]), [true, true, false]);
    const claimed = store.claimNextMany('w', 5, 0, 10);
    assert.deepEqual(claimed, [{ job: 'a', owner: 'w', fence: 1, payload: null, attempt: 1 }, { job: 'b', owner: 'w', fence: 1, payload: 'pb', attempt: 1 }]);
    const leases = claimed.map(({ job, fence }) => ({ job, fence }));
    assert.deepEqual(store.renewMany('w', [...leases, { job: 'a', fence: 7 }], 1, 10), [
      { value: true, reason: null },
      { value: true, reason: null },
      { value: false, reason: { code: 'stale_fence', fence: 1 } },
    ]);
    const answer = store.withReason.completeMany('w', [{ job: 'a', fence: 1, result: 'ra' }, { job: 'zz', fence: 1 }], 2);
    assert.deepEqual(answer, { value: [{ value: true, reason: null }, { value: false, reason: { code: 'not_found' } }], reason: null });
    assert.equal('lastReason' in store, false, 'the one way to read a reason is withReason');
    assert.deepEqual(store.withReason.claimNextMany('v', 3, 20, 10), { value: [{ job: 'b', owner: 'v', fence: 2, payload: 'pb', attempt: 2 }], reason: null });
    assert.equal(store.state('a').result, 'ra');
  } finally {
    store.close();
  }
});

test('one enqueueMany of 1024 jobs pays the syncs of one commit, not 1024 commits', { skip: engine() === 'native' && !hasStrace ? 'strace counts the native engine\'s syncs' : false }, async () => {
  const counter = await syncCounter();
  const { syncs } = counter;
  const store = await open('syncs.db');
  try {
    const jobs = Array.from({ length: 1024 }, (_, i) => ({ job: `j${i}` }));
    store.enqueue('warm-up'); // the first commit of a new file also writes its header
    let before = syncs();
    assert.deepEqual(store.enqueueMany(jobs), jobs.map(() => true));
    const batched = syncs() - before;
    before = syncs();
    store.enqueue('single');
    const one = syncs() - before;
    before = syncs();
    for (let i = 0; i < 64; i++) store.enqueue(`k${i}`);
    const perJob = syncs() - before;
    console.log(`syncs: enqueueMany of 1024 jobs ${batched}, one enqueue ${one}, 64 enqueue calls ${perJob}`);
    assert.ok(one > 0, 'a commit syncs');
    assert.ok(batched <= one * 2, `a batch of 1024 paid ${batched} syncs where one enqueue pays ${one}`);
    assert.ok(perJob >= 64, `64 enqueue calls paid ${perJob} syncs: every one is its own commit`);
  } finally {
    store.close();
    await counter.stop();
  }
});

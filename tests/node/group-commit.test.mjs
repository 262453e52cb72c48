// store.grouped: group commit for concurrent async callers in one process (docs/contract.md
// section 10). Calls made together share one transaction and one commit's syncs; each is answered
// exactly as if it ran alone, and one failing call fails alone.
import assert from 'node:assert/strict';
import path from 'node:path';
import test, { after } from 'node:test';
import { engine, hasStrace, loadPackage, onlyOn, syncCounter, tempDir } from './helpers.mjs';

const { LeaseStore, LeaseError, FenceGuard } = loadPackage();
// Syncs are counted for the whole file (natively strace stays attached: one attach, not one per test).
const noCounter = engine() === 'native' && !hasStrace ? 'strace counts the native engine\'s syncs' : false;
const counter = noCounter ? null : await syncCounter();
after(() => counter?.stop());
const syncs = () => counter.syncs();

async function openFresh(name) {
  return LeaseStore.open(path.join(tempDir('leasefence-group-'), name));
}

test('calls made together commit as one group: one commit\'s syncs for all of them', { skip: noCounter }, async () => {
  const store = await openFresh('syncs.db');
  try {
    let at = syncs();
    await store.grouped.enqueue('lone');
    const lone = syncs() - at;
    assert.ok(lone >= 1, 'a commit syncs');

    at = syncs();
    const added = await Promise.all(Array.from({ length: 200 }, (_, i) => store.grouped.enqueue(`j${i}`)));
    assert.deepEqual(added, Array(200).fill(true));
    assert.equal(syncs() - at, lone, '200 enqueues in one commit');

    at = syncs();
    const claimed = await Promise.all(Array.from({ length: 50 }, () => store.grouped.claimNext('me', 1, 60)));
    assert.equal(syncs() - at, lone, '50 claims in one commit');
    const jobs = claimed.map((c) => c.job);
    assert.equal(new Set(jobs).size, 50, 'each claim_next in the group got its own job');
    assert.deepEqual(jobs, ['lone', ...Array.from({ length: 49 }, (_, i) => `j${i}`)], 'claim_next order, call by call');

    at = syncs();
    const done = await Promise.all(claimed.map((c) => store.grouped.complete(c.job, 'me', c.fence, 2, `r-${c.job}`)));
    assert.deepEqual(done, Array(50).fill(true));
    assert.equal(syncs() - at, lone);
    assert.equal(store.state('j7').result, 'r-j7');
  } finally {
    store.close();
  }
});

test('each call is answered as if it ran alone, with its own reason', async () => {
  const store = await openFresh('answers.db');
  try {
    store.enqueue('a');
    const fence = store.claim('a', 'me', 0, 10);
    const answers = await Promise.all([
      store.grouped.withReason.claim('a', 'other', 1, 10),
      store.grouped.withReason.complete('a', 'me', fence, 2, 'first'),
      store.grouped.withReason.complete('a', 'me', fence, 3, 'second'),
      store.grouped.withReason.state('a'),
      store.grouped.withReason.renew('missing', 'me', 1, 3, 10),
    ]);
    assert.deepEqual(answers[0].reason, { code: 'held', owner: 'me', until: 10 });
    assert.deepEqual([answers[1].value, answers[1].reason], [true, null]);
    assert.deepEqual(answers[2].reason, { code: 'done' }, 'the second complete sees the first');
    assert.equal(answers[3].value.result, 'first', 'a read in the group sees the writes before it');
    assert.deepEqual(answers[4].reason, { code: 'not_found' });
  } finally {
    store.close();
  }
});

test('a failing call fails alone: its neighbours commit and are durable', async () => {
  const dir = tempDir('leasefence-group-');
  const file = path.join(dir, 'alone.db');
  const store = await LeaseStore.open(file);
  let fenceB;
  try {
    store.enqueue('a');
    store.enqueue('b');
    const fenceA = store.claim('a', 'me', 0, 60);
    fenceB = store.claim('b', 'me', 0, 60);
    const settled = await Promise.allSettled([
      store.grouped.complete('a', 'me', fenceA, 1, 'ok-a'),
      // A statement that fails in the database: its fenced write fails, alone.
      store.grouped.fenced('b', 'me', fenceB, 1, [{ sql: 'INSERT INTO nowhere VALUES (1)', params: [] }], { complete: true, result: 'never' }),
      store.grouped.claim('b', 'me', 1, -5), // a bad argument: refused before the transaction
      store.grouped.enqueue('c'),
    ]);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    assert.ok(settled[1].reason instanceof LeaseError);
    assert.equal(settled[1].reason.code, 'storage');
    assert.equal(settled[1].reason.statement, 0);
    assert.equal(settled[2].reason.code, 'invalid_argument');
  } finally {
    store.close();
  }
  const again = await LeaseStore.open(file);
  try {
    assert.equal(again.state('a').result, 'ok-a', 'the neighbour before it committed');
    assert.equal(again.state('c').fence, 0, 'the neighbour after it committed');
    const b = again.state('b');
    assert.deepEqual([b.done, b.result, b.fence], [false, null, fenceB], 'the failing write left nothing');
  } finally {
    again.close();
  }
});

test('calls made while a group commits form the next group; a lone call waits for no company', { skip: noCounter }, async () => {
  const store = await openFresh('next.db');
  try {
    const at = syncs();
    const first = store.grouped.enqueue('x');
    // Queued from the first answer's continuation: a group of its own, after the first.
    const second = first.then(() => Promise.all([store.grouped.enqueue('y'), store.grouped.enqueue('x')]));
    assert.equal(await first, true);
    assert.deepEqual(await second, [true, false]);
    const two = syncs() - at;
    const before = syncs();
    await store.grouped.enqueue('z');
    assert.equal(two, 2 * (syncs() - before), 'two groups, two commits');
    // claimMany cannot join a group: it runs alone and still answers.
    assert.deepEqual(await store.grouped.claimMany('z', ['p', 'q'], 0, 5).then((v) => v.filter(Boolean).length), 1);
  } finally {
    store.close();
  }
});

test('the calls that waited for a group leave before its answers are handed out: the engine writes them while the continuations run', { skip: onlyOn('native', 'the wasm engine commits a group before anything else can be called') }, async () => {
  // The pool writes the next group while this thread runs the answers' continuations (a worker
  // starting the handlers of the jobs it claimed): the two overlap instead of taking turns.
  const file = path.join(tempDir('leasefence-group-'), 'overlap.db');
  const store = await LeaseStore.open(file);
  const reader = await LeaseStore.open(file);
  try {
    store.enqueue('a');
    const claimed = store.grouped.claimNext('me', 1, 60);
    await new Promise((resolve) => setImmediate(resolve)); // the claim's group is on the pool now
    const waited = store.grouped.enqueue('b'); // made while it commits
    const seenWhileBusy = await claimed.then(() => {
      // A continuation that keeps this thread busy: the waiting enqueue commits meanwhile.
      const until = Date.now() + 5000;
      while (Date.now() < until) if (reader.state('b') !== null) return true;
      return false;
    });
    assert.equal(seenWhileBusy, true, 'the enqueue that waited was written while the claim\'s continuation ran');
    assert.equal(await waited, true);
  } finally {
    store.close();
    reader.close();
  }
});

test('calls made where a group\'s answers are read, with none waiting, leave together: one commit', { skip: noCounter || onlyOn('native', 'the wasm engine commits a group before anything else can be called') }, async () => {
  const store = await openFresh('continuation.db');
  try {
    const before = syncs();
    await store.grouped.enqueue('lone');
    const lone = syncs() - before;
    const at = syncs();
    const claimed = await store.grouped.claimNext('me', 1, 60).then((job) =>
      // Two calls in the answer's continuation: one group.
      Promise.all([store.grouped.complete(job.job, 'me', job.fence, 2, 'done'), store.grouped.enqueue('b')]));
    assert.deepEqual(claimed, [true, true]);
    assert.equal(syncs() - at, 2 * lone, 'two commits: the claim, then the completion and the enqueue together');
    assert.equal(store.state('lone').result, 'done');
  } finally {
    store.close();
  }
});

test('grouped calls on a closed store fail with a storage error', async () => {
  const store = await openFresh('closed.db');
  store.close();
  await assert.rejects(store.grouped.enqueue('a'), (error) => error instanceof LeaseError && error.code === 'storage');
});

test('guarded writes made together commit as one transaction: one commit\'s syncs for all of them', { skip: noCounter || onlyOn('native', 'the wasm engine runs each guarded write alone') }, async () => {
  const guard = await FenceGuard.open(path.join(tempDir('leasefence-group-'), 'guarded.db'));
  try {
    guard.write('setup', 1, [{ sql: 'CREATE TABLE ledger(key TEXT, n INTEGER)' }]);
    let at = syncs();
    assert.deepEqual(await guard.grouped.write('lone', 1, [{ sql: 'INSERT INTO ledger VALUES ($1, $2)', params: ['lone', 0] }]), { accepted: true, rows: [] });
    const lone = syncs() - at;
    assert.ok(lone >= 1, 'a commit syncs');

    at = syncs();
    const written = await Promise.all(
      Array.from({ length: 50 }, (_, i) => guard.grouped.write(`k${i}`, 1, [{ sql: 'INSERT INTO ledger VALUES ($1, $2)', params: [`k${i}`, i] }])),
    );
    assert.deepEqual(written, Array(50).fill({ accepted: true, rows: [] }));
    assert.equal(syncs() - at, lone, '50 guarded writes in one commit');
    assert.deepEqual(guard.write('setup', 1, [{ sql: 'SELECT count(*) AS n FROM ledger' }]).rows, [{ n: 51 }]);
  } finally {
    guard.close();
  }
});

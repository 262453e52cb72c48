// Leases as objects: a claim answers `{job, owner, fence, ...}` and the lease calls take it in place
// of (job, owner, fence). The store still checks the fence at every write: a stale lease object is
// refused exactly as its positional call would be, and nothing it carries is trusted beyond that.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore, LeaseError } = loadPackage();
const dir = tempDir('leasefence-lease-objects-');

let files = 0;
async function fresh(t) {
  const store = await LeaseStore.open(path.join(dir, `l${files++}.db`), { busyTimeout: 2 });
  t.after(() => store.close());
  return store;
}

test('claimNext answers the lease, with its owner and attempt, and complete takes it', async (t) => {
  const store = await fresh(t);
  store.enqueue('a', null, 'the payload');
  const lease = store.claimNext('w', 10, 30);
  assert.deepEqual(lease, { job: 'a', owner: 'w', fence: 1, payload: 'the payload', attempt: 1 });
  assert.equal(store.renew(lease, 11, 30), true);
  assert.equal(store.state('a').until, 41);
  assert.equal(store.complete(lease, 12, 'done'), true);
  assert.deepEqual([store.state('a').done, store.state('a').result], [true, 'done']);
});

test('a stale lease object is refused with the reason its positional call gets, and the newer result stays', async (t) => {
  const store = await fresh(t);
  store.enqueue('job');
  const stale = store.claimNext('A', 0, 5);
  // A stalls past its lease; B claims and completes.
  const current = store.claimNext('B', 10, 5);
  assert.equal(current.fence, 2);
  assert.equal(store.complete(current, 11, 'B'), true);
  for (const call of [
    () => store.withReason.complete(stale, 12, 'A'),
    () => store.withReason.renew(stale, 12, 30),
    () => store.withReason.fail(stale, 12, null, 'late'),
    () => store.withReason.release(stale),
    () => store.withReason.fenced(stale, 12, [{ sql: 'CREATE TABLE t(a)' }]),
  ]) {
    const answer = call();
    assert.equal(answer.value, false);
    assert.ok(answer.reason !== null, JSON.stringify(answer));
  }
  assert.deepEqual(store.withReason.complete(stale, 12, 'A'), store.withReason.complete('job', 'A', 1, 12, 'A'));
  assert.deepEqual([store.state('job').result, store.state('job').fence], ['B', 2]);
});

test('claimLease answers a lease or null; a lease missing a part is refused naming it, and nothing changes', async (t) => {
  const store = await fresh(t);
  store.enqueue('j');
  const lease = store.claimLease('j', 'w', 0, 30);
  assert.deepEqual(lease, { job: 'j', owner: 'w', fence: 1 });
  assert.deepEqual(store.withReason.claimLease('j', 'v', 1, 30), { value: null, reason: { code: 'held', owner: 'w', until: 30 } });
  const before = store.state('j');
  assert.throws(() => store.complete({ job: 'j', owner: 'w' }, 2, 'x'), (error) => {
    assert.ok(error instanceof LeaseError);
    assert.equal(error.code, 'invalid_argument');
    assert.match(error.message, /^complete\(\): a lease object needs job, owner and fence .* no fence$/);
    return true;
  });
  // A wrong type in a lease is the crate's usual argument error.
  assert.throws(() => store.renew({ ...lease, fence: 'one' }, 2, 30), (error) => error.code === 'invalid_argument' && /fence/.test(error.message));
  assert.deepEqual(store.state('j'), before);
});

test("the many-lease calls take leases of the call's owner, and refuse another owner's", async (t) => {
  const store = await fresh(t);
  store.enqueueMany([{ job: 'x' }, { job: 'y' }]);
  const [x, y] = store.claimNextMany('w', 2, 0, 30);
  assert.deepEqual([x.owner, y.owner, x.attempt], ['w', 'w', 1]);
  assert.deepEqual(store.renewMany('w', [x, y], 1, 30).map((a) => a.value), [true, true]);
  assert.throws(() => store.renewMany('v', [x], 1, 30), (error) => {
    assert.equal(error.code, 'invalid_argument');
    assert.equal(error.message, 'renewMany(): leases[0] is "w"\'s lease, not "v"\'s');
    return true;
  });
  assert.equal(store.state('x').until, 31);
  const answers = store.completeMany('w', [{ ...x, result: 'rx' }, { ...y, result: 'ry' }], 2);
  assert.deepEqual(answers.map((a) => a.value), [true, true]);
  assert.deepEqual([store.state('x').result, store.state('y').result], ['rx', 'ry']);
});

test('the grouped store takes leases too, and rejects (does not throw) a bad one', async (t) => {
  const store = await fresh(t);
  store.enqueue('g');
  const lease = await store.grouped.claimNext('w', 0, 30);
  assert.equal(lease.owner, 'w');
  let answer;
  assert.doesNotThrow(() => {
    answer = store.grouped.complete({ job: 'g' }, 1, 'r');
  });
  await assert.rejects(answer, (error) => error instanceof LeaseError && error.code === 'invalid_argument');
  assert.equal(await store.grouped.complete(lease, 1, 'r'), true);
  assert.equal(store.state('g').result, 'r');
});

test("a JobWorker's handler gets its lease and writes under it; the worker completes after", async (t) => {
  const { JobWorker } = loadPackage();
  const store = await fresh(t);
  assert.deepEqual(store.enqueueMany([], [{ sql: 'CREATE TABLE log (job TEXT, owner TEXT, fence INTEGER)' }]), []);
  store.enqueue('w1');
  const worker = new JobWorker(store, { owner: 'runner', ttl: 30, idle: 0.01 });
  const seen = [];
  await worker.run(async (job, { lease, fence }) => {
    seen.push(lease);
    const insert = { sql: 'INSERT INTO log VALUES ($1, $2, $3)', params: [lease.job, lease.owner, lease.fence] };
    assert.equal(await store.grouped.fenced(lease, Date.now() / 1000, [insert]), true);
    return `done at ${fence}`;
  }, { untilEmpty: true });
  assert.deepEqual(seen, [{ job: 'w1', owner: 'runner', fence: 1 }]);
  assert.ok(Object.isFrozen(seen[0]));
  assert.deepEqual(store.fenced(seen[0], Date.now() / 1000, [{ sql: 'DELETE FROM log' }]), false);
  const state = store.state('w1');
  assert.deepEqual([state.done, state.result], [true, 'done at 1']);
});

// Enqueue in your own transaction (docs/contract.md section 11): enqueueMany(jobs, statements)
// runs your statements, then the jobs, in one transaction: the jobs commit with your rows or not
// at all. A failing statement keeps neither (storage, naming the statement); a statement writing
// `jobs` or a `leasefence_*` table is refused (invalid_argument), nothing changed. Through
// store.grouped too, where one call's failure stays its own.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import { loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore, LeaseError } = loadPackage();

const order = (id) => ({ sql: 'INSERT INTO orders(id) VALUES ($1)', params: [id] });

async function shop() {
  const store = await LeaseStore.open(path.join(tempDir(), 'shop.db'));
  assert.deepEqual(store.enqueueMany([], [{ sql: 'CREATE TABLE orders(id TEXT PRIMARY KEY)' }]), []);
  // A job of its own queue whose lease lets a fenced callback read the orders back.
  store.enqueue('reader', null, null, 'probe');
  const fence = store.claim('reader', 'probe', 0, 1e9);
  const orders = () => {
    let ids;
    assert.equal(store.fenced('reader', 'probe', fence, 1, (tx) => {
      ids = tx.all('SELECT id FROM orders ORDER BY id').map((row) => row.id);
    }), true);
    return ids;
  };
  return { store, orders };
}

function thrown(f) {
  try {
    f();
  } catch (error) {
    return error;
  }
  assert.fail('nothing was thrown');
}

test('the jobs commit with the rows: both present, the jobs claimable in order', async () => {
  const { store, orders } = await shop();
  try {
    const jobs = [{ job: 'ship-o1', queue: 'mail', priority: 2 }, { job: 'bill-o1', payload: 'p' }];
    assert.deepEqual(store.enqueueMany(jobs, [order('o1')]), [true, true]);
    assert.deepEqual(orders(), ['o1']);
    assert.equal(store.claimNext('w', 1, 30, ['mail', 'default']).job, 'ship-o1');
    assert.deepEqual(store.claimNext('w', 1, 30, ['mail', 'default']), { job: 'bill-o1', owner: 'w', fence: 1, payload: 'p', attempt: 1 });
    // No statements (left out, null or empty): the plain enqueueMany.
    assert.deepEqual(store.enqueueMany([{ job: 'x' }], null), [true]);
    assert.deepEqual(store.enqueueMany([{ job: 'y' }], []), [true]);
  } finally {
    store.close();
  }
});

test('a failing statement keeps neither the rows nor the jobs, and names the statement', async () => {
  const { store, orders } = await shop();
  try {
    store.enqueueMany([], [order('o1')]);
    const error = thrown(() => store.enqueueMany([{ job: 'ship-o2', queue: 'mail' }, { job: 'ship-o3' }], [order('o2'), order('o1')]));
    assert.ok(error instanceof LeaseError, String(error));
    assert.equal(error.code, 'storage');
    assert.equal(error.statement, 1);
    assert.match(error.message, /UNIQUE/);
    assert.equal(store.state('ship-o2'), null);
    assert.equal(store.state('ship-o3'), null);
    assert.deepEqual(orders(), ['o1']);
    assert.equal(store.claimNext('w', 1, 30, ['mail', 'default']), null);
  } finally {
    store.close();
  }
});

test('a statement writing the library\'s tables is refused, nothing changed', async () => {
  const { store, orders } = await shop();
  try {
    store.enqueue('old');
    for (const sql of ['UPDATE jobs SET fence = 7', 'DELETE FROM leasefence_order', 'COMMIT', 'PRAGMA journal_mode = DELETE']) {
      const error = thrown(() => store.enqueueMany([{ job: 'new' }], [order('o1'), { sql }]));
      assert.equal(error.code, 'invalid_argument', `${sql}: ${error.message}`);
    }
    assert.equal(thrown(() => store.enqueueMany([{ job: 'new' }], 'INSERT INTO orders VALUES (1)')).code, 'invalid_argument');
    assert.equal(store.state('new'), null);
    assert.equal(store.state('old').fence, 0);
    assert.deepEqual(orders(), []);
  } finally {
    store.close();
  }
});

test('store.grouped: one call\'s failing statement fails that call alone', async () => {
  const { store, orders } = await shop();
  try {
    const calls = [
      store.grouped.enqueueMany([{ job: 'ship-a' }], [order('a')]),
      store.grouped.enqueueMany([{ job: 'ship-b' }], [order('b'), order('a')]),
      store.grouped.enqueueMany([{ job: 'ship-c' }], [order('c')]),
    ];
    const settled = await Promise.allSettled(calls);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.equal(settled[1].reason.code, 'storage');
    assert.equal(settled[1].reason.statement, 1);
    assert.deepEqual(orders(), ['a', 'c']);
    assert.equal(store.state('ship-b'), null);
    assert.notEqual(store.state('ship-a'), null);
    assert.notEqual(store.state('ship-c'), null);
  } finally {
    store.close();
  }
});

// One error class for the whole package (issue 21): every error the package throws is a
// LeaseError, whatever made it (the wasm, the Node wrapper, a worker thread, the worker runtime),
// and LeaseLostError is one too. The classes are exported alike by require and import.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import { loadPackage, tempDir, PKG } from './helpers.mjs';

const { LeaseStore, FenceGuard, JobWorker, LeaseError, LeaseLostError, fixedBackoff } = loadPackage();

const now = () => Date.now() / 1000;

async function freshStore() {
  const db = path.join(tempDir(), 'errors.db');
  return { db, store: await LeaseStore.open(db, { busyTimeout: 0.2 }) };
}

/** What `f` throws, or what the Promise it returns rejects with. */
async function thrown(f) {
  try {
    await f();
  } catch (error) {
    return error;
  }
  assert.fail('nothing was thrown');
}

function assertLeaseError(error, code) {
  assert.ok(error instanceof LeaseError, `not a LeaseError: ${error?.constructor?.name} ${error}`);
  assert.ok(error instanceof Error);
  assert.equal(error.code, code, String(error));
  assert.equal(typeof error.retryable, 'boolean');
  assert.equal(typeof error.message, 'string');
}

test('LeaseError is exported by require and import, and LeaseLostError extends it', async () => {
  assert.equal(typeof LeaseError, 'function');
  const esm = await import(path.join(PKG, 'index.mjs'));
  assert.equal(esm.LeaseError, LeaseError);
  assert.equal(esm.default.LeaseError, LeaseError);
  assert.ok(LeaseLostError.prototype instanceof LeaseError);
  const lost = new LeaseLostError('lease_lost', 'gone', { code: 'expired', until: 1 });
  assert.ok(lost instanceof LeaseError);
  assert.deepEqual([lost.name, lost.code, lost.retryable, lost.reason], ['LeaseLostError', 'lease_lost', false, { code: 'expired', until: 1 }]);
  const made = new LeaseError('busy', { code: 'storage', retryable: true, statement: 2 });
  assert.deepEqual([made.name, made.code, made.retryable, made.statement, made.message], ['LeaseError', 'storage', true, 2, 'busy']);
});

test('invalid arguments are LeaseErrors: from the wasm checks and from the Node wrapper', async () => {
  const { store } = await freshStore();
  assertLeaseError(await thrown(() => store.claim('j', 'me', Number.NaN, 30)), 'invalid_argument'); // Rust's check
  assertLeaseError(await thrown(() => store.withReason.renew('j', 'me', 1.5, 0, 30)), 'invalid_argument');
  assertLeaseError(await thrown(() => store.claimMany('j', 'not a list', 0, 30)), 'invalid_argument');
  assertLeaseError(await thrown(() => LeaseStore.open('')), 'invalid_argument'); // the wrapper's check
  assertLeaseError(await thrown(() => LeaseStore.releaseTerminatedWorkerLock('x', 0)), 'invalid_argument');
  assertLeaseError(await thrown(() => new JobWorker(store, { onError: 1 })), 'invalid_argument');
  assertLeaseError(await thrown(() => fixedBackoff(-1)), 'invalid_argument');
  assertLeaseError(await thrown(() => store.fenced('j', 'me', 1, 0, [{ sql: 'BEGIN' }])), 'invalid_argument');
  store.close();
});

test('storage errors are LeaseErrors: a closed store, a failing statement, a callback statement', async () => {
  const { store } = await freshStore();
  store.enqueue('j');
  const fence = store.claim('j', 'me', now(), 60);
  // Rust's storage error (a statement SQLite refuses), inside the fenced transaction.
  assertLeaseError(await thrown(() => store.fenced('j', 'me', fence, now(), [{ sql: 'INSERT INTO nowhere VALUES (1)' }])), 'storage');
  // The callback form: tx.run's error is a LeaseError inside the callback, and out of fenced.
  let inside = null;
  const outside = await thrown(() => store.fenced('j', 'me', fence, now(), (tx) => {
    try {
      tx.run('INSERT INTO nowhere VALUES (1)');
    } catch (error) {
      inside = error;
      throw error;
    }
  }));
  assertLeaseError(inside, 'storage');
  assert.equal(outside, inside);
  // An application's own error passes through the callback unchanged.
  class Mine extends Error {}
  const mine = new Mine('the application');
  assert.equal(await thrown(() => store.fenced('j', 'me', fence, now(), () => { throw mine; })), mine);
  store.close();
  for (const call of [() => store.claim('j', 'me', 0, 30), () => store.withReason.state('j'), () => store.claimMany('j', ['a'], 0, 30), () => store.fenced('j', 'me', 1, 0, () => {})]) {
    assertLeaseError(await thrown(call), 'storage');
  }
  assertLeaseError(await thrown(() => LeaseStore.open(tempDir())), 'storage'); // a directory, not a file
});

test('a lease lost in JobWorker signals a LeaseLostError, which is a LeaseError', async () => {
  const { db, store } = await freshStore();
  store.enqueue('stolen');
  const thief = await LeaseStore.open(db, { busyTimeout: 0.05 });
  const worker = new JobWorker(store, { owner: 'slow', ttl: 0.6, idle: 0.05 });
  let reason = null;
  await worker.run(
    async (job, { signal }) => {
      const fence = thief.claim(job, 'thief', now() + 10, 0.6);
      thief.complete(job, 'thief', fence, now() + 10, 'the thief');
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      reason = signal.reason;
      return 'late';
    },
    { untilEmpty: true },
  );
  assert.ok(reason instanceof LeaseLostError, String(reason));
  assertLeaseError(reason, 'lease_lost');
  thief.close();
  store.close();
});

test('FenceGuard errors are LeaseErrors', async () => {
  const file = path.join(tempDir(), 'app.db');
  assertLeaseError(await thrown(() => FenceGuard.open('')), 'invalid_argument');
  const guard = await FenceGuard.open(file);
  assertLeaseError(await thrown(() => guard.write('k', 1, 'not a list')), 'invalid_argument');
  assertLeaseError(await thrown(() => guard.write('k', 1, [{ sql: 'INSERT INTO nowhere VALUES (1)' }])), 'storage');
  assertLeaseError(await thrown(() => guard.write('k', 1, [{ sql: 'DELETE FROM leasefence_guard' }])), 'invalid_argument');
  guard.close();
  assertLeaseError(await thrown(() => guard.write('k', 1, [])), 'storage');
});

test('withReason answers: {value, reason} for every operation, {value, reasons} for claimMany', async () => {
  const { store } = await freshStore();
  store.enqueue('j');
  assert.deepEqual(store.withReason.claim('j', 'a', 100, 60), { value: 1, reason: null });
  assert.deepEqual(store.withReason.claim('j', 'b', 100, 60), { value: null, reason: { code: 'held', owner: 'a', until: 160 } });
  assert.deepEqual(await store.withReason.claimMany('j', ['b', 'c'], 100, 60), {
    value: [null, null],
    reasons: [{ code: 'held', owner: 'a', until: 160 }, { code: 'held', owner: 'a', until: 160 }],
  });
  assert.deepEqual(await store.withReason.claimMany('j', [], 100, 60), { value: [], reasons: [] });
  store.close();
});

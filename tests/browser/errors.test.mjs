// One error class and one answer shape in the browser too (issue 21): every error the browser store
// gives is a LeaseError, also those made in its Web Worker and sent across as messages, and a lost
// lease in the worker runtime is a LeaseLostError, which is one too; `withReason.claimMany`
// answers `{value, reasons}` as in Node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, inStorePage } from './harness.mjs';

const env = serverAndBrowser();

const inPage = (f) => inStorePage(env.browser, env.server, f);

test('in the browser every error is a LeaseError, through the worker too, and a lost lease a LeaseLostError', async () => {
  const out = await inPage(async () => {
    const { LeaseStore, LeaseError } = await import('/store/lease-store.js');
    const runtime = await import('/store/job-worker.js');
    const core = await import('/store/core.js');
    const describe = async (f) => {
      try {
        await f();
        return 'nothing thrown';
      } catch (error) {
        return { lease: error instanceof LeaseError, error: error instanceof Error, code: error.code, retryable: error.retryable, name: error.name };
      }
    };
    const got = {};
    got.same = LeaseError === runtime.LeaseError && LeaseError === core.LeaseError;
    got.lostExtends = runtime.LeaseLostError.prototype instanceof LeaseError;
    got.open = await describe(() => LeaseStore.open(''));
    const store = await LeaseStore.open('errors.db'); // a fresh profile: a new database
    await store.enqueue('j');
    got.invalid = await describe(() => store.claim('j', 'me', Number.NaN, 30)); // Rust's check, in the worker
    got.invalidMany = await describe(() => store.withReason.claimMany('j', 'not a list', 0, 30));
    got.callback = await describe(() => store.fenced('j', 'me', 1, 0, () => {}));
    const fence = await store.claim('j', 'me', 100, 60);
    got.storage = await describe(() => store.fenced('j', 'me', fence, 100, [{ sql: 'INSERT INTO nowhere VALUES (1)' }]));
    got.guard = await describe(() => store.guardWrite('k', 1, [{ sql: 'INSERT INTO nowhere VALUES (1)' }]));
    got.backoff = await describe(() => runtime.fixedBackoff(-1));

    // A lease lost in the runtime: another owner with a later clock takes the job and completes it.
    await store.enqueue('stolen');
    let t = 1000;
    const worker = new runtime.JobWorker(store, { owner: 'tab', ttl: 30, heartbeatEvery: 0.05, idle: 0.01, clock: () => (t += 0.01) });
    let reason = null;
    await worker.run(async (job, { signal }) => {
      if (job !== 'stolen') return 'other';
      const theirs = await store.claim(job, 'thief', t + 1000, 30);
      await store.complete(job, 'thief', theirs, t + 1000, 'the thief');
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      reason = signal.reason;
      return 'late';
    }, { untilEmpty: true });
    got.lost = { lease: reason instanceof LeaseError, lost: reason instanceof runtime.LeaseLostError, code: reason?.code, reasonCode: reason?.reason?.code };

    await store.close();
    got.closed = await describe(() => store.claim('j', 'me', 0, 30));
    return got;
  });
  const is = (code, retryable = false) => ({ lease: true, error: true, code, retryable, name: 'LeaseError' });
  assert.deepEqual(out, {
    same: true,
    lostExtends: true,
    open: is('invalid_argument'),
    invalid: is('invalid_argument'),
    invalidMany: is('invalid_argument'),
    callback: is('invalid_argument'),
    storage: is('storage'),
    guard: is('storage'),
    backoff: is('invalid_argument'),
    lost: { lease: true, lost: true, code: 'lease_lost', reasonCode: 'done' },
    closed: is('storage'),
  });
});

test('in the browser withReason answers as in Node: {value, reason}, and {value, reasons} for claimMany', async () => {
  const out = await inPage(async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const store = await LeaseStore.open('shapes.db');
    await store.enqueue('j');
    const got = {};
    got.claim = await store.withReason.claim('j', 'a', 100, 60);
    got.refused = await store.withReason.claim('j', 'b', 100, 60);
    got.many = await store.withReason.claimMany('j', ['b', 'c'], 100, 60);
    got.none = await store.withReason.claimMany('j', [], 100, 60);
    await store.enqueue('free');
    got.race = await store.withReason.claimMany('free', ['x', 'y'], 100, 60);
    got.bare = await store.claimMany('missing', ['x'], 100, 60);
    await store.close();
    return got;
  });
  const held = { code: 'held', owner: 'a', until: 160 };
  assert.deepEqual(out, {
    claim: { value: 1, reason: null },
    refused: { value: null, reason: held },
    many: { value: [null, null], reasons: [held, held] },
    none: { value: [], reasons: [] },
    race: { value: [1, null], reasons: [null, { code: 'held', owner: 'x', until: 160 }] },
    bare: [null],
  });
});

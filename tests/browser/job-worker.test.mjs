// The worker runtime (web/store/job-worker.js, the same source as Node's) over the browser store in
// headless Chromium: every store call crosses to the store's Web Worker. The clock is driven
// through the `clock` option, so a lease ends without waiting for it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, inStorePage } from './harness.mjs';

const env = serverAndBrowser();

const inPage = (f) => inStorePage(env.browser, env.server, f);

test('in the browser the runtime completes jobs, retries a failure after its backoff, and makes a job dead', async () => {
  const out = await inPage(async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const { JobWorker } = await import('/store/job-worker.js');
    // The previous page may still hold the OPFS handles for a moment: open() retries.
    // A fresh profile, and one database per test: each starts empty.
    const store = await LeaseStore.open('job-worker.db');
    let t = 1000;
    for (const job of ['a', 'b', 'c']) await store.enqueue(job, null, `payload-${job}`);
    await store.enqueue('flaky');
    await store.enqueue('doomed');
    const worker = new JobWorker(store, {
      owner: 'tab', ttl: 30, heartbeatEvery: 0.05, maxAttempts: 2, backoff: 5, idle: 0.01,
      clock: () => (t += 0.5), // time moves on by itself, past the 5 s backoff within a few calls
    });
    const seen = [];
    const stats = await worker.run(async (job, { payload, attempt }) => {
      seen.push([job, attempt]);
      if (job === 'doomed') throw new Error('never works');
      if (job === 'flaky' && attempt === 1) throw new Error('once');
      return `${job}:${payload}`;
    }, { untilDrained: true });
    const states = {};
    for (const job of ['a', 'b', 'c', 'flaky']) states[job] = (await store.state(job)).result;
    const doomed = await store.inspect('doomed');
    await store.close();
    return { stats, seen, states, doomed: { dead: doomed.dead, errors: doomed.failures.map((f) => f.error) } };
  });
  assert.deepEqual(out.states, { a: 'a:payload-a', b: 'b:payload-b', c: 'c:payload-c', flaky: 'flaky:null' });
  assert.deepEqual(out.doomed, { dead: true, errors: ['Error: never works', 'Error: never works'] });
  assert.deepEqual(
    { claimed: out.stats.claimed, completed: out.stats.completed, failed: out.stats.failed, dead: out.stats.dead, lost: out.stats.leasesLost },
    { claimed: 7, completed: 4, failed: 2, dead: 1, lost: 0 },
  );
  assert.ok(out.seen.some(([job, attempt]) => job === 'flaky' && attempt === 2));
});

test('in the browser a lost lease signals the handler (refused renew, and a lease that ended), and its result is discarded', async () => {
  const out = await inPage(async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const { JobWorker } = await import('/store/job-worker.js');
    const store = await LeaseStore.open('job-worker-lost.db');
    await store.enqueue('taken');
    await store.enqueue('expired');
    let t = 1000;
    const results = {};
    const first = new JobWorker(store, { owner: 'first', ttl: 30, heartbeatEvery: 0.05, idle: 0.01, clock: () => t });
    const stats = await first.run(async (job, { signal, attempt }) => {
      if (attempt > 1) return 'a later attempt, in time';
      if (job === 'taken') {
        // Another worker, whose clock is past this lease, claims over it and completes.
        const fence = await store.claim(job, 'second', t + 31, 30);
        await store.complete(job, 'second', fence, t + 31, 'second');
      } else {
        t += 31; // nobody renewed in time: this lease has ended
      }
      // (The signal may have aborted during the awaits above: an abort event fires only once.)
      if (!signal.aborted) {
        await new Promise((resolve) => {
          signal.addEventListener('abort', resolve);
          setTimeout(resolve, 5000);
        });
      }
      results[job] = signal.aborted ? { code: signal.reason.code, reason: signal.reason.reason.code } : 'never signalled';
      return 'first';
    }, { untilEmpty: true });
    const taken = await store.state('taken');
    const expired = await store.state('expired');
    await store.close();
    return { results, stats, taken: [taken.result, taken.fence], expired: [expired.result, expired.done, expired.fence] };
  });
  // A renew between the thief's claim and its complete is refused stale_fence, after it done.
  assert.ok(['stale_fence', 'done'].includes(out.results.taken?.reason), JSON.stringify(out.results));
  assert.deepEqual(out.results, {
    taken: { code: 'lease_lost', reason: out.results.taken.reason },
    expired: { code: 'lease_lost', reason: 'expired' },
  });
  assert.deepEqual(out.taken, ['second', 2]);
  assert.deepEqual(out.expired, ['a later attempt, in time', true, 2], 'the lost attempt wrote nothing; the next claim completed');
  assert.deepEqual({ lost: out.stats.leasesLost, completed: out.stats.completed, stale: out.stats.staleWritesRefused }, { lost: 2, completed: 1, stale: 0 });
});

test('in the browser a guarded write cannot touch the lease store\'s own tables (it runs on their database)', async () => {
  const out = await inPage(async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const store = await LeaseStore.open('guard-tables.db');
    await store.enqueue('j');
    const fence = await store.claim('j', 'A', 0, 30);
    const tries = {};
    for (const sql of ["UPDATE jobs SET fence = 99, owner = 'evil'", "DELETE FROM jobs", 'DELETE FROM leasefence_payloads']) {
      try {
        await store.guardWrite('mail', 7, [{ sql: 'CREATE TABLE IF NOT EXISTS sent(n)' }, { sql }]);
        tries[sql] = 'accepted';
      } catch (error) {
        tries[sql] = `${error.code}: ${error.message}`;
      }
    }
    const state = await store.state('j');
    // The guard itself still works for the application's own tables, and recorded no fence above.
    const ok = await store.guardWrite('mail', 7, [{ sql: 'CREATE TABLE IF NOT EXISTS sent(n)' }, { sql: 'INSERT INTO sent VALUES (1)' }]);
    await store.close();
    return { fence, tries, state, ok: ok.accepted };
  });
  for (const [sql, answer] of Object.entries(out.tries)) {
    assert.match(answer, /^invalid_argument: .*refused/, `${sql} -> ${answer}`);
  }
  assert.deepEqual({ owner: out.state.owner, fence: out.state.fence }, { owner: 'A', fence: out.fence });
  assert.equal(out.ok, true);
});

test('in the browser store.grouped answers each call as if alone, and JobWorker runs `concurrency` handlers at once', async () => {
  const out = await inPage(async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const { JobWorker } = await import('/store/job-worker.js');
    const store = await LeaseStore.open('job-worker-concurrency.db');
    const added = await Promise.all(Array.from({ length: 30 }, (_, i) => store.grouped.enqueue(`j${i}`, null, String(i))));
    const twice = await Promise.allSettled([
      store.grouped.enqueue('j0'),
      store.grouped.claim('j1', 'me', 0, -1), // a bad argument fails alone
      store.grouped.withReason.claim('missing', 'me', 0, 5),
    ]);
    let running = 0;
    let most = 0;
    const handled = [];
    const worker = new JobWorker(store, { owner: 'tab', ttl: 30, idle: 0.01, concurrency: 5 });
    const stats = await worker.run(async (job, { payload }) => {
      running += 1;
      most = Math.max(most, running);
      await new Promise((resolve) => setTimeout(resolve, 10));
      running -= 1;
      handled.push(job);
      return `r${payload}`;
    }, { untilEmpty: true });
    const results = [];
    for (let i = 0; i < 30; i++) results.push((await store.state(`j${i}`)).result);
    await store.close();
    return {
      added, most, stats, results, handled: handled.length, distinct: new Set(handled).size,
      twice: twice.map((s) => (s.status === 'fulfilled' ? s.value : { error: s.reason.code, isLeaseError: s.reason.name === 'LeaseError' })),
    };
  });
  assert.deepEqual(out.added, Array(30).fill(true));
  assert.deepEqual(out.twice, [false, { error: 'invalid_argument', isLeaseError: true }, { value: null, reason: { code: 'not_found' } }]);
  assert.equal(out.most, 5);
  assert.deepEqual([out.handled, out.distinct, out.stats.claimed, out.stats.completed], [30, 30, 30, 30]);
  assert.deepEqual(out.results, Array.from({ length: 30 }, (_, i) => `r${i}`));
});

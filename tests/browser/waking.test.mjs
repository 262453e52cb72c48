// Waking instead of polling in the browser (docs/contract.md section 11): a JobWorker idle with a
// 10 s poll is woken by its store's own enqueue at once, and by an announcement on the database's
// BroadcastChannel (`leasefence:NAME`, what another page or worker of the origin posts after its
// enqueue). Headless Chromium, real OPFS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser, inStorePage } from './harness.mjs';

const env = serverAndBrowser();

test('in the browser an idle JobWorker is woken by an enqueue and by the database\'s BroadcastChannel', async () => {
  const out = await inStorePage(env.browser, env.server, async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const { JobWorker } = await import('/store/job-worker.js');
    const store = await LeaseStore.open('waking.db');
    const worker = new JobWorker(store, { owner: 'tab', ttl: 30, idle: 10 });
    const running = worker.run(async (job) => `${job} done`);
    const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const doneAfter = async (job) => {
      const start = performance.now();
      while (!(await store.state(job))?.done) {
        if (performance.now() - start > 8000) return Infinity;
        await sleep(5);
      }
      return (performance.now() - start) / 1000;
    };
    await sleep(300);
    await store.enqueue('own');
    const own = await doneAfter('own');
    await sleep(300);
    // An enqueue this store does not see (the raw request), announced as another context would.
    await store.request('call', ['enqueue', ['elsewhere']]);
    new BroadcastChannel('leasefence:waking.db').postMessage('enqueued');
    const elsewhere = await doneAfter('elsewhere');
    await worker.stop();
    await running;
    await store.close();
    return { own, elsewhere };
  });
  assert.ok(out.own < 2, `the store's own enqueue: done after ${out.own} s (poll 10 s)`);
  assert.ok(out.elsewhere < 2, `an enqueue announced on the channel: done after ${out.elsewhere} s`);
});

test('in the browser an idle JobWorker sleeps until a delayed job falls due (nextDue), not until its poll', async () => {
  const out = await inStorePage(env.browser, env.server, async () => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const { JobWorker } = await import('/store/job-worker.js');
    const store = await LeaseStore.open('waking-due.db');
    const now = Date.now() / 1000;
    await store.enqueue('later', now + 1);
    const next = await store.nextDue(now, null);
    const worker = new JobWorker(store, { owner: 'tab', ttl: 30, idle: 10 });
    const running = worker.run(async (job) => `${job} done`);
    const start = performance.now();
    while (!(await store.state('later'))?.done && performance.now() - start < 8000) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const took = (performance.now() - start) / 1000;
    await worker.stop();
    await running;
    await store.close();
    return { next, took, due: now + 1 };
  });
  assert.deepEqual(out.next, { job: out.due, slot: null });
  assert.ok(out.took < 3, `the delayed job (due in 1 s) was done after ${out.took} s (poll 10 s)`);
});

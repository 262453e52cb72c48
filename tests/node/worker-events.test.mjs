// JobWorker's events (`on` / `off`): each job's outcome told once it is durable. Every listener here
// looks at the file through a second connection of its own: what it sees there is committed, so a
// `completed` fired before the completion's commit (as the handler's own promise settles) fails.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadPackage, tempDir, killLiveChildren, sleep } from './helpers.mjs';

const { LeaseStore, JobWorker, LeaseError, fixedBackoff } = loadPackage();
const dir = tempDir('leasefence-events-');
after(killLiveChildren);

let files = 0;
/** The worker's store and an observer's, on one fresh file, both closed when test `t` ends. */
async function twoConnections(t) {
  const db = path.join(dir, `e${files++}.db`);
  const store = await LeaseStore.open(db, { busyTimeout: 2 });
  const observer = await LeaseStore.open(db, { busyTimeout: 2 });
  t.after(() => {
    store.close();
    observer.close();
  });
  return { store, observer };
}

/** Every event of `worker`, in order, each with what `observer` saw of its job at that moment. */
function record(worker, observer) {
  const heard = [];
  for (const event of ['completed', 'failed', 'dead', 'released', 'lost']) {
    worker.on(event, (detail) => heard.push({ event, detail, seen: observer.inspect(detail.job) }));
  }
  return heard;
}

test('completed, failed and dead are told after their writes commit, with what was written', async (t) => {
  const { store, observer } = await twoConnections(t);
  store.enqueue('ok');
  store.enqueue('flaky');
  store.enqueue('bad');
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, maxAttempts: 2, backoff: fixedBackoff(0.05) });
  const heard = record(worker, observer);
  let flakyRuns = 0;
  await worker.run(
    async (job) => {
      if (job === 'bad') throw new Error('always broken');
      if (job === 'flaky' && ++flakyRuns === 1) throw new Error('once broken');
      return `${job} result`;
    },
    { untilDrained: true },
  );
  const of = (job) => heard.filter((h) => h.detail.job === job).map((h) => h.event);
  assert.deepEqual(of('ok'), ['completed']);
  assert.deepEqual(of('flaky'), ['failed', 'completed']);
  assert.deepEqual(of('bad'), ['failed', 'dead']);

  for (const { event, detail, seen } of heard) {
    assert.equal(seen.attempts, detail.fence, `${event} of ${detail.job}: the observer saw another attempt`);
    if (event === 'completed') {
      assert.equal(detail.result, `${detail.job} result`);
      assert.equal(seen.state.done, true, `completed of ${detail.job} told before its commit`);
      assert.equal(seen.state.result, detail.result);
    } else {
      const last = seen.failures.at(-1);
      assert.ok(last, `${event} of ${detail.job} told before the failure was stored`);
      assert.equal(last.fence, detail.fence);
      assert.equal(last.error, detail.error);
      assert.equal(seen.dead, event === 'dead');
      if (event === 'failed') {
        assert.equal(seen.state.done, false);
        assert.ok(detail.retryAt > 0 && seen.state.until === detail.retryAt, `retryAt ${detail.retryAt}, stored until ${seen.state.until}`);
      }
    }
  }
  const flaky = heard.filter((h) => h.detail.job === 'flaky');
  assert.deepEqual(flaky.map((h) => [h.detail.attempt, h.detail.error ?? null]), [[1, 'Error: once broken'], [2, null]]);
  assert.deepEqual(worker.stats, { ...worker.stats, completed: 2, failed: 2, dead: 1 });
});

test('lost: a lease that ended while the handler blocked the event loop is told, and its retry completes', async (t) => {
  const { store, observer } = await twoConnections(t);
  store.enqueue('blocked');
  const worker = new JobWorker(store, { owner: 'w', ttl: 0.3, idle: 0.02 });
  const heard = record(worker, observer);
  let runs = 0;
  await worker.run(
    async () => {
      if (++runs === 1) {
        const end = Date.now() + 600; // past the lease, no timer can renew it
        while (Date.now() < end);
      }
      return 'second try';
    },
    { untilEmpty: true },
  );
  assert.deepEqual(heard.map((h) => [h.event, h.detail.fence]), [['lost', 1], ['completed', 2]]);
  const lost = heard[0];
  assert.equal(lost.detail.reason.code, 'expired');
  assert.match(lost.detail.message, /blocked the event loop/);
  assert.equal(lost.seen.state.done, false, 'the lost attempt wrote nothing');
});

test('released: stop() gives the lease back, told once the release committed', async (t) => {
  const { store, observer } = await twoConnections(t);
  store.enqueue('long');
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02 });
  const heard = record(worker, observer);
  let started;
  const handling = new Promise((resolve) => (started = resolve));
  const running = worker.run(async (_job, { signal }) => {
    started();
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return 'never written';
  });
  await handling;
  await worker.stop();
  await running;
  assert.deepEqual(heard.map((h) => h.event), ['released']);
  const { detail, seen } = heard[0];
  assert.deepEqual(detail, { job: 'long', fence: 1 });
  assert.equal(seen.state.owner, null, 'released told while the lease was still held');
  assert.equal(seen.state.done, false);
});

test('a listener that throws or rejects goes to onError and the worker goes on; off removes one', async (t) => {
  const { store, observer } = await twoConnections(t);
  for (const job of ['a', 'b', 'c']) store.enqueue(job);
  const errors = [];
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, onError: (error, context) => errors.push({ message: error.message, ...context }) });
  const removed = [];
  const remove = (detail) => removed.push(detail.job);
  worker
    .on('completed', () => {
      throw new Error('listener broke');
    })
    .on('completed', async () => {
      throw new Error('listener rejected');
    })
    .on('completed', remove)
    .off('completed', remove);
  const stats = await worker.run(async (job) => job, { untilEmpty: true });
  await sleep(10); // the rejections are reported on the next turns
  assert.equal(stats.completed, 3);
  assert.deepEqual(removed, []);
  assert.deepEqual(
    errors.map((e) => [e.op, e.event, e.job, e.message]).sort(),
    ['a', 'b', 'c'].flatMap((job) => [['event', 'completed', job, 'listener broke'], ['event', 'completed', job, 'listener rejected']]).sort(),
  );
  for (const job of ['a', 'b', 'c']) assert.equal(observer.state(job).done, true);
});

test('on refuses an unknown event and a listener that is not a function', async (t) => {
  const { store, observer } = await twoConnections(t);
  const worker = new JobWorker(store, { owner: 'w', ttl: 30 });
  for (const [event, listener, words] of [
    ['complete', () => {}, /no event; the events are completed, failed, dead, released, lost/],
    ['completed', 'not a function', /`listener` must be a function/],
  ]) {
    assert.throws(
      () => worker.on(event, listener),
      (e) => e instanceof LeaseError && e.code === 'invalid_argument' && words.test(e.message),
    );
  }
});

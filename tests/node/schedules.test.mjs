// Recurring jobs (docs/contract.md section 11) through the npm package: schedule/unschedule/
// schedules/enqueueDue with an options object, the bundled time zone data (the same answers as
// the native build, whatever the machine's zone files), and a JobWorker that enqueues the due
// slot as it ticks. The shared vectors (tests/vectors/schedule-*.json) run in vectors.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore, JobWorker } = loadPackage();
const dir = tempDir('leasefence-schedules-');
let files = 0;
const fresh = () => LeaseStore.open(path.join(dir, `s${files++}.db`));

test('schedule takes an options object; bad options throw invalid_argument and change nothing', async () => {
  const store = await fresh();
  try {
    assert.equal(store.schedule('r', '0 9 * * MON-FRI', { tz: 'Asia/Tokyo', queue: 'q', priority: 2, payload: 'p', missed: 'all' }), true);
    assert.deepEqual(store.schedules(), [
      { name: 'r', cron: '0 9 * * MON-FRI', tz: 'Asia/Tokyo', queue: 'q', priority: 2, payload: 'p', missed: 'all', last: null },
    ]);
    for (const [cron, options, pattern] of [
      ['0 9 * *', {}, /cron/],
      ['0 9 * * *', { tz: 'Mars/Olympus' }, /tz/],
      ['0 9 * * *', { missed: 'some' }, /missed/],
      ['0 9 * * *', { zone: 'UTC' }, /zone/],
      ['0 9 * * *', 'UTC', /options/],
      ['0 9 * * *', { priority: 1.5 }, /priority/],
    ]) {
      assert.throws(() => store.schedule('bad', cron, options), (e) => e.code === 'invalid_argument' && pattern.test(e.message), `${cron} ${JSON.stringify(options)}`);
    }
    assert.deepEqual(store.schedules().map((s) => s.name), ['r']);
    assert.equal(store.unschedule('r'), true);
    assert.equal(store.schedule('plain', '*/5 * * * *'), true);
    assert.deepEqual(store.enqueueDue(601), ['plain@1970-01-01T00:10:00Z']);
    assert.deepEqual(store.enqueueDue(602), []);
    assert.equal(store.unschedule('plain'), true);
    assert.equal(store.unschedule('plain'), false);
  } finally {
    store.close();
  }
});

test('time zones come with the package: a New York slot in the spring gap runs when the gap ends', async () => {
  const store = await fresh();
  try {
    store.schedule('gap', '30 2 * * *', { tz: 'America/New_York' });
    // 2026-03-08 07:00 UTC is 03:00 EDT, the first instant after the skipped 02:00-03:00.
    assert.deepEqual(store.enqueueDue(1772953200), ['gap@2026-03-08T07:00:00Z']);
  } finally {
    store.close();
  }
});

test('a JobWorker enqueues the due slot as it ticks and runs it', async () => {
  for (const concurrency of [1, 3]) {
    const store = await fresh();
    try {
      store.schedule('nightly', '0 2 * * *', { payload: 'p' });
      const seen = [];
      const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.01, concurrency, clock: () => 97200 });
      const stats = await worker.run(async (job, context) => { seen.push([job, context.payload]); }, { untilEmpty: true });
      assert.deepEqual(seen, [['nightly@1970-01-02T02:00:00Z', 'p']], `concurrency ${concurrency}`);
      assert.equal(stats.completed, 1);
    } finally {
      store.close();
    }
  }
});

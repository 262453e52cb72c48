// Queues and priorities in the playground (docs/contract.md section 11), in headless Chromium:
// the 'priorities' preset played by clicking (the jobs table gains its queue and priority columns,
// an urgent job overtakes older ones through the real store's claim_next, and the stalled
// worker's late completion is refused by the fence), and free play with the Store box's priority.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { bothTables, withBrowser, openPlayground, settled, startServer } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

/** The playground, ready and idle, 900 pixels high. */
const open = (browser) => openPlayground(browser, server.url, { viewport: { width: 1280, height: 900 } });

/** The jobs table's header cells as drawn (hidden ones left out). */
async function jobsHeader(page) {
  await settled(page);
  return page.locator('#jobs-table thead th').evaluateAll((cells) => cells.filter((c) => !c.hidden).map((c) => c.textContent));
}

/** Every card of the timeline, in entry order: who, what, the job it is about, the store's answer. */
async function cards(page) {
  await settled(page);
  return page.locator('#timeline .tl-card').evaluateAll((nodes) => nodes
    .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
    .map((node) => [[...node.closest('.tl-lane').classList].find((c) => c.startsWith('lane-')).slice(5), node.querySelector('.c-op').textContent,
      node.querySelector('.c-job').textContent, node.querySelector('.c-text').textContent]));
}

const SIX = ['id', 'owner', 'until', 'fence', 'result', 'done'];
const EIGHT = ['id', 'queue', 'priority', 'owner', 'until', 'fence', 'result', 'done'];

test('the priorities preset: queue and priority columns, an urgent job overtakes, the stale worker is refused', () => withBrowser(async (browser) => {
  const page = await open(browser);
  // The story uses neither: the jobs table keeps the six columns of `jobs`.
  assert.deepEqual(await jobsHeader(page), SIX);

  await page.selectOption('#scenario', 'priorities');
  await page.click('#scenario-start');
  await page.waitForFunction(() => /^step 1 of/.test(document.getElementById('story-progress').textContent));
  assert.deepEqual(await jobsHeader(page), EIGHT, 'the preset gives priorities: the table shows queue and priority');
  const steps = Number((await page.locator('#story-progress').textContent()).match(/\d+/g).at(-1));
  const after = {};
  for (let s = 2; s <= steps; s++) {
    await page.click('#story-next');
    await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want), `step ${s} of`);
    after[s] = await bothTables(page);
  }

  // B's claim_next at t=4 (step 6): job-urgent, enqueued at t=3 with priority 10, is claimed
  // ahead of job-low-2, which has waited since t=0 and stays queued.
  assert.deepEqual(after[6].jobs.map((r) => [r.id, r.priority, r.owner, r.fence]), [
    ['job-low-1', '0', 'A', '1'],
    ['job-low-2', '0', '—', '0'],
    ['job-urgent', '10', 'B', '1'],
  ]);

  // The store's own picks, as the cards draw them: the oldest of equals, then the urgent one,
  // then the one left, then A's job again once its lease ended, with the next fence.
  const claims = (await cards(page)).filter((c) => c[1] === 'claim_next');
  assert.deepEqual(claims, [
    ['A', 'claim_next', 'job-low-1', 'fence 1, until t=11'],
    ['B', 'claim_next', 'job-urgent', 'fence 1, until t=14'],
    ['B', 'claim_next', 'job-low-2', 'fence 1, until t=17'],
    ['C', 'claim_next', 'job-low-1', 'fence 2, until t=22'],
  ]);
  const last = page.locator(`#timeline .tl-card[data-index="${(await page.locator('#timeline .tl-card').count()) - 1}"]`);
  assert.equal(await last.locator('.c-op').textContent(), 'complete');
  assert.equal(await last.locator('.c-text').textContent(), 'stale fence 1, current 2');
  assert.match(await last.getAttribute('class'), /kind-refused/);
  assert.match(await page.locator('#status').textContent(), /A: complete job-low-1 .*→ ✗ stale fence 1, current 2/);

  // At the end: leasefence kept C's lease on job-low-1 (A's result never written); the store
  // without fencing took A's stale result and called the job done while C holds it.
  const end = await bothTables(page);
  assert.deepEqual(end.jobs.map((r) => [r.id, r.queue, r.priority, r.owner, r.fence, r.result, r.done]), [
    ['job-low-1', 'default', '0', 'C', '2', '—', 'no'],
    ['job-low-2', 'default', '0', 'B', '1', '—', 'no'],
    ['job-urgent', 'default', '10', 'B', '1', "B's result", '✓ yes'],
  ]);
  assert.deepEqual(end.leaseOnly.find((r) => r.id === 'job-low-1'), {
    id: 'job-low-1', owner: 'C', until: 't=22', result: "A's result", done: '✓ yes',
  });
  // The lease-only table has no queue: its columns are the same as before.
  assert.deepEqual(Object.keys(end.leaseOnly[0]), ['id', 'owner', 'until', 'result', 'done']);

  // A reload restores the same timeline (saved next to the jobs with the store's answers,
  // claim_next's picked jobs included) and the same tables.
  const before = await cards(page);
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
  assert.deepEqual(await cards(page), before);
  assert.deepEqual(await bothTables(page), end);
  assert.deepEqual(await jobsHeader(page), EIGHT);
  assert.deepEqual(page.errors, []);
}));

test('free play: enqueue with a priority, claim next takes the highest; the columns come with the first priority', () => withBrowser(async (browser) => {
  const page = await open(browser);
  await page.click('#reset');
  await page.click('#reset-confirm');
  await settled(page);

  await page.fill('#job', 'job-old');
  await page.click('#enqueue');
  await settled(page);
  assert.deepEqual(await jobsHeader(page), SIX, 'defaults only: no queue or priority columns');

  await page.click('#plus1');
  await settled(page);
  await page.fill('#job', 'job-new');
  await page.fill('#priority', '3');
  await page.fill('#queue', 'mail');
  await page.click('#enqueue');
  await settled(page);
  assert.deepEqual(await jobsHeader(page), EIGHT);

  // A priority the store cannot take from JavaScript is refused before anything is played.
  await page.fill('#priority', '1.5');
  await page.click('#enqueue');
  await page.locator('.banner-error', { hasText: 'The priority must be a whole number' }).waitFor();
  assert.equal(await page.locator('#timeline .tl-card').count(), 2);
  await page.fill('#priority', '0');

  await page.click('#A-claim_next');
  await settled(page);
  await page.click('#B-claim_next');
  await settled(page);
  await page.click('#C-claim_next');
  await settled(page);
  assert.deepEqual((await cards(page)).map((c) => c.slice(1)), [
    ['enqueue', 'job-old', 'queued'],
    ['enqueue', 'job-new', 'queued'],
    ['claim_next', 'job-new', 'fence 1, until t=11'],
    ['claim_next', 'job-old', 'fence 1, until t=11'],
    ['claim_next', '', 'nothing to claim'],
  ]);
  const { jobs } = await bothTables(page);
  assert.deepEqual(jobs.map((r) => [r.id, r.queue, r.priority, r.owner]), [
    ['job-old', 'default', '0', 'B'],
    ['job-new', 'mail', '3', 'A'],
  ]);
  // A remembers the fence of the job the store picked for it.
  await page.fill('#job', 'job-new');
  await settled(page);
  assert.match(await page.locator('#mem-A').textContent(), /fence 1/);
  assert.deepEqual(page.errors, []);
}));

test('an imported timeline: queue, priority and claim_next replayed on the store; bad ones refused, nothing runs', () => withBrowser(async (browser) => {
  const page = await open(browser);
  const file = (name, value) => ({ name, mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(value), 'utf8') });
  const markup = '<img src=x onerror="window.__pwned=1">';
  const doc = {
    format: 'leasefence-playground', v: 1, entries: [
      { t: 0, worker: 'store', op: 'enqueue', args: { job: 'job-a', queue: markup, priority: -5 } },
      { t: 0, worker: 'store', op: 'enqueue', args: { job: 'job-b' } },
      { t: 1, worker: 'C', op: 'claim_next', args: { ttl: 5 } },
      { t: 2, worker: 'A', op: 'claim_next', args: { ttl: 5 } },
    ],
  };
  await page.setInputFiles('#import', file('queues.json', doc));
  await page.locator('.banner-notice', { hasText: 'Loaded the timeline from the file: 4 operations' }).waitFor();
  // job-b's default priority 0 beats job-a's -5, though job-a was enqueued first.
  assert.deepEqual((await cards(page)).map((c) => c.slice(0, 3)), [
    ['store', 'enqueue', 'job-a'], ['store', 'enqueue', 'job-b'], ['C', 'claim_next', 'job-b'], ['A', 'claim_next', 'job-a'],
  ]);
  const { jobs } = await bothTables(page);
  assert.deepEqual(jobs.map((r) => [r.id, r.queue, r.priority, r.owner]), [['job-a', markup, '-5', 'A'], ['job-b', 'default', '0', 'C']]);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator('#jobs-body img').count(), 0);

  const enqueue = (args) => ({ v: 1, entries: [{ t: 0, worker: 'store', op: 'enqueue', args: { job: 'j', ...args } }] });
  for (const [name, value, message] of [
    ['fraction.json', enqueue({ priority: 1.5 }), /entries\[0\]\.args\.priority must be a whole number/],
    ['huge.json', enqueue({ priority: 2 ** 53 }), /entries\[0\]\.args\.priority must be a whole number/],
    ['text.json', enqueue({ priority: 'high' }), /entries\[0\]\.args\.priority must be a whole number/],
    ['empty.json', enqueue({ queue: '' }), /entries\[0\]\.args\.queue must not be empty/],
    ['queues.json', enqueue({ queues: ['mail'] }), /unknown member/],
    ['job.json', { v: 1, entries: [{ t: 0, worker: 'A', op: 'claim_next', args: { ttl: 5, job: 'j' } }] }, /unknown member/],
    ['store.json', { v: 1, entries: [{ t: 0, worker: 'store', op: 'claim_next', args: { ttl: 5 } }] }, /worker must be "A", "B" or "C"/],
  ]) {
    await page.setInputFiles('#import', file(name, value));
    await page.locator('.banner-error', { hasText: message }).waitFor();
    await settled(page);
    assert.equal(await page.locator('#timeline .tl-card').count(), 4, `${name}: nothing replaced`);
  }
  assert.deepEqual(page.errors, []);
}));

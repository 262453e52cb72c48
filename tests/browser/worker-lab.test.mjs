// The playground's worker lab in headless Chromium: the real JobWorker runs in the page against
// the real store on the page's clock. A stall stops A's heartbeats and the lost-lease signal
// fires after it; the report bucket shows the overwrite without a guard, the fence guard's
// refusal with the current fence, and rows a handler returns with fencedResult, committed with its
// completion or not at all (refused by the store when the stale worker's clock says its lease holds);
// the poison job retries with backoff and ends dead; a run repeats exactly; the timeline is
// replayed afterwards.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, withBrowser, bothTables, settled } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

/** Runs the lab in `mode`; answers each lane's events as [t, kind, text] and the facts. */
async function run(page, mode) {
  await page.selectOption('#lab-mode', mode);
  await page.click('#lab-run');
  await settled(page);
  const shown = await page.evaluate(() => ({
    mode: document.querySelector('#lab-body .lab-lanes')?.dataset.mode,
    banners: [...document.querySelectorAll('.banner')].map((b) => b.textContent),
  }));
  assert.equal(shown.mode, mode, `the lab shows a ${shown.mode} run after running ${mode}; banners: ${shown.banners.join(' | ')}`);
  return lab(page);
}

/** What the lab shows: each lane's events as [t, kind, text], the facts, A's ticks, the moral. */
function lab(page) {
  return page.evaluate(() => {
    const lanes = {};
    for (const lane of document.querySelectorAll('#lab-body .lab-lane')) {
      lanes[lane.dataset.lane] = [...lane.querySelectorAll('.lab-events > li')].map((li) => [
        Number(li.querySelector('.lab-t').textContent.slice(2)), li.dataset.kind, li.textContent]);
    }
    const facts = [...document.querySelectorAll('#lab-body .lab-facts li')].map((li) => li.textContent);
    const ticks = document.querySelectorAll('#lab-body .lab-lane-A .lab-track .lab-tick').length;
    return { lanes, facts, ticks, moral: document.querySelector('#lab-body .lab-moral').textContent };
  });
}

const kinds = (events) => events.map(([t, kind]) => `${t}:${kind}`);

/** The playground at `url`, ready, with the page's uncaught errors collected in `errors`. */
async function openPlayground(browser, url) {
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(url);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
  return { page, errors };
}

test('the worker lab: heartbeats, a stall, the lost-lease signal, the bucket with and without the guard, a fenced write, a dead job', () => withBrowser(async (browser) => {
  const { page, errors } = await openPlayground(browser, server.url);
  await page.click('#story-next'); // the story's first step: the timeline has entries to replay
  await settled(page);
  const tableBefore = await page.locator('#jobs-body').textContent();

  // No guard: A heartbeats at t=3 and 6, stalls at 7; its lease (until 16) runs out, B claims
  // at 16 and uploads at 18; A wakes at 20, uploads over B's report, then gets the signal.
  const none = await run(page, 'none');
  assert.deepEqual(kinds(none.lanes.A), ['0:claim', '3:renew', '6:renew', '7:stall', '20:resume', '20:lost']);
  assert.match(none.lanes.A.at(-1)[2], /lease_lost.*expired/);
  assert.equal(none.ticks, 2, 'two heartbeat ticks on A\'s lane, none during the stall');
  assert.ok(kinds(none.lanes.B).includes('16:claim') && kinds(none.lanes.B).includes('18:complete'), kinds(none.lanes.B).join(' '));
  assert.deepEqual(kinds(none.lanes.bucket), ['18:put', '20:put']);
  assert.match(none.facts[0], /“A's report” \(fence 1\)/, 'without a guard A\'s late upload is what the bucket holds');

  // The lab's time slider, by keyboard: at t=16 what came later is dimmed, on the tracks and in
  // the lists, with the playhead drawn at 16/26 of each track.
  await page.focus('#lab-time');
  await page.keyboard.press('End');
  for (let i = 0; i < 10; i++) await page.keyboard.press('ArrowLeft');
  const at16 = await page.evaluate(() => ({
    out: document.querySelector('#lab-time-out').textContent,
    at: document.querySelector('#lab-body .lab-lanes').dataset.at,
    now: Object.fromEntries([...document.querySelectorAll('#lab-body .lab-lane')].map((lane) => [lane.dataset.lane,
      [...lane.querySelectorAll('.lab-events > li:not(.lab-later)')].map((li) => li.dataset.kind).join(' ')])),
    laterMarks: document.querySelectorAll('#lab-body .lab-track .lab-mark.lab-later').length,
    playhead: Number(parseFloat(document.querySelector('#lab-body .lab-lane-A .lab-playhead')?.style.left).toFixed(2)),
    focused: document.activeElement.id,
  }));
  assert.deepEqual(at16, {
    out: 't=16', at: '16',
    now: { A: 'claim renew renew stall', B: 'claim', bucket: '' },
    laterMarks: 4, // A's lost-lease signal, B's completion, both uploads
    playhead: 61.54, // 16 / 26 of the track
    focused: 'lab-time',
  });

  // The page's clock makes a run repeatable: the same calls, times and answers again.
  assert.deepEqual(await run(page, 'none'), none);

  // The fence guard: A's late upload refused with the current fence, B's report stays.
  const guard = await run(page, 'guard');
  assert.deepEqual(kinds(guard.lanes.bucket), ['18:guard', '20:guard']);
  assert.match(guard.lanes.bucket[1][2], /A’s upload \(fence 1\) refused: current fence 2/);
  assert.match(guard.facts[0], /“B's report” \(fence 2\)/);
  assert.ok(kinds(guard.lanes.A).includes('20:lost'));

  // fencedResult: each handler's row commits in its completion's transaction. A's clock stops
  // with it, so its runtime sees a live lease and sends the row; B's report takes 6 s here, so
  // B still holds the job (not done) when A wakes: the store refuses A by the fence.
  const fenced = await run(page, 'fenced');
  assert.deepEqual(kinds(fenced.lanes.bucket), ['20:fenced', '22:fenced']);
  assert.match(fenced.lanes.bucket[0][2], /A’s row and completion \(fence 1, its clock at t=7\) refused: stale_fence, nothing written/);
  assert.match(fenced.lanes.bucket[1][2], /B’s row and completion \(fence 2\) committed in one transaction/);
  assert.deepEqual(kinds(fenced.lanes.A), ['0:claim', '3:renew', '6:renew', '7:stall', '20:resume', '20:complete', '20:lost']);
  assert.match(fenced.lanes.A[4][2], /its clock reads t=7/);
  assert.match(fenced.lanes.A[6][2], /lease_lost.*stale_fence/, 'the signal carries the store\'s refusal, not the runtime\'s own expiry check');
  assert.ok(kinds(fenced.lanes.B).includes('22:complete'), kinds(fenced.lanes.B).join(' '));
  assert.match(fenced.moral, /B still held the job, which was not done yet, so a check of `?done`? could not have refused A/);
  assert.match(fenced.facts[0], /“B's report” \(fence 2\)/);
  assert.ok(fenced.facts.some((f) => /^Worker A: 0 completed.*1 lease lost, 1 stale write refused/.test(f)), fenced.facts.join(' | '));

  // Without the pause: A renews on time, uploads and completes; no lost-lease signal.
  await page.click('#lab-pause');
  assert.equal(await page.getAttribute('#lab-pause', 'aria-pressed'), 'false');
  const calm = await run(page, 'guard');
  assert.ok(!kinds(calm.lanes.A).some((k) => k.endsWith(':lost')), kinds(calm.lanes.A).join(' '));
  assert.ok(kinds(calm.lanes.A).includes('8:complete'));
  assert.match(calm.facts[0], /“A's report” \(fence 1\)/);
  const calmFenced = await run(page, 'fenced');
  assert.deepEqual(kinds(calmFenced.lanes.bucket), ['8:fenced']);
  assert.match(calmFenced.lanes.A.find(([, kind]) => kind === 'complete')[2], /completed, with its rows/);
  assert.match(calmFenced.facts[0], /“A's report” \(fence 1\)/);
  await page.click('#lab-pause');

  // The pause under the page's control: A woken at t=12, before its lease ends at 16, finishes
  // and completes while the lease holds; nothing is lost. A wake time outside 8..60 is refused, nothing run.
  await page.fill('#lab-wake', '12');
  const short = await run(page, 'guard');
  assert.deepEqual(kinds(short.lanes.A), ['0:claim', '3:renew', '6:renew', '7:stall', '12:resume', '12:complete']);
  assert.match(short.facts[0], /“A's report” \(fence 1\)/);
  assert.equal(short.lanes.B, undefined, 'B never got the job');
  assert.match(short.moral, /A pause shorter than the lease costs nothing/);
  await page.fill('#lab-wake', '3');
  await page.click('#lab-run');
  await settled(page);
  assert.match(await page.locator('.banner-error').textContent(), /wake time must be a whole number from 8 to 60/);
  assert.deepEqual(await lab(page), short, 'a refused wake time ran nothing');
  await page.fill('#lab-wake', '20');

  // The poison job: fails with a backoff of 4 s, twice, then dead at the third attempt.
  const poison = await run(page, 'poison');
  assert.deepEqual(kinds(poison.lanes.A), ['0:claim', '1:fail', '5:claim', '6:fail', '10:claim', '11:fail']);
  assert.match(poison.lanes.A[1][2], /retry at t=5/);
  assert.match(poison.lanes.A[5][2], /dead/);
  assert.ok(poison.facts.some((f) => /dead, 3 attempts, 3 failures/.test(f)), poison.facts.join(' | '));

  // By keyboard alone, at 360 px: Tab to the run button, Enter; no sideways scrolling.
  await page.setViewportSize({ width: 360, height: 780 });
  await page.selectOption('#lab-mode', 'guard');
  await page.focus('#lab-pause');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'lab-wake');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'lab-run');
  await page.keyboard.press('Enter');
  await settled(page);
  assert.match(await page.locator('#lab-body .lab-moral').textContent(), /refused A’s late upload/);
  assert.ok(await page.evaluate(() => document.scrollingElement.scrollWidth) <= 360, 'no sideways scrolling at 360 px');
  await page.setViewportSize({ width: 1280, height: 800 });

  // The timeline came back as it was: the lab erased the store, then the page replayed it.
  assert.equal(await page.locator('#jobs-body').textContent(), tableBefore);
  assert.deepEqual(errors, []);
}));

test('a lab run travels with the timeline: a shared link and a reload run it again, the same; a bad lab in a link is refused', async () => {
  const browser = await launchBrowser();
  let link;
  let want;
  try {
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.goto(server.url);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await page.click('#lab-pause'); // the calm variant: the link must carry the pause setting too
    want = await run(page, 'fenced');
    await page.click('#share');
    link = await page.inputValue('#share-url');
    // A reload of the same profile runs the saved lab again.
    await page.reload();
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await settled(page);
    assert.deepEqual(await lab(page), want, 'after a reload');
  } finally {
    await browser.close();
  }
  assert.match(link, /#timeline=/);
  const fresh = await launchBrowser();
  try {
    const page = fresh.context.pages()[0] ?? (await fresh.context.newPage());
    await page.goto(link);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await settled(page);
    assert.deepEqual(await lab(page), want, 'from the link in a fresh profile');
    assert.equal(await page.inputValue('#lab-mode'), 'fenced');
    assert.equal(await page.getAttribute('#lab-pause', 'aria-pressed'), 'false');

    // A link whose lab names no mode is refused as a whole, and the page says what is wrong.
    const doc = JSON.parse(Buffer.from(link.split('#timeline=')[1], 'base64url').toString('utf8'));
    assert.deepEqual(doc.lab, { mode: 'fenced', stall: false, wake: 20 });
    const bad = `${server.url}#timeline=${Buffer.from(JSON.stringify({ ...doc, lab: { mode: 'sideways', stall: true } })).toString('base64url')}`;
    await page.goto(bad);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await settled(page);
    assert.match(await page.locator('.banner-error').textContent(), /lab\.mode must be one of none, guard, fenced, poison/);

    // A link made before the wake time existed still opens, with A waking at 20.
    const older = `${server.url}#timeline=${Buffer.from(JSON.stringify({ ...doc, lab: { mode: 'guard', stall: true } })).toString('base64url')}`;
    await page.goto(older);
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await settled(page);
    assert.equal(await page.inputValue('#lab-wake'), '20');
    assert.ok(kinds((await lab(page)).lanes.A).includes('20:resume'));
  } finally {
    await fresh.close();
  }
});

/** The timeline's cards in order: [t, worker lane, op, granted | refused]. */
function cards(page) {
  return page.locator('#timeline .tl-card').evaluateAll((nodes) => nodes
    .map((card) => ({ index: Number(card.dataset.index), card }))
    .sort((a, b) => a.index - b.index)
    .map(({ card }) => [Number(card.querySelector('.c-t').textContent.slice(2)), card.querySelector('.c-op').textContent,
      card.className.match(/kind-(\w+)/)[1]]));
}

test('a lab run opened in the timeline: the runtime\'s calls replayed on both tables, the same answers; without fencing A\'s late result overwrites B\'s', () => withBrowser(async (browser) => {
  const { page, errors } = await openPlayground(browser, server.url);
  assert.equal(await page.isDisabled('#lab-open'), true, 'nothing to open before a run');

  const fenced = await run(page, 'fenced');
  await page.click('#lab-open');
  await page.locator('.banner-notice', { hasText: 'the worker lab’s run' }).waitFor();
  await settled(page);
  // The timeline that the click replaced is scrolled into view (the lab's button is far below).
  const timelineTop = await page.evaluate(() => document.getElementById('timeline').closest('section').getBoundingClientRect().top);
  const viewport = await page.evaluate(() => window.innerHeight);
  assert.ok(timelineTop >= 0 && timelineTop < viewport / 2, `the timeline is at y=${timelineTop} of a ${viewport} px window`);
  // Every call the runtime made on the jobs table, at its time, with the answer the lab got.
  const lab = ['A', 'B'].flatMap((w) => fenced.lanes[w].filter(([, kind]) => ['claim', 'renew', 'complete', 'fail', 'release'].includes(kind))
    .map(([t, kind, text]) => [t, kind, /refused/.test(text) ? 'refused' : 'granted']));
  lab.sort((a, b) => a[0] - b[0]);
  assert.deepEqual(await cards(page), [[0, 'enqueue', 'granted'], ...lab]);
  assert.deepEqual(lab.slice(-2), [[20, 'complete', 'refused'], [22, 'complete', 'granted']],
    'A\'s late completion comes while B holds the job, before B\'s');
  const both = await bothTables(page);
  assert.deepEqual(
    { owner: both.jobs[0].owner, fence: both.jobs[0].fence, result: both.jobs[0].result },
    { owner: 'B', fence: '2', result: 'B\'s report' }, 'leasefence kept B\'s result');
  // The check, at A's late completion: refused by the fence, one row changed without fencing,
  // where A's stale result was stored and the job marked done while B still held it.
  const aCard = page.locator('#timeline .tl-card.kind-refused', { hasText: 'stale fence 1, current 2' });
  assert.equal(await aCard.count(), 1);
  await aCard.click();
  await settled(page);
  const checkText = await page.locator('#check-body').textContent();
  assert.match(checkText, /0 rows, so the reason was read in the same transaction: stale fence 1, current 2/);
  assert.match(checkText, /1 row changed/);
  const atA = await bothTables(page);
  assert.deepEqual({ owner: atA.jobs[0].owner, done: atA.jobs[0].done }, { owner: 'B', done: 'no' }, 'leasefence: B holds it, not done');
  assert.deepEqual({ owner: atA.leaseOnly[0].owner, result: atA.leaseOnly[0].result, done: atA.leaseOnly[0].done },
    { owner: 'B', result: 'A\'s report', done: '✓ yes' }, 'without fencing the stale worker\'s result is stored, done, under B\'s lease');

  // The poison run: three attempts failed through the runtime, dead in both tables.
  await run(page, 'poison');
  await page.click('#lab-open');
  await settled(page);
  assert.deepEqual((await cards(page)).map(([t, op, kind]) => `${t}:${op}:${kind}`),
    ['0:enqueue:granted', '0:claim:granted', '1:fail:granted', '5:claim:granted', '6:fail:granted', '10:claim:granted', '11:fail:granted']);
  assert.equal(await page.locator('#jobs-body td.col-done.is-dead').count(), 1);
  assert.equal(await page.locator('#lease-only-body td.col-done.is-dead').count(), 1);
  assert.deepEqual(errors, []);
}));

test('a reload during a lab run: the story step and the timeline come back, the page says the run was started again, and it ends', () => withBrowser(async (browser) => {
  const { page, errors } = await openPlayground(browser, server.url);
  const progress = () => page.locator('#story-progress').textContent();
  for (let s = 2; s <= 4; s++) {
    await page.click('#story-next');
    await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want), `step ${s} of`);
  }
  await settled(page);
  const before = await bothTables(page);
  assert.equal(before.jobs.length, 1);
  let interruptedRuns = 0;
  for (const delay of [0, 50, 150, 300, 500, 700]) {
    await page.selectOption('#lab-mode', 'guard');
    await page.click('#lab-run');
    await page.waitForTimeout(delay);
    // Whether the run had not ended yet, read in the same task that starts the reload. The old
    // page runs on until the new one replaces it: a run that ends in that gap must not clear
    // its mark, or the new page would see no interrupted run where this test saw one (seen on
    // a loaded machine), so the old page's removal of that one key is switched off here.
    const running = await page.evaluate(() => {
      const key = 'leasefence-playground:lab-run';
      const pending = localStorage.getItem(key) !== null;
      const remove = Storage.prototype.removeItem;
      Storage.prototype.removeItem = function (name) {
        if (name !== key) remove.call(this, name);
      };
      location.reload();
      return pending;
    });
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    await settled(page);
    assert.equal(await progress(page), 'step 4 of 10', `reload ${delay} ms into a run: the story step`);
    if (running) {
      interruptedRuns += 1;
      await page.locator('.banner-notice', { hasText: 'The page was reloaded while the worker lab was running' }).waitFor();
    }
    // The run (started again, or the one that had ended) is shown to its end, then the timeline replayed.
    await page.waitForFunction(() => document.querySelector('#lab-body .lab-lanes')?.dataset.mode === 'guard', null, { timeout: 20_000 });
    await settled(page);
    assert.equal(await progress(page), 'step 4 of 10', `reload ${delay} ms into a run: the story step after the run`);
    assert.deepEqual(await bothTables(page), before, `reload ${delay} ms into a run: both tables`);
    assert.equal(await page.evaluate(() => localStorage.getItem('leasefence-playground:lab-run')), null, 'nothing is left pending');
    assert.match((await lab(page)).moral, /./);
  }
  assert.ok(interruptedRuns >= 3, `at least three reloads came during a run (${interruptedRuns})`);
  assert.deepEqual(errors, []);
}));

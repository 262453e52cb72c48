// The playground (web/index.html) in headless Chromium, driven like a person would: by clicking
// and typing. Each test gets its own browser profile, so its own OPFS.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, withBrowser, settled, watchErrors } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const DESKTOP = { width: 1280, height: 800 };

/** Opens the playground in `browser` and waits until its controls are enabled. */
async function open(browser, { url = server.url, viewport = DESKTOP, page } = {}) {
  page ??= browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.setViewportSize(viewport);
  watchErrors(page);
  const started = Date.now();
  await page.goto(url);
  await page.waitForSelector('main button:enabled', { timeout: 20_000 });
  const firstInteraction = Date.now() - started;
  await page.waitForSelector('html[data-ready="true"]');
  return { page, firstInteraction };
}

async function table(page) {
  await settled(page);
  return page.locator('#jobs-body tr').evaluateAll((rows) => rows.map((row) => {
    const cell = (name) => row.querySelector(`.col-${name} .v`)?.textContent ?? null;
    return {
      id: cell('id'), owner: cell('owner'), until: cell('until'), fence: cell('fence'),
      result: cell('result'), done: cell('done'),
    };
  }));
}

async function cards(page) {
  await settled(page);
  return page.locator('#timeline .tl-card').allTextContents();
}

async function progress(page) {
  return (await page.locator('#story-progress').textContent()).trim();
}

async function clickNext(page, expectStep) {
  await page.click('#story-next');
  await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want),
    `step ${expectStep} of`);
  await settled(page);
}

async function status(page) {
  await settled(page);
  return page.locator('#status').textContent();
}

test('end to end: the stale-worker story, played by clicking', () => withBrowser(async (browser) => {
  const { page, firstInteraction } = await open(browser);
  console.log(`# time to first interaction (goto to first enabled button): ${firstInteraction} ms` +
    ` (in page, navigation start to ready: ${await page.evaluate(() => document.documentElement.dataset.readyMs)} ms)`);

  // A new visitor lands on the story's first step, with Next to press.
  assert.match(await page.locator('#narration').textContent(), /Welcome!/);
  assert.equal(await progress(page), 'step 1 of 10');
  assert.equal(await page.locator('#story-next').isEnabled(), true);

  await clickNext(page, 2); // enqueue
  await clickNext(page, 3); // A claims: fence 1
  assert.match(await status(page), /A: claim job-42 \(ttl 10\) → ✓ fence 1, until t=10/);
  await clickNext(page, 4); // B claims at t=5: held
  assert.match(await status(page), /held by A until t=10/);
  await clickNext(page, 5); // the clock reaches t=10
  assert.equal(await page.locator('#clock').textContent(), 't = 10');
  await clickNext(page, 6); // B claims at t=12: fence 2
  assert.match(await page.locator('#mem-A').textContent(), /remembers fence 1 for job-42.*stale: store has 2/);
  await clickNext(page, 7); // A's late complete, while B holds the job: refused by the fence
  const rejected = page.locator('#timeline .tl-card.kind-refused', { hasText: 'stale fence 1, current 2' });
  await rejected.waitFor({ state: 'visible' });
  assert.match(await rejected.textContent(), /complete job-42/);
  assert.match(await status(page), /t=14 · A: complete job-42 \(fence 1 · “A's result”\) → ✗ stale fence 1, current 2/);
  assert.deepEqual(await table(page), [
    { id: 'job-42', owner: 'B', until: 't=22live', fence: '2', result: '—', done: 'no' },
  ], 'the job is not done: only the fence refused A');
  assert.deepEqual(await page.locator('#lease-only-body .col-result .v').allTextContents(), ["A's result"],
    'the lease-only store kept A\'s stale result while B holds the job');
  await clickNext(page, 8); // B completes
  assert.match(await status(page), /t=16 · B: complete job-42 \(fence 2 · “B's result”\) → ✓ done, result stored/);
  await clickNext(page, 9); // B's completion again: the done check, the second line of defence
  assert.match(await status(page), /t=18 · B: complete job-42 \(fence 2 · “B's result”\) → ✗ job already done/);
  assert.match(await page.locator('#narration').textContent(), /second line of defence/);
  await clickNext(page, 10); // the moral
  assert.equal(await page.locator('#story-next').isDisabled(), true);

  assert.equal(await rejected.isVisible(), true, 'the rejected completion stays on the timeline');
  assert.deepEqual(await table(page), [
    { id: 'job-42', owner: 'B', until: 't=22', fence: '2', result: "B's result", done: '✓ yes' },
  ]);

  // The narration speaks Japanese and Chinese too.
  await page.selectOption('#lang', 'ja');
  assert.match(await page.locator('#narration').textContent(), /フェンス/);
  assert.equal(await page.locator('#narration').getAttribute('lang'), 'ja');
  await page.selectOption('#lang', 'zh');
  assert.match(await page.locator('#narration').textContent(), /租约/);
  await page.selectOption('#lang', 'en');
  assert.match(await page.locator('#narration').textContent(), /No lease length could have saved/);

  // Back steps through the story again: the store is erased and replayed up to there.
  await page.click('#story-back');
  await page.click('#story-back');
  await page.click('#story-back');
  await page.click('#story-back');
  await page.waitForFunction(() => document.getElementById('story-progress').textContent.startsWith('step 6 of'));
  assert.deepEqual(await table(page), [
    { id: 'job-42', owner: 'B', until: 't=22live', fence: '2', result: '—', done: 'no' },
  ]);
  assert.deepEqual(await page.locator('#lease-only-body .col-result .v').allTextContents(), ['—'],
    'the lease-only table is replayed too');
  assert.deepEqual(page.errors, []);
}));

test('actions fork the timeline, and everything is back after a reload', () => withBrowser(async (browser) => {
  const { page } = await open(browser);
  await page.fill('#job', 'invoice-7');
  await page.click('#enqueue');
  await page.locator('.banner-notice', { hasText: 'You left the story' }).waitFor();
  await page.click('#A-claim');
  assert.match(await status(page), /t=0 · A: claim invoice-7 \(ttl 10\) → ✓ fence 1, until t=10/);
  await page.click('#plus5');
  await page.click('#B-claim');
  assert.match(await status(page), /t=5 · B: claim invoice-7 .*held by A until t=10/);
  await page.click('#plus5');
  await page.click('#B-claim');
  assert.match(await status(page), /t=10 · B: claim invoice-7 .*✓ fence 2, until t=20/);
  await page.click('#A-complete');
  assert.match(await status(page), /✗ stale fence 1, current 2/);
  assert.equal((await cards(page)).length, 5);

  // Step back twice (before B's second claim), then act: the old future is cut off.
  await page.click('#back');
  await page.click('#back');
  await settled(page);
  assert.equal(await page.locator('#count').textContent(), '3 of 5 operations played');
  await page.click('#A-renew');
  assert.match(await status(page), /t=10 · A: renew invoice-7 \(fence 1 · ttl 10\) → ✗ lease expired at t=10/);
  await page.locator('.banner-notice', { hasText: 'The timeline forked at t=10' }).waitFor();
  assert.equal(await page.locator('#count').textContent(), '4 of 4 operations played');

  const before = { table: await table(page), cards: await cards(page) };
  assert.deepEqual(before.table, [
    { id: 'invoice-7', owner: 'A', until: 't=10expired', fence: '1', result: '—', done: 'no' },
  ]);

  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  // The table comes from the store as it was left in OPFS, not from a replay.
  assert.equal(await page.evaluate(() => document.documentElement.dataset.restored), 'from-store');
  assert.deepEqual(await table(page), before.table);
  assert.deepEqual(await cards(page), before.cards);
  assert.equal(await page.locator('#count').textContent(), '4 of 4 operations played');
  assert.equal(await page.locator('#clock').textContent(), 't = 10');

  // Scrub back to t=0 with the time slider (keyboard), then play the rest.
  await page.focus('#scrub');
  await page.keyboard.press('Home');
  await settled(page);
  assert.equal(await page.locator('#clock').textContent(), 't = 0');
  assert.equal(await page.locator('#count').textContent(), '2 of 4 operations played');
  assert.deepEqual(await table(page), [
    { id: 'invoice-7', owner: 'A', until: 't=10live', fence: '1', result: '—', done: 'no' },
  ]);
  await page.click('#play');
  await page.waitForFunction(() => document.getElementById('count').textContent === '4 of 4 operations played');
  await page.waitForSelector('#play:disabled');
  assert.deepEqual(await table(page), before.table);

  // Reset: a brand-new database and an empty timeline.
  await page.click('#reset');
  await page.click('#reset-confirm'); // Reset asks first
  await page.locator('.banner-notice', { hasText: 'Reset' }).waitFor();
  assert.deepEqual(await table(page), []);
  assert.deepEqual(await cards(page), []);
  await page.reload();
  await page.waitForSelector('html[data-ready="true"]');
  assert.deepEqual(await cards(page), []);
  assert.deepEqual(page.errors, []);
}));

test('a shared link replays the same timeline in a fresh browser profile', async () => {
  const first = await launchBrowser();
  const second = await launchBrowser();
  try {
    const { page } = await open(first);
    await page.selectOption('#scenario', 'release-reclaim');
    await page.click('#scenario-start');
    await page.waitForFunction(() => document.getElementById('story-title').textContent.startsWith('Release'));
    for (let step = 2; step <= 8; step++) await clickNext(page, step);
    const want = { table: await table(page), cards: await cards(page) };
    assert.deepEqual(want.table, [
      { id: 'job-9', owner: 'B', until: 't=14', fence: '2', result: "B's result", done: '✓ yes' },
    ]);

    await page.click('#share');
    const link = await page.inputValue('#share-url');
    assert.match(link, /#timeline=[A-Za-z0-9_-]+$/);

    const { page: other } = await open(second, { url: link });
    await other.locator('.banner-notice', { hasText: 'Loaded the timeline from the shared link' }).waitFor();
    assert.deepEqual(await table(other), want.table);
    assert.deepEqual(await cards(other), want.cards);
    assert.equal(new URL(other.url()).hash, '', 'the link is taken out of the address bar once read');
    assert.deepEqual(other.errors, []);
  } finally {
    await first.close();
    await second.close();
  }
});

test('every scenario gets from the real store the answers its narration tells', () => withBrowser(async (browser) => {
  const { page } = await open(browser);
  const scenarios = await page.evaluate(async () => {
    const { SCENARIOS, scenarioSource } = await import('/app/model/scenarios.js');
    return SCENARIOS.map((sc) => ({ id: sc.id, steps: sc.steps.length, expect: sc.steps.filter((s) => s.do).map((s) => s.expect), incident: Boolean(scenarioSource(sc, 'en')) }));
  });
  assert.equal(scenarios.length, 10);
  // The guided story and the incident presets are played, answers and tables, in incidents.test.mjs.
  for (const sc of scenarios.filter((s) => !s.incident && s.id !== 'stale-worker')) {
    await page.selectOption('#scenario', sc.id);
    await page.click('#scenario-start');
    await page.waitForFunction((want) => document.getElementById('story-progress').textContent === want, `step 1 of ${sc.steps}`);
    for (let step = 2; step <= sc.steps; step++) await clickNext(page, step);
    await settled(page);
    const answers = await page.locator('#timeline .tl-card').evaluateAll((nodes) => nodes
      .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
      .map((node) => node.querySelector('.c-text').textContent));
    assert.deepEqual(answers, sc.expect, sc.id);
  }
  assert.deepEqual(page.errors, []);
}));

function b64url(text) {
  return Buffer.from(text, 'utf8').toString('base64url');
}

test('hostile timelines: shown as text, invalid ones refused, nothing runs', () => withBrowser(async (browser) => {
  const { page } = await open(browser);
  let dialogs = 0;
  page.on('dialog', (dialog) => {
    dialogs += 1;
    dialog.dismiss().catch(() => {});
  });
  const img = '<img src=x onerror="window.__pwned=1;alert(1)">';
  const script = '<script>window.__pwned=2</script>"\'`${x}';
  const svg = '"\'><svg onload=window.__pwned=3>&amp;&lt;';
  const long = `<b>${'"<i>'.repeat(49)}!`; // 200 characters: the longest a string may be
  const hostile = {
    format: 'leasefence-playground', v: 1, entries: [
      { t: 0, worker: 'store', op: 'enqueue', args: { job: img } },
      { t: 0, worker: 'store', op: 'enqueue', args: { job: long } },
      { t: 1, worker: 'A', op: 'claim', args: { job: img, ttl: 10 } },
      { t: 2, worker: 'A', op: 'complete', args: { job: img, fence: 1, result: script } },
      { t: 3, worker: 'B', op: 'claim', args: { job: svg, ttl: 5 } },
    ],
  };
  assert.equal(long.length, 200);
  const file = (name, text) => ({ name, mimeType: 'application/json', buffer: Buffer.from(text, 'utf8') });

  const noMarkup = async () => {
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    assert.equal(dialogs, 0);
    assert.equal(await page.locator('#timeline img, #jobs-body img, #timeline svg, #jobs-body svg, ' +
      '#timeline script, #jobs-body script, #banners img, #banners b, #timeline b, #jobs-body b').count(), 0);
  };
  const wantTable = [
    { id: img, owner: 'A', until: 't=11', fence: '1', result: script, done: '✓ yes' },
    { id: long, owner: '—', until: '—', fence: '0', result: '—', done: 'no' },
  ];

  // Import a valid file full of markup: replayed, and every string comes back exactly, as text.
  await page.setInputFiles('#import', file('evil.json', JSON.stringify(hostile)));
  await page.locator('.banner-notice', { hasText: 'Loaded the timeline from the file: 5 operations' }).waitFor();
  assert.deepEqual(await table(page), wantTable);
  const timelineText = (await cards(page)).join('\n');
  assert.ok(timelineText.includes(img) && timelineText.includes(svg));
  assert.match(timelineText, /no such job/); // B claimed a job that was never enqueued
  await noMarkup();

  // Invalid files are refused with a visible message, and nothing changes.
  const refusals = [
    ['huge.json', JSON.stringify({ v: 1, entries: [{ t: 0, worker: 'store', op: 'enqueue', args: { job: 'x'.repeat(1 << 20) } }] }), /larger than 400000 characters/],
    ['long.json', JSON.stringify({ v: 1, entries: [{ t: 0, worker: 'store', op: 'enqueue', args: { job: 'y'.repeat(201) } }] }), /entries\[0\]\.args\.job is longer than 200 characters/],
    ['types.json', JSON.stringify({ v: 1, entries: [{ t: '5', worker: 'A', op: 'claim', args: { job: 'j', ttl: 10 } }] }), /entries\[0\]\.t must be a finite number/],
    ['fence.json', JSON.stringify({ v: 1, entries: [{ t: 5, worker: 'A', op: 'release', args: { job: 'j', fence: '1' } }] }), /fence must be a whole number/],
    ['op.json', JSON.stringify({ v: 1, entries: [{ t: 5, worker: 'A', op: 'eval', args: { code: img } }] }), /op must be one of/],
    ['proto.json', '{"v":1,"entries":[],"__proto__":{"polluted":1}}', /unknown member/],
    ['many.json', JSON.stringify({ v: 1, entries: Array(501).fill({ t: 0, worker: 'store', op: 'enqueue', args: { job: 'j' } }) }), /more than 500 operations/],
    ['html.json', `<script>window.__pwned=4</script>${img}`, /not valid JSON/],
    ['array.json', '[1,2,3]', /must be a JSON object/],
  ];
  for (const [name, text, message] of refusals) {
    await page.setInputFiles('#import', file(name, text));
    const banner = page.locator('.banner-error', { hasText: 'Import refused.' });
    await banner.waitFor();
    assert.match(await banner.textContent(), message, name);
    await banner.locator('.banner-close').click();
  }
  assert.deepEqual(await table(page), wantTable);
  await noMarkup();

  // The same through the URL: a same-page hash change, and a fresh page load.
  await page.goto(`${server.url}#timeline=${b64url(JSON.stringify({ v: 1, entries: [{ t: 0, worker: 'store', op: 'enqueue', args: { job: 'z'.repeat(1 << 20) } }] }))}`);
  const refused = page.locator('.banner-error', { hasText: 'Shared link refused.' });
  await refused.waitFor();
  assert.match(await refused.textContent(), /larger than 400000 characters/);
  await refused.locator('.banner-close').click();
  await page.goto(`${server.url}#timeline=${b64url(JSON.stringify({ v: 1, entries: [{ t: 0, worker: 'A', op: 'claim', args: { job: 'j', ttl: 'forever' } }] }))}`);
  await refused.waitFor();
  assert.match(await refused.textContent(), /ttl must be a finite number/);
  await refused.locator('.banner-close').click();
  await page.goto(`${server.url}#timeline=${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
  await refused.waitFor();
  assert.match(await refused.textContent(), /not base64url/);
  assert.deepEqual(await table(page), wantTable);

  await page.goto('about:blank');
  await page.goto(`${server.url}#timeline=${b64url(JSON.stringify({ ...hostile, entries: hostile.entries.slice(0, 4) }))}`);
  await page.waitForSelector('html[data-ready="true"]');
  await page.locator('.banner-notice', { hasText: 'Loaded the timeline from the shared link: 4 operations' }).waitFor();
  assert.deepEqual(await table(page), wantTable);
  assert.match(await page.locator('#status').textContent(), /<script>window.__pwned=2<\/script>/);
  await noMarkup();
  assert.equal(await page.locator('#lease-only-body img, #lease-only-body script, #check-body img, #check-body script, #check-body b').count(), 0);
  assert.deepEqual(page.errors, []);
}));

test('360 px wide: no sideways scrolling, every control reachable; keyboard works', () => withBrowser(async (browser) => {
  const { page } = await open(browser, { viewport: { width: 360, height: 780 } });
  const scrollWidth = () => page.evaluate(() => document.scrollingElement.scrollWidth);
  assert.ok(await scrollWidth() <= 360, `scrollWidth ${await scrollWidth()}`);

  // Keyboard: Tab to Next and press Enter; then the arrow-key shortcuts.
  let focused = null;
  for (let i = 0; i < 40 && focused !== 'story-next'; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.id);
  }
  assert.equal(focused, 'story-next', 'Next is reachable with Tab');
  const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
  assert.notEqual(outline, 'none', 'the focused control shows a focus ring');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => document.getElementById('story-progress').textContent.startsWith('step 2 of'));
  for (let i = 0; i < 5; i++) await page.keyboard.press('ArrowRight');
  await page.waitForFunction(() => document.getElementById('story-progress').textContent.startsWith('step 7 of'));
  await page.locator('#timeline .tl-card', { hasText: 'stale fence 1, current 2' }).waitFor();
  await page.keyboard.press('ArrowLeft');
  await page.waitForFunction(() => document.getElementById('story-progress').textContent.startsWith('step 6 of'));
  await settled(page);

  // Tab to a worker's button and press Enter: it acts (and forks the story).
  focused = null;
  for (let i = 0; i < 60 && focused !== 'C-claim'; i++) {
    await page.keyboard.press('Tab');
    focused = await page.evaluate(() => document.activeElement?.id);
  }
  assert.equal(focused, 'C-claim');
  await page.keyboard.press('Enter');
  assert.match(await status(page), /t=12 · C: claim job-42 \(ttl 10\) → ✗ held by B until t=22/);

  // With a full timeline and long strings, still no sideways scrolling.
  await page.fill('#job', 'a-very-long-job-identifier-without-any-spaces-at-all-'.repeat(3));
  await page.click('#enqueue');
  await settled(page);
  assert.ok(await scrollWidth() <= 360, `scrollWidth ${await scrollWidth()}`);

  const controls = ['#story-next', '#story-back', '#scenario', '#scenario-start', '#to-start', '#back', '#play', '#next',
    '#to-end', '#plus1', '#plus5', '#plus10', '#scrub', '#job', '#enqueue', '#revive', '#ttl', '#retry', '#fail-error',
    '#jobs-table', '#lease-only-table', '#check-body',
    ...['A', 'B', 'C'].flatMap((w) => ['claim', 'renew', 'complete', 'release', 'fail', 'result'].map((op) => `#${w}-${op}`)),
    '#share', '#export', '.file-button', '#reset', '#lang'];
  for (const selector of controls) {
    const control = page.locator(selector);
    await control.scrollIntoViewIfNeeded();
    const box = await control.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 360 && box.width > 0, `${selector} within 360 px: ${JSON.stringify(box)}`);
  }
  assert.deepEqual(page.errors, []);
}));

test('a second tab is told that another tab holds the database; the first keeps its data', () => withBrowser(async (browser) => {
  const { page: first } = await open(browser);
  for (let step = 2; step <= 4; step++) await clickNext(first, step);
  const before = await table(first);
  assert.deepEqual(before, [{ id: 'job-42', owner: 'A', until: 't=10live', fence: '1', result: '—', done: 'no' }]);

  const second = await browser.context.newPage();
  await second.goto(server.url);
  const banner = second.locator('.banner-error', { hasText: 'Another tab already has the playground open.' });
  await banner.waitFor({ timeout: 15_000 });
  // In plain words: why, and what to do; not the browser's exception.
  assert.match(await banner.textContent(), /only one tab can use it at a time\. Close the playground in the other tab, or carry on there: this tab opens it by itself/);
  assert.doesNotMatch(await banner.textContent(), /DOMException|Error\b|leasefence database/);
  assert.equal(await second.locator('#story-next').isDisabled(), true);
  assert.equal(await second.locator('#A-claim').isDisabled(), true);

  // The first tab still has everything and still works.
  assert.deepEqual(await table(first), before);
  await clickNext(first, 5);
  await clickNext(first, 6);
  assert.deepEqual(await table(first), [{ id: 'job-42', owner: 'B', until: 't=22live', fence: '2', result: '—', done: 'no' }]);

  // When the first tab closes, the second takes over by itself, with the same data.
  await first.close();
  await second.waitForSelector('html[data-ready="true"]', { timeout: 15_000 });
  assert.equal(await banner.count(), 0);
  assert.deepEqual(await table(second), [{ id: 'job-42', owner: 'B', until: 't=22live', fence: '2', result: '—', done: 'no' }]);
  assert.equal(await progress(second), 'step 6 of 10');
}));

test('without workers (so without OPFS) the page says why, instead of failing silently', () => withBrowser(async (browser) => {
  await browser.context.addInitScript(() => {
    Object.defineProperty(window, 'Worker', { value: undefined, configurable: true });
  });
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.goto(server.url);
  const banner = page.locator('.banner-error', { hasText: 'The store cannot start here.' });
  await banner.waitFor();
  assert.match(await banner.textContent(), /cannot start Web Workers, which OPFS needs/);
  assert.equal(await page.locator('#story-next').isDisabled(), true);
}));

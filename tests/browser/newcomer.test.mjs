// The playground as a newcomer meets it (issue 22): the side panel follows a preset's job, hidden
// things stay hidden, the story's end leads to the tables and keeps the keyboard's focus, typed
// input the page cannot show is refused, every word follows the language, a shared link keeps
// the story's step, and the worker lab's lanes explain themselves.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, withBrowser, openPlayground, settled } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

/** The playground at `url` in `page` (the browser's first by default), ready and idle. */
const open = (browser, url = server.url, page = undefined) => openPlayground(browser, url, { page });

async function next(page, times = 1) {
  for (let i = 0; i < times; i++) {
    await page.click('#story-next');
    await settled(page);
  }
}

const count = (page) => page.locator('#count').textContent();

test('a preset: the Store box and the worker cards follow the job on show', () => withBrowser(async (browser) => {
  const page = await open(browser);
  await page.selectOption('#scenario', 'gc-pause');
  await page.click('#scenario-start');
  await settled(page);
  await next(page, 3); // enqueue, A claims, B claims
  assert.equal(await page.inputValue('#job'), 'job-33');
  assert.match(await page.locator('#mem-A').textContent(), /fence 1 for job-33/);
  assert.match(await page.locator('#mem-B').textContent(), /fence 2 for job-33/);
  // Acting from the panel acts on the job of the story, not on one that does not exist.
  await page.click('#B-renew');
  await settled(page);
  const status = await page.locator('#status').textContent();
  assert.match(status, /B: renew job-33/);
  assert.doesNotMatch(status, /no such job/);
  assert.deepEqual(page.errors, []);
}));

test('hidden is hidden: the empty share box and the lab slider take no space and no Tab stop', () => withBrowser(async (browser) => {
  const page = await open(browser);
  for (const id of ['share-box', 'lab-scrub']) {
    assert.equal(await page.locator(`#${id}`).evaluate((el) => el.hidden), true, `#${id} is hidden`);
    assert.equal(await page.locator(`#${id}`).evaluate((el) => getComputedStyle(el).display), 'none', `#${id} is not drawn`);
    assert.equal(await page.locator(`#${id}`).isVisible(), false);
  }
  const stops = new Set();
  for (let i = 0; i < 120; i++) {
    await page.keyboard.press('Tab');
    stops.add(await page.evaluate(() => document.activeElement?.id));
  }
  assert.equal(stops.has('share-url'), false, 'the empty share box takes no Tab stop');
  assert.equal(stops.has('lab-time'), false, 'the lab slider takes no Tab stop before a run');
  // Once they mean something, they show.
  await page.click('#share');
  assert.equal(await page.locator('#share-box').isVisible(), true);
  assert.deepEqual(page.errors, []);
}));

test('the story end: links to the tables and the check, focus stays on a control, cards take the keyboard', () => withBrowser(async (browser) => {
  const page = await open(browser);
  await page.focus('#story-next');
  for (let i = 0; i < 9; i++) {
    await page.keyboard.press('Enter');
    await settled(page);
  }
  assert.equal(await page.locator('#story-progress').textContent(), 'step 10 of 10');
  const focused = await page.evaluate(() => {
    const el = document.activeElement;
    return { tag: el.tagName, id: el.id, disabled: !!el.disabled };
  });
  assert.notEqual(focused.tag, 'BODY', 'focus stays on a control at the last step');
  assert.equal(focused.disabled, false);
  const scrolled = await page.evaluate(() => window.scrollY);
  await page.keyboard.press(' ');
  await settled(page);
  assert.equal(await page.evaluate(() => window.scrollY), scrolled, 'Space does not scroll the page');

  // The end leads to the tables and the check, which are far below the story.
  for (const [target, section] of [['tables', '#tables'], ['check', '#check']]) {
    const link = page.locator(`#story-links a[href="#${target}"]`);
    assert.equal(await link.isVisible(), true, `a link to ${target}`);
    await link.click();
    await page.waitForFunction((sel) => {
      const box = document.querySelector(sel).getBoundingClientRect();
      return box.top >= -1 && box.top < window.innerHeight;
    }, section);
  }
  assert.equal(await page.locator('.banner-error').count(), 0);

  // A timeline card moves the playhead from the keyboard too.
  const card = page.locator('#timeline .tl-card').first();
  assert.equal(await card.getAttribute('tabindex'), '0');
  await card.focus();
  await page.keyboard.press('Enter');
  await settled(page);
  assert.match(await count(page), /^1 of /);
  assert.deepEqual(page.errors, []);
}));

test('input: a blank or invisible job id and a fractional ttl are refused, and nothing is played', () => withBrowser(async (browser) => {
  const page = await open(browser);
  const before = await count(page);
  for (const [field, value, button, message] of [
    ['#job', '   ', '#enqueue', /only spaces/],
    ['#job', 'job\u200B-42', '#enqueue', /invisible character \(U\+200B\)/],
    ['#ttl', '0.5', '#A-claim', /whole number of seconds from 1 to 1000000/],
  ]) {
    const old = await page.inputValue(field);
    await page.fill(field, value);
    await page.click(button);
    await settled(page);
    const banner = page.locator('.banner-error');
    await banner.first().waitFor();
    assert.match(await banner.first().textContent(), message, `${field} = ${JSON.stringify(value)}`);
    assert.equal(await count(page), before, `${field} = ${JSON.stringify(value)} plays nothing`);
    await page.fill(field, old); // typing into the field ends its error (and its banner)
    await page.locator('.banner-error').waitFor({ state: 'detached' });
  }
  assert.deepEqual(page.errors, []);
}));

test('languages: banners, default values, operation names, the address and html lang', () => withBrowser(async (browser) => {
  const page = await open(browser);
  // The defaults in the boxes speak the page's language.
  assert.notEqual(await page.inputValue('#A-result'), "A's result");
  assert.notEqual(await page.inputValue('#fail-error'), 'handler crashed');
  // Operation names in the status line and on the cards are the buttons' words.
  await next(page, 2); // A claims
  const claimWord = await page.locator('#A-claim').textContent();
  assert.match(await page.locator('#status').textContent(), new RegExp(`A: ${claimWord} job-42`));
  assert.equal(await page.locator('#timeline .tl-card[data-index="1"] .c-op').textContent(), claimWord);
  // An error banner draws `ttl` as code, not with backticks.
  await page.fill('#ttl', '-1');
  await page.click('#A-claim');
  const banner = page.locator('.banner-error').first();
  await banner.waitFor();
  assert.doesNotMatch(await banner.textContent(), /`/);
  assert.equal(await banner.locator('code').first().textContent(), 'ttl');
  await page.fill('#ttl', '10');
  // The picker puts the language into the address; Chinese is zh-Hans.
  await page.selectOption('#lang', 'zh');
  assert.equal(new URL(page.url()).searchParams.get('lang'), 'zh');
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-Hans');
  assert.deepEqual(page.errors, []);
}, { locale: 'ja-JP' }));

test('a shared link keeps the story step, and the language when the sender chose one', async () => {
  const sender = await launchBrowser({ locale: 'en-US' });
  let link;
  let plain;
  try {
    const page = await open(sender);
    await next(page, 3);
    assert.equal(await page.locator('#story-progress').textContent(), 'step 4 of 10');
    await page.click('#share');
    plain = await page.inputValue('#share-url');
    assert.equal(new URL(plain).searchParams.get('lang'), null, 'no language the sender did not choose');
    await page.selectOption('#lang', 'ja');
    await page.click('#share');
    link = await page.inputValue('#share-url');
    assert.equal(new URL(link).searchParams.get('lang'), 'ja');
    assert.deepEqual(page.errors, []);
  } finally {
    await sender.close();
  }
  const recipient = await launchBrowser({ locale: 'en-US' });
  try {
    const page = await open(recipient, plain);
    assert.equal(await page.locator('#story-progress').textContent(), 'step 4 of 10');
    assert.doesNotMatch(await page.locator('#story-title').textContent(), /Free play/);
    assert.match(await page.locator('#narration').textContent(), /At t=5 worker B tries to claim job-42/);
    assert.deepEqual(page.errors, []);
    await page.close(); // one tab holds the database
    const other = await open(recipient, link, await recipient.context.newPage());
    assert.equal(await other.evaluate(() => document.documentElement.lang), 'ja');
    assert.equal(await other.locator('#story-progress').getAttribute('data-step'), '4');
  } finally {
    await recipient.close();
  }
});

test('the worker lab: a legend and time ticks, a pause toggle that says its state, plurals', () => withBrowser(async (browser) => {
  const page = await open(browser);
  const pause = page.locator('#lab-pause');
  const on = await pause.textContent();
  await pause.click();
  assert.equal(await pause.getAttribute('aria-pressed'), 'false');
  assert.notEqual(await pause.textContent(), on, 'the toggle says its state in words, not by colour alone');
  await pause.click();
  await page.click('#lab-run');
  await settled(page);
  const legend = await page.locator('#lab-body .lab-legend li').allTextContents();
  for (const glyph of ['●', '|', '⚡', '✓', '⬆']) {
    assert.ok(legend.some((item) => item.startsWith(glyph) && item.length > glyph.length + 2), `the legend explains ${glyph}: ${legend}`);
  }
  const ticks = await page.locator('#lab-body .lab-axis .lab-axis-tick').allTextContents();
  assert.ok(ticks.length >= 3 && ticks.every((tick) => /^t=\d+$/.test(tick)), `time ticks: ${ticks}`);
  const plural = /\b1 (attempts|failures|leases|renewals|stale writes|completions)\b/;
  const facts = async () => (await page.locator('#lab-body .lab-facts').textContent());
  assert.doesNotMatch(await facts(), plural);
  await page.selectOption('#lab-mode', 'poison');
  assert.equal(await pause.isDisabled(), true, 'no pause in the poison mode');
  await page.click('#lab-run');
  await settled(page);
  assert.match(await page.locator('#lab-body .lab-legend').textContent(), /☠/);
  assert.doesNotMatch(await facts(), plural);
  assert.deepEqual(page.errors, []);
}));

test('messages where the eye is: in view, on the invalid field; leaving the story and Reset can be undone, Reset asks first', () => withBrowser(async (browser) => {
  const page = await open(browser);
  await page.setViewportSize({ width: 360, height: 780 }); // the side panel is far below the top
  await page.fill('#ttl', '-1');
  await page.click('#A-claim');
  const banner = page.locator('.banner-error').first();
  await banner.waitFor();
  const box = await banner.boundingBox();
  assert.ok(box.y >= 0 && box.y + box.height <= 780, `the error is in view: ${JSON.stringify(box)}`);
  assert.equal(await page.getAttribute('#ttl', 'aria-invalid'), 'true');
  const described = await page.getAttribute('#ttl', 'aria-describedby');
  assert.match(await page.locator(`#${described}`).textContent(), /ttl/);
  await page.fill('#ttl', '10');
  assert.equal(await page.getAttribute('#ttl', 'aria-invalid'), null, 'typing ends the error');
  await page.setViewportSize({ width: 1280, height: 800 });

  // Acting in the story leaves it: Undo brings the story back at its step.
  await next(page, 2);
  await page.click('#C-claim');
  await settled(page);
  await page.locator('.banner-notice', { hasText: 'You left the story' }).getByRole('button', { name: 'Undo' }).click();
  await settled(page);
  assert.equal(await page.locator('#story-progress').textContent(), 'step 3 of 10');
  assert.equal(await count(page), '2 of 7 operations played');

  // Reset asks first; nothing is erased until it is confirmed; then Undo brings it all back.
  await page.click('#reset');
  await settled(page);
  assert.equal(await count(page), '2 of 7 operations played', 'nothing erased before the answer');
  await page.click('#reset-confirm');
  await settled(page);
  assert.equal(await count(page), '0 of 0 operations played');
  await page.locator('.banner-notice', { hasText: 'Reset' }).getByRole('button', { name: 'Undo' }).click();
  await settled(page);
  assert.equal(await count(page), '2 of 7 operations played');
  assert.equal(await page.locator('#story-progress').textContent(), 'step 3 of 10');
  assert.deepEqual(page.errors, []);
}));

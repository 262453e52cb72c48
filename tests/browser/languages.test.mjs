// The playground in Japanese and Chinese, in headless Chromium: the language follows
// navigator.language, ?lang= overrides it, the picker's choice is remembered, and no English word
// is left on the page (every text node and title/aria-label, outside code, job ids and names:
// ./untranslated.mjs) at any step of the story, in a preset, in free play and its banners, nor in
// any scenario's narration.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser, withBrowser, openPlayground, settled } from './harness.mjs';
import { findUntranslated } from './untranslated.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const open = (browser, url) => openPlayground(browser, url);

/** Every English word on the page now, with where it is. */
async function untranslated(page, when) {
  await settled(page);
  return (await page.evaluate(findUntranslated)).map((f) => `${when}: "${f.word}" in ${f.where}: ${f.text}`);
}

test('every language narrates every scenario: its title, its source when it has one, one text per step', async () => {
  const { SCENARIOS, NARRATION } = await import('../../web/app/model/scenarios.js');
  const ids = SCENARIOS.map((sc) => sc.id).sort();
  for (const [lang, told] of Object.entries(NARRATION)) {
    assert.deepEqual(Object.keys(told).sort(), ids, `${lang}: the scenarios narrated`);
    for (const sc of SCENARIOS) {
      const where = `${lang}, ${sc.id}`;
      assert.ok(told[sc.id].title, `${where}: a title`);
      assert.equal(told[sc.id].source === undefined, NARRATION.en[sc.id].source === undefined, `${where}: a source where English has one`);
      assert.equal(told[sc.id].steps.length, sc.steps.length, `${where}: one text per step`);
      for (const [s, text] of told[sc.id].steps.entries()) assert.ok(typeof text === 'string' && text.trim(), `${where}, step ${s + 1}: a text`);
    }
  }
});

for (const [lang, locale, sample] of [['ja', 'ja-JP', /フェンス/], ['zh', 'zh-CN', /令牌/]]) {
  test(`${lang}: the language follows the browser's, and no text is left in English`, async () => {
    const browser = await launchBrowser({ locale });
    try {
      const page = await open(browser, server.url);
      assert.equal(await page.evaluate(() => document.documentElement.lang), lang === 'zh' ? 'zh-Hans' : lang, 'navigator.language picks the language (Chinese as zh-Hans)');
      assert.equal(await page.inputValue('#lang'), lang);
      const found = [];
      found.push(...await untranslated(page, 'story step 1'));
      const steps = Number((await page.locator('#story-progress').textContent()).match(/\d+/g).at(-1));
      for (let s = 2; s <= steps; s++) {
        await page.click('#story-next');
        found.push(...await untranslated(page, `story step ${s}`));
      }
      assert.match(await page.locator('#narration').textContent(), sample);

      // 360 px wide, in this language too: no sideways scrolling.
      await page.setViewportSize({ width: 360, height: 780 });
      await settled(page);
      assert.ok(await page.evaluate(() => document.scrollingElement.scrollWidth) <= 360, 'no sideways scrolling at 360 px');
      await page.setViewportSize({ width: 1280, height: 800 });

      // A preset from a real incident, with its source line, to its end.
      await page.selectOption('#scenario', 'gc-pause');
      await page.click('#scenario-start');
      await settled(page);
      assert.equal(await page.locator('#story-source').isVisible(), true);
      for (let s = 0; s < 6; s++) await page.click('#story-next');
      found.push(...await untranslated(page, 'gc-pause at its end'));

      // The priorities preset, every step: the queue and priority columns, claim_next's cards.
      await page.selectOption('#scenario', 'priorities');
      await page.click('#scenario-start');
      await settled(page);
      const prioritySteps = Number((await page.locator('#story-progress').textContent()).match(/\d+/g).at(-1));
      for (let s = 2; s <= prioritySteps; s++) {
        await page.click('#story-next');
        found.push(...await untranslated(page, `priorities step ${s}`));
      }
      assert.equal(await page.locator('#jobs-th-priority').isVisible(), true, 'the priority column is shown');

      // The poison job, every step: a failure and its backoff (a job that waits), a stale failure
      // report refused, the dead job in both tables.
      await page.selectOption('#scenario', 'poison-job');
      await page.click('#scenario-start');
      await settled(page);
      const poisonSteps = Number((await page.locator('#story-progress').textContent()).match(/\d+/g).at(-1));
      for (let s = 2; s <= poisonSteps; s++) {
        await page.click('#story-next');
        found.push(...await untranslated(page, `poison-job step ${s}`));
      }
      assert.equal(await page.locator('#jobs-body td.col-done.is-dead').count(), 1, 'the dead job is drawn dead');
      // Free play on it: revive the dead job, claim it, fail it with a backoff, then for good.
      await page.fill('#job', 'job-poison');
      for (const button of ['#revive', '#B-claim', '#B-fail', '#plus5', '#C-claim', '#A-claim_next']) {
        await page.click(button);
        await settled(page);
        found.push(...await untranslated(page, `free play: ${button}`));
      }
      await page.fill('#retry', '');
      await page.click('#C-fail');
      found.push(...await untranslated(page, 'free play: a failure for good'));
      // Input the page refuses: each message in the page's language.
      for (const [field, value, button] of [['#job', '', '#A-claim'], ['#ttl', '-1', '#A-claim'], ['#retry', '-3', '#A-fail']]) {
        const before = await page.inputValue(field);
        await page.fill(field, value);
        await page.click(button);
        await page.locator('.banner-error').first().waitFor();
        found.push(...await untranslated(page, `refused input in ${field}`));
        await page.fill(field, before);
      }

      // Free play: an action forks the story (a banner), the share link, reset (another banner).
      await page.click('#B-claim');
      await page.locator('.banner-notice').first().waitFor();
      found.push(...await untranslated(page, 'free play after an action'));
      await page.click('#share');
      await page.waitForFunction(() => document.getElementById('share-note').textContent !== '');
      found.push(...await untranslated(page, 'after share'));
      await page.click('#reset');
      await page.click('#reset-confirm'); // Reset asks first
      await settled(page);
      found.push(...await untranslated(page, 'after reset'));

      // The worker lab: a run with the stall and the bucket, and the poison job.
      await page.click('#lab-run');
      await settled(page);
      found.push(...await untranslated(page, 'the worker lab'));
      await page.selectOption('#lab-mode', 'poison');
      await page.click('#lab-run');
      await settled(page);
      found.push(...await untranslated(page, 'the worker lab, poison job'));
      await page.selectOption('#lab-mode', 'fenced');
      await page.click('#lab-run');
      await settled(page);
      found.push(...await untranslated(page, 'the worker lab, fenced'));
      await page.click('#lab-open');
      await page.locator('.banner-notice').first().waitFor();
      await settled(page);
      found.push(...await untranslated(page, 'the worker lab\'s run in the timeline'));

      // Every scenario's title, source and narration, including the steps not walked here.
      const texts = await page.evaluate(async (code) => {
        const { SCENARIOS, NARRATION } = await import('/app/model/scenarios.js');
        const told = NARRATION[code];
        return SCENARIOS.flatMap((sc) => [told[sc.id]?.title, told[sc.id]?.source, ...(told[sc.id]?.steps ?? [])])
          .filter((text) => text !== undefined);
      }, lang);
      const probe = await page.evaluate(async (list) => {
        const { rich } = await import('/common/dom.js');
        const box = document.createElement('div');
        box.id = 'probe';
        document.body.append(box);
        for (const text of list) box.append(document.createElement('p'));
        [...box.children].forEach((p, i) => p.append(...rich(list[i])));
        return box.children.length;
      }, texts);
      assert.equal(probe, texts.length);
      found.push(...await untranslated(page, 'the narration of every scenario'));
      assert.deepEqual(found, []);
      assert.deepEqual(page.errors, []);
    } finally {
      await browser.close();
    }
  });
}

test('?lang= overrides the browser\'s language, and the picker\'s choice is remembered', () => withBrowser(async (browser) => {
  let page = await open(browser, `${server.url}?lang=zh`);
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-Hans', 'Chinese is simplified Chinese: zh-Hans');
  assert.equal(await page.locator('#story-next').textContent(), '下一步 ▶');
  await page.selectOption('#lang', 'en');
  assert.equal(await page.locator('#story-next').textContent(), 'Next ▶');
  assert.equal(await page.evaluate(() => document.title), 'leasefence playground: leases and fencing tokens');
  page = await open(browser, server.url); // no ?lang=: the remembered choice beats navigator.language
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
  assert.equal(await page.locator('#A-claim').textContent(), 'Claim');
  await page.selectOption('#lang', 'ja');
  assert.equal(await page.locator('#A-claim').textContent(), '取得');
  assert.equal(await page.locator('#help-title').textContent(), 'キーボードと仕組み');
  assert.deepEqual(page.errors, []);
}, { locale: 'ja-JP' }));

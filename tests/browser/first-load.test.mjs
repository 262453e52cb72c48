// The first seconds of a visit, in headless Chromium: the story panel never shows free play's text
// before the story's first step, and the 1 MB wasm that the page and the store's worker both load
// crosses the network once per load at most (the server answers a validator, a copy the browser
// already has comes back as 304 without its body), and not at all on a reload.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, withBrowser } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

test('from the first paint, the story panel shows the loading line or the story, never free play', () => withBrowser(async (browser) => {
  // Every text the narration shows, recorded from the document's start.
  await browser.context.addInitScript(() => {
    window.narrations = [];
    const watch = () => {
      const node = document.getElementById('narration');
      if (!node) return false;
      const note = () => { if (window.narrations.at(-1) !== node.textContent) window.narrations.push(node.textContent); };
      note();
      new MutationObserver(note).observe(node, { childList: true, characterData: true, subtree: true });
      return true;
    };
    if (!watch()) new MutationObserver((_, observer) => { if (watch()) observer.disconnect(); }).observe(document, { childList: true, subtree: true });
  });
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  page.on('console', (message) => { if (message.type() === 'error') errors.push(message.text()); });
  await page.goto(server.url);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
  const { seen, free, story, loading } = await page.evaluate(async () => {
    const { t } = await import('/common/i18n.js');
    const { findScenario, narration, STORY_ID } = await import('/app/model/scenarios.js');
    const plain = (text) => text.replace(/`/g, '');
    return {
      seen: window.narrations,
      free: plain(t('en', 'story.free')).slice(0, 40),
      story: plain(narration(findScenario(STORY_ID), 0, 'en')),
      loading: t('en', 'loading'),
    };
  });
  assert.ok(seen.every((text) => !text.includes(free)), `free play's text was shown: ${JSON.stringify(seen)}`);
  assert.deepEqual(seen, [loading, story], 'the loading line, then the story\'s first step');
  assert.deepEqual(errors, []);
}));

test('the wasm crosses the network once on a first load and not on a reload', () => withBrowser(async (browser) => {
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  // The wasm fetches of the page and of every worker, with the bytes each took from the network.
  const fetches = async () => {
    const read = () => performance.getEntriesByType('resource')
      .filter((e) => e.name.endsWith('.wasm')).map((e) => ({ name: e.name, transferSize: e.transferSize, bodySize: e.encodedBodySize }));
    const all = [...await page.evaluate(read)];
    for (const worker of page.workers()) all.push(...await worker.evaluate(read));
    return all;
  };
  const load = async (go) => {
    await go();
    await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
    // The page loads the wasm for persist() once the store is open: wait for the storage line.
    await page.waitForFunction(() => /used of/.test(document.getElementById('storage')?.textContent ?? ''), null, { timeout: 20_000 });
    return fetches();
  };
  const first = await load(() => page.goto(server.url));
  assert.ok(first.length >= 2, `the page and the store's worker both load the wasm: ${JSON.stringify(first)}`);
  const full = (list) => list.filter((f) => f.transferSize > 100_000);
  assert.equal(full(first).length, 1, `the wasm's body crossed the network once: ${JSON.stringify(first)}`);
  const again = await load(() => page.reload());
  assert.ok(again.length >= 2, JSON.stringify(again));
  assert.deepEqual(full(again), [], `after a reload the wasm is revalidated, not fetched again: ${JSON.stringify(again)}`);
  assert.deepEqual(errors, []);
}));

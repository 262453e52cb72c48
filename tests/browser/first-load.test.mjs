// The first seconds of a visit, in headless Chromium: the story panel never shows free play's text
// before the story's first step.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, launchBrowser } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

test('from the first paint, the story panel shows the loading line or the story, never free play', async () => {
  const browser = await launchBrowser();
  try {
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
      const { t } = await import('/app/model/i18n.js');
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
  } finally {
    await browser.close();
  }
});

// Saves screenshots of the playground mid-story for the docs: docs/playground-desktop.png
// (1280x800), docs/playground-360.png (360x780), and the page in Japanese and Chinese
// (docs/playground-ja.png, docs/playground-zh.png, 1280x800; docs/playground-ja-360.png), and the
// worker lab after a run (docs/playground-lab.png; in Japanese, the fenced mode:
// docs/playground-lab-fenced-ja.png), the poison-job preset at its end, dead in both tables
// (docs/playground-poison.png), and the priorities preset at its end, the stores' picks on the
// timeline and the queue and priority columns (docs/playground-priorities.png).
// Run: node tests/browser/screenshots.mjs   (after bash scripts/build-web.sh)
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { repo, startServer, launchBrowser } from './harness.mjs';

const STEP = 7; // A's late completion while B holds the job: refused by the fence; stored, done, without fencing
const out = path.join(repo, 'docs');
mkdirSync(out, { recursive: true });

async function storyAt(page, step) {
  await page.waitForSelector('html[data-ready="true"]');
  for (let s = 2; s <= step; s++) {
    await page.click('#story-next');
    await page.waitForFunction((want) => document.getElementById('story-progress').dataset.step === want, String(s));
  }
  await page.waitForFunction(() => document.documentElement.dataset.busy !== 'true');
  await page.waitForTimeout(1800); // let the "changed" highlight fade
}

const server = await startServer();
try {
  for (const [name, viewport, scrollTo, lang] of [
    ['playground-desktop.png', { width: 1280, height: 800 }, null, 'en'],
    ['playground-360.png', { width: 360, height: 780 }, '#story', 'en'],
    ['playground-ja.png', { width: 1280, height: 800 }, null, 'ja'],
    ['playground-zh.png', { width: 1280, height: 800 }, null, 'zh'],
    ['playground-ja-360.png', { width: 360, height: 780 }, '#story', 'ja'],
    ['playground-tables.png', { width: 1280, height: 800 }, '#tables-title', 'en'],
  ]) {
    const browser = await launchBrowser();
    try {
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      await page.setViewportSize(viewport);
      await page.goto(`${server.url}?lang=${lang}`);
      await storyAt(page, STEP);
      if (scrollTo) await page.locator(scrollTo).evaluate((node) => window.scrollTo(0, node.getBoundingClientRect().top + window.scrollY - 6));
      await page.screenshot({ path: path.join(out, name) });
      console.log(`saved docs/${name}`);
    } finally {
      await browser.close();
    }
  }
  // The worker lab after a run: with the fence guard in English, the fenced mode in Japanese.
  for (const [name, mode, lang] of [['playground-lab.png', 'guard', 'en'], ['playground-lab-fenced-ja.png', 'fenced', 'ja']]) {
    const browser = await launchBrowser();
    try {
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      await page.setViewportSize({ width: 1280, height: 800 });
      await page.goto(`${server.url}?lang=${lang}`);
      await page.waitForSelector('html[data-ready="true"]');
      await page.selectOption('#lab-mode', mode);
      await page.click('#lab-run');
      await page.waitForFunction(() => document.documentElement.dataset.busy !== 'true');
      await page.locator('#lab').screenshot({ path: path.join(out, name) });
      console.log(`saved docs/${name}`);
    } finally {
      await browser.close();
    }
  }
  // The poison-job preset played to its end: the job dead in both tables; the priorities preset
  // at its end: the timeline's claim_next cards and the jobs table with its queue and priority.
  for (const [name, id, scrollTo, height] of [
    ['playground-poison.png', 'poison-job', '#tables-title', 800],
    ['playground-priorities.png', 'priorities', '#timeline-title', 1020],
  ]) await presetAtEnd(name, id, scrollTo, height);
} finally {
  server.stop();
}

async function presetAtEnd(name, id, scrollTo, height) {
  const browser = await launchBrowser();
  try {
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    await page.setViewportSize({ width: 1280, height });
    await page.goto(`${server.url}?lang=en`);
    await page.waitForSelector('html[data-ready="true"]');
    await page.selectOption('#scenario', id);
    await page.click('#scenario-start');
    await page.waitForFunction(() => /^step 1 of/.test(document.getElementById('story-progress').textContent));
    for (;;) {
      const progress = (await page.locator('#story-progress').textContent()).match(/\d+/g).map(Number);
      if (progress[0] >= progress.at(-1)) break;
      await page.click('#story-next');
      await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want), `step ${progress[0] + 1} of`);
    }
    await page.waitForFunction(() => document.documentElement.dataset.busy !== 'true');
    await page.waitForTimeout(1800); // let the "changed" highlight fade
    await page.locator(scrollTo).evaluate((node) => window.scrollTo(0, node.getBoundingClientRect().top + window.scrollY - 6));
    await page.screenshot({ path: path.join(out, name) });
    console.log(`saved docs/${name}`);
  } finally {
    await browser.close();
  }
}

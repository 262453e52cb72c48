// The playground's storage line in headless Chromium: the page asked navigator.storage.persist()
// (Rust over web-sys, crate/src/wasm/browser_host.rs) and says what the browser answered, and the
// store's worker reports the origin's usage and quota with real numbers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, withBrowser } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const BYTES = String.raw`(\d+(?:\.\d)?) (B|kB|MB|GB|TB)`;
const SCALE = { B: 1, kB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 };

test('the page shows whether persist() was granted and how much storage is used of the quota', () => withBrowser(async (browser) => {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(server.url);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 30_000 });
  await page.waitForFunction(() => /used of/.test(document.getElementById('storage')?.textContent ?? ''), null, { timeout: 20_000 });
  const line = await page.locator('#storage').textContent();
  const asked = await page.locator('#storage').getAttribute('data-persist');
  // persist() was asked and answered (headless Chromium may say no): the line says which.
  assert.ok(asked === 'true' || asked === 'false', `persist() was not answered: ${asked} (${line})`);
  if (asked === 'true') assert.match(line, /^storage: persisted, /);
  else assert.match(line, /^storage: the browser may clear it when space runs low, /);
  assert.doesNotMatch(line, /persist\(\)|not persisted/, 'in plain words, without the API\'s name');
  const match = line.match(new RegExp(`${BYTES} used of ${BYTES}$`));
  assert.ok(match, `no usage and quota in ${JSON.stringify(line)}`);
  const usage = Number(match[1]) * SCALE[match[2]];
  const quota = Number(match[3]) * SCALE[match[4]];
  assert.ok(usage > 0, `the database takes no space? ${line}`);
  assert.ok(quota > usage, `quota not above usage: ${line}`);
  // The page agrees with the browser it runs in.
  const real = await page.evaluate(async () => {
    const { usage: u, quota: q } = await navigator.storage.estimate();
    return { usage: u, quota: q, persisted: await navigator.storage.persisted() };
  });
  assert.equal(asked === 'true', real.persisted, 'the line and navigator.storage.persisted() disagree');
  assert.ok(real.quota > 0);
  assert.deepEqual(errors, []);
}));

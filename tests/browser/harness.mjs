// Shared set-up for the browser tests: the playground's own server on a free port, and Debian's
// Chromium driven by playwright-core with a fresh profile directory per call.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { before, after } from 'node:test';
import { chromium } from 'playwright-core';

export const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

async function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, 'localhost', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts `web/server.mjs` (or another copy of it, serving its own folder); resolves to
 * `{url, stop}` once it prints its URL.
 */
export async function startServer(script = path.join(repo, 'web/server.mjs')) {
  const port = await freePort();
  const child = spawn(process.execPath, [script], {
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', (chunk) => {
      seen += chunk;
      const match = seen.match(/http:\/\/localhost:\d+\//);
      if (match) resolve(match[0]);
    });
    child.on('exit', (code) => reject(new Error(`server exited (${code}) before printing its URL`)));
  });
  return { url, stop: () => child.kill() };
}

/**
 * The usual set-up of a test file: one server and one Chromium, started before its tests and
 * stopped after them. Answers `{server, browser}`, filled in once the tests run.
 *
 *   const env = serverAndBrowser();
 *   test('...', async () => inStorePage(env.browser, env.server, async () => ...));
 */
export function serverAndBrowser() {
  const env = { server: null, browser: null };
  before(async () => {
    env.server = await startServer();
    env.browser = await launchBrowser();
  });
  after(async () => {
    await env.browser?.close();
    env.server?.stop();
  });
  return env;
}

/**
 * A Chromium with its own profile directory (OPFS lives there); `close()` removes it. `locale`
 * sets navigator.language (and Accept-Language).
 */
export async function launchBrowser({ profile, locale } = {}) {
  const dir = profile ?? mkdtempSync(path.join(os.tmpdir(), 'leasefence-chromium-'));
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_FLAGS,
    ...(locale ? { locale } : {}),
  });
  return {
    context,
    profile: dir,
    async close({ keepProfile = false } = {}) {
      await context.close();
      if (!keepProfile && !profile) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `body(browser)` in a Chromium of its own (`options` as launchBrowser's), closed after, whatever happens. */
export async function withBrowser(body, options) {
  const browser = await launchBrowser(options);
  try {
    return await body(browser);
  } finally {
    await browser.close();
  }
}

/** Collects the page's uncaught errors and console errors in `page.errors` (once per page). */
export function watchErrors(page) {
  if (page.errors) return;
  page.errors = [];
  page.on('pageerror', (error) => page.errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') page.errors.push(`console: ${message.text()}`);
  });
}

/** Waits until every intent the playground queued has run (its tables and timeline are drawn). */
export async function settled(page) {
  await page.waitForFunction(() => document.documentElement.dataset.busy !== 'true');
}

/**
 * Opens the playground at `url` in `browser`'s first page (or `page`), `viewport` wide and high,
 * and waits until it is ready and idle; `page.errors` collects what goes wrong on it.
 */
export async function openPlayground(browser, url, { viewport = { width: 1280, height: 800 }, page } = {}) {
  page ??= browser.context.pages()[0] ?? (await browser.context.newPage());
  await page.setViewportSize(viewport);
  watchErrors(page);
  await page.goto(url);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
  await settled(page);
  return page;
}

/**
 * Both tables of the playground as drawn, once it is not busy: each row's cell texts by column
 * label, which lease-only cells are marked as differing, and which jobs are drawn dead.
 */
export async function bothTables(page) {
  await settled(page);
  const read = (selector) => page.locator(`${selector} tr`).evaluateAll((rows) => rows.map((tr) => {
    const cells = {};
    for (const cell of tr.querySelectorAll('[data-label]')) cells[cell.dataset.label] = cell.querySelector('.v').textContent;
    return cells;
  }));
  const differs = await page.locator('#lease-only-body .differs').evaluateAll((cells) => cells.map((c) => c.dataset.label));
  const dead = (selector) => page.locator(`${selector} td.col-done.is-dead`).evaluateAll((cells) => cells.map((c) => c.closest('tr').dataset.job));
  return {
    jobs: await read('#jobs-body'), leaseOnly: await read('#lease-only-body'), differs,
    dead: { jobs: await dead('#jobs-body'), leaseOnly: await dead('#lease-only-body') },
  };
}

/**
 * Runs `f` in a new page of the store's test page (`/store/`), where the browser store's modules
 * can be imported; its answer, after checking that the page threw nothing.
 */
export async function inStorePage(browser, server, f) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  try {
    await page.goto(`${server.url}store/`);
    const answer = await page.evaluate(f);
    assert.deepEqual(errors, []);
    return answer;
  } finally {
    await page.close();
  }
}

// The shared worker vectors (tests/worker-vectors/*.json) in headless Chromium: JobWorker in the
// page on a ManualClock, over the browser store (the crate in wasm, in its Web Worker, on OPFS),
// played by the same function as Node's (tests/worker-vectors/play.mjs, sent to the page); and the
// worker rules' cases through the store's workerRules, which cross to the wasm in the worker.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { serverAndBrowser, repo } from './harness.mjs';
import { playVector } from '../worker-vectors/play.mjs';

const dir = path.join(repo, 'tests/worker-vectors');
const vectors = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((file) => ({ file, ...JSON.parse(readFileSync(path.join(dir, file), 'utf8')) }));
// The vectors share one OPFS database (the pool holds a few files), erased between them: the
// playground's store (web/app/playground-store.js) is the library's LeaseStore plus that erase,
// which the library itself does not offer.
const modules = { store: '/app/playground-store.js', storeClass: 'PlaygroundStore', worker: '/store/job-worker.js', core: '/store/core.js' };
const target = { kind: 'browser', name: 'worker-vectors.db' };

const env = serverAndBrowser();

test('every worker vector passes against JobWorker in the page, on the store in its worker on OPFS', async () => {
  assert.ok(vectors.length >= 8, `expected the worker vectors, found ${vectors.length}`);
  const page = await env.browser.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${env.server.url}store/`);
  const problems = {};
  for (const vector of vectors) {
    const found = await page.evaluate(playVector, { vector, modules, target });
    if (found.length) problems[vector.file] = found;
  }
  await page.close();
  assert.deepEqual(problems, {});
  assert.deepEqual(errors, []);
});

test('the worker rules in the browser: every case of rules.json through the store\'s workerRules', async () => {
  const { cases } = JSON.parse(readFileSync(path.join(dir, 'rules', 'rules.json'), 'utf8'));
  const page = await env.browser.context.newPage();
  await page.goto(`${env.server.url}store/`);
  const answers = await page.evaluate(async (cases) => {
    const { LeaseStore } = await import('/store/lease-store.js');
    const store = await LeaseStore.open('worker-rules.db');
    const camel = (name) => name.replace(/_(\w)/g, (_, c) => c.toUpperCase());
    const out = [];
    for (const { rule, args } of cases) out.push(await store.workerRules[camel(rule)](...args));
    await store.close();
    return out;
  }, cases);
  await page.close();
  assert.deepEqual(answers, cases.map((c) => c.expect));
});

// The shared contract vectors, run in headless Chromium against the real store: the crate in
// wasm, in its dedicated worker, on SQLite on OPFS; through the page-side LeaseStore (SPEC 5). The
// runner is the Node suite's own (tests/node/vector-runner.mjs): each call it makes crosses into
// the page, so the browser answers the same steps, checked the same way. The store is the
// playground's (its LeaseStore, on the library's wasm with the playground's calls added), whose
// reset erases the one database between vectors: the library's store cannot erase, and the OPFS
// pool is too small for a database per vector.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { serverAndBrowser } from './harness.mjs';
import { vectors, runVector } from '../node/vector-runner.mjs';

const env = serverAndBrowser();

/** Runs, in the page, `store[path...](...args)` on the one vector store; an error comes back as its code and message. */
async function callInPage([path, args]) {
  window.vectorStore ??= await (await import('/app/playground-store.js')).PlaygroundStore.open('vectors.db');
  const owner = path.length === 2 ? window.vectorStore[path[0]] : window.vectorStore;
  try {
    return { value: await owner[path.at(-1)](...args) };
  } catch (error) {
    return { error: { code: error.code, message: error.message } };
  }
}

/** The page's store as the runner calls it: `state` and `withReason.<operation>`, each a call into the page. */
function storeIn(page) {
  const call = async (path, args) => {
    const answer = await page.evaluate(callInPage, [path, args]);
    if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
    return answer.value;
  };
  return {
    erase: () => call(['eraseEverything'], []),
    state: (...args) => call(['state'], args),
    withReason: new Proxy({}, { get: (_, method) => (...args) => call(['withReason', method], args) }),
  };
}

test('every shared vector passes in a worker on OPFS', async () => {
  const all = vectors();
  assert.ok(all.length >= 10, `expected the shared vectors, found ${all.length}`);
  const page = await env.browser.context.newPage();
  await page.goto(`${env.server.url}store/`);
  const store = storeIn(page);
  for (const [file, vector] of all) {
    await store.erase();
    await runVector(store, vector, file);
  }
  await page.close();
});

test('the runner notices a wrong expectation', async () => {
  const page = await env.browser.context.newPage();
  await page.goto(`${env.server.url}store/`);
  const store = storeIn(page);
  await store.erase();
  const wrong = {
    steps: [
      { op: 'enqueue', job: 'j', expect: { value: true } },
      { op: 'claim', job: 'j', owner: 'a', now: 0, ttl: 5, expect: { value: 2 } },
    ],
  };
  await assert.rejects(runVector(store, wrong, 'wrong.json'), /wrong\.json step 2[^]*expected: 2\n\s+actual:\s+1/);
  await page.close();
});

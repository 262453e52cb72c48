// The shared contract vectors, run in headless Chromium against the real store: the crate in
// wasm, in its dedicated worker, on SQLite on OPFS; through the page-side LeaseStore (SPEC 5). The
// playground's store (its LeaseStore, on the library's wasm with the playground's calls added),
// whose reset erases the one database between vectors: the library's store cannot erase, and the
// OPFS pool is too small for a database per vector.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { serverAndBrowser, repo } from './harness.mjs';

const vectorDir = path.join(repo, 'tests/vectors');
const vectors = readdirSync(vectorDir)
  .filter((f) => f.endsWith('.json'))
  .sort()
  .map((f) => ({ file: f, ...JSON.parse(readFileSync(path.join(vectorDir, f), 'utf8')) }));

const env = serverAndBrowser();

// Runs inside the page: one vector against a freshly erased OPFS database.
async function runVectorInPage(vector) {
  const { PlaygroundStore } = await import('/app/playground-store.js');
  const { OPERATIONS, protocolName } = await import('/store/core.js');
  // Each protocol op's method and field names, from the one operation table.
  const methods = Object.fromEntries(OPERATIONS.map((op) => [protocolName(op.name), [op.name, op.params.map(protocolName)]]));
  const tokens = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b) ||
    (typeof a === 'number' && typeof b === 'number' && a === b);
  const deepSame = (a, b) => {
    if (typeof a === 'number' && typeof b === 'number') return a === b;
    if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepSame(x, b[i]));
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const ka = Object.keys(a).sort();
      const kb = Object.keys(b).sort();
      return same(ka, kb) && ka.every((k) => deepSame(a[k], b[k]));
    }
    return a === b;
  };
  // Batch steps as JavaScript has them (tests/vectors/README.md): enqueue_many's `run_at` is
  // `runAt`, renew_many's and complete_many's items answer `{value, reason}`, and a shape error
  // (`bad_request` in the protocol) is `invalid_argument`.
  const jsName = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
  const jsItems = (items) => (Array.isArray(items) ? items.map((item) => (
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).map(([key, value]) => [jsName(key), value])) : item)) : items);
  const jsExpect = (step) => {
    const expect = { ...step.expect };
    if (expect.error === 'bad_request') expect.error = 'invalid_argument';
    if (['renew_many', 'complete_many', 'heartbeat'].includes(step.op) && Array.isArray(expect.value)) {
      expect.value = expect.value.map((item) => ({ value: item.value, reason: item.reason ?? null }));
    }
    // A claimed job is the lease its owner holds: the call's owner and the attempt beside the wire's.
    const lease = (claimed) => ({ ...claimed, owner: step.owner, attempt: claimed.fence - (claimed.base ?? 0) });
    if (step.op === 'claim_next' && expect.value !== null && typeof expect.value === 'object') expect.value = lease(expect.value);
    if (step.op === 'claim_next_many' && Array.isArray(expect.value)) expect.value = expect.value.map(lease);
    // A worker row in JavaScript's one casing (`lastSeen`, `counters.leasesLost`).
    if (step.op === 'list_workers' && Array.isArray(expect.value)) {
      const jsKeys = (o) => Object.fromEntries(Object.entries(o).map(([key, value]) => [jsName(key), value]));
      expect.value = expect.value.map((worker) => ({ ...jsKeys(worker), counters: jsKeys(worker.counters) }));
    }
    return expect;
  };
  // One database for every vector, erased in between: the OPFS pool is small and per origin.
  window.vectorStore ??= await PlaygroundStore.open('vectors.db');
  const store = window.vectorStore;
  await store.eraseEverything();
  const jobs = new Set();
  const snapshot = async () => Promise.all([...jobs].map((j) => store.state(j)));
  try {
    for (const [index, raw] of vector.steps.entries()) {
      const step = { ...raw, expect: jsExpect(raw) };
      if (step.op === 'enqueue_many') step.jobs = jsItems(step.jobs);
      const [method, names] = methods[step.op];
      // A fenced step's complete and result travel as its options object.
      // A schedule step's tz, queue, priority, payload and missed travel as its options object.
      // A heartbeat step's worker members travel as its report object (JavaScript names).
      const options = {};
      const optionNames = step.op === 'schedule' ? ['tz', 'queue', 'priority', 'payload', 'missed'] : ['complete', 'result'];
      for (const name of optionNames) if (name in step) options[name] = step[name];
      const report = {};
      for (const name of ['host', 'pid', 'started', 'stopping', 'claimed', 'completed', 'failed', 'dead', 'leases_lost', 'stale_writes_refused', 'renewals']) {
        if (name in step) report[jsName(name)] = step[name];
      }
      // `sized`: texts given by their length in bytes, of `x` (tests/vectors/README.md).
      for (const [name, bytes] of Object.entries(step.sized ?? {})) step[name] = 'x'.repeat(bytes);
      const args = names.map((name) => (step.nonfinite?.[name] !== undefined ? tokens[step.nonfinite[name]]
        : ['fenced', 'schedule'].includes(step.op) && name === 'options' ? options
          : step.op === 'heartbeat' && name === 'worker' ? report : step[name]));
      if (typeof step.job === 'string') jobs.add(step.job);
      for (const item of [step.jobs, step.leases].filter(Array.isArray).flat()) {
        if (typeof item?.job === 'string') jobs.add(item.job);
      }
      const where = `${vector.file} step ${index} (${step.op})`;
      if (step.expect.error) {
        const before = await snapshot();
        let code = null;
        try {
          await store.withReason[method](...args);
        } catch (error) {
          code = error.code;
        }
        if (code !== step.expect.error) return `${where}: expected error ${step.expect.error}, got ${code}`;
        if (!deepSame(before, await snapshot())) return `${where}: an error changed the database`;
        continue;
      }
      const answer = await store.withReason[method](...args);
      if (step.expect.winners !== undefined) {
        const won = answer.value.filter((v) => v !== null);
        if (won.length !== step.expect.winners || !won.every((v) => v === step.expect.fence)) {
          return `${where}: expected ${step.expect.winners} winner(s) with fence ${step.expect.fence}, got ${JSON.stringify(answer.value)}`;
        }
        continue;
      }
      if (!deepSame(answer.value, step.expect.value)) {
        return `${where}: expected ${JSON.stringify(step.expect.value)}, got ${JSON.stringify(answer.value)}`;
      }
      if (step.expect.reason !== undefined && !deepSame(answer.reason, step.expect.reason)) {
        return `${where}: expected reason ${JSON.stringify(step.expect.reason)}, got ${JSON.stringify(answer.reason)}`;
      }
    }
    return null;
  } catch (error) {
    return `${vector.file}: ${error.code}: ${error.message}`;
  }
}

test('every shared vector passes in a worker on OPFS', async () => {
  assert.ok(vectors.length >= 10, `expected the shared vectors, found ${vectors.length}`);
  const page = await env.browser.context.newPage();
  await page.goto(`${env.server.url}store/`);
  const failures = [];
  for (const vector of vectors) {
    const failure = await page.evaluate(runVectorInPage, vector);
    if (failure) failures.push(failure);
  }
  assert.deepEqual(failures, []);
  await page.close();
});

test('the runner notices a wrong expectation', async () => {
  const page = await env.browser.context.newPage();
  await page.goto(`${env.server.url}store/`);
  // The first test's page held the database until it closed; wait for its handles to go.
  const wrong = {
    file: 'wrong.json',
    steps: [
      { op: 'enqueue', job: 'j', expect: { value: true } },
      { op: 'claim', job: 'j', owner: 'a', now: 0, ttl: 5, expect: { value: 2 } },
    ],
  };
  assert.match(await page.evaluate(runVectorInPage, wrong), /expected 2, got 1/);
  await page.close();
});

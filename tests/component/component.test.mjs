// The WebAssembly component (dist/leasefence.wasm, docs/contract.md section 14) in Node through
// jco: `jco transpile` made it an ES module (scripts/build-component.sh writes it to
// target/component-js), whose WASI imports @bytecodealliance/preview2-shim serves from Node's file
// system. The shared contract vectors run through the `protocol` interface, the refusals and
// errors through the typed `store`, the worker rules against their shared vectors.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { _setPreopens } from '@bytecodealliance/preview2-shim/filesystem';

import { vectors } from '../node/vector-runner.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODULE = path.join(ROOT, 'target/component-js/leasefence.js');

// The guest sees one directory, /data: a fresh one on the host for this run.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'leasefence-component-'));
_setPreopens({ '/data': dataDir });
const { protocol, leases, workerRules } = await import(pathToFileURL(MODULE));

/** The step as a protocol line: `nonfinite` members as bare NaN / Infinity, `sized` ones as x's. */
function requestLine(step) {
  const request = {};
  for (const [key, value] of Object.entries(step)) {
    if (!['expect', 'nonfinite', 'sized'].includes(key)) request[key] = value;
  }
  for (const [key, size] of Object.entries(step.sized ?? {})) request[key] = 'x'.repeat(size);
  for (const [key, token] of Object.entries(step.nonfinite ?? {})) request[key] = `@@${token}@@`;
  return JSON.stringify(request).replace(/"@@(NaN|Infinity|-Infinity)@@"/g, '$1');
}

/** JSON equality where numbers compare by value. */
function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object' && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && same(a[k], b[k]));
  }
  return a === b;
}

/** Undefined when `got` is what the step expects, else what differs. */
function problemWith(step, got) {
  const expect = step.expect;
  if ('error' in expect) return got.error?.code === expect.error ? undefined : `expected error ${expect.error}`;
  if ('error' in got) return `expected ${JSON.stringify(expect)}`;
  if ('winners' in expect) {
    const won = got.value.filter((v) => v !== null);
    return won.length === expect.winners && won.every((v) => v === expect.fence) ? undefined : 'expected one winner';
  }
  if (!same(got.value, expect.value)) return `expected value ${JSON.stringify(expect.value)}`;
  if ('reason' in expect && !same(got.reason, expect.reason)) return `expected reason ${JSON.stringify(expect.reason)}`;
  return undefined;
}

test('every shared contract vector through the protocol interface', () => {
  const all = vectors();
  assert.ok(all.length > 30, 'the shared vectors are there');
  const failures = [];
  for (const [file, vector] of all) {
    protocol.open(`/data/${path.basename(file, '.json')}.db`);
    for (const [index, step] of vector.steps.entries()) {
      const got = JSON.parse(protocol.handle(requestLine(step)));
      const problem = problemWith(step, got);
      if (problem) {
        failures.push(`${file} step ${index} (${step.op}): ${problem}, got ${JSON.stringify(got)}`);
        break;
      }
    }
  }
  assert.deepEqual(failures, []);
});

test('a stale worker is refused with a typed stale-fence, and the newer result stays', () => {
  const store = leases.Store.open('/data/typed.db');
  assert.equal(store.enqueue({ job: 'j' }), true);
  assert.deepEqual(store.claim('j', 'A', 0, 10), { tag: 'ok', val: 1n });
  assert.deepEqual(store.claim('j', 'B', 5, 10), { tag: 'err', val: { tag: 'held', val: { owner: 'A', until: 10 } } });
  assert.deepEqual(store.claim('j', 'B', 20, 10), { tag: 'ok', val: 2n });
  assert.deepEqual(store.complete('j', 'A', 1n, 21, "A's"), { tag: 'err', val: { tag: 'stale-fence', val: 2n } });
  assert.deepEqual(store.complete('j', 'B', 2n, 22, "B's"), { tag: 'ok', val: undefined });
  assert.deepEqual(store.renew('j', 'B', 2n, 23, 10), { tag: 'err', val: { tag: 'done' } });
  const state = store.state('j');
  assert.equal(state.result, "B's");
  assert.equal(state.fence, 2n);
  assert.deepEqual(store.stats(30, undefined), { queued: 0n, scheduled: 0n, leased: 0n, done: 1n, dead: 0n });
});

test('an invalid argument throws the typed error and changes nothing', () => {
  const store = leases.Store.open('/data/invalid.db');
  store.enqueue({ job: 'j' });
  for (const call of [() => store.claim('j', 'A', 0, -1), () => store.claim('j', 'A', NaN, 10)]) {
    assert.throws(call, (err) => err.payload?.code === 'invalid-argument' && err.payload.retryable === false);
  }
  assert.deepEqual(store.state('j'), { id: 'j', owner: undefined, until: 0, fence: 0n, result: undefined, done: false });
});

test('the worker rules answer as the shared rule vectors say', () => {
  const file = path.join(ROOT, 'tests/worker-vectors/rules/rules.json');
  const { cases } = JSON.parse(fs.readFileSync(file, 'utf8'));
  // The s64 parameters (attempts) are BigInts in JavaScript.
  const bigints = { exponential_backoff: [4], must_check_previous_attempt: [0, 1], attempt_verdict: [0, 1], retry_at: [1, 2] };
  for (const { rule, args, expect } of cases) {
    const typed = args.map((a, i) => ((bigints[rule] ?? []).includes(i) ? BigInt(a) : a));
    const name = rule.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
    let got = workerRules[name](...typed);
    // jco gives an option's none as undefined; the vectors write null.
    if (rule === 'attempt_verdict') got = got === undefined ? { run: true } : { run: false, error: got };
    else if (got === undefined) got = null;
    assert.ok(same(got, expect), `${rule}(${args}): ${JSON.stringify(got)} != ${JSON.stringify(expect)}`);
  }
});

test('the file is plain SQLite that another reader opens', () => {
  const bytes = fs.readFileSync(path.join(dataDir, 'typed.db'));
  assert.equal(bytes.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
});

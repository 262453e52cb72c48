// The shared worker vectors (tests/worker-vectors/*.json, format in their README) against
// JobWorker of the staged package on a ManualClock, each on a fresh temp file; and the worker
// rules' cases (tests/worker-vectors/rules/rules.json) through the wasm exports JobWorker uses.
// Rust (crate/tests/worker_vectors.rs) and Chromium (tests/browser/worker-vectors.test.mjs) run the
// same files.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';
import { pathToFileURL } from 'node:url';

import { PKG, ROOT, loadPackage, tempDir } from './helpers.mjs';
import { playVector } from '../worker-vectors/play.mjs';

const VECTORS = path.join(ROOT, 'tests', 'worker-vectors');
const files = fs.readdirSync(VECTORS).filter((f) => f.endsWith('.json')).sort();
const dir = tempDir('leasefence-worker-vectors-');
const packageModule = pathToFileURL(path.join(PKG, 'index.mjs')).href;
const modules = { store: packageModule, worker: packageModule, core: pathToFileURL(path.join(ROOT, 'web/store/core.js')).href };

const read = (file) => ({ file, ...JSON.parse(fs.readFileSync(path.join(VECTORS, file), 'utf8')) });

test('the worker vector folder is not empty', () => {
  assert.ok(files.length >= 8, `only ${files.length} worker vectors in ${VECTORS}`);
});

for (const file of files) {
  const vector = read(file);
  test(`${file}: ${vector.name}`, async () => {
    const target = { kind: 'node', path: path.join(dir, file.replace(/\.json$/, '.db')) };
    assert.deepEqual(await playVector({ vector, modules, target }), []);
  });
}

test('the player notices a wrong expectation (a retry one second late, a handler call too many)', async () => {
  const vector = read('failures-backoff.json');
  const late = structuredClone(vector);
  late.timeline[2].expect.value.until = 1003;
  const problems = await playVector({ vector: late, modules, target: { kind: 'node', path: path.join(dir, 'late.db') } });
  assert.match(problems.join('\n'), /state answered .*"until":1002.*expected .*"until":1003/);
  const extra = structuredClone(vector);
  extra.timeline[1].handled = ['f@1', 'f@2'];
  const more = await playVector({ vector: extra, modules, target: { kind: 'node', path: path.join(dir, 'extra.db') } });
  assert.match(more.join('\n'), /handled \["f@1"\], expected \["f@1","f@2"\]/);
});

test('the worker rules: every case of rules.json through the store\'s workerRules (the wasm exports)', async () => {
  const { LeaseStore } = loadPackage();
  const store = await LeaseStore.open(path.join(dir, 'rules.db'));
  const { cases } = JSON.parse(fs.readFileSync(path.join(VECTORS, 'rules', 'rules.json'), 'utf8'));
  const camel = (name) => name.replace(/_(\w)/g, (_, c) => c.toUpperCase());
  try {
    assert.ok(cases.length >= 20);
    for (const { rule, args, expect } of cases) {
      assert.deepEqual(store.workerRules[camel(rule)](...args), expect, `${rule}(${args.join(', ')})`);
    }
  } finally {
    store.close();
  }
});

// Every shared contract vector (tests/vectors/*.json) through the JavaScript API of the staged
// package, each on a fresh temp file (the steps and checks: vector-runner.mjs).
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';

import { loadPackage, tempDir } from './helpers.mjs';
import { runVector, vectors } from './vector-runner.mjs';

const { LeaseStore } = loadPackage();
const all = vectors();
const dir = tempDir();

test('the vector folder is not empty', () => {
  assert.ok(all.length >= 10, `only ${all.length} vectors`);
});

for (const [file, vector] of all) {
  test(`${file}: ${vector.name}`, async () => {
    const store = await LeaseStore.open(path.join(dir, file.replace(/\.json$/, '.db')));
    try {
      await runVector(store, vector, file);
    } finally {
      store.close();
    }
  });
}

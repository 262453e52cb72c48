// What one job may carry (docs/contract.md section 13), from Node on either engine: the default
// limits, `LeaseStore.open`'s `limits` raising or lowering them (0: none), bad limits refused at
// open, and a refused call changing nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const dir = tempDir('leasefence-limits-');
let files = 0;
const fresh = (options) => LeaseStore.open(path.join(dir, `l${files++}.db`), options);
const refused = (f, pattern) => assert.throws(f, (e) => e.code === 'invalid_argument' && pattern.test(e.message), String(pattern));

test('the defaults refuse a payload over 1 MiB and change nothing', async () => {
  const store = await fresh();
  refused(() => store.enqueue('p', null, 'x'.repeat((1 << 20) + 1)), /1048577 bytes.*1048576 bytes/);
  assert.equal(store.state('p'), null);
  assert.equal(store.enqueue('p', null, 'x'.repeat(1 << 20)), true);
  store.close();
});

test('limits given at open apply to results and error texts; 0 is no limit', async () => {
  const store = await fresh({ limits: { result: 10, error: 5, payload: 0 } });
  assert.equal(store.enqueue('j', null, 'x'.repeat(2 << 20)), true, 'payload: no limit');
  const fence = store.claim('j', 'w', 0, 30);
  refused(() => store.complete('j', 'w', fence, 1, 'r'.repeat(11)), /`result`.*11 bytes.*limit of 10 bytes/);
  refused(() => store.fail('j', 'w', fence, 1, null, 'e'.repeat(6)), /`error`.*6 bytes/);
  assert.equal(store.state('j').done, false);
  assert.equal(store.complete('j', 'w', fence, 1, 'r'.repeat(10)), true);
  store.close();
});

test('bad limits are refused at open, naming the member', async () => {
  for (const [limits, pattern] of [
    [{ result: -1 }, /limits\.result/],
    [{ payload: 1.5 }, /limits\.payload/],
    [{ error: Number.NaN }, /limits\.error/],
    [{ results: 10 }, /`limits` must be an object/],
    ['big', /`limits` must be an object/],
  ]) {
    await assert.rejects(fresh({ limits }), (e) => e.code === 'invalid_argument' && pattern.test(e.message), JSON.stringify(limits));
  }
});

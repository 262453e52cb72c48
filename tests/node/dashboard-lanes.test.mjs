// The dashboard's lanes model (web/dashboard/model/lanes.js): leases followed across polls turn
// expired, taken over or ended, renewals are counted, ended lanes are dropped after a while.
import assert from 'node:assert/strict';
import path from 'node:path';
import test from 'node:test';
import { pathToFileURL } from 'node:url';

import { ROOT } from './helpers.mjs';

const { followLeases, laneLook, KEEP_ENDED } = await import(pathToFileURL(path.join(ROOT, 'web/dashboard/model/lanes.js')));

const lease = (id, owner, fence, until) => ({ id, owner, fence, until });

test('a lease renewed across polls stays one live lane and counts its renewals', () => {
  let lanes = followLeases([], [lease('a', 'A', 1, 10)], 0);
  lanes = followLeases(lanes, [lease('a', 'A', 1, 13)], 3);
  lanes = followLeases(lanes, [lease('a', 'A', 1, 13)], 4);
  lanes = followLeases(lanes, [lease('a', 'A', 1, 16)], 6);
  assert.equal(lanes.length, 1);
  assert.deepEqual([lanes[0].status, lanes[0].renewals, lanes[0].until], ['live', 2, 16]);
});

test('a lease whose end passes unrenewed expires, looks expired before the poll, and shows its take-over', () => {
  let lanes = followLeases([], [lease('a', 'A', 1, 10)], 0);
  assert.equal(laneLook(lanes[0], 9.9), 'live');
  assert.equal(laneLook(lanes[0], 10), 'expired', 'between polls the lapsed lease must look expired');
  lanes = followLeases(lanes, [], 11);
  assert.deepEqual([lanes[0].status, lanes[0].endedAt], ['expired', 10]);
  lanes = followLeases(lanes, [lease('a', 'B', 2, 40)], 12);
  const old = lanes.find((l) => l.fence === 1);
  const taker = lanes.find((l) => l.fence === 2);
  assert.deepEqual([old.status, old.by, old.byFence], ['taken', 'B', 2]);
  assert.deepEqual([taker.status, taker.owner], ['live', 'B']);
});

test('a lease gone before its end ended; ended lanes are dropped after KEEP_ENDED', () => {
  let lanes = followLeases([], [lease('a', 'A', 1, 10), lease('b', 'A', 1, 10)], 0);
  lanes = followLeases(lanes, [lease('b', 'A', 1, 12)], 2);
  assert.equal(lanes.find((l) => l.job === 'a').status, 'ended');
  lanes = followLeases(lanes, [], 2 + KEEP_ENDED - 1);
  assert.deepEqual(lanes.map((l) => [l.job, l.status]), [['a', 'ended'], ['b', 'expired']]);
  lanes = followLeases(lanes, [], 12 + KEEP_ENDED);
  assert.deepEqual(lanes, []);
});

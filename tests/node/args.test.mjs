// Bad arguments for every parameter of every method throw an Error with code
// 'invalid_argument' and change nothing (the file's bytes and every job's state are compared
// before and after); LeaseStore.open with bad paths and options; calls after close(); the
// constructor is private.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { fileHash, loadPackage, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const dir = tempDir();

// Valid calls that would each change the database if they ran (so a bad argument that slipped
// through would show up as a changed file).
const VALID = {
  enqueue: ['new-job', 5, 'p'],
  state: ['held'],
  claim: ['free', 'B', 0, 10],
  renew: ['held', 'A', 1, 1, 10],
  complete: ['held', 'A', 1, 1, 'r'],
  release: ['held', 'A', 1],
  claimNext: ['B', 0, 10],
  claimMany: ['free', ['B', 'C'], 0, 10],
  fail: ['held', 'A', 1, 1, 20, 'e'],
  revive: ['dead', 1],
  inspect: ['held'],
  stats: [1],
  enqueueMany: [[{ job: 'new-job', runAt: 5, payload: 'p' }]],
  claimNextMany: ['B', 2, 0, 10],
  renewMany: ['A', [{ job: 'held', fence: 1 }], 1, 10],
  completeMany: ['A', [{ job: 'held', fence: 1, result: 'r' }], 1],
};
// What the batch templates answer (section 10).
const BATCH_ANSWERS = {
  enqueueMany: [true],
  claimNextMany: [{ job: 'free', owner: 'B', fence: 1, payload: null, attempt: 1 }],
  renewMany: [{ value: true, reason: null }],
  completeMany: [{ value: true, reason: null }],
};
// [name as error messages spell it, kind, optional]: an optional argument may be left out.
const PARAMS = {
  enqueue: [['job', 'string'], ['run_at', 'maybeTime', true], ['payload', 'maybeText', true]],
  state: [['job', 'string']],
  claim: [['job', 'string'], ['owner', 'string'], ['now', 'time'], ['ttl', 'ttl']],
  renew: [['job', 'string'], ['owner', 'string'], ['fence', 'fence'], ['now', 'time'], ['ttl', 'ttl']],
  complete: [['job', 'string'], ['owner', 'string'], ['fence', 'fence'], ['now', 'time'], ['result', 'result']],
  release: [['job', 'string'], ['owner', 'string'], ['fence', 'fence']],
  claimNext: [['owner', 'string'], ['now', 'time'], ['ttl', 'ttl']],
  claimMany: [['job', 'string'], ['owners', 'owners'], ['now', 'time'], ['ttl', 'ttl']],
  fail: [['job', 'string'], ['owner', 'string'], ['fence', 'fence'], ['now', 'time'], ['retry_at', 'maybeTime', true], ['error', 'maybeText', true]],
  revive: [['job', 'string'], ['now', 'time']],
  inspect: [['job', 'string']],
  stats: [['now', 'time']],
  enqueueMany: [['jobs', 'jobs']],
  claimNextMany: [['owner', 'string'], ['n', 'count'], ['now', 'time'], ['ttl', 'ttl']],
  renewMany: [['owner', 'string'], ['leases', 'leases'], ['now', 'time'], ['ttl', 'ttl']],
  completeMany: [['owner', 'string'], ['leases', 'completions'], ['now', 'time']],
};

const label = (v) => {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'symbol') return v.toString();
  if (typeof v === 'function') return 'a function';
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : String(v);
  if (v instanceof String) return 'new String()';
  if (v instanceof Number) return 'new Number()';
  if (v instanceof Set) return 'a Set';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

const notAString = [1, 0, null, undefined, true, {}, [], ['free'], 1n, Symbol('free'), () => 'free', new String('free')];
const notANumber = ['1', '', null, undefined, true, {}, [], [1], 1n, Symbol('n'), new Number(1), () => 1];
const nonFinite = [NaN, Infinity, -Infinity];
const BAD = {
  string: notAString,
  time: [...notANumber, ...nonFinite],
  ttl: [...notANumber, ...nonFinite, 0, -0, -1, -0.001, -Number.MAX_VALUE],
  fence: [...notANumber, ...nonFinite, 1.5, 0.999, -0.5, 2 ** 53, -(2 ** 53), Number.MAX_VALUE, Number.EPSILON],
  result: [1, 0, true, false, {}, [], ['r'], 1n, Symbol('r'), new String('r'), () => 'r'],
  // Optional arguments: null and undefined mean "none"; anything else of the wrong type is refused.
  maybeTime: [...notANumber.filter((v) => v !== null && v !== undefined), ...nonFinite],
  maybeText: [1, 0, true, false, {}, [], ['p'], 1n, Symbol('p'), new String('p'), () => 'p'],
  owners: ['B', '', null, undefined, 1, {}, { length: 1, 0: 'B' }, new Set(['B']), [1], ['B', null], ['B', undefined], [['B']], ['B', 2], [new String('B')]],
  // Batch lists: not a list, a bad item anywhere (a valid one first), or longer than 1024.
  jobs: ['new-job', null, undefined, 1, {}, { length: 1, 0: { job: 'new-job' } }, ['new-job'], [null], [{}],
    [{ job: 1 }], [{ job: 'new-job' }, { job: 'b', runAt: '5' }],
    [{ job: 'new-job' }, { job: 'b', run_at: 5 }], [{ job: 'new-job' }, { job: 'b', payload: 1 }], [{ job: 'new-job' }, [{ job: 'b' }]],
    Array.from({ length: 1025 }, (_, i) => ({ job: `j${i}` }))],
  count: [...notANumber, ...nonFinite, 0, -1, 1.5, 1025, 2 ** 53],
  leases: ['held', null, undefined, 1, {}, [null], [{}], [{ job: 'held' }], [{ job: 'held', fence: 1.5 }], [{ job: 1, fence: 1 }],
    [{ job: 'held', fence: 1 }, { job: 'held', fence: 1, result: 'r' }], [{ job: 'held', fence: 1 }, 'held'],
    Array.from({ length: 1025 }, () => ({ job: 'held', fence: 1 }))],
  completions: ['held', null, undefined, 1, {}, [null], [{}], [{ job: 'held' }], [{ job: 'held', fence: '1' }],
    [{ job: 'held', fence: 1, result: 1 }], [{ job: 'held', fence: 1, result: 'r' }, { job: 'free', fence: 1, runAt: 5 }],
    Array.from({ length: 1025 }, () => ({ job: 'held', fence: 1, result: 'r' }))],
};

async function freshStore(name) {
  const db = path.join(dir, `${name}.db`);
  const store = await LeaseStore.open(db);
  assert.equal(store.enqueue('free'), true);
  assert.equal(store.enqueue('held'), true);
  assert.equal(store.claim('held', 'A', 0, 1000), 1);
  assert.equal(store.enqueue('done'), true);
  assert.equal(store.claim('done', 'A', 0, 1000), 1);
  assert.equal(store.complete('done', 'A', 1, 1, 'kept'), true);
  assert.equal(store.enqueue('dead'), true);
  assert.equal(store.claim('dead', 'A', 0, 1000), 1);
  assert.equal(store.fail('dead', 'A', 1, 1, null, 'poison'), true);
  return { db, store };
}

const JOBS = ['free', 'held', 'done', 'dead', 'new-job'];
const states = (store) => JOBS.map((job) => store.state(job));

/** Runs store[method](...args), expects invalid_argument and no change at all. */
async function expectInvalid(store, db, method, args, mentions) {
  const where = `${method}(${args.map(label).join(', ')})`;
  const bytes = fileHash(db);
  const journalBytes = fileHash(`${db}-journal`); // the kept journal (PERSIST), null if none
  const before = states(store);
  let thrown;
  try {
    const answer = store[method](...args);
    if (answer && typeof answer.then === 'function') await answer;
  } catch (error) {
    thrown = error;
  }
  assert.ok(thrown instanceof Error, `${where}: expected an Error, it returned normally`);
  assert.equal(thrown.code, 'invalid_argument', `${where}: code (message: ${thrown.message})`);
  assert.equal(thrown.retryable, false, `${where}: a bad argument is never worth retrying`);
  assert.ok(thrown.message.length > 0, `${where}: the error explains itself`);
  if (mentions) assert.match(thrown.message, new RegExp(mentions), `${where}: the message names the argument`);
  assert.equal(fileHash(db), bytes, `${where}: the file changed`);
  assert.equal(fileHash(`${db}-journal`), journalBytes, `${where}: the journal was written`);
  assert.deepEqual(states(store), before, `${where}: a job changed`);
  return thrown;
}

test('the valid calls used as templates do work (so every rejection below is the argument)', async () => {
  for (const method of Object.keys(VALID)) {
    const { store } = await freshStore(`template-${method}`);
    const answer = await store[method](...VALID[method]);
    if (method === 'state') assert.equal(answer.owner, 'A');
    else if (method === 'inspect') assert.equal(answer.attempts, 1);
    else if (method === 'stats') assert.deepEqual(answer, { queued: 1, scheduled: 0, leased: 1, done: 1, dead: 1 });
    else if (method === 'claimMany') assert.deepEqual(answer.filter((f) => f !== null), [1]);
    else if (method === 'claimNext') assert.deepEqual(answer, { job: 'free', owner: 'B', fence: 1, payload: null, attempt: 1 });
    else if (method === 'claim') assert.equal(answer, 1);
    else if (method in BATCH_ANSWERS) assert.deepEqual(answer, BATCH_ANSWERS[method], method);
    else assert.equal(answer, true, method);
    store.close();
  }
});

for (const [method, params] of Object.entries(PARAMS)) {
  test(`${method}: every parameter with a wrong type, a non-finite or out-of-range value`, async () => {
    const { db, store } = await freshStore(`bad-${method}`);
    try {
      let cases = 0;
      for (const [index, [name, kind]] of params.entries()) {
        for (const bad of BAD[kind]) {
          const args = [...VALID[method]];
          args[index] = bad;
          await expectInvalid(store, db, method, args, name);
          cases += 1;
        }
      }
      // The same through withReason.
      for (const [index, [, kind]] of params.entries()) {
        const args = [...VALID[method]];
        args[index] = BAD[kind][0];
        await expectInvalid(store.withReason, db, method, args);
      }
      assert.ok(cases >= 10);
    } finally {
      store.close();
    }
  });

  test(`${method}: missing arguments`, async () => {
    const { db, store } = await freshStore(`missing-${method}`);
    try {
      const all = VALID[method];
      const required = params.filter(([, , optional]) => !optional).length;
      // complete's last argument, result, is covered on its own below.
      const shortest = method === 'complete' ? required - 2 : required - 1;
      for (let n = 0; n <= shortest; n++) {
        await expectInvalid(store, db, method, all.slice(0, n), params[n][0]);
      }
      // A missing argument in the middle (undefined in place).
      for (let i = 0; i < all.length; i++) {
        if (method === 'complete' && i === all.length - 1) continue;
        if (params[i][2]) continue; // optional: undefined is allowed
        const args = [...all];
        args[i] = undefined;
        await expectInvalid(store, db, method, args, params[i][0]);
      }
    } finally {
      store.close();
    }
  });
}

test('optional arguments may be left out, or null, and then mean none', async () => {
  const { store } = await freshStore('optional');
  assert.equal(store.enqueue('a'), true);
  assert.equal(store.enqueue('b', undefined, null), true);
  assert.equal(store.enqueue('c', null, 'p'), true);
  assert.deepEqual(store.inspect('c').payload, 'p');
  assert.equal(store.state('b').until, 0);
  // fail with no retryAt at all: the job is dead, as with null.
  assert.equal(store.fail('held', 'A', 1, 1), true);
  assert.equal(store.inspect('held').dead, true);
  assert.deepEqual(store.inspect('held').failures, [{ fence: 1, at: 1, error: null }]);
  store.close();
});

test('complete: result may be a string or null, and is otherwise refused', async () => {
  const { store } = await freshStore('complete-null');
  assert.equal(store.complete('held', 'A', 1, 1, null), true);
  assert.deepEqual(store.state('held'), { id: 'held', owner: 'A', until: 1000, fence: 1, result: null, done: true });
  store.close();
});

test(
  'complete: a missing result (4 arguments) is invalid_argument like every other missing argument',
  async () => {
    const { db, store } = await freshStore('complete-missing-result');
    try {
      await expectInvalid(store, db, 'complete', ['held', 'A', 1, 1], 'result');
    } finally {
      store.close();
    }
  },
);

test('claimMany: an empty owner list is valid (no threads, no change); bad args are checked before any thread', async () => {
  const { db, store } = await freshStore('claim-many-empty');
  try {
    const bytes = fileHash(db);
    assert.deepEqual(await store.claimMany('free', [], 0, 10), []);
    assert.deepEqual(await store.claimMany('free', [], 0, 10).then((v) => v.length), 0);
    assert.equal(fileHash(db), bytes);
    // An empty list does not excuse bad numbers.
    await expectInvalid(store, db, 'claimMany', ['free', [], NaN, 10], 'now');
    await expectInvalid(store, db, 'claimMany', ['free', [], 0, 0], 'ttl');
    await expectInvalid(store, db, 'claimMany', [1, [], 0, 10], 'job');
  } finally {
    store.close();
  }
});

test('claimMany returns a promise that rejects (it never throws synchronously)', async () => {
  const { store } = await freshStore('claim-many-promise');
  try {
    let result;
    assert.doesNotThrow(() => {
      result = store.claimMany('free', 'B', 0, 10);
    });
    await assert.rejects(result, (e) => e.code === 'invalid_argument');
  } finally {
    store.close();
  }
});

test('LeaseStore.open: bad paths and options', async () => {
  const badPaths = [undefined, null, '', 1, {}, [], ['x.db'], true, Symbol('x'), new String('x.db'), 'a\0b.db', path.join(dir, 'nul\0.db')];
  for (const bad of badPaths) {
    await assert.rejects(LeaseStore.open(bad), (e) => {
      assert.ok(e instanceof Error);
      assert.equal(e.code, 'invalid_argument', `open(${label(bad)}): ${e.message}`);
      return true;
    });
  }
  const good = path.join(dir, 'options.db');
  const badOptions = [null, 'x', 5, true, { busyTimeout: -1 }, { busyTimeout: NaN }, { busyTimeout: Infinity }, { busyTimeout: -Infinity }, { busyTimeout: '100' }, { busyTimeout: true }, { busyTimeout: {} }, { busyTimeout: 1n }, { busyTimeoutMs: 250 }];
  for (const bad of badOptions) {
    await assert.rejects(LeaseStore.open(good, bad), (e) => {
      assert.equal(e.code, 'invalid_argument', `open(path, ${label(bad)}): ${e.message}`);
      return true;
    });
    assert.equal(fs.existsSync(good), false, `open(path, ${label(bad)}) created the file`);
  }
  // Good options still open.
  for (const ok of [undefined, {}, { busyTimeout: 0 }, { busyTimeout: 0.2505 }, { busyTimeout: undefined }]) {
    const store = await LeaseStore.open(good, ok);
    assert.equal(store.path, good);
    store.close();
  }
});

test('LeaseStore.open: a missing directory, a directory, and foreign files fail with storage and are left untouched', async () => {
  const missingDir = path.join(dir, 'no-such-dir', 'x.db');
  await assert.rejects(LeaseStore.open(missingDir), (e) => e.code === 'storage' && /no-such-dir/.test(e.message));
  assert.equal(fs.existsSync(path.dirname(missingDir)), false);

  const aDir = fs.mkdtempSync(path.join(dir, 'a-dir-'));
  await assert.rejects(LeaseStore.open(aDir), (e) => e.code === 'storage');
  assert.deepEqual(fs.readdirSync(aDir), []);

  const foreign = {
    'one-byte': Buffer.from('x'),
    text: Buffer.from('hello, not a database\n'.repeat(64)),
    'random-4k': Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251)),
  };
  for (const [name, bytes] of Object.entries(foreign)) {
    const sub = fs.mkdtempSync(path.join(dir, `foreign-${name}-`));
    const file = path.join(sub, name);
    fs.writeFileSync(file, bytes);
    await assert.rejects(LeaseStore.open(file), (e) => {
      assert.equal(e.code, 'storage', `${name}: ${e.message}`);
      return true;
    });
    assert.ok(fs.readFileSync(file).equals(bytes), `${name}: the file was changed`);
    assert.deepEqual(fs.readdirSync(sub), [name], `${name}: debris left beside the file`);
  }
});

test('after close() every method throws code storage; close() twice is fine', async () => {
  const { db, store } = await freshStore('closed');
  store.close();
  store.close();
  const bytes = fileHash(db);
  for (const [method, args] of Object.entries(VALID)) {
    for (const target of [store, store.withReason]) {
      let thrown;
      try {
        await target[method](...args);
      } catch (error) {
        thrown = error;
      }
      assert.ok(thrown instanceof Error, `${method} after close`);
      assert.equal(thrown.code, 'storage', `${method} after close: ${thrown.message}`);
      assert.match(thrown.message, /closed/);
    }
  }
  assert.equal(fileHash(db), bytes);
  assert.equal(fs.existsSync(`${db}.lock`), false, 'close() left the lock behind');
  // The file is fine and opens again.
  const again = await LeaseStore.open(db);
  assert.equal(again.state('done').result, 'kept');
  again.close();
});

test('new LeaseStore() directly throws; so does any forged construction', async () => {
  assert.throws(() => new LeaseStore(), Error);
  assert.throws(() => new LeaseStore('x.db'), Error);
  assert.throws(() => new LeaseStore(Symbol('LeaseStore.open'), {}, 'x.db', 0), Error);
  assert.throws(() => LeaseStore(), TypeError);
});

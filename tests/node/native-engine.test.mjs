// The npm package's native engine (docs/contract.md section 13): Node processes that run the crate
// as a Node-API addon share one WAL file with native processes (`leasefence batch`) and the Python
// seed, with default options on every side; every job is handed out once; a stale completion from
// either side is refused; a Promise call waits for another process's write lock off the event
// loop. Each Node process here is a child started with LEASEFENCE_ENGINE=native, since the engine
// is chosen once per process.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import test, { after } from 'node:test';

import { HERE, NativeBatch, PKG, holdSqliteWriteLock, killLiveChildren, nativeCli, sleep, spawnTracked, tempDir } from './helpers.mjs';

after(killLiveChildren);

const dir = tempDir('leasefence-native-engine-');
const CHILD = path.join(HERE, 'native-engine-child.mjs');

/** One Node process on the native engine, driven one request at a time. */
class NodeDriver {
  constructor(db) {
    this.child = spawnTracked(process.execPath, [CHILD, db], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, LEASEFENCE_PKG: PKG, LEASEFENCE_ENGINE: 'native' },
    });
    this.stderr = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => (this.stderr += d));
    this.waiting = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const resolve = this.waiting.shift();
      assert.ok(resolve, `unexpected output from the Node child: ${line}`);
      resolve(JSON.parse(line));
    });
    this.ready = new Promise((resolve) => this.waiting.push(resolve));
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  request(op, args, grouped = false) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(`${JSON.stringify({ op, args, grouped })}\n`);
    });
  }

  async end() {
    this.child.stdin.end();
    assert.equal(await this.exited, 0, this.stderr);
  }
}

/** `leasefence ARGS` on `db`; its JSON line. */
function cli(db, args, input) {
  const run = spawnSync(nativeCli(), ['--db', db, ...args], { input, encoding: 'utf8' });
  assert.equal(run.status, 0, `leasefence ${args.join(' ')}: ${run.stdout}${run.stderr}`);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

/** Python's sqlite3 (another SQLite library) reading `sql` on `db`: its rows. */
function python(db, sql) {
  const script = 'import json, sqlite3, sys\nprint(json.dumps(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchall()))';
  const run = spawnSync('python3', ['-c', script, db, sql], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout);
}

/** An answer without the child's timing. */
const plain = ({ value, reason, error }) => (error ? { error } : { value, reason });

test('a WAL file made by the native CLI opens in Node on the native engine, as it is', async () => {
  const db = path.join(dir, 'made-natively.db');
  cli(db, ['enqueue', 'a']);
  assert.deepEqual(python(db, 'PRAGMA journal_mode'), [['wal']]);
  const node = new NodeDriver(db);
  assert.deepEqual(await node.ready, { ready: true, engine: 'native' });
  assert.deepEqual(plain(await node.request('claim', ['a', 'node', 10, 30])), { value: 1, reason: null });
  await node.end();
  assert.deepEqual(python(db, 'PRAGMA journal_mode'), [['wal']]);
  assert.deepEqual(cli(db, ['state', 'a']).value, { id: 'a', owner: 'node', until: 40, fence: 1, result: null, done: false });
});

test('Node and native processes drain one file together: each job once, every result its claimer\'s', async () => {
  const db = path.join(dir, 'drain.db');
  const jobs = Array.from({ length: 240 }, (_, i) => `job-${String(i).padStart(3, '0')}`);
  assert.deepEqual(cli(db, ['enqueue', '--stdin'], `${jobs.join('\n')}\n`).value, { added: jobs.length, existed: 0 });
  const nodes = [new NodeDriver(db), new NodeDriver(db), new NodeDriver(db)];
  for (const node of nodes) assert.equal((await node.ready).engine, 'native');
  const natives = [new NativeBatch(db), new NativeBatch(db)];
  const drivers = [
    ...nodes.map((node, i) => ({ owner: `node-${i}`, call: (op, args) => node.request(op, args, true) })),
    ...natives.map((batch, i) => ({
      owner: `native-${i}`,
      call: (op, args) =>
        batch.request(
          op === 'claimNext'
            ? { op: 'claim_next', owner: args[0], now: args[1], ttl: args[2] }
            : { op, job: args[0], owner: args[1], fence: args[2], now: args[3], result: args[4] },
        ),
    })),
  ];
  const claims = new Map(); // job -> [owner, fence][]
  await Promise.all(
    drivers.map(async ({ owner, call }) => {
      for (;;) {
        const now = Date.now() / 1000;
        const claimed = await call('claimNext', [owner, now, 60]);
        assert.equal(claimed.error, undefined, JSON.stringify(claimed.error));
        if (claimed.value === null) return;
        const { job, fence } = claimed.value;
        claims.set(job, [...(claims.get(job) ?? []), [owner, fence]]);
        const completed = await call('complete', [job, owner, fence, now, owner]);
        assert.equal(completed.value, true, `${owner} ${job}: ${JSON.stringify(completed)}`);
      }
    }),
  );
  for (const job of jobs) assert.deepEqual(claims.get(job)?.length, 1, `${job}: ${JSON.stringify(claims.get(job))}`);
  const byKind = { node: 0, native: 0 };
  for (const [[owner, fence]] of claims.values()) {
    assert.equal(fence, 1);
    byKind[owner.split('-')[0]] += 1;
  }
  // Both kinds took part (each drove the same loop from the start).
  assert.ok(byKind.node > 0 && byKind.native > 0, JSON.stringify(byKind));
  const rows = python(db, 'SELECT id, owner, result, done FROM jobs ORDER BY id');
  assert.equal(rows.length, jobs.length);
  for (const [id, owner, result, done] of rows) {
    assert.equal(done, 1, id);
    assert.equal(result, owner, id);
    assert.equal(claims.get(id)[0][0], owner, id);
  }
  assert.deepEqual(python(db, 'PRAGMA integrity_check'), [['ok']]);
  for (const node of nodes) await node.end();
  for (const batch of natives) assert.equal(await batch.end(), 0, batch.stderr);
});

test('a stale completion is refused with stale_fence from either side, and changes nothing', async () => {
  const db = path.join(dir, 'stale.db');
  cli(db, ['enqueue', 'by-node']);
  cli(db, ['enqueue', 'by-native']);
  const node = new NodeDriver(db);
  await node.ready;
  const native = new NativeBatch(db);
  // Node holds by-node at fence 1 until 20 and stalls; native takes it over at 30 (fence 2). Node's
  // late completion is refused while native holds it (stale_fence), and after native completed it
  // (done).
  assert.equal((await node.request('claim', ['by-node', 'node', 10, 10])).value, 1);
  assert.equal((await native.request({ op: 'claim', job: 'by-node', owner: 'native', now: 30, ttl: 10 })).value, 2);
  const late = plain(await node.request('complete', ['by-node', 'node', 1, 31, 'late node']));
  assert.deepEqual(late, { value: false, reason: { code: 'stale_fence', fence: 2 } });
  assert.equal((await native.request({ op: 'complete', job: 'by-node', owner: 'native', fence: 2, now: 32, result: 'native' })).value, true);
  assert.deepEqual(plain(await node.request('complete', ['by-node', 'node', 1, 33, 'later node'])), { value: false, reason: { code: 'done' } });
  // And the other way round.
  assert.equal((await native.request({ op: 'claim', job: 'by-native', owner: 'native', now: 10, ttl: 10 })).value, 1);
  assert.equal((await node.request('claim', ['by-native', 'node', 30, 10])).value, 2);
  const lateNative = await native.request({ op: 'complete', job: 'by-native', owner: 'native', fence: 1, now: 31, result: 'late native' });
  assert.deepEqual({ value: lateNative.value, reason: lateNative.reason }, { value: false, reason: { code: 'stale_fence', fence: 2 } });
  assert.equal((await node.request('complete', ['by-native', 'node', 2, 32, 'node'])).value, true);
  assert.deepEqual(python(db, 'SELECT id, owner, fence, result, done FROM jobs ORDER BY id'), [
    ['by-native', 'node', 2, 'node', 1],
    ['by-node', 'native', 2, 'native', 1],
  ]);
  await node.end();
  assert.equal(await native.end(), 0, native.stderr);
});

test('a Promise call waits for another process\'s write lock off the event loop', async () => {
  const db = path.join(dir, 'held.db');
  cli(db, ['enqueue', 'first']);
  const node = new NodeDriver(db);
  await node.ready;
  // Python's sqlite3 holds the write lock for 2 s (the seed's kind of writer: no write gate).
  const lock = await holdSqliteWriteLock(db);
  const released = sleep(2000).then(() => lock.release());
  const started = performance.now();
  const answer = await node.request('enqueue', ['second'], true);
  const waited = performance.now() - started;
  assert.deepEqual(plain(answer), { value: true, reason: null });
  // It did wait for the lock (the call could not commit before the holder did)...
  assert.ok(waited > 1500, `answered after ${waited} ms, while the lock was held for 2000 ms`);
  // ...and meanwhile the child's 10 ms timer kept running: a loop blocked by the wait would show
  // a gap of about 2000 ms. The bound is loose for this shared 2-core machine.
  assert.ok(answer.lagMs < 500, `the event loop stood still for ${answer.lagMs} ms`);
  console.log(`waited ${Math.round(waited)} ms for the lock; the longest event-loop gap meanwhile: ${answer.lagMs.toFixed(1)} ms`);
  await released;
  await node.end();
});

for (const concurrency of [1, 4]) {
  test(`a JobWorker (concurrency ${concurrency}) waits for another process's write lock off the event loop: timers fire within 50 ms`, async () => {
    const db = path.join(dir, `worker-held-${concurrency}.db`);
    const node = new NodeDriver(db);
    await node.ready;
    // Due in 1 s: the worker starts, finds nothing claimable and rests; the lock is taken meanwhile,
    // so the claims it makes when the jobs fall due (and all after them) meet it.
    const due = Date.now() / 1000 + 1;
    for (const job of ['w1', 'w2', 'w3']) cli(db, ['enqueue', job, '--run-at', String(due)]);
    const answered = node.request('runWorker', [{ ttl: 30, concurrency, idle: 0.05 }]);
    await sleep(300);
    const lock = await holdSqliteWriteLock(db);
    const heldAt = Date.now() / 1000;
    await sleep(2000);
    const freedAt = Date.now() / 1000; // the holder commits after this
    await lock.release();
    const answer = await answered;
    assert.equal(answer.error, undefined, JSON.stringify(answer.error));
    assert.deepEqual(answer.value.handled.map(({ job }) => job).sort(), ['w1', 'w2', 'w3']);
    assert.equal(answer.value.stats.completed, 3);
    // The jobs fell due while the lock was held, and no claim got through before it was freed.
    assert.ok(heldAt < due, `the lock was taken ${heldAt - due} s after the jobs fell due`);
    for (const { job, at } of answer.value.handled) {
      assert.ok(at >= freedAt, `${job} was handled ${freedAt - at} s before the lock was freed`);
    }
    assert.ok(answer.lagMs < 50, `the event loop stood still for ${answer.lagMs} ms while the worker waited for the lock`);
    console.log(`concurrency ${concurrency}: the longest event-loop gap while the worker waited ${((freedAt - due) * 1000).toFixed(0)} ms for the lock: ${answer.lagMs.toFixed(1)} ms`);
    await node.end();
  });
}

/** Opens a store in a child Node process with `env` (LEASEFENCE_ENGINE removed unless given) and package `pkg`. */
function engineOfChild(pkg, env) {
  const childEnv = { ...process.env, ...env };
  if (!('LEASEFENCE_ENGINE' in env)) delete childEnv.LEASEFENCE_ENGINE;
  const db = path.join(dir, `engine-${Math.random().toString(36).slice(2)}.db`);
  const script = `require(process.argv[1]).LeaseStore.open(process.argv[2])
    .then((s) => { console.log(JSON.stringify({ engine: s.engine })); s.close(); },
          (e) => { console.log(JSON.stringify({ code: e.code, message: e.message })); })`;
  const run = spawnSync(process.execPath, ['-e', script, pkg, db], { encoding: 'utf8', env: childEnv });
  assert.equal(run.status, 0, run.stderr);
  return { ...JSON.parse(run.stdout), stderr: run.stderr };
}

test('the package runs the native engine by default, and falls back to the wasm one, saying so, where the addon does not load', () => {
  assert.deepEqual(engineOfChild(PKG, {}), { engine: 'native', stderr: '' });
  assert.deepEqual(engineOfChild(PKG, { LEASEFENCE_ENGINE: 'wasm' }), { engine: 'wasm', stderr: '' });
  // The same package without its prebuilds/ folder: a platform with no addon.
  const bare = path.join(dir, 'package-without-addon');
  fs.cpSync(PKG, bare, { recursive: true, filter: (from) => !from.includes(`${path.sep}prebuilds`) });
  const fallback = engineOfChild(bare, {});
  assert.equal(fallback.engine, 'wasm');
  assert.match(fallback.stderr, /LEASEFENCE_WASM_FALLBACK/);
  assert.match(fallback.stderr, /the native engine does not load here .*leasefence\.node/);
  assert.deepEqual(engineOfChild(bare, { LEASEFENCE_ENGINE: 'wasm' }), { engine: 'wasm', stderr: '' });
  const asked = engineOfChild(bare, { LEASEFENCE_ENGINE: 'native' });
  assert.equal(asked.code, 'invalid_argument', JSON.stringify(asked));
  assert.match(asked.message, /LEASEFENCE_ENGINE=native: the native addon does not load here/);
  const wrong = engineOfChild(PKG, { LEASEFENCE_ENGINE: 'turbo' });
  assert.equal(wrong.code, 'invalid_argument');
  assert.match(wrong.message, /use one of native, wasm/);
});

test('the native engine refuses the wasm engine\'s `exclusive` option, naming it, and makes no file', () => {
  const db = path.join(dir, 'exclusive.db');
  const script = `require(process.argv[1]).LeaseStore.open(process.argv[2], { exclusive: true })
    .then(() => console.log('opened'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
  const run = spawnSync(process.execPath, ['-e', script, PKG, db], { encoding: 'utf8', env: { ...process.env, LEASEFENCE_ENGINE: 'native' } });
  const answer = JSON.parse(run.stdout);
  assert.equal(answer.code, 'invalid_argument');
  assert.match(answer.message, /`exclusive` is the wasm engine's mode/);
  assert.equal(fs.existsSync(db), false, 'a refused open made the file');
});

test('`writeGate: false` opens the native store (and the connections claimMany opens) without the write gate; the default queues on it', () => {
  const script = `const { LeaseStore } = require(process.argv[1]);
    (async () => {
      const options = JSON.parse(process.argv[3]);
      const store = await LeaseStore.open(process.argv[2], options);
      store.enqueue('job');
      const fences = await store.claimMany('job', ['a', 'b'], 0, 30);
      store.close();
      console.log(JSON.stringify({ granted: fences.filter((f) => f !== null).length }));
    })().catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })))`;
  const run = (name, options) => {
    const db = path.join(dir, name);
    const child = spawnSync(process.execPath, ['-e', script, PKG, db, JSON.stringify(options)], {
      encoding: 'utf8', env: { ...process.env, LEASEFENCE_ENGINE: 'native' },
    });
    return { answer: JSON.parse(child.stdout), gate: fs.existsSync(`${db}-leasefence-gate`), db };
  };
  const ungated = run('ungated.db', { writeGate: false });
  assert.deepEqual(ungated.answer, { granted: 1 });
  assert.equal(ungated.gate, false, 'a store opened with writeGate: false (or one of its claimMany connections) made the gate file');
  const gated = run('gated.db', {});
  assert.deepEqual(gated.answer, { granted: 1 });
  assert.equal(gated.gate, true, 'the default store did not queue on the gate file');
  const wrong = run('wrong.db', { writeGate: 'no' });
  assert.equal(wrong.answer.code, 'invalid_argument');
  assert.match(wrong.answer.message, /`writeGate` must be true or false/);
  assert.equal(fs.existsSync(wrong.db), false, 'a refused open made the file');
});

// SIGKILL recovery and live locks.
//
// 1. A child loops claim/renew/complete on one file and logs every answer synchronously; the
//    parent kills it with SIGKILL at random moments, 200 rounds (every fifth one early, while it
//    opens the file and recovers what the previous one left). After a kill: a fresh process
//    opens the file and operates within seconds (the dead process's lock is broken, its hot
//    journal rolled back), PRAGMA integrity_check is ok (Python, while no Node process has the
//    file open), no (job, fence) was ever logged twice, no granted fence went back, and no
//    completed result was lost or overwritten (after every third round nobody checks, so the
//    next worker must recover by itself). At least one kill must have left a hot journal.
// 2. A live process's lock is never broken: with a writer stopped (SIGSTOP) while it holds the
//    lock, other processes only wait and fail with code 'storage' ("locked"); with a writer
//    running, short-timeout operations either work or fail the same way, and never corrupt.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import test, { after } from 'node:test';

import { HERE, PKG, assertIntegrity, fileHash, hotJournal, jsonLines, loadPackage, loadWasm, runNode, sleep, tempDir, withTimeout, killLiveChildren, spawnTracked, onlyOn } from './helpers.mjs';

const WASM_ONLY = onlyOn('wasm', "the wasm engine's lock files and VFS counters; the native engine's crash tests are native-crash.test.mjs (WAL recovery, POSIX locks die with their process)");

after(killLiveChildren);

const { LeaseStore } = loadPackage();
const wasm = loadWasm();
const dir = tempDir();
const WORKER = path.join(HERE, 'crash-worker.mjs');
// Hundreds of kills by default; LEASEFENCE_NODE_CRASH_ROUNDS for more (or fewer while iterating).
const ROUNDS = Number(process.env.LEASEFENCE_NODE_CRASH_ROUNDS ?? 200);

/** Starts `crash-worker.mjs loop`; resolves once it has opened the store. */
function startLoop(db, owner, busyTimeoutMs = 10_000) {
  const child = spawnTracked(process.execPath, [WORKER, 'loop', db, owner, String(busyTimeoutMs)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEFENCE_PKG: PKG },
  });
  const state = { child, stdout: '', stderr: '' };
  state.exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  let opening;
  state.opening = new Promise((resolve) => (opening = resolve));
  state.ready = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (d) => {
      state.stdout += d;
      if (state.stdout.includes('"opening"')) opening();
      if (state.stdout.includes('"ready"')) resolve();
    });
    child.stderr.setEncoding('utf8').on('data', (d) => (state.stderr += d));
    state.exited.then(({ code, signal }) => reject(new Error(`worker exited (${code} ${signal}) before it was ready: ${state.stderr}`)));
  });
  state.ready.catch(() => {}); // a worker killed before it was ready is not an error by itself
  state.closed = new Promise((resolve) => child.on('close', resolve));
  return state;
}

test(`SIGKILL at random moments, ${ROUNDS} rounds: recovery, integrity, no fence twice, no result lost`, { skip: WASM_ONLY, timeout: 120_000 + ROUNDS * 3_000 }, async () => {
  const db = path.join(dir, 'crash.db');
  const seed = await LeaseStore.open(db);
  for (let i = 0; i < 200; i++) seed.enqueue(`c${i}`);
  seed.close();

  const granted = new Map(); // JSON [job, fence] -> round
  const maxFence = new Map(); // job -> highest fence logged
  const attempted = new Map(); // job -> Set of results a worker tried to complete with
  const completedOk = new Map(); // job -> {fence, result} of a complete that answered true
  const doneBefore = new Map(); // job -> result seen done after an earlier round
  let hotJournals = 0;
  let locksLeft = 0;
  let brokenByChecker = 0;
  let grants = 0;
  let completes = 0;
  let slowestRecoveryMs = 0;
  let uncheckedRounds = 0;
  const started = performance.now();

  for (let round = 0; round < ROUNDS; round++) {
    const owner = `w${round}`;
    // Every fifth worker is killed 0-60 ms after it starts opening the file, ready or not: while
    // it breaks the dead worker's lock or rolls back the hot journal it left.
    const early = round % 5 === 4;
    // After every third round nobody checks: the next worker recovers the file by itself.
    const recoverNow = round % 3 !== 1 || round === ROUNDS - 1;
    const worker = startLoop(db, owner);
    if (early) {
      await withTimeout(Promise.race([worker.opening, worker.exited]), 15_000, `round ${round}: the worker did not start`);
      await sleep(Math.floor(Math.random() * 61));
    } else {
      await withTimeout(worker.ready, 15_000, `round ${round}: the worker could not open the file`);
      await sleep(20 + Math.floor(Math.random() * 181));
    }
    worker.child.kill('SIGKILL');
    const { signal } = await worker.exited;
    await worker.closed;
    assert.equal(signal, 'SIGKILL', `round ${round}: the worker ended by itself: ${worker.stderr}`);
    assert.equal(worker.stderr, '', `round ${round}: the worker reported errors`);

    if (hotJournal(db)) hotJournals += 1;
    if (fs.existsSync(`${db}.lock`)) locksLeft += 1;

    // What the dead worker was told.
    for (const line of jsonLines(worker.stdout)) {
      if (line.g) {
        const [job, fence] = line.g;
        const key = JSON.stringify(line.g);
        assert.ok(!granted.has(key), `(${job}, ${fence}) granted in round ${granted.get(key)} and again in round ${round}`);
        granted.set(key, round);
        maxFence.set(job, Math.max(maxFence.get(job) ?? 0, fence));
        grants += 1;
      } else if (line.a) {
        const [job, , result] = line.a;
        if (!attempted.has(job)) attempted.set(job, new Set());
        attempted.get(job).add(result);
      } else if (line.c) {
        const [job, fence, result, ok] = line.c;
        if (ok) {
          assert.ok(!completedOk.has(job), `${job} completed twice (round ${round})`);
          completedOk.set(job, { fence, result });
          completes += 1;
        }
      }
    }

    if (!recoverNow) {
      uncheckedRounds += 1;
      continue;
    }

    // A fresh process opens the file and works: the dead worker's lock does not stay stuck.
    const check = await runNode(WORKER, ['check', db, `probe-${round}`, '5000']);
    assert.equal(check.code, 0, `round ${round}: a fresh process could not operate: ${check.stderr}`);
    const report = jsonLines(check.stdout)[0];
    assert.equal(report.fence, 1, `round ${round}: the probe claim`);
    assert.equal(report.completed, true);
    assert.ok(check.ms < 5000, `round ${round}: recovery took ${check.ms} ms`);
    assert.equal(report.stats.lost, 0);
    brokenByChecker += report.stats.brokenStale;
    slowestRecoveryMs = Math.max(slowestRecoveryMs, check.ms);
    assert.equal(fs.existsSync(`${db}.lock`), false, `round ${round}: the checker left the lock`);
    assert.equal(hotJournal(db), false, `round ${round}: the hot journal was not rolled back`);
    // No debris of the dead worker's lock protocol (temp records, break mutexes) is left; the
    // journal is kept between transactions (PERSIST).
    const kept = ['crash.db', 'crash.db-journal'];
    const debris = fs.readdirSync(dir).filter((f) => f.startsWith('crash.db') && !kept.includes(f));
    assert.deepEqual(debris, [], `round ${round}: files left beside the database`);

    // No Node process has the file open now: Python checks it.
    const info = assertIntegrity(db);
    const rows = new Map(info.rows.map((r) => [r.id, r]));
    for (const [job, fence] of maxFence) {
      assert.ok(rows.get(job).fence >= fence, `round ${round}: ${job} fence went back from ${fence} to ${rows.get(job).fence}`);
    }
    for (const [job, { fence, result }] of completedOk) {
      const row = rows.get(job);
      assert.equal(row.done, 1, `round ${round}: the completion of ${job} was lost`);
      assert.equal(row.result, result, `round ${round}: the result of ${job} was overwritten`);
      assert.equal(row.fence, fence);
    }
    for (const [job, result] of doneBefore) {
      assert.equal(rows.get(job).result, result, `round ${round}: the result of ${job} changed after it was done`);
    }
    for (const row of rows.values()) {
      if (!row.done) continue;
      if (row.id.startsWith('probe-')) {
        assert.equal(row.result, 'checked');
        continue;
      }
      // Done with the result its current lease holder tried to store, and nobody else's.
      assert.equal(row.result, `${row.owner}:${row.id}:${row.fence}`, `${row.id}: a result from another lease`);
      assert.ok(attempted.get(row.id)?.has(row.result), `${row.id}: a result nobody tried to store`);
      doneBefore.set(row.id, row.result);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `crash: ${ROUNDS} SIGKILLs in ${seconds.toFixed(1)} s; ${hotJournals} left a hot journal, ${locksLeft} left the lock ` +
      `(${brokenByChecker} stale locks broken by a checker; after ${uncheckedRounds} rounds the next worker recovered by itself); ` +
      `${grants} fences and ${completes} completes logged, ` +
      `${doneBefore.size} jobs done; slowest recovery (spawn, open, claim, complete) ${slowestRecoveryMs.toFixed(0)} ms`,
  );
  assert.ok(hotJournals >= 1, 'no kill hit a transaction: the test proved nothing about recovery');
  assert.ok(grants >= 10, `the workers hardly did anything (${grants} fences)`);
});

test('a live, stopped lock holder is never broken: others wait and fail with storage "locked"', { skip: WASM_ONLY, timeout: 60_000 }, async () => {
  const db = path.join(dir, 'stopped.db');
  const seed = await LeaseStore.open(db);
  for (let i = 0; i < 50; i++) seed.enqueue(`s${i}`);
  seed.close();

  const worker = startLoop(db, 'holder');
  await withTimeout(worker.ready, 15_000, 'the holder could not open the file');
  const pid = worker.child.pid;
  let caught = false;
  for (let attempt = 0; attempt < 500 && !caught; attempt++) {
    await sleep(Math.floor(Math.random() * 4));
    process.kill(pid, 'SIGSTOP');
    let record = '';
    try {
      record = fs.readFileSync(`${db}.lock`, 'utf8');
    } catch {
      // not held at this instant
    }
    if (record.includes(`pid=${pid}\n`)) {
      caught = true;
    } else {
      process.kill(pid, 'SIGCONT');
    }
  }
  assert.ok(caught, 'never stopped the holder while it held the lock');
  try {
    const lockBefore = fs.readFileSync(`${db}.lock`, 'utf8');
    const dbBefore = fileHash(db);
    const journalBefore = fileHash(`${db}-journal`);
    const statsBefore = JSON.parse(wasm.vfsStats());

    // In this process: opening needs the lock too, so it waits, then fails.
    for (const busyTimeoutMs of [0, 50, 300]) {
      const t0 = performance.now();
      await assert.rejects(LeaseStore.open(db, { busyTimeout: busyTimeoutMs / 1000 }), (e) => {
        assert.equal(e.code, 'storage', e.message);
        assert.match(e.message, /locked/);
        assert.equal(e.retryable, true, 'a lock held elsewhere is worth waiting out');
        return true;
      });
      const waited = performance.now() - t0;
      assert.ok(waited >= busyTimeoutMs * 0.8, `gave up after ${waited} ms, before its busy timeout ${busyTimeoutMs}`);
    }
    // In another process, through claim and complete.
    const other = await runNode(WORKER, ['check', db, 'probe', '200']);
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /locked/);
    assert.match(other.stderr, /code: 'storage'/);

    const statsAfter = JSON.parse(wasm.vfsStats());
    assert.equal(statsAfter.brokenStale, statsBefore.brokenStale, 'this process broke a live lock');
    assert.equal(fs.readFileSync(`${db}.lock`, 'utf8'), lockBefore, 'the live lock was replaced');
    assert.equal(fileHash(db), dbBefore, 'the database changed under a live lock');
    assert.equal(fileHash(`${db}-journal`), journalBefore, 'the journal changed under a live lock');
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await sleep(200);
  worker.child.kill('SIGTERM');
  const { code } = await worker.exited;
  await worker.closed;
  assert.equal(code, 0, worker.stderr);
  const end = jsonLines(worker.stdout).find((l) => l.stats);
  assert.ok(end, 'the holder did not report');
  assert.deepEqual(end.errors, [], 'the holder failed');
  assert.equal(end.stats.lost, 0, 'the holder lost its lock while it was stopped');
  assertIntegrity(db);
  // And afterwards the file works for everybody.
  const store = await LeaseStore.open(db, { busyTimeout: 1 });
  assert.equal(store.enqueue('after'), true);
  store.close();
});

test('a running writer and short busy timeouts: operations work or fail with storage "locked", nothing breaks', { timeout: 60_000 }, async () => {
  const db = path.join(dir, 'contended.db');
  const seed = await LeaseStore.open(db);
  for (let i = 0; i < 300; i++) seed.enqueue(`k${i}`);
  seed.close();

  const worker = startLoop(db, 'writer');
  await withTimeout(worker.ready, 15_000, 'the writer could not open the file');
  let ok = 0;
  let locked = 0;
  const mine = [];
  const statsBefore = JSON.parse(wasm.vfsStats());
  const end = Date.now() + 1500;
  let store = null;
  let now = Date.now() / 1000;
  while (Date.now() < end) {
    try {
      store ??= await LeaseStore.open(db, { busyTimeout: 0.002 });
      now = Math.max(now, Date.now() / 1000);
      const grant = store.claimNext('short', now, 0.05);
      if (grant) {
        mine.push(grant);
        store.complete(grant.job, 'short', grant.fence, now, 'short');
      }
      ok += 1;
    } catch (error) {
      assert.equal(error.code, 'storage', error.message);
      assert.match(error.message, /locked/);
      locked += 1;
    }
    await sleep(1);
  }
  store?.close();
  const statsAfter = JSON.parse(wasm.vfsStats());
  worker.child.kill('SIGTERM');
  const { code } = await worker.exited;
  await worker.closed;
  assert.equal(code, 0, worker.stderr);
  const lines = jsonLines(worker.stdout);
  const report = lines.find((l) => l.stats);
  assert.deepEqual(report.errors, []);
  assert.equal(report.stats.lost, 0, 'the writer lost its lock');
  assert.equal(statsAfter.brokenStale, statsBefore.brokenStale, 'a live lock was broken');
  assert.equal(statsAfter.lost, statsBefore.lost);
  console.log(`contended: ${ok} short-timeout operations worked, ${locked} failed with "locked"; the writer made ${lines.filter((l) => l.g).length} claims`);
  assert.ok(ok > 0, 'nothing ever got through');
  // No fence twice between the two processes.
  const keys = [...lines.filter((l) => l.g).map((l) => JSON.stringify(l.g)), ...mine.map((g) => JSON.stringify([g.job, g.fence]))];
  assert.equal(new Set(keys).size, keys.length, 'a (job, fence) was granted twice');
  assertIntegrity(db);
});

test(
  'a worker thread terminated mid-transaction: its exit handler frees the lock it left',
  {
    skip: WASM_ONLY,
    timeout: 60_000,
  },
  async () => {
    const { Worker } = await import('node:worker_threads');
    const db = path.join(dir, 'terminated.db');
    const seed = await LeaseStore.open(db);
    for (let i = 0; i < 100; i++) seed.enqueue(`t${i}`);
    seed.close();
    const code = `
      const { LeaseStore } = require(${JSON.stringify(PKG)});
      const { parentPort } = require('node:worker_threads');
      LeaseStore.open(${JSON.stringify(db)}).then((s) => {
        parentPort.postMessage('ready');
        for (let now = 0; ; now++) s.claimNext('thread', now, 1);
      });`;
    let left = false;
    for (let attempt = 0; attempt < 30 && !left; attempt++) {
      const worker = new Worker(code, { eval: true });
      await new Promise((resolve) => worker.once('message', resolve));
      await sleep(20 + Math.random() * 40);
      const { threadId } = worker; // -1 once the worker has exited
      await worker.terminate();
      left = fs.existsSync(`${db}.lock`);
      // The documented clean-up for terminate(): the lock names this live process, so only the
      // parent can tell that its thread is gone.
      const freed = await LeaseStore.releaseTerminatedWorkerLock(db, threadId);
      assert.equal(freed, left, 'a lock was left but not freed, or freed but never left');
      assert.equal(fs.existsSync(`${db}.lock`), false);
    }
    assert.ok(left, 'no terminate() hit a transaction');
    // The thread is gone; this process (and every other) must be able to use the file again.
    const store = await LeaseStore.open(db, { busyTimeout: 1 });
    try {
      assert.notEqual(store.claimNext('main', 1e9, 1), null);
    } finally {
      store.close();
    }
  },
);

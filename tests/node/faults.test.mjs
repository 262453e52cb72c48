// Power loss, I/O errors and a full disk on Node files, tested the way SQLite tests itself:
// power-loss-fs.cjs keeps only what was synced (files and directory entries) and fails the calls
// it is told to with Node's EIO or ENOSPC; faults-worker.cjs drives two workers and logs every
// acknowledged answer; this file reopens each file in a new process and checks it. Those run on the
// wasm engine (the one whose I/O goes through fs); the real full disk runs on both engines.
//
// FAULT_TRIALS=1000 node --test tests/node/faults.test.mjs   the long form (default: a short run;
// FAULT_SEED=N for other choices)
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { HERE, PKG, loadPackage, tempDir, assertIntegrity, killLiveChildren, withTimeout, onlyOn, engine } from './helpers.mjs';

const WASM_ONLY = onlyOn('wasm', "faults injected through Node's fs module, which only the wasm engine's VFS calls; the native engine's I/O is SQLite's own C, whose I/O errors and power losses the library's harness injects in Node processes on an addon built with its fault VFS (native-faults.test.mjs); its crashes are native-crash.test.mjs");

const { LeaseStore } = loadPackage();
after(killLiveChildren);

const TRIALS = process.env.FAULT_TRIALS ? Number(process.env.FAULT_TRIALS) : null;
/** FAULT_SEED=N varies the choices (the default is the same run every time). */
const SEED = Number(process.env.FAULT_SEED ?? 0);
const WORKER = path.join(HERE, 'faults-worker.cjs');
const MODEL = path.join(HERE, 'power-loss-fs.cjs');

/** A temp directory on tmpfs when there is one: the model decides what survives, so the real
 * disk's fsyncs would only slow the trials down. */
function scratchDir(prefix) {
  if (!fs.existsSync('/dev/shm')) return tempDir(prefix);
  const dir = fs.mkdtempSync(path.join('/dev/shm', prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function runWorker(args, env) {
  const run = spawnSync(process.execPath, ['--require', MODEL, WORKER, ...args], {
    encoding: 'utf8',
    env: { ...process.env, LEASEFENCE_PKG: PKG, ...env },
    // The I/O trials run in one child: allow for long runs (FAULT_TRIALS) on a busy machine.
    timeout: 600_000 + (TRIALS ?? 0) * 5_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.ok(run.signal === 'SIGKILL' || run.status === 0, `worker failed: ${run.status} ${run.signal}\n${run.stderr.slice(-3000)}`);
  return run;
}

/** The acknowledged answers the store no longer reflects, and fences acknowledged twice. */
function lostAcks(store, acks) {
  const problems = [];
  const fences = new Set();
  for (const a of acks) {
    if (a.op === 'claim') {
      const key = `${a.job}\u0000${a.fence}`;
      if (fences.has(key)) problems.push(`fence ${a.fence} of ${a.job} was handed out twice`);
      fences.add(key);
    }
    const row = store.state(a.job);
    const kept =
      row !== null &&
      (a.op === 'enqueue' ||
        (a.op === 'claim' && row.fence >= a.fence) ||
        (a.op === 'renew' && (row.fence > a.fence || row.done || row.owner === null || row.until >= a.until)) ||
        (a.op === 'complete' && row.done && row.fence === a.fence && row.result === a.result) ||
        (a.op === 'release' && (row.fence > a.fence || row.owner === null)) ||
        (a.op === 'fail' &&
          (store.inspect(a.job)?.failures ?? []).some((f) => f.fence === a.fence && f.error === a.error) &&
          (row.fence > a.fence || (a.retryAt === null ? row.done && row.result === null : row.owner === null && !row.done && row.until === a.retryAt))));
    if (!kept) problems.push(`acknowledged ${JSON.stringify(a)}, the store has ${JSON.stringify(row)}`);
  }
  return problems;
}

test('I/O errors: every injected EIO or ENOSPC is a storage error that changed nothing, and the store works on', { skip: WASM_ONLY }, async () => {
  const dir = scratchDir('leasefence-faults-io-');
  const out = path.join(tempDir(), 'io.json');
  const trials = TRIALS ?? 8;
  runWorker(['io', dir, String(trials), String(12345 + SEED), out], { LEASEFENCE_PLFS_ROOT: dir });
  const { summary, files } = JSON.parse(fs.readFileSync(out, 'utf8'));
  let checked = 0;
  const lost = [];
  for (const { db, acks } of files) {
    const store = await withTimeout(LeaseStore.open(db, { busyTimeout: 5 }), 20_000, `open ${db}`);
    try {
      checked += acks.length;
      lost.push(...lostAcks(store, acks));
    } finally {
      store.close();
    }
    assertIntegrity(db);
  }
  console.log(`node I/O errors: ${summary.trials} trials, ${summary.steps} steps, failures injected ${JSON.stringify(summary.fired)}, ${summary.errors} storage errors (${summary.syncUnknownApplied} of them a failed sync whose call took effect), ${summary.absorbed} absorbed, ${checked} acknowledged answers checked, ${lost.length} lost`);
  console.log(`messages: ${JSON.stringify(summary.messages)}`);
  assert.ok(summary.errors > 0, 'no injected fault surfaced');
  assert.match(summary.messages.full ?? '', /disk holding the database is full.*free space/);
  assert.deepEqual(lost, []);
});

// Found by the I/O-error trials: the rollback journal's commit is the journal's deletion, and the
// directory sync after it can fail once the deletion is done. The claim then throws, yet is in
// effect. Pinned: the call is whole (owner and fence together), the message says its fate is
// unknown and to read the state back, and the store works on.
test('a claim whose sync fails is applied wholly or not at all, and the message says to read the state back', { skip: WASM_ONLY }, () => {
  const dir = scratchDir('leasefence-faults-sync-');
  const out = path.join(tempDir(), 'syncs.json');
  runWorker(['syncs', dir, out], { LEASEFENCE_PLFS_ROOT: dir });
  const seen = JSON.parse(fs.readFileSync(out, 'utf8'));
  let appliedDespiteError = 0;
  for (const { nth, fired, answer, error, row, next } of seen) {
    assert.equal(next, true, `sync ${nth}: the store did not work on`);
    if (!fired) continue;
    if (!error) {
      assert.equal(answer, 1, `sync ${nth}: no error, so the claim must be granted`);
      continue;
    }
    assert.equal(error.code, 'storage', `sync ${nth}`);
    const whole = row.owner === 'w' && row.fence === 1 && row.until === 10;
    const none = row.owner === null && row.fence === 0;
    assert.ok(whole || none, `sync ${nth}: half-applied ${JSON.stringify(row)}`);
    if (whole) {
      // In effect despite the error: the message must not say "nothing changed".
      assert.match(error.message, /whether this call took effect is unknown.*read the job's state/, `sync ${nth}`);
      appliedDespiteError += 1;
    }
  }
  console.log(`a claim with a failing sync: ${JSON.stringify(seen.map(({ nth, fired, error, row }) => ({ nth, fired, failed: !!error, applied: row.fence === 1 })))}`);
  assert.ok(appliedDespiteError >= 1, 'no sync failure left the claim in effect: the case this test pins is gone (update the contract)');
});

test('a simulated power loss during claimNext, renew, complete, fail and release loses no acknowledged answer', { skip: WASM_ONLY }, async () => {
  const steps = 30;
  // A run without a cut tells how many sync calls a round makes.
  const countDir = scratchDir('leasefence-faults-count-');
  const whole = runWorker(['power', path.join(countDir, 'count.db'), '7', String(steps), '0'], { LEASEFENCE_PLFS_ROOT: countDir, LEASEFENCE_PLFS_CUT: '0', LEASEFENCE_PLFS_REPORT: '1' });
  const syncs = Number(/plfs-syncs (\d+)/.exec(whole.stderr)?.[1] ?? NaN);
  assert.ok(syncs > 20, `only ${syncs} syncs in a whole round`);
  const trials = TRIALS ?? 4;
  const rounds = 3;
  let cuts = 0;
  let checked = 0;
  const lost = [];
  let seed = 99 + SEED;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let t = 0; t < trials; t++) {
    const dir = scratchDir('leasefence-faults-power-');
    const db = path.join(dir, 'power.db');
    const acks = [];
    for (let round = 0; round < rounds; round++) {
      const cut = 1 + (next() % Math.ceil(syncs * 1.1));
      const run = runWorker(['power', db, String(next()), String(steps), String(round)], { LEASEFENCE_PLFS_ROOT: dir, LEASEFENCE_PLFS_CUT: String(cut) });
      if (run.signal === 'SIGKILL') cuts += 1;
      acks.push(...run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)));
      if (!fs.existsSync(db)) {
        assert.equal(acks.length, 0, `trial ${t}: the file is gone after ${acks.length} answers`);
        continue;
      }
      const store = await withTimeout(LeaseStore.open(db, { busyTimeout: 5 }), 20_000, `open after cut ${cut}`);
      try {
        checked += acks.length;
        lost.push(...lostAcks(store, acks).map((p) => `trial ${t} round ${round} cut ${cut} of ${syncs}: ${p}`));
      } finally {
        store.close();
      }
      assertIntegrity(db);
    }
  }
  console.log(`node power loss: ${trials} trials x ${rounds} rounds, ${cuts} cuts over ~${syncs} syncs a round, ${checked} acknowledged answers checked, ${lost.length} lost`);
  assert.ok(cuts > 0 && checked > 0);
  assert.deepEqual(lost.slice(0, 5), []);
});

/** A small tmpfs mounted for the test; null where mounting is not allowed (not root). */
function mountSmallDisk(kib) {
  const dir = tempDir('leasefence-full-');
  const run = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${kib}k`, 'tmpfs', dir], { encoding: 'utf8' });
  if (run.status !== 0) return null;
  process.on('exit', () => spawnSync('umount', ['-l', dir]));
  return { dir, unmount: () => spawnSync('umount', ['-l', dir]) };
}

// Not injected: a real disk fills, so it runs on both engines. The room to free later (what an
// operator deletes) is larger on the native engine: its WAL grows until a checkpoint (1,000 pages)
// before it reuses its space, so resuming needs that growth's room, as in crate/tests/faults.rs.
test('a real full disk (a 1 MiB tmpfs): storage errors naming the cause, no damage, work resumes once space is freed', async (t) => {
  const disk = mountSmallDisk(1024);
  if (!disk) {
    t.skip('cannot mount a tmpfs here (needs root)');
    return;
  }
  try {
    const db = path.join(disk.dir, 'queue.db');
    const ballast = path.join(disk.dir, 'ballast');
    fs.writeFileSync(ballast, Buffer.alloc((engine() === 'native' ? 512 : 256) * 1024));
    const store = await LeaseStore.open(db);
    const result = 'r'.repeat(3000);
    const acks = [];
    let failure = null;
    for (let k = 0; k < 10_000 && !failure; k++) {
      const job = `job-${k}`;
      const before = JSON.stringify(store.state(job));
      try {
        if (store.enqueue(job)) acks.push({ op: 'enqueue', job });
        const fence = store.claim(job, 'w', k, 10);
        acks.push({ op: 'claim', job, fence });
        assert.equal(store.complete(job, 'w', fence, k, result), true);
        acks.push({ op: 'complete', job, fence, result });
      } catch (error) {
        failure = { job, k, error, before };
      }
    }
    assert.ok(failure, 'the disk never filled');
    const { job, k, error } = failure;
    console.log(`node: the disk filled after ${k} jobs: ${error.message}`);
    assert.equal(error.code, 'storage');
    assert.match(error.message, /database or disk is full/);
    assert.match(error.message, /disk holding the database is full.*free space/);
    assert.deepEqual(lostAcks(store, acks), []);
    // Still full: another write fails the same way.
    assert.throws(() => {
      for (let i = 0; i < 50; i++) store.enqueue(`filler-${i}-${'x'.repeat(4000)}`);
    }, (e) => e.code === 'storage' && /full/.test(e.message));
    fs.rmSync(ballast);
    store.enqueue(job);
    const row = store.state(job);
    if (!row.done) {
      const fence = store.claim(job, 'w', 1e6, 10);
      assert.equal(store.complete(job, 'w', fence, 1e6, 'after'), true);
    }
    for (let i = 0; i < 5; i++) {
      const j = `after-${i}`;
      assert.equal(store.enqueue(j), true);
      const fence = store.claim(j, 'w', 2e6, 10);
      assert.equal(store.complete(j, 'w', fence, 2e6, 'ok'), true);
      acks.push({ op: 'complete', job: j, fence, result: 'ok' });
    }
    store.close();
    const again = await LeaseStore.open(db);
    try {
      assert.deepEqual(lostAcks(again, acks), []);
    } finally {
      again.close();
    }
    assertIntegrity(db);
  } finally {
    disk.unmount();
  }
});

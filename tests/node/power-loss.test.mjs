// Power loss on Node files (SPEC section 2: a fence is never handed out twice, "across restarts and
// crashes"). A SIGKILL loses nothing the process wrote; a power loss loses everything not yet
// synced, directory entries included. These tests check the two things that must hold then:
// every answer waits for the sync that makes its commit durable, and a lock left behind by the
// power loss does not block the next opener.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { HERE, PKG, loadPackage, tempDir, assertIntegrity, killLiveChildren, withTimeout, onlyOn } from './helpers.mjs';

const WASM_ONLY = onlyOn('wasm', "the wasm engine's rollback journal, fs-level power loss and <db>.lock records; the native engine's WAL is crash-tested in native-crash.test.mjs and power-loss-tested by the library's own harness in Node processes on the addon (native-faults.test.mjs)");

const { LeaseStore } = loadPackage();
after(killLiveChildren);

const hasStrace = !spawnSync('strace', ['-V']).error;

test('every answer comes after the syncs that make its commit durable (strace)', { skip: WASM_ONLY || (hasStrace ? false : 'strace is not installed') }, () => {
  const dir = tempDir();
  const db = path.join(dir, 'order.db');
  const script = `
    const fs = require('node:fs');
    const { LeaseStore } = require(${JSON.stringify(PKG)});
    LeaseStore.open(${JSON.stringify(db)}).then((s) => {
      for (let i = 0; i < 4; i++) {
        s.enqueue('j' + i); fs.writeSync(1, 'ANSWER\\n');
        const fence = s.claim('j' + i, 'A', 0, 10); fs.writeSync(1, 'ANSWER\\n');
        if (!s.complete('j' + i, 'A', fence, 1, 'r')) process.exit(3);
        fs.writeSync(1, 'ANSWER\\n');
      }
      s.close();
    });`;
  const trace = path.join(dir, 'strace.log');
  const calls = 'trace=fsync,fdatasync,unlink,unlinkat,write,pwrite64,pwritev,openat';
  const run = spawnSync('strace', ['-f', '-y', '-e', calls, '-o', trace, process.execPath, '-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr.slice(-2000));
  const journal = `${db}-journal`;
  // What an answer must wait for: the database and journal bytes written, and the directory entries
  // changed (the journal created or unlinked), each made durable by a sync of that file. The lock
  // record needs none (see crate/src/dot_lock).
  const unsynced = new Set();
  let journalExists = false;
  let commits = 0; // the journal unlinked (DELETE) or its header zeroed (PERSIST)
  let answers = 0;
  for (const line of fs.readFileSync(trace, 'utf8').split('\n')) {
    if (/= -1/.test(line)) continue;
    const target = /^\d+\s+(\w+)\((?:\d+<([^>]*)>|AT_FDCWD(?:<[^>]*>)?, "([^"]*)"|"([^"]*)")/.exec(line);
    if (!target) continue;
    const [, call, fdPath, atPath, plainPath] = target;
    const file = fdPath ?? atPath ?? plainPath;
    if (/^unlink/.test(call) && file === journal) {
      unsynced.add(dir);
      journalExists = false;
      commits += 1;
    } else if (call === 'openat' && file === journal && /O_CREAT/.test(line) && !journalExists) {
      unsynced.add(dir);
      journalExists = true;
    } else if (/^pwrite/.test(call) && (file === db || file === journal)) {
      unsynced.add(file);
      if (file === journal && /^\d+\s+pwrite64\(\d+<[^>]*>, "(\\0)+", \d+, 0\)/.test(line)) commits += 1;
    } else if (/^f(data)?sync$/.test(call)) {
      unsynced.delete(file);
    } else if (call === 'write' && /write\(1</.test(line) && line.includes('ANSWER')) {
      answers += 1;
      assert.deepEqual([...unsynced], [], `answer ${answers} was written before these were synced:\n${line}`);
    }
  }
  assert.equal(answers, 12);
  assert.ok(commits >= 12, `only ${commits} journal commits seen (one per enqueue, claim and complete)`);
});

/**
 * Runs the worker under the power-loss model, cut at the `cut`-th sync; returns its
 * acknowledgements. `exclusive`: the worker opens its store with `{exclusive: true}`.
 */
function runUntilPowerLoss(db, cut, rounds, mode = 'single', exclusive = false) {
  const run = spawnSync(process.execPath, ['--require', path.join(HERE, 'power-loss-fs.cjs'), path.join(HERE, 'power-loss-worker.cjs'), db, String(rounds), mode], {
    encoding: 'utf8',
    env: {
      ...process.env, LEASEFENCE_PKG: PKG, LEASEFENCE_EXCLUSIVE: exclusive ? '1' : '0',
      LEASEFENCE_PLFS_ROOT: path.dirname(db), LEASEFENCE_PLFS_CUT: String(cut), LEASEFENCE_PLFS_REPORT: '1',
    },
    timeout: 60_000,
  });
  assert.ok(run.signal === 'SIGKILL' || run.status === 0, `worker failed: ${run.status} ${run.signal} ${run.stderr.slice(-2000)}`);
  const acks = run.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const syncs = Number(/plfs-syncs (\d+)/.exec(run.stderr)?.[1] ?? NaN);
  return { acks, cutHappened: run.signal === 'SIGKILL', syncs };
}

// The default mode, and the exclusive mode (WAL, one process owns the file: exclusive.test.mjs).
for (const exclusive of [false, true]) {
  test(`${exclusive ? 'exclusive: ' : ''}a simulated power loss at any sync loses no acknowledged claim or completion`, { skip: WASM_ONLY }, async () => {
    const rounds = 4;
    // A run without a cut tells how many sync calls there are to cut at.
    const whole = runUntilPowerLoss(path.join(tempDir(), 'count.db'), 0, rounds, 'single', exclusive);
    assert.equal(whole.cutHappened, false);
    assert.ok(whole.syncs > 20, `only ${whole.syncs} syncs in a whole run`);
    let lost = 0;
    let checked = 0;
    let locksLeft = 0;
    const losses = [];
    const trials = Number(process.env.LEASEFENCE_POWER_LOSS_TRIALS ?? whole.syncs);
    for (let t = 0; t < trials; t++) {
      // Every sync point once (then at random when more trials are asked for).
      const cut = t < whole.syncs ? t + 1 : 1 + Math.floor(Math.random() * whole.syncs);
      const dir = tempDir();
      const db = path.join(dir, 'power.db');
      const { acks, cutHappened } = runUntilPowerLoss(db, cut, rounds, 'single', exclusive);
      assert.equal(cutHappened, true, `cut ${cut} of ${whole.syncs} did not happen`);
      if (!fs.existsSync(db)) {
        assert.equal(acks.length, 0, `cut ${cut}: the file is gone, but ${acks.length} answers were given`);
        continue;
      }
      if (fs.existsSync(`${db}.lock`)) locksLeft += 1;
      // The next opener: recovers the journal and the lock by itself, within its busy timeout.
      const store = await withTimeout(LeaseStore.open(db, { busyTimeout: 5 }), 20_000, `open after cut ${cut}`);
      try {
        for (const a of acks) {
          const row = store.state(a.job);
          checked += 1;
          const ok =
            row !== null &&
            (a.op === 'enqueue' ||
              (a.op === 'claim' && row.fence >= a.fence) ||
              (a.op === 'complete' && row.done && row.fence === a.fence && row.result === a.result));
          if (!ok) {
            lost += 1;
            if (losses.length < 5) losses.push(`cut ${cut} of ${whole.syncs}: acknowledged ${JSON.stringify(a)} but the store has ${JSON.stringify(row)}`);
          }
        }
        // The store works on: a new claim gets a fence above every one handed out before.
        assert.equal(store.enqueue('after'), true);
        assert.equal(store.claim('after', 'C', 100, 1), 1);
      } finally {
        store.close();
      }
      assertIntegrity(db);
    }
    console.log(`${exclusive ? 'exclusive ' : ''}power loss: ${trials} trials over ${whole.syncs} sync points, ${checked} acknowledged answers checked, ${lost} lost, ${locksLeft} locks left behind and recovered`);
    assert.equal(lost, 0, `${lost} acknowledged answers lost, for example:\n${losses.join('\n')}`);
    assert.ok(checked > trials, `only ${checked} answers checked over ${trials} trials`);
  });
}

/** A file with one claimable job, made by a store that has since closed. */
test('a power loss in the middle of a group: acknowledged answers kept, and each group wholly applied or not at all', { skip: WASM_ONLY }, async () => {
  const rounds = 4;
  const whole = runUntilPowerLoss(path.join(tempDir(), 'count-grouped.db'), 0, rounds, 'grouped');
  assert.equal(whole.cutHappened, false);
  assert.equal(whole.acks.filter((a) => a.op === 'complete').length, 3 * rounds, 'every group completed without a cut');
  let checked = 0;
  const problems = [];
  for (let cut = 1; cut <= whole.syncs; cut++) {
    const db = path.join(tempDir(), 'grouped.db');
    const { acks, cutHappened } = runUntilPowerLoss(db, cut, rounds, 'grouped');
    assert.equal(cutHappened, true, `cut ${cut} of ${whole.syncs} did not happen`);
    if (!fs.existsSync(db)) {
      assert.equal(acks.length, 0, `cut ${cut}: the file is gone, but ${acks.length} answers were given`);
      continue;
    }
    const store = await withTimeout(LeaseStore.open(db, { busyTimeout: 5 }), 20_000, `open after cut ${cut}`);
    try {
      for (const a of acks) {
        const row = store.state(a.job);
        checked += 1;
        const ok = row !== null && (a.op === 'enqueue' || (a.op === 'claim' && row.fence >= a.fence) ||
          (a.op === 'complete' && row.done && row.fence === a.fence && row.result === a.result));
        if (!ok) problems.push(`cut ${cut}: acknowledged ${JSON.stringify(a)} but the store has ${JSON.stringify(row)}`);
      }
      // Nothing unacknowledged half-applied: the three enqueues, claims and completions of a round
      // were one group each, so the store holds all three of a round's effects or none.
      for (let round = 0; round < rounds; round++) {
        const rows = ['a', 'b', 'c'].map((x) => store.state(`g${round}${x}`));
        const count = (f) => rows.filter(f).length;
        for (const [what, n] of [['enqueued', count((r) => r !== null)], ['claimed', count((r) => r?.fence === 1)], ['done', count((r) => r?.done)]]) {
          if (n !== 0 && n !== 3) problems.push(`cut ${cut}: round ${round} has ${n} of 3 ${what}: ${JSON.stringify(rows)}`);
        }
      }
    } finally {
      store.close();
    }
    assertIntegrity(db);
  }
  console.log(`power loss in groups: ${whole.syncs} cuts, ${checked} acknowledged answers checked, ${problems.length} problems`);
  assert.deepEqual(problems.slice(0, 5), []);
  assert.ok(checked > whole.syncs / 2, `only ${checked} answers checked over ${whole.syncs} cuts`);
});

async function fileWithJob() {
  const db = path.join(tempDir(), 'lock.db');
  const store = await LeaseStore.open(db);
  store.enqueue('j');
  store.close();
  return db;
}

async function claimsWithin(db, ms) {
  const store = await LeaseStore.open(db, { busyTimeout: ms / 1000 });
  try {
    return store.claim('j', 'W', 0, 10);
  } finally {
    store.close();
  }
}

/** An owner record as the package writes it (`boot` null: as versions before the boot id did). */
const RECORD = (pid, boot) =>
  `leasefence-dotlock v1\npid=${pid}\nstart=-\nhost=${os.hostname()}\nthread=0\n${boot ? `boot=${boot}\n` : ''}nonce=${pid}-00000000000000ab-1\n`;

for (const [what, content] of [
  ['an empty lock file', ''],
  ['a lock file full of NUL bytes', '\0'.repeat(512)],
  ['a torn record (cut inside its nonce line)', 'leasefence-dotlock v1\npid=1\nstart=-\nhost=x\nthread=0\nnonce=1-00'],
  ['a record written under another boot (its pid is alive now)', RECORD(process.pid, '00000000-0000-0000-0000-000000000000')],
]) {
  test(`${what} left by a power loss is recovered by the next opener, without unlock`, { skip: WASM_ONLY }, async () => {
    const db = await fileWithJob();
    fs.writeFileSync(`${db}.lock`, content);
    assert.equal(await claimsWithin(db, 5_000), 1);
    assert.equal(fs.existsSync(`${db}.lock`), false);
    assertIntegrity(db);
  });
}

test('a lock file or a native lock directory last changed before this boot is recovered', { skip: WASM_ONLY }, async () => {
  for (const make of [
    (lock) => fs.writeFileSync(lock, RECORD(process.pid, null)), // an earlier version's record, no boot id
    (lock) => fs.mkdirSync(lock), // native SQLite's unix-dotfile lock
  ]) {
    const db = await fileWithJob();
    const lock = `${db}.lock`;
    make(lock);
    fs.utimesSync(lock, new Date('2000-01-01T00:00:00Z'), new Date('2000-01-01T00:00:00Z')); // what touch -d sets
    assert.equal(await claimsWithin(db, 5_000), 1);
    assert.equal(fs.existsSync(lock), false);
  }
});

test('a live lock is never broken: this boot\'s record of a live process, a native directory made since the boot', { skip: WASM_ONLY }, async () => {
  const bootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  for (const make of [
    (lock) => fs.writeFileSync(lock, RECORD(process.pid, bootId)),
    (lock) => fs.mkdirSync(lock),
  ]) {
    const db = await fileWithJob();
    const lock = `${db}.lock`;
    make(lock);
    await assert.rejects(claimsWithin(db, 300), /locked/);
    assert.equal(fs.existsSync(lock), true, 'the live lock was removed');
    fs.rmSync(lock, { recursive: true });
  }
});

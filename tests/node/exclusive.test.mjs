// `LeaseStore.open(path, {exclusive: true})`: one process owns the file, in WAL mode with the WAL
// index in heap memory (locking_mode = EXCLUSIVE), one sync per commit. Real files, real
// processes: the syncs per commit against the default mode's; a second Node process and the native
// CLI refused at once with an error that names the reason and changes nothing; an owner SIGKILLed
// mid-run leaves a WAL that the next opener (exclusive, not, or native) recovers with every
// acknowledged job and nothing half-applied; close puts the file back in the rollback journal. The
// simulated power loss at every sync point of an exclusive run is power-loss.test.mjs's trial,
// run for this mode too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import test, { after } from 'node:test';

import {
  HERE, PKG, assertIntegrity, fileHash, jsonLines, killLiveChildren, loadPackage, loadWasm, nativeCli, onlyOn, runNode, spawnTracked, tempDir, withTimeout,
} from './helpers.mjs';

const WASM_ONLY = onlyOn('wasm', "`exclusive` is the wasm engine's mode (one process owning a WAL file); the native engine shares WAL files without it and refuses the option (native-engine.test.mjs)");

after(killLiveChildren);

const { LeaseStore, JobWorker } = loadPackage();
const wasm = loadWasm();
const CHILD = path.join(HERE, 'exclusive-child.mjs');
const syncs = () => JSON.parse(wasm.vfsStats()).syncs;

/** Bytes 18 and 19 of the header: 1 for a rollback journal, 2 for WAL. */
function headerVersions(db) {
  const fd = fs.openSync(db, 'r');
  try {
    const header = Buffer.alloc(100);
    fs.readSync(fd, header, 0, 100, 0);
    return [header[18], header[19]];
  } finally {
    fs.closeSync(fd);
  }
}

/** Syncs per commit of `commits` single enqueues on a new file opened with `options`. */
async function syncsPerCommit(db, options, commits = 40) {
  const store = await LeaseStore.open(db, options);
  try {
    store.enqueue('warm-up'); // the first commit of a file may create its journal or WAL
    const before = syncs();
    for (let i = 0; i < commits; i++) assert.equal(store.enqueue(`j${i}`), true);
    return (syncs() - before) / commits;
  } finally {
    store.close();
  }
}

test('exclusive: about one sync per commit, fewer than the default mode, and every commit durable', { skip: WASM_ONLY }, async () => {
  const dir = tempDir();
  const usual = await syncsPerCommit(path.join(dir, 'default.db'), {});
  const exclusive = await syncsPerCommit(path.join(dir, 'exclusive.db'), { exclusive: true });
  console.log(`syncs per commit: default ${usual.toFixed(2)}, exclusive ${exclusive.toFixed(2)}`);
  assert.ok(usual >= 3, `the default mode syncs ${usual} times per commit (4 expected)`);
  assert.ok(exclusive <= 1.25, `exclusive mode syncs ${exclusive} times per commit (1 expected)`);
  assert.ok(exclusive < usual);

  // Closed: back in the rollback journal, WAL checkpointed and gone, every job in the main file.
  const db = path.join(dir, 'exclusive.db');
  assert.deepEqual(headerVersions(db), [1, 1]);
  assert.equal(fs.existsSync(`${db}-wal`), false, 'close leaves no WAL');
  const info = assertIntegrity(db);
  assert.equal(info.rows.length, 41);
  assert.equal(info.application_id, 0x4c464e44, 'still marked as shared with Node');
});

test('while the owner has it open: the file is in WAL mode and a second store in this process is refused at once', { skip: WASM_ONLY }, async () => {
  const db = path.join(tempDir(), 'q.db');
  const owner = await LeaseStore.open(db, { exclusive: true });
  try {
    owner.enqueue('a');
    assert.deepEqual(headerVersions(db), [2, 2]);
    assert.ok(fs.existsSync(`${db}-wal`));
    assert.equal(fs.existsSync(`${db}-shm`), false, 'no shared memory file: the WAL index is in heap memory');
    for (const exclusive of [false, true]) {
      const started = performance.now();
      await assert.rejects(LeaseStore.open(db, { exclusive, busyTimeout: 10 }), (e) => {
        assert.equal(e.code, 'storage');
        assert.match(e.message, new RegExp(`process ${process.pid} .*exclusive mode`));
        assert.match(e.message, /Close that store/);
        assert.match(e.message, /without `exclusive`/);
        return true;
      });
      assert.ok(performance.now() - started < 2_000, 'refused without waiting for the busy timeout');
    }
    assert.equal(owner.enqueue('b'), true, 'the owner is undisturbed');
  } finally {
    owner.close();
  }
  const again = await LeaseStore.open(db);
  try {
    assert.deepEqual([again.state('a') !== null, again.state('b') !== null], [true, true]);
  } finally {
    again.close();
  }
});

test('option checks: exclusive must be a boolean; claimMany and heartbeat: thread are refused on an exclusive store', { skip: WASM_ONLY }, async () => {
  const db = path.join(tempDir(), 'q.db');
  await assert.rejects(LeaseStore.open(db, { exclusive: 'yes' }), (e) => e.code === 'invalid_argument' && /exclusive/.test(e.message));
  const store = await LeaseStore.open(db, { exclusive: true });
  try {
    store.enqueue('a');
    await assert.rejects(store.claimMany('a', ['x', 'y'], 1, 10), (e) => e.code === 'invalid_argument' && /exclusive/.test(e.message));
    assert.throws(() => new JobWorker(store, { ttl: 30, heartbeat: 'thread' }), (e) => e.code === 'invalid_argument' && /exclusive/.test(e.message));
    assert.equal(store.state('a').fence, 0, 'nothing was claimed');
  } finally {
    store.close();
  }
});

/** Starts an exclusive owner child; resolves once it reported `min` acknowledged batches. */
function startOwner(db, min) {
  const child = spawnTracked(process.execPath, [CHILD, 'owner', db], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEFENCE_PKG: PKG },
  });
  const acks = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  const reached = new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      acks.push(JSON.parse(line));
      if (acks.filter((a) => a.batch !== undefined).length === min) resolve();
    });
    exited.then(({ code, signal }) => reject(new Error(`owner exited early (${code} ${signal}): ${stderr}`)));
  });
  return { child, acks, reached: withTimeout(reached, 60_000, 'exclusive owner'), exited };
}

/** Every acknowledged batch whole, each done job done with its result, no batch half there. */
function checkAcks(rows, acks, what) {
  const byId = new Map(rows.map((r) => [r.id ?? r.job, r]));
  for (const a of acks) {
    if (a.batch !== undefined) {
      for (const job of a.jobs) assert.ok(byId.has(job), `${what}: acknowledged job ${job} lost`);
    } else if (a.done) {
      const [job, fence, result] = a.done;
      const row = byId.get(job);
      assert.ok(row && row.fence === fence && row.result === result, `${what}: acknowledged completion of ${job} lost: ${JSON.stringify(row)}`);
    }
  }
  // Each enqueueMany is one transaction: its three jobs are all there or none is.
  const batches = new Map();
  for (const r of rows) {
    const m = /^b(\d+)-\d$/.exec(r.id ?? r.job);
    if (m) batches.set(m[1], (batches.get(m[1]) ?? 0) + 1);
  }
  for (const [n, count] of batches) assert.equal(count, 3, `${what}: batch ${n} half applied (${count} of 3 jobs)`);
}

test('another process, Node or native, is refused at once with the reason while the owner lives, and nothing changes', { skip: WASM_ONLY }, async () => {
  const db = path.join(tempDir(), 'q.db');
  const owner = startOwner(db, 5);
  await owner.reached;
  owner.child.kill('SIGSTOP'); // hold the files still while the others try
  try {
    const before = [fileHash(db), fileHash(`${db}-wal`), fileHash(`${db}.lock`)];
    for (const flag of ['0', '1']) {
      const run = await runNode(CHILD, ['open', db, flag, '10000']);
      const [answer] = jsonLines(run.stdout);
      assert.ok(answer?.error, `a Node opener (exclusive=${flag}) got in: ${run.stdout} ${run.stderr}`);
      assert.equal(answer.error.code, 'storage');
      assert.match(answer.error.message, new RegExp(`process ${owner.child.pid} on host .* exclusive mode`));
      assert.match(answer.error.message, /Close that store \(or stop that process\)/);
      assert.ok(answer.ms < 5_000, `refused after ${answer.ms} ms: it waited for the busy timeout`);
    }
    const started = performance.now();
    const cli = spawnSync(nativeCli(), ['--db', db, '--busy-timeout', '10', 'stats', '--now', '1'], { encoding: 'utf8' });
    const ms = performance.now() - started;
    const said = cli.stdout + cli.stderr;
    assert.equal(cli.status, 3, `the native CLI: ${said}`);
    assert.match(said, new RegExp(`process ${owner.child.pid} on host .* exclusive mode`));
    assert.ok(ms < 5_000, `the native CLI was refused after ${ms} ms`);
    assert.deepEqual([fileHash(db), fileHash(`${db}-wal`), fileHash(`${db}.lock`)], before, 'a refused opener changed the files');
  } finally {
    owner.child.kill('SIGCONT');
    owner.child.kill('SIGKILL');
    await owner.exited;
  }
});

for (const next of ['non-exclusive Node', 'exclusive Node', 'native CLI']) {
  test(`owner SIGKILLed mid-run: the ${next} opener recovers its WAL, with every acknowledged job and no batch half applied`, { skip: WASM_ONLY }, async () => {
    const db = path.join(tempDir(), 'q.db');
    const owner = startOwner(db, 30);
    await owner.reached;
    owner.child.kill('SIGKILL');
    await owner.exited;
    const acks = [...owner.acks];
    assert.deepEqual(headerVersions(db), [2, 2], 'the killed owner left the file in WAL mode');
    assert.ok(fs.existsSync(`${db}-wal`) && fs.statSync(`${db}-wal`).size > 0, 'the killed owner left its WAL');
    if (next === 'native CLI') {
      const cli = spawnSync(nativeCli(), ['--db', db, 'stats', '--now', '1'], { encoding: 'utf8' });
      assert.equal(cli.status, 0, `the native CLI after the kill: ${cli.stdout} ${cli.stderr}`);
    } else {
      const store = await withTimeout(LeaseStore.open(db, { exclusive: next === 'exclusive Node', busyTimeout: 5 }), 20_000, 'open after the kill');
      try {
        for (const a of acks) {
          for (const job of a.jobs ?? []) assert.notEqual(store.state(job), null, `acknowledged job ${job} lost`);
        }
        assert.equal(store.enqueue('after'), true, 'the store works on');
      } finally {
        store.close();
      }
    }
    // Recovered and put back in the rollback journal: Python reads it with POSIX locks, safely.
    assert.deepEqual(headerVersions(db), [1, 1]);
    assert.equal(fs.existsSync(`${db}-wal`), false);
    const info = assertIntegrity(db);
    checkAcks(info.rows, acks, next);
    console.log(`${next}: ${acks.length} acknowledged answers before the kill, all there; ${info.rows.length} rows`);
  });
}

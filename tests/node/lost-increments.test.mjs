// The lost-increment proof from Node (crate/tests/lost_increments.rs does it natively and on
// PostgreSQL): worker processes (counter-worker.mjs) take turns on the lease of one job, read a
// counter, sometimes stall past the lease (a sleep in the worker, and SIGSTOP/SIGCONT from here
// at any moment), write counter + 1 and release. Acknowledged writes minus the final counter are
// the lost increments: more than zero with the lease alone (the counter in a plain file), zero
// through a fenced write (the counter in the lease's database) and through FenceGuard (the
// counter in another SQLite file). Size: LEASEFENCE_LOST_INCREMENTS (default 400).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';

import { HERE, PKG, loadPackage } from './helpers.mjs';

const { LeaseStore, FenceGuard } = loadPackage();
const WORKERS = 4;
const TTL = 0.05;
const INCREMENTS = Number(process.env.LEASEFENCE_LOST_INCREMENTS ?? 400);

function scratch() {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  const dir = fs.mkdtempSync(path.join(base, 'leasefence-lost-'));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function prepare(dir) {
  const store = await LeaseStore.open(path.join(dir, 'leases.db'));
  store.enqueue('counter');
  // The counter of the fenced variant lives in the lease's database: made by a fenced write.
  const fence = store.claim('counter', 'setup', Date.now() / 1000, 60);
  assert.ok(store.fenced('counter', 'setup', fence, Date.now() / 1000, [
    { sql: 'CREATE TABLE counter(n INTEGER NOT NULL)' },
    { sql: 'INSERT INTO counter VALUES (0)' },
  ]));
  assert.ok(store.release('counter', 'setup', fence));
  store.close();
  const guard = await FenceGuard.open(path.join(dir, 'counter.db'));
  assert.ok(guard.write('setup', 0, [
    { sql: 'CREATE TABLE counter(n INTEGER NOT NULL)' },
    { sql: 'INSERT INTO counter VALUES (0)' },
  ]).accepted);
  guard.close();
  fs.writeFileSync(path.join(dir, 'counter.json'), JSON.stringify({ n: 0 }));
}

async function finalCounter(dir, variant) {
  if (variant === 'unfenced') return JSON.parse(fs.readFileSync(path.join(dir, 'counter.json'), 'utf8')).n;
  if (variant === 'guard') {
    const guard = await FenceGuard.open(path.join(dir, 'counter.db'));
    // Its own key, so the read is accepted whatever fences the workers wrote with.
    const { rows } = guard.write('final', 0, [{ sql: 'SELECT n FROM counter' }]);
    guard.close();
    return rows[0].n;
  }
  const store = await LeaseStore.open(path.join(dir, 'leases.db'));
  const fence = store.claim('counter', 'final', Date.now() / 1000 + 10, 60);
  let n;
  store.fenced('counter', 'final', fence, Date.now() / 1000 + 10, (tx) => {
    n = tx.get('SELECT n FROM counter').n;
  });
  store.close();
  return n;
}

async function run(variant, increments) {
  const dir = scratch();
  await prepare(dir);
  const started = Date.now();
  const deadline = Date.now() / 1000 + 100;
  const children = Array.from({ length: WORKERS }, (_, i) => {
    const spec = {
      variant, dir, me: `w${i}`, target: Math.ceil(increments / WORKERS),
      seed: (0x9e3779b9 ^ (i * 7919) ^ process.pid) >>> 0, deadline, ttl: TTL, pkg: PKG,
    };
    const child = spawn(process.execPath, [path.join(HERE, 'counter-worker.mjs'), JSON.stringify(spec)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    child.output = '';
    child.stdout.on('data', (chunk) => { child.output += chunk; });
    child.done = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
    child.finished = false;
    child.done.then(() => { child.finished = true; });
    return child;
  });
  let signalStalls = 0;
  let pick = process.pid;
  const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  while (children.some((c) => !c.finished)) {
    await wait(TTL * 3000);
    pick = (pick * 1103515245 + 12345) >>> 0;
    const child = children[(pick >>> 8) % WORKERS];
    if (child.finished) continue;
    child.kill('SIGSTOP');
    await wait(TTL * 1000 * (2 + (pick % 3)));
    child.kill('SIGCONT');
    signalStalls += 1;
  }
  let acked = 0;
  let workerStalls = 0;
  for (const child of children) {
    assert.equal(await child.done, 0, `a worker failed: ${child.output}`);
    const m = /ACKED (\d+) STALLS (\d+)/.exec(child.output);
    assert.ok(m, `no ACKED line in ${JSON.stringify(child.output)}`);
    acked += Number(m[1]);
    workerStalls += Number(m[2]);
  }
  const counter = await finalCounter(dir, variant);
  const result = { variant, acked, counter, lost: acked - counter, workerStalls, signalStalls, seconds: (Date.now() - started) / 1000 };
  process.stderr.write(`lost increments, ${variant} (node): ${result.lost} lost of ${acked} acknowledged, ` +
    `${workerStalls} worker stalls, ${signalStalls} SIGSTOP stalls, ${result.seconds.toFixed(1)} s\n`);
  return result;
}

test('the lease alone loses increments when workers stall (the test can see the failure)', async () => {
  const result = await run('unfenced', 300);
  assert.ok(result.lost > 0, JSON.stringify(result));
});

test('fenced writes lose no increment', async () => {
  const result = await run('fenced', INCREMENTS);
  assert.equal(result.lost, 0, JSON.stringify(result));
  assert.ok(result.acked >= INCREMENTS, JSON.stringify(result));
});

test('FenceGuard loses no increment', async () => {
  const result = await run('guard', INCREMENTS);
  assert.equal(result.lost, 0, JSON.stringify(result));
  assert.ok(result.acked >= INCREMENTS, JSON.stringify(result));
});

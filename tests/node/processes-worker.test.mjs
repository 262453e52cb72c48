// bench/node/processes-worker.mjs is the npm package's worker process in the `processes` section
// of `npm run bench` (bench/native/src/processes.rs spawns W of them on one file and releases them
// together). Its answer is what the section's jobs/s, latencies and busy retries are made of, so
// its protocol and counts are checked here with real processes on a real file.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { holdWriteLock, loadPackage, ROOT, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const script = path.join(ROOT, 'bench/node/processes-worker.mjs');

async function seeded(jobs) {
  const db = path.join(tempDir('processes-worker-'), 'q.db');
  const store = await LeaseStore.open(db);
  store.enqueueMany(Array.from({ length: jobs }, (_, i) => ({ job: `job-${i}` })));
  store.close();
  return db;
}

/** Starts a worker process; `ready` resolves at its first line, `answer` at its second. */
function worker(db, owner, args = []) {
  const child = spawn(process.execPath, [script, '--db', db, '--owner', owner, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const ready = lines.next().then(({ value }) => value);
  return {
    ready,
    go: () => child.stdin.write('go\n'),
    answer: ready.then(() => lines.next()).then(({ value }) => JSON.parse(value)),
    exited,
  };
}

test('workers released together drain the file: every job completed once, one latency per job', async () => {
  const jobs = 40;
  const db = await seeded(jobs);
  const workers = [worker(db, 'w0'), worker(db, 'w1'), worker(db, 'w2')];
  assert.deepEqual(await Promise.all(workers.map((w) => w.ready)), ['ready', 'ready', 'ready']);
  for (const w of workers) w.go();
  const answers = await Promise.all(workers.map((w) => w.answer));
  assert.deepEqual(await Promise.all(workers.map((w) => w.exited)), [0, 0, 0]);

  assert.equal(answers.reduce((n, a) => n + a.latencies_ms.length, 0), jobs);
  for (const a of answers) {
    assert.ok(a.end_s > 0, `end_s ${a.end_s}`);
    assert.ok(a.latencies_ms.every((ms) => ms > 0 && ms / 1000 <= a.end_s), 'each cycle fits in its worker\'s run');
    assert.equal(a.errors, 0);
  }
  const store = await LeaseStore.open(db);
  assert.equal(store.stats(2000).done, jobs);
  const owners = new Set();
  for (let i = 0; i < jobs; i++) {
    const state = store.state(`job-${i}`);
    assert.equal(state.result, 'ok');
    assert.equal(state.fence, 1, `job-${i} claimed once`);
    owners.add(state.owner);
  }
  store.close();
  assert.ok(owners.size >= 1 && [...owners].every((o) => /^w[012]$/.test(o)));
});

test('a busy file is retried and counted, and the jobs still end done', async () => {
  const jobs = 5;
  const db = await seeded(jobs);
  const w = worker(db, 'w0', ['--busy-timeout-ms', '20']);
  assert.equal(await w.ready, 'ready');
  // Another process holds the write lock (each engine's kind of holder): nobody gets in meanwhile.
  const lock = await holdWriteLock(db);
  w.go();
  await new Promise((resolve) => setTimeout(resolve, 400));
  await lock.release();
  const answer = await w.answer;
  assert.equal(await w.exited, 0);
  assert.ok(answer.errors >= 2, `busy errors counted: ${answer.errors}`);
  assert.equal(answer.latencies_ms.length, jobs);
  const store = await LeaseStore.open(db);
  assert.equal(store.stats(2000).done, jobs);
  store.close();
});

// Waking instead of polling in Node (docs/contract.md section 11): JobWorkers idle in their own
// processes with a 10 s poll; a job enqueued by this process starts well within it, because the
// store's `watch` (fs.watch on the file's directory) wakes them, and the idle workers spend no CPU
// meanwhile (/proc/PID/stat). Real processes, a real file. The 50 ms p99 is measured by
// bench/node/waking.mjs, not asserted here.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import test, { after } from 'node:test';

import { HERE, PKG, killLiveChildren, loadPackage, spawnTracked, tempDir, withTimeout } from './helpers.mjs';

after(killLiveChildren);

const { LeaseStore, JobWorker } = loadPackage();
const CHILD = path.join(HERE, 'waking-child.mjs');

/** user + system CPU of a process so far, in clock ticks (fields 14 and 15 of /proc/PID/stat). */
function cpuTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[11]) + Number(rest[12]);
}

/** Starts an idle worker process; resolves once it printed {ready}; `lines` gets every line after. */
function idleWorker(db, owner, { idle = 10, wake = true } = {}) {
  const child = spawnTracked(process.execPath, [CHILD, db, owner, String(idle), String(wake)], {
    env: { ...process.env, LEASEFENCE_PKG: PKG },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = [];
  let onLine = () => {};
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(JSON.parse(line));
    onLine();
  });
  const ready = new Promise((resolve) => {
    onLine = () => lines.some((l) => l.ready) && resolve();
  });
  return { child, lines, ready: withTimeout(ready, 20_000, `${owner} ready`) };
}

async function doneWithin(store, job, ms) {
  const start = Date.now();
  for (;;) {
    if (store.state(job)?.done) return (Date.now() - start) / 1000;
    if (Date.now() - start > ms) return Infinity;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

test('idle JobWorkers in other processes are woken by an enqueue, long before their poll, and idle on no CPU', async () => {
  const dir = tempDir();
  const db = path.join(dir, 'q.db');
  const store = await LeaseStore.open(db);
  const workers = [0, 1, 2, 3].map((n) => idleWorker(db, `idle-${n}`));
  await Promise.all(workers.map((w) => w.ready));
  await new Promise((resolve) => setTimeout(resolve, 200));

  store.enqueue('now');
  const took = await doneWithin(store, 'now', 12_000);
  assert.ok(took < 2, `done after ${took} s: the idle workers were not woken (they poll every 10 s)`);
  // Idle again: their own commits (the claim and completion above wrote the file) do not keep
  // waking them.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const before = workers.reduce((sum, w) => sum + cpuTicks(w.child.pid), 0);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const used = workers.reduce((sum, w) => sum + cpuTicks(w.child.pid), 0) - before;
  assert.ok(used <= 4, `4 idle workers used ${used} clock ticks in 2 s`);

  await Promise.all(workers.map((w) => new Promise((resolve) => {
    w.child.on('exit', resolve);
    w.child.kill('SIGTERM');
  })));
  const started = workers.flatMap((w) => w.lines).filter((l) => l.started === 'now');
  assert.equal(started.length, 1, 'one worker handled the job');
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

test('an idle JobWorker sleeps until the next job falls due and until the next schedule slot, not until its poll', async () => {
  const dir = tempDir();
  const db = path.join(dir, 'q.db');
  const store = await LeaseStore.open(db);
  // The worker's clock starts 1.5 s before a minute: the slot of the minute begun is due at its
  // first tick, the next one 1.5 s later. Its poll is a minute: only nextDue can start the
  // delayed job and the second slot's job within the limits below.
  const offset = 58.5 - ((Date.now() / 1000) % 60);
  const clock = () => Date.now() / 1000 + offset;
  store.enqueue('delayed', clock() + 1);
  store.schedule('minutely', '* * * * *');
  const ran = [];
  const worker = new JobWorker(store, { owner: 'rester', ttl: 30, idle: 60, clock });
  const running = worker.run(async (job) => {
    ran.push({ job, at: clock() });
    return 'ok';
  });
  const start = clock();
  const slots = () => ran.filter((r) => r.job.startsWith('minutely@'));
  while (clock() - start < 10 && (slots().length < 2 || !ran.some((r) => r.job === 'delayed'))) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await worker.stop();
  await running;
  const delayed = ran.find((r) => r.job === 'delayed');
  assert.ok(delayed, `the delayed job did not run within 10 s: ${JSON.stringify(ran)}`);
  assert.ok(delayed.at - start < 3, `the delayed job ran ${delayed.at - start} s after the start`);
  assert.equal(slots().length, 2, `two slots within 10 s: ${JSON.stringify(ran)}`);
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

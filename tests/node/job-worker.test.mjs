// The worker runtime (JobWorker, docs/contract.md section 9) on real files, real timers and real
// processes: the heartbeat, the lost-lease signal (a paused process, a blocked event loop, a
// refused renew, a busy database), retries with backoff, dead jobs, poison jobs, revive, stop,
// and a handler's own writes committed with the completion (fencedResult).
// LEASEFENCE_LOST_ROUNDS sets the number of paused-worker rounds (default 20).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { HERE, PKG, loadPackage, tempDir, spawnTracked, killLiveChildren, jsonLines, runNode, sleep, withTimeout, holdWriteLock, sqliteWriteLockIsFree, engine } from './helpers.mjs';

const { LeaseStore, JobWorker, LeaseLostError, fixedBackoff, exponentialBackoff, fencedResult } = loadPackage();
const CHILD = path.join(HERE, 'job-worker-child.mjs');
const dir = tempDir('leasefence-jobworker-');
after(killLiveChildren);

let files = 0;
async function freshStore(options = { busyTimeout: 0.05 }) {
  const db = path.join(dir, `w${files++}.db`);
  return { db, store: await LeaseStore.open(db, options) };
}
const now = () => Date.now() / 1000;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('the heartbeat keeps the lease across a handler that runs several ttls; a rival cannot claim meanwhile', async () => {
  const { db, store } = await freshStore();
  store.enqueue('long', null, 'the payload');
  const rival = await LeaseStore.open(db, { busyTimeout: 0.05 });
  const ttl = 1;
  const worker = new JobWorker(store, { owner: 'a', ttl, idle: 0.05 });
  const refusals = [];
  let seen;
  // Recorded here and asserted after the run: an assert thrown in a handler only fails the job.
  let abortedAtEnd = null;
  const stats = await worker.run(
    async (job, context) => {
      seen = { job, payload: context.payload, fence: context.fence, attempt: context.attempt };
      const end = Date.now() + ttl * 3.2 * 1000;
      while (Date.now() < end) {
        await sleep(100);
        let answer;
        try {
          answer = rival.withReason.claim('long', 'rival', now(), ttl);
        } catch (error) {
          // Busy past the rival's short wait (a loaded machine: a renew was committing). No
          // answer either way; thrown here it would end the handler and fail the job.
          if (error.code === 'storage' && error.retryable) continue;
          throw error;
        }
        refusals.push(answer.reason?.code ?? `claimed ${answer.value}`);
      }
      abortedAtEnd = context.signal.aborted;
      return { answer: 42 };
    },
    { untilEmpty: true },
  );
  assert.equal(abortedAtEnd, false, 'signalled while the lease was renewed');
  assert.deepEqual(seen, { job: 'long', payload: 'the payload', fence: 1, attempt: 1 });
  assert.deepEqual([...new Set(refusals)], ['held'], 'the rival got the job while the handler ran');
  assert.ok(refusals.length >= 10, `the rival tried only ${refusals.length} times`);
  assert.ok(stats.renewals >= 6, `only ${stats.renewals} renewals in 3.2 ttls at ttl/3`);
  assert.equal(stats.leasesLost, 0);
  assert.equal(stats.completed, 1);
  const state = store.state('long');
  assert.equal(state.done, true);
  assert.equal(state.result, '{"answer":42}', 'a non-string result is stored as its JSON');
  assert.equal(state.fence, 1);
  rival.close();
  store.close();
});

test('a renew the store refuses (a newer fence holds the job) signals the handler with the reason, and its result is discarded', async () => {
  const { db, store } = await freshStore();
  store.enqueue('stolen');
  const thief = await LeaseStore.open(db, { busyTimeout: 0.05 });
  const ttl = 0.6;
  const worker = new JobWorker(store, { owner: 'slow', ttl, idle: 0.05 });
  let signalledAfter = null;
  // Read after the run: an assert inside the handler would only fail this attempt, whose outcome
  // the runtime discards (its lease is lost).
  let thiefFence = null;
  let abortReason = null;
  const stats = await worker.run(
    async (job, { signal }) => {
      // A worker whose clock runs ahead sees the lease as ended and claims over it.
      thiefFence = thief.claim(job, 'thief', now() + 10, ttl);
      thief.complete(job, 'thief', thiefFence, now() + 10, 'the thief');
      const stolenAt = performance.now();
      await withTimeout(new Promise((resolve) => signal.addEventListener('abort', resolve)), 5000, 'the handler was never signalled');
      signalledAfter = performance.now() - stolenAt;
      abortReason = signal.reason;
      return 'the slow one';
    },
    { untilEmpty: true },
  );
  assert.equal(thiefFence, 2);
  assert.ok(abortReason instanceof LeaseLostError, `aborted with ${abortReason}`);
  assert.equal(abortReason.code, 'lease_lost');
  assert.equal(abortReason.reason.code, 'done');
  assert.notEqual(signalledAfter, null, "the handler was never signalled");
  assert.ok(signalledAfter <= ttl * 1000, `signalled ${signalledAfter} ms after the theft (heartbeat every ${ttl / 3} s)`);
  assert.equal(store.state('stolen').result, 'the thief');
  assert.deepEqual({ lost: stats.leasesLost, completed: stats.completed, stale: stats.staleWritesRefused }, { lost: 1, completed: 0, stale: 0 });
  thief.close();
  store.close();
});

test('a handler that blocks the event loop past the ttl loses the lease: signalled when the loop runs again, its result never written', async () => {
  const { store } = await freshStore();
  store.enqueue('cpu');
  const ttl = 0.4;
  const worker = new JobWorker(store, { owner: 'busy', ttl, idle: 0.05 });
  const signals = [];
  const stats = await worker.run(
    (job, context) => {
      signals.push(context.signal);
      if (context.attempt > 1) return 'second attempt, in time';
      const end = Date.now() + ttl * 2.5 * 1000;
      while (Date.now() < end) {
        // a CPU-bound handler: no timer can run
      }
      return 'computed too late';
    },
    { untilEmpty: true },
  );
  assert.equal(signals.length, 2, 'the job was not claimed again after the lost lease');
  assert.equal(signals[0].aborted, true, 'the handler was not told its lease had ended');
  assert.equal(signals[0].reason.code, 'lease_lost');
  assert.equal(signals[0].reason.reason.code, 'expired');
  assert.equal(signals[1].aborted, false);
  const state = store.state('cpu');
  assert.deepEqual({ done: state.done, result: state.result, fence: state.fence }, { done: true, result: 'second attempt, in time', fence: 2 });
  assert.deepEqual({ lost: stats.leasesLost, completed: stats.completed, stale: stats.staleWritesRefused }, { lost: 1, completed: 1, stale: 0 });
  store.close();
});

/**
 * SIGSTOPs `child` at a moment it holds no write lock. A process stopped inside a write (its
 * heartbeat's renew, say) holds SQLite's write lock, and nobody can write past it, on any engine;
 * this test is about a worker paused between writes. Natively that is checked from another
 * process (a write transaction that may not wait); the wasm engine's child is stopped as it is.
 */
async function pauseBetweenWrites(child, db) {
  for (let tries = 0; ; tries++) {
    child.kill('SIGSTOP');
    if (engine() !== 'native') return;
    if (sqliteWriteLockIsFree(db)) return;
    assert.ok(tries < 50, 'the child held the write lock at each of 50 stops');
    child.kill('SIGCONT');
    await sleep(3);
  }
}

test('a paused worker process loses its lease to another process; after SIGCONT it is signalled and its result discarded, every round', async () => {
  const rounds = Number(process.env.LEASEFENCE_LOST_ROUNDS ?? 20);
  const { db, store } = await freshStore();
  const ttl = 0.4;
  const child = spawnTracked(process.execPath, [CHILD, 'held', db, 'paused', String(ttl)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEFENCE_PKG: PKG },
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const lines = [];
  const waiters = [];
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (d) => {
    buffered += d;
    const parts = buffered.split('\n');
    buffered = parts.pop();
    for (const line of jsonLines(parts.join('\n'))) {
      lines.push(line);
      for (const w of [...waiters]) if (w.match(line)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(line); }
    }
  });
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => resolve({ code, sig })));
  const next = (match, what) => {
    const found = lines.find(match);
    if (found) return Promise.resolve(found);
    return withTimeout(new Promise((resolve) => waiters.push({ match, resolve })), 15_000, `${what} (stderr: ${stderr})`);
  };
  const second = new JobWorker(store, { owner: 'second', ttl, idle: 0.01 });
  const latencies = [];
  for (let round = 0; round < rounds; round++) {
    const job = `round-${round}`;
    store.enqueue(job);
    const started = await next((l) => l.started === job, `the child did not take ${job}`);
    await pauseBetweenWrites(child, db);
    const leaseEnd = started.at + ttl;
    await sleep(Math.max(0, (leaseEnd - now()) * 1000) + 30);
    // The second worker, in this process, claims over the paused one with a higher fence.
    let fence = null;
    const stats = await second.run(async (j, context) => {
      fence = context.fence;
      return `second:${j}`;
    }, { untilEmpty: true });
    assert.equal(fence, started.fence + 1, `round ${round}: the second worker's fence`);
    const resumedAt = now();
    child.kill('SIGCONT');
    const aborted = await next((l) => l.aborted === job, `round ${round}: the paused worker was never signalled`);
    assert.equal(aborted.signalled, true);
    assert.equal(aborted.code, 'lease_lost');
    latencies.push((aborted.at - Math.max(resumedAt, leaseEnd)) * 1000);
    const state = store.state(job);
    assert.deepEqual({ result: state.result, fence: state.fence, done: state.done },
      { result: `second:${job}`, fence: started.fence + 1, done: true }, `round ${round}: the stored result`);
    assert.equal(stats.completed, round + 1);
  }
  child.kill('SIGTERM');
  const { code } = await exited;
  assert.equal(code, 0, stderr);
  const end = lines.find((l) => l.stats);
  assert.ok(end, `the child reported no stats: ${stderr}`);
  assert.deepEqual(
    { claimed: end.stats.claimed, lost: end.stats.leasesLost, completed: end.stats.completed, stale: end.stats.staleWritesRefused },
    { claimed: rounds, lost: rounds, completed: 0, stale: 0 },
    'the paused worker wrote nothing: each result was discarded before any write',
  );
  console.log(`paused worker: ${rounds}/${rounds} rounds the second worker's result stood; signalled after SIGCONT in median ${median(latencies).toFixed(1)} ms, worst ${Math.max(...latencies).toFixed(1)} ms`);
  assert.ok(Math.max(...latencies) < 1000, `a signal came ${Math.max(...latencies)} ms after the process resumed`);
  store.close();
});

test('a busy database: renews are retried within the lease (the handler keeps it), and when the lease ends first the handler is signalled', async () => {
  const { db, store } = await freshStore({ busyTimeout: 0.02 });
  store.enqueue('through-busy');
  store.enqueue('busy-to-the-end');
  const ttl = 1.2;
  const errors = [];
  const worker = new JobWorker(store, { owner: 'w', ttl, idle: 0.05, onError: (error, context) => errors.push({ op: context.op, message: error.message }) });
  // Another process holds the write lock (holdWriteLock: each engine's kind of rival).
  const outcomes = {};
  const stats = await worker.run(
    async (job, { signal, attempt }) => {
      if (attempt > 1) return 'a later attempt';
      if (job === 'through-busy') {
        const lock = await holdWriteLock(db);
        await sleep(ttl * 0.45 * 1000); // past the first renew (at ttl/3), well within the lease
        await lock.release();
        await sleep(ttl * 0.7 * 1000);
        outcomes[job] = { aborted: signal.aborted };
        return 'made it';
      }
      const lock = await holdWriteLock(db);
      const held = performance.now();
      await new Promise((resolve) => signal.addEventListener('abort', resolve));
      outcomes[job] = { aborted: true, reason: signal.reason.reason, afterLockMs: performance.now() - held, at: now() };
      await lock.release();
      return 'too late';
    },
    { untilEmpty: true },
  );
  assert.deepEqual(outcomes['through-busy'], { aborted: false });
  assert.equal(store.state('through-busy').result, 'made it');
  const lost = outcomes['busy-to-the-end'];
  assert.equal(lost.reason.code, 'expired');
  const lateMs = (lost.at - lost.reason.until) * 1000;
  console.log(`busy database: the handler was signalled ${lateMs.toFixed(1)} ms after its lease ended; ${errors.filter((e) => e.op === 'renew').length} busy renews retried`);
  assert.ok(lateMs >= 0 && lateMs < 250, `signalled ${lateMs} ms after the lease end`);
  assert.ok(errors.filter((e) => e.op === 'renew').length >= 3, `renews were not retried: ${JSON.stringify(errors)}`);
  assert.ok(errors.every((e) => /locked/.test(e.message)), JSON.stringify(errors));
  // The first attempt's result was discarded; the job went to the next claim (this same worker).
  assert.deepEqual([store.state('busy-to-the-end').result, store.state('busy-to-the-end').fence], ['a later attempt', 2]);
  assert.deepEqual({ completed: stats.completed, lost: stats.leasesLost }, { completed: 2, lost: 1 });
  store.close();
});

test('retries: failing twice then succeeding, each retry claimed no earlier than its backoff; dead at maxAttempts with every error recorded', async () => {
  const { store } = await freshStore();
  store.enqueue('flaky');
  store.enqueue('hopeless', null, 'p');
  const backoff = 0.3;
  const worker = new JobWorker(store, { owner: 'r', ttl: 2, idle: 0.02, maxAttempts: 3, backoff: fixedBackoff(backoff) });
  const claims = { flaky: [], hopeless: [] };
  const stats = await worker.run(
    async (job, { attempt, fence }) => {
      claims[job].push({ attempt, fence, at: now() });
      if (job === 'flaky' && attempt <= 2) throw new Error(`flaky failure ${attempt}`);
      if (job === 'hopeless') throw new TypeError(`hopeless ${attempt}`);
      return 'finally';
    },
    { untilDrained: true },
  );
  for (const job of ['flaky', 'hopeless']) {
    const times = claims[job].map((c) => c.at);
    for (let i = 1; i < times.length; i++) {
      assert.ok(times[i] - times[i - 1] >= backoff - 0.005, `${job}: retry ${i} came ${(times[i] - times[i - 1]).toFixed(3)} s after the failure`);
    }
  }
  assert.deepEqual(claims.flaky.map((c) => [c.attempt, c.fence]), [[1, 1], [2, 2], [3, 3]]);
  assert.equal(store.state('flaky').result, 'finally');
  const flaky = store.inspect('flaky');
  assert.deepEqual(flaky.failures.map((f) => [f.fence, f.error]), [[1, 'Error: flaky failure 1'], [2, 'Error: flaky failure 2']]);
  const hopeless = store.inspect('hopeless');
  assert.equal(hopeless.dead, true);
  assert.equal(hopeless.state.result, null);
  assert.deepEqual(hopeless.failures.map((f) => f.error), ['TypeError: hopeless 1', 'TypeError: hopeless 2', 'TypeError: hopeless 3']);
  assert.deepEqual({ claimed: stats.claimed, completed: stats.completed, failed: stats.failed, dead: stats.dead }, { claimed: 6, completed: 1, failed: 4, dead: 1 });
  store.close();
});

test('backoff: claimNext skips a failed job until its retry time (reason scheduled); exponential backoff grows and is capped', async () => {
  const { store } = await freshStore();
  store.enqueue('later');
  const worker = new JobWorker(store, { owner: 'b', ttl: 5, idle: 0.02, backoff: (attempt) => 0.5 * attempt });
  let failedAt;
  const run = worker.run(async () => {
    failedAt = now();
    throw new Error('not yet');
  });
  while (!store.inspect('later')?.failures.length) await sleep(5);
  await worker.stop();
  await run;
  const answer = store.withReason.claim('later', 'other', failedAt + 0.4, 5);
  assert.equal(answer.value, null);
  assert.equal(answer.reason.code, 'scheduled');
  assert.ok(Math.abs(answer.reason.until - (failedAt + 0.5)) < 0.05, `retry at ${answer.reason.until}, failed at ${failedAt}`);
  assert.equal(store.claimNext('other', failedAt + 0.45, 5), null, 'claimNext took the job before its retry time');
  assert.equal(store.claimNext('other', failedAt + 0.55, 5).job, 'later');

  // exponentialBackoff describes the backoff; the store's workerRules (the crate's core) compute it.
  const delay = ({ base, factor, max, jitter, random }, attempt) => store.workerRules.exponentialBackoff(base, factor, max, jitter, attempt, random());
  const exact = exponentialBackoff({ base: 1, factor: 2, max: 10, jitter: 0 });
  assert.deepEqual([1, 2, 3, 4, 5, 6].map((a) => delay(exact, a)), [1, 2, 4, 8, 10, 10]);
  const jittered = exponentialBackoff({ base: 1, factor: 2, max: 10, jitter: 0.5, random: () => 1 });
  assert.deepEqual([1, 3, 9].map((a) => delay(jittered, a)), [0.5, 2, 5]);
  for (let i = 0; i < 200; i++) {
    const d = delay(exponentialBackoff({ max: 8 }), 4);
    assert.ok(d >= 4 && d <= 8, `jittered delay ${d}`);
  }
  assert.throws(() => exponentialBackoff({ initial: 1 }), (e) => e.code === 'invalid_argument' && /`base`/.test(e.message));
  store.close();
});

test('a poison job that kills its worker process every time ends dead, not claimed for ever; revive brings it back with its fence', async () => {
  for (const how of ['sigkill', 'exit']) {
    const { db, store } = await freshStore();
    store.enqueue(`poison-${how}`);
    store.enqueue('fine');
    const ttl = 0.6;
    const maxAttempts = 3;
    const runs = [];
    for (let spawned = 0; spawned < 10; spawned++) {
      const run = await runNode(CHILD, ['poison', db, `w${spawned}`, String(ttl), String(maxAttempts), how]);
      runs.push(run);
      if (run.code === 0) break;
      assert.equal(how === 'sigkill' ? run.signal : run.code, how === 'sigkill' ? 'SIGKILL' : 3, run.stderr);
      await sleep(ttl * 1000 + 20); // its lease runs out
    }
    const last = runs.at(-1);
    const story = runs.map((r) => `${r.code ?? r.signal}: ${r.stdout.trim().replace(/\n/g, ' ')}`).join('\n');
    assert.equal(last.code, 0, `the ${runs.length}th worker: ${last.stderr}`);
    assert.equal(runs.length, maxAttempts + 1, `${runs.length} worker processes for a job dead after ${maxAttempts} attempts:\n${story}`);
    const end = jsonLines(last.stdout).find((l) => l.stats);
    assert.equal(end.stats.dead, 1);
    const poison = store.inspect(`poison-${how}`);
    assert.equal(poison.dead, true);
    assert.equal(poison.attempts, maxAttempts + 1, `${how}: ${JSON.stringify(poison)}\n${story}`);
    assert.equal(poison.failures.length, 1);
    assert.match(poison.failures[0].error, /attempt 4 of at most 3: earlier holders lost their leases/);
    assert.equal(store.state('fine').result, 'ok:fine');
    // revive: back with its fence; its previous attempt has the failure that made it dead, so it
    // gets one more attempt (the Rust runtime's rule too), which a harmless handler completes.
    assert.equal(store.revive(`poison-${how}`, now()), true);
    assert.equal(store.state(`poison-${how}`).fence, maxAttempts + 1);
    const healed = new JobWorker(store, { owner: 'healer', ttl: 2, maxAttempts, idle: 0.02 });
    let seen;
    await healed.run((job, context) => {
      seen = { fence: context.fence, attempt: context.attempt };
      return 'healed';
    }, { untilEmpty: true });
    assert.deepEqual(seen, { fence: maxAttempts + 2, attempt: maxAttempts + 2 });
    assert.equal(store.state(`poison-${how}`).result, 'healed');
    store.close();
  }
});

test('stop() releases the held lease at once (fence kept) and signals the handler; stop with grace lets it finish', async () => {
  const { store } = await freshStore();
  store.enqueue('interrupted');
  const worker = new JobWorker(store, { owner: 's', ttl: 30, idle: 0.02 });
  let reason;
  const running = worker.run(async (job, { signal }) => {
    setTimeout(() => worker.stop(), 50);
    await new Promise((resolve) => signal.addEventListener('abort', resolve));
    reason = signal.reason;
    return 'unfinished';
  });
  const stats = await withTimeout(running, 5000, 'run() after stop()');
  assert.equal(reason.code, 'stopped');
  const state = store.state('interrupted');
  assert.deepEqual({ owner: state.owner, fence: state.fence, done: state.done }, { owner: null, fence: 1, done: false });
  assert.equal(store.claimNext('next', now(), 30).fence, 2, 'the released job was not claimable at once');
  assert.equal(stats.leasesLost, 0);

  store.enqueue('graceful');
  const gentle = new JobWorker(store, { owner: 'g', ttl: 30, idle: 0.02 });
  const run = gentle.run(async (job, { signal }) => {
    setTimeout(() => gentle.stop({ grace: 2 }), 10);
    await sleep(150);
    return signal.aborted ? 'aborted' : 'finished in grace';
  });
  await run;
  assert.equal(store.state('graceful').result, 'finished in grace');
  store.close();
});

test('bad options are refused with invalid_argument and a message naming the option', async () => {
  const { store } = await freshStore();
  const cases = [
    [{}, /ttl/], [{ ttl: 0 }, /ttl/], [{ ttl: -1 }, /ttl/], [{ ttl: NaN }, /ttl/], [{ ttl: '5' }, /ttl/],
    [{ ttl: 3, heartbeatEvery: 3 }, /heartbeatEvery/], [{ ttl: 3, maxAttempts: 0 }, /maxAttempts/],
    [{ ttl: 3, maxAttempts: 1.5 }, /maxAttempts/], [{ ttl: 3, backoff: 'x' }, /backoff/], [{ ttl: 3, owner: '' }, /owner/],
    [{ ttl: 3, clock: () => 'now' }, /clock/], [{ ttl: 3, idle: 0 }, /idle/],
  ];
  for (const [options, message] of cases) {
    assert.throws(() => new JobWorker(store, options), (e) => e.code === 'invalid_argument' && message.test(e.message), JSON.stringify(options));
  }
  assert.throws(() => new JobWorker({}, { ttl: 3 }), (e) => e.code === 'invalid_argument' && /store/.test(e.message));
  assert.throws(() => fixedBackoff(-1), (e) => e.code === 'invalid_argument');
  assert.throws(() => exponentialBackoff({ jitter: 2 }), (e) => e.code === 'invalid_argument');
  const worker = new JobWorker(store, { ttl: 3 });
  await assert.rejects(worker.run('not a function'), (e) => e.code === 'invalid_argument');
  assert.match(worker.owner, /^job-worker-/);
  store.close();
});

test("heartbeat: 'thread' renews from a worker thread: a handler blocking the event loop for several ttls keeps its lease; a refused renew still signals", async () => {
  const { db, store } = await freshStore();
  store.enqueue('cpu-bound');
  store.enqueue('stolen');
  const thief = await LeaseStore.open(db, { busyTimeout: 0.05 });
  const ttl = 0.4;
  const worker = new JobWorker(store, { owner: 't', ttl, idle: 0.02, heartbeat: 'thread' });
  const seen = {};
  // The thief's claim, asserted after the run: a throw in the handler of a lost lease is discarded.
  let thiefFence = null;
  const stats = await worker.run(
    async (job, { signal }) => {
      if (job === 'cpu-bound') {
        const end = Date.now() + ttl * 3 * 1000;
        while (Date.now() < end) {
          // blocks this thread; the heartbeat thread renews
        }
        seen[job] = signal.aborted;
        return 'kept the lease';
      }
      thiefFence = thief.claim(job, 'thief', now() + 10, ttl);
      await withTimeout(new Promise((resolve) => signal.addEventListener('abort', resolve)), 5000, 'the handler was never signalled');
      seen[job] = signal.reason.reason.code;
      return 'discarded';
    },
    { untilEmpty: true },
  );
  assert.equal(thiefFence, 2, 'the thief did not take the job over');
  assert.deepEqual(seen, { 'cpu-bound': false, stolen: 'stale_fence' });
  assert.deepEqual([store.state('cpu-bound').result, store.state('cpu-bound').fence], ['kept the lease', 1]);
  assert.equal(store.state('stolen').owner, 'thief');
  assert.ok(stats.renewals >= 6, `${stats.renewals} renewals from the thread in 3 ttls`);
  assert.deepEqual({ completed: stats.completed, lost: stats.leasesLost }, { completed: 1, lost: 1 });
  assert.throws(() => new JobWorker(store, { ttl: 1, heartbeat: 'thread', clock: () => 5 }), (e) => e.code === 'invalid_argument' && /clock/.test(e.message));
  assert.throws(() => new JobWorker(store, { ttl: 1, heartbeat: 'elsewhere' }), (e) => e.code === 'invalid_argument' && /heartbeat/.test(e.message));
  const { JobWorker: SharedJobWorker } = await import('../../web/store/job-worker.js');
  assert.throws(() => new SharedJobWorker(store, { ttl: 1, heartbeat: 'thread' }), (e) => e.code === 'invalid_argument' && /Node package only/.test(e.message));
  thief.close();
  store.close();
});

test("heartbeat: 'loop' and 'thread' keep a lease by one rule: the same retry delays after busy renews, the same lost-lease reasons", async () => {
  // The same three jobs under each mode: renews busy for a while (the retries back off, then one
  // gets through), renews busy until the lease ends (lost: expired), and a renew refused (lost:
  // stale_fence). A busy timeout of 0 makes each busy renew fail at once, so the delays recorded
  // are the rule's, not the lock's.
  const ttl = 2.4; // renew every 0.8 s
  const runMode = async (heartbeat) => {
    const { db, store } = await freshStore({ busyTimeout: 0 });
    const thief = await LeaseStore.open(db, { busyTimeout: 0 });
    for (const job of ['busy-then-free', 'busy-to-the-end', 'stolen']) store.enqueue(job);
    const retries = { 'busy-then-free': [], 'busy-to-the-end': [] };
    const lost = {};
    let thiefFence = null; // asserted after the run (a throw in the handler would be discarded)
    let lock = null; // another process holding the write lock (holdWriteLock)
    const worker = new JobWorker(store, {
      owner: heartbeat,
      ttl,
      idle: 0.02,
      heartbeat,
      onError: (error, { op, job, retryIn }) => {
        if (op === 'renew') retries[job].push(retryIn);
      },
    });
    const stats = await worker.run(
      async (job, { signal, attempt }) => {
        if (attempt > 1) return 'a later attempt';
        if (job === 'busy-then-free') {
          const held = await holdWriteLock(db);
          await sleep(1300); // the first renew at 800 ms, retried 20, 40, 80, 160 ms later, then 320 (the core's rule)
          await held.release();
          await sleep(900); // a renew gets through
          return 'made it';
        }
        if (job === 'stolen') thiefFence = thief.claim(job, 'thief', now() + ttl + 1, ttl);
        else lock = await holdWriteLock(db);
        await withTimeout(new Promise((resolve) => signal.addEventListener('abort', resolve)), 10_000, `${heartbeat}: ${job} was never signalled`);
        if (job !== 'stolen') await lock.release();
        // Which check sees an expired lease first (the watchdog or a late retry) is timing; a
        // refusal's message is not.
        lost[job] = { code: signal.reason.code, reason: signal.reason.reason.code };
        if (job === 'stolen') lost[job].message = signal.reason.message.replace(/^.*?\): /, '');
        return 'discarded';
      },
      { untilEmpty: true },
    );
    assert.equal(thiefFence, 2, `${heartbeat}: the thief did not take the job over`);
    assert.equal(store.state('busy-then-free').result, 'made it', `${heartbeat}: the busy-then-free job lost its lease`);
    thief.close();
    store.close();
    return { retries, lost, lostCount: stats.leasesLost };
  };
  const loop = await runMode('loop');
  const thread = await runMode('thread');
  console.log(`busy renews retried after (s): loop ${JSON.stringify(loop.retries)}, thread ${JSON.stringify(thread.retries)}`);
  // The delays are the core's rule (20 ms, doubling, at most the renew interval) in both modes.
  for (const job of ['busy-then-free', 'busy-to-the-end']) {
    for (const mode of [loop, thread]) assert.ok(mode.retries[job].length >= 5, `${job}: ${JSON.stringify(mode.retries[job])}`);
    assert.deepEqual(thread.retries[job].slice(0, 5), loop.retries[job].slice(0, 5), `${job}: the modes retry a busy renew after different delays`);
  }
  assert.deepEqual(thread.lost, loop.lost);
  assert.deepEqual(
    Object.fromEntries(Object.entries(loop.lost).map(([job, { reason }]) => [job, reason])),
    { 'busy-to-the-end': 'expired', stolen: 'stale_fence' },
  );
  assert.deepEqual([loop.lostCount, thread.lostCount], [2, 2]);
});

test('a ttl longer than a timer can wait (24.8 days) sets no overflowing timer (Node would fire it at once, again and again)', async () => {
  const { store } = await freshStore();
  store.enqueue('long-lease');
  const overflows = [];
  const onWarning = (warning) => {
    if (warning.name === 'TimeoutOverflowWarning') overflows.push(warning.message);
  };
  process.on('warning', onWarning);
  try {
    const worker = new JobWorker(store, { ttl: 40 * 86_400, idle: 0.05 });
    await worker.run(async () => {
      await sleep(200);
      return 'done';
    }, { untilEmpty: true });
    await sleep(10); // warnings are emitted on the next tick
  } finally {
    process.off('warning', onWarning);
  }
  assert.equal(store.state('long-lease').result, 'done');
  assert.deepEqual(overflows, []);
  store.close();
});

/**
 * The caller's own tables in the store's file, made and read through fenced writes of jobs of
 * their own (`setup`, `read-N`), each completed at once, so no worker ever claims them.
 */
function callerTables(store, rows = []) {
  let reads = 0;
  const inOwnJob = (job, work) => {
    store.enqueue(job);
    const fence = store.claim(job, 'tables', now(), 30);
    assert.ok(store.fenced(job, 'tables', fence, now(), work, { complete: true }), `the fenced write of ${job} was refused`);
  };
  inOwnJob('setup', [
    { sql: 'CREATE TABLE totals(job TEXT PRIMARY KEY, total INTEGER NOT NULL, fence INTEGER NOT NULL)' },
    { sql: 'CREATE TABLE work_log(line TEXT NOT NULL)' },
    ...rows.map((params) => ({ sql: 'INSERT INTO totals(job, total, fence) VALUES (?, ?, ?)', params })),
  ]);
  return {
    all(sql) {
      let answer;
      inOwnJob(`read-${reads++}`, (tx) => {
        answer = tx.all(sql);
      });
      return answer;
    },
  };
}

test('fencedResult: the handler\'s rows and the completion commit together; a stale worker\'s rows are refused with its completion', async () => {
  const { db, store } = await freshStore();
  const own = callerTables(store);
  store.enqueue('sum', null, '1,2,3');
  store.enqueue('stolen');
  const rival = await LeaseStore.open(db, { busyTimeout: 0.05 });
  // ttl 30: the first heartbeat is 10 s away, so the only check a stale write meets is the store's.
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02 });
  // The rival's answers, asserted after the run: an assert thrown here would fail the stolen job,
  // and that failure is itself refused (the rival holds the job), so nothing would report it.
  let rivalAnswers = null;
  const stats = await worker.run(
    (job, { payload, fence }) => {
      if (job === 'stolen') {
        // A rival whose clock runs past this lease claims and completes the job meanwhile.
        const claimed = rival.claim(job, 'rival', now() + 60, 30);
        rivalAnswers = { claimed, completed: rival.complete(job, 'rival', 2, now() + 60, 'the rival') };
      }
      const total = (payload ?? '').split(',').filter(Boolean).map(Number).reduce((a, b) => a + b, 0);
      return fencedResult([
        { sql: 'INSERT INTO totals(job, total, fence) VALUES (?, ?, ?)', params: [job, total, fence] },
        { sql: 'INSERT INTO work_log(line) VALUES (?)', params: [`${job} by w`] },
      ], { total });
    },
    { untilEmpty: true },
  );
  assert.deepEqual(rivalAnswers, { claimed: 2, completed: true });
  assert.deepEqual(own.all('SELECT job, total, fence FROM totals ORDER BY job'), [{ job: 'sum', total: 6, fence: 1 }]);
  assert.deepEqual(own.all('SELECT line FROM work_log'), [{ line: 'sum by w' }], 'the stale worker\'s log line was written');
  assert.deepEqual({ done: store.state('sum').done, result: store.state('sum').result }, { done: true, result: '{"total":6}' });
  assert.equal(store.state('stolen').result, 'the rival');
  assert.deepEqual({ completed: stats.completed, stale: stats.staleWritesRefused, lost: stats.leasesLost }, { completed: 1, stale: 1, lost: 1 });
  rival.close();
  store.close();
});

test('fencedResult: a statement that fails or is refused fails the job with nothing of it applied; the retry commits', async () => {
  const { store } = await freshStore();
  const own = callerTables(store, [['taken', 0, 0]]);
  store.enqueue('report');
  const worker = new JobWorker(store, { owner: 'w', ttl: 5, idle: 0.02, maxAttempts: 5, backoff: fixedBackoff(0) });
  const stats = await worker.run(
    (job, { attempt, fence }) => {
      const log = { sql: 'INSERT INTO work_log(line) VALUES (?)', params: [`attempt ${attempt}`] };
      if (attempt === 1) return fencedResult([log, { sql: 'INSERT INTO totals(job, total, fence) VALUES (?, 1, 1)', params: ['taken'] }]);
      if (attempt === 2) return fencedResult([log, { sql: 'UPDATE jobs SET done = 1 WHERE id = ?', params: [job] }]);
      if (attempt === 3) return fencedResult('not a list');
      return fencedResult([log, { sql: 'INSERT INTO totals(job, total, fence) VALUES (?, ?, ?)', params: [job, 7, fence] }], 'filed');
    },
    { untilDrained: true },
  );
  const inspect = store.inspect('report');
  assert.equal(inspect.failures.length, 3, JSON.stringify(inspect.failures));
  assert.match(inspect.failures[0].error, /UNIQUE constraint failed: totals\.job/);
  assert.match(inspect.failures[1].error, /jobs/);
  assert.match(inspect.failures[2].error, /statements.*must be a list/);
  assert.deepEqual(own.all('SELECT line FROM work_log'), [{ line: 'attempt 4' }], 'a failed attempt left a row behind');
  assert.deepEqual(own.all('SELECT job, total, fence FROM totals ORDER BY job'), [{ job: 'report', total: 7, fence: 4 }, { job: 'taken', total: 0, fence: 0 }]);
  assert.deepEqual({ done: inspect.state.done, result: inspect.state.result, dead: inspect.dead }, { done: true, result: 'filed', dead: false });
  assert.deepEqual({ completed: stats.completed, failed: stats.failed, lost: stats.leasesLost }, { completed: 1, failed: 3, lost: 0 });
  assert.throws(() => fencedResult([{ sql: 1 }]), (e) => e.code === 'invalid_argument' && /statement 0/.test(e.message));
  assert.throws(() => fencedResult([{ sql: 'SELECT 1', params: 'x' }]), (e) => e.code === 'invalid_argument' && /params/.test(e.message));
  store.close();
});

test('a JobWorker with `queues` claims only their jobs, highest priority first, and drains only them', async () => {
  const { store } = await freshStore();
  store.enqueue('mail-low', null, null, 'mail');
  store.enqueue('mail-high', null, null, 'mail', 9);
  store.enqueue('bill', null, null, 'billing', 50);
  store.enqueue('plain', null, null);
  const order = [];
  const worker = new JobWorker(store, { owner: 'mailer', ttl: 5, idle: 0.05, queues: ['mail'] });
  const stats = await worker.run(async (job) => { order.push(job); return 'sent'; }, { untilDrained: true });
  assert.deepEqual(order, ['mail-high', 'mail-low']);
  assert.equal(stats.completed, 2);
  assert.equal(store.state('bill').done, false);
  assert.equal(store.stats(now(), 'billing').queued, 1);
  assert.deepEqual([store.inspect('mail-high').queue, store.inspect('mail-high').priority], ['mail', 9]);
  assert.throws(() => new JobWorker(store, { ttl: 5, queues: [] }), { code: 'invalid_argument' });
  store.close();
});

test('retention: the worker prunes completed jobs past `done` as it ticks (a backlog a batch per tick), dead ones only past `dead`; off by default; bad options refused', async () => {
  const { store } = await freshStore();
  const t = now();
  const old = Array.from({ length: 2500 }, (_, i) => ({ job: `old-${i}` }));
  for (let i = 0; i < old.length; i += 1024) store.enqueueMany(old.slice(i, i + 1024));
  for (let i = 0; i < old.length; i++) {
    const job = store.claimNext('past', t - 3 * 3600, 7200);
    assert.equal(store.complete(job.job, 'past', job.fence, t - 2 * 3600, null), true);
  }
  store.enqueue('dead');
  const dead = store.claimNext('past', t - 3 * 3600, 7200);
  assert.equal(store.fail(dead.job, 'past', dead.fence, t - 2 * 3600, null, 'x'), true);
  for (const job of ['new-1', 'new-2', 'new-3']) store.enqueue(job);
  await new JobWorker(store, { owner: 'plain', ttl: 5 }).run(async () => 'ok', { untilEmpty: true });
  assert.deepEqual([store.stats(now()).done, store.stats(now()).dead], [2500 + 3, 1], 'no retention: nothing pruned');
  for (const job of ['new-4', 'new-5', 'new-6']) store.enqueue(job);
  const errors = [];
  const worker = new JobWorker(store, { owner: 'keeper', ttl: 5, retention: { done: 3600 }, onError: (e, c) => errors.push([e, c]) });
  await worker.run(async () => 'ok', { untilEmpty: true });
  assert.deepEqual(errors, []);
  assert.equal(store.state('old-0'), null);
  assert.equal(store.state('old-2499'), null);
  assert.equal(store.inspect('dead').dead, true, 'dead jobs are kept without retention.dead');
  assert.notEqual(store.state('new-1'), null, 'recent jobs are kept');
  store.enqueue('new-7');
  await new JobWorker(store, { owner: 'keeper', ttl: 5, retention: { done: 3600, dead: 3600 } }).run(async () => 'ok', { untilEmpty: true });
  assert.equal(store.state('dead'), null);
  assert.notEqual(store.state('new-7'), null);
  for (const retention of [{ done: -1 }, { done: 60, dead: 0 }, { done: 60, keep: 1 }, 'a day']) {
    assert.throws(() => new JobWorker(store, { ttl: 5, retention }), (e) => e.code === 'invalid_argument' && /retention/.test(e.message));
  }
});

test('after a prune the fence floor starts new jobs above 0, and their attempts still count from 1 (not made dead as poison)', async () => {
  const { store } = await freshStore();
  store.enqueue('poison');
  for (let round = 0; round < 5; round++) {
    const t = round * 10;
    assert.equal(store.claim('poison', 'w', t, 5), round + 1);
    assert.equal(store.fail('poison', 'w', round + 1, t, round < 4 ? t + 1 : null, 'boom'), true);
  }
  assert.equal(store.prune(1e9), 1);
  for (const job of ['fresh-1', 'fresh-2']) store.enqueue(job);
  const seen = [];
  const counts = await new JobWorker(store, { owner: 'w', ttl: 5, maxAttempts: 5, concurrency: 2 }).run(async (job, { fence, attempt }) => {
    seen.push([fence, attempt]);
    return 'ok';
  }, { untilEmpty: true });
  assert.deepEqual(seen, [[6, 1], [6, 1]]);
  assert.equal(counts.completed, 2);
  assert.equal(counts.dead, 0);
  assert.equal(store.inspect('fresh-1').attempts, 1);
});

// JobWorker with `concurrency` (docs/contract.md section 10): up to n handlers at once under one
// owner, each with its own lease and signal; claims, renews and completions group-committed
// through store.grouped. Real files, real timers.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { engine, hasStrace, loadPackage, syncCounter, tempDir, sleep, withTimeout } from './helpers.mjs';

const { LeaseStore, JobWorker, LeaseError, fencedResult, fixedBackoff } = loadPackage();
// Syncs counted for the whole file: the wasm VFS's count, or natively strace attached once.
const noCounter = engine() === 'native' && !hasStrace ? 'strace counts the native engine\'s syncs' : false;
const counter = noCounter ? null : await syncCounter();
after(() => counter?.stop());
const syncs = () => counter?.syncs() ?? 0;
const dir = tempDir('leasefence-concurrency-');
let files = 0;
const open = () => LeaseStore.open(path.join(dir, `c${files++}.db`));
const now = () => Date.now() / 1000;

/**
 * Drains `jobs` jobs with `concurrency` handlers that each `hold()` (the handlers of one claim
 * start in one turn, and an immediate ends their holds in one later turn, whatever the machine's
 * load: their completions meet in one group); what it saw.
 */
async function drain(concurrency, jobs, hold = () => new Promise((resolve) => setImmediate(resolve))) {
  const store = await open();
  for (let i = 0; i < jobs; i++) store.enqueue(`j${i}`, null, String(i));
  let running = 0;
  let most = 0;
  const handled = [];
  const at = syncs();
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency });
  const stats = await worker.run(async (job, { payload }) => {
    running += 1;
    most = Math.max(most, running);
    await hold();
    running -= 1;
    handled.push(job);
    return `done ${payload}`;
  }, { untilEmpty: true });
  const cost = syncs() - at;
  const rows = store.withReason.stats(now()).value;
  const results = Array.from({ length: jobs }, (_, i) => store.state(`j${i}`).result);
  store.close();
  return { stats, most, handled, cost, rows, results };
}

/**
 * Puts `around(n, claim)` in front of every claimNextMany the worker makes through the store's
 * grouped operations (`claim()` makes the real one and answers its Promise).
 */
function aroundClaims(store, around) {
  const { grouped } = store;
  const claimNextMany = grouped.claimNextMany.bind(grouped);
  grouped.claimNextMany = (owner, n, ...rest) => around(n, () => claimNextMany(owner, n, ...rest));
  assert.equal(store.grouped, grouped, 'the worker claims through this same object');
}

test('concurrency 8 runs at most 8 handlers at once, each job once, in far fewer commits than jobs', { skip: noCounter }, async () => {
  const one = await drain(1, 40);
  const eight = await drain(8, 200);
  assert.equal(eight.most, 8, 'eight handlers ran at once, never more');
  assert.equal(one.most, 1);
  assert.equal(new Set(eight.handled).size, 200);
  assert.equal(eight.handled.length, 200, 'no job handled twice');
  assert.deepEqual([eight.stats.claimed, eight.stats.completed, eight.stats.failed], [200, 200, 0]);
  assert.equal(eight.rows.done, 200);
  assert.deepEqual(eight.results, Array.from({ length: 200 }, (_, i) => `done ${i}`));
  // Concurrency 1 pays a claim and a complete commit per job; grouped, eight jobs share them.
  const perJob = (run, jobs) => run.cost / jobs;
  assert.ok(perJob(eight, 200) < perJob(one, 40) / 3,
    `syncs per job: ${perJob(eight, 200).toFixed(2)} at concurrency 8 vs ${perJob(one, 40).toFixed(2)} at 1`);
});

test('a slot frees when its handler returns: the claim that refills it shares the commit of the finished jobs', { skip: noCounter }, async () => {
  // Four handlers start together and end in one later turn (drain's hold). Their completions and
  // the claim for the four slots they free go as one group, one commit a round, as Rust's
  // coordinator writes a round; not the completions in one commit and, once those answered, the
  // claim in another.
  const store = await open();
  const at = syncs();
  await store.grouped.enqueue('lone');
  const lone = syncs() - at;
  store.close();
  assert.ok(lone >= 1, 'a commit syncs');
  const run = await drain(4, 64);
  assert.deepEqual([run.stats.claimed, run.stats.completed, run.most], [64, 64, 4]);
  const commits = run.cost / lone;
  // 16 rounds, and the run's start and end: its beats, the first claim (19 in all here).
  assert.ok(commits <= 16 + 6, `${commits} commits for 16 rounds of four jobs`);
});

test('a job whose completion waits to be written again holds its slot meanwhile', async () => {
  // The store refuses the first three completions of "a" as busy (a storage error the worker
  // retries). While "a" waits to be written again its slot counts as held: at concurrency 2 a
  // claim then asks only for what leaves room for "a" (the handlers running and the jobs asked
  // for at most one), or a store that keeps failing writes would let the worker claim on.
  const store = await open();
  for (const job of ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']) store.enqueue(job);
  let refusals = 3;
  let retrying = false;
  const grouped = store.grouped;
  const withReason = {
    ...grouped.withReason,
    complete: (job, ...rest) => {
      if (job === 'a' && refusals > 0) {
        refusals -= 1;
        return Promise.reject(new LeaseError('the database is busy (made so by this test)', { code: 'storage', retryable: true }));
      }
      if (job === 'a') retrying = false; // its last try
      return grouped.withReason.complete(job, ...rest);
    },
  };
  let running = 0;
  let mostWhileRetrying = 0;
  const claimNextMany = grouped.claimNextMany.bind(grouped);
  const claim = (owner, n, ...rest) => {
    if (retrying) mostWhileRetrying = Math.max(mostWhileRetrying, running + n);
    return claimNextMany(owner, n, ...rest);
  };
  const groupedView = new Proxy(grouped, {
    get: (target, key) => (key === 'withReason' ? withReason : key === 'claimNextMany' ? claim : Reflect.get(target, key)),
  });
  const storeView = new Proxy(store, {
    get: (target, key) => {
      if (key === 'grouped') return groupedView;
      const value = Reflect.get(target, key, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  // The worker reports each refusal before it waits to try again: from then on "a" waits.
  const onError = (error, { op, job }) => {
    if (op === 'complete' && job === 'a') retrying = true;
  };
  const worker = new JobWorker(storeView, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 2, onError });
  const stats = await withTimeout(worker.run(async (job) => {
    running += 1;
    await sleep(job === 'a' ? 0 : 15);
    running -= 1;
    return `ok ${job}`;
  }, { untilEmpty: true }), 30_000);
  assert.equal(refusals, 0, 'the store refused a\'s completion three times');
  assert.deepEqual([stats.completed, stats.claimed], [8, 8]);
  assert.equal(store.state('a').result, 'ok a', 'a was written in the end');
  assert.ok(mostWhileRetrying > 0, 'the worker claimed while a waited');
  assert.ok(mostWhileRetrying <= 1, `a claim while a's completion waited to be retried asked for ${mostWhileRetrying} slots with the handlers running`);
  store.close();
});

test('a lost lease aborts its own handler alone; the others complete', async () => {
  const store = await open();
  for (const job of ['a', 'b', 'victim', 'c']) store.enqueue(job);
  const rival = await LeaseStore.open(store.path);
  let lost = null;
  const worker = new JobWorker(store, { owner: 'w', ttl: 0.6, heartbeatEvery: 0.1, idle: 0.02, concurrency: 4, maxAttempts: 1 });
  const stats = await worker.run(async (job, { signal, fence }) => {
    if (job === 'victim') {
      // Someone takes the lease away: the next renew is refused.
      assert.equal(rival.release('victim', 'w', fence), true);
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      lost = signal.reason;
      return 'never written';
    }
    await sleep(400); // past a few renews
    assert.equal(signal.aborted, false, `${job} kept its lease: ${signal.reason?.message}`);
    return `ok ${job}`;
  }, { untilEmpty: true });
  assert.equal(lost?.code, 'lease_lost');
  assert.equal(lost?.reason?.code, 'not_owner');
  assert.deepEqual([stats.completed, stats.leasesLost], [3, 1]);
  for (const job of ['a', 'b', 'c']) assert.equal(store.state(job).result, `ok ${job}`);
  // Released, the victim was claimed again: a second attempt past maxAttempts 1 whose first
  // recorded no failure is a poison job, made dead without running; its lost result never written.
  const victim = store.inspect('victim');
  assert.deepEqual([victim.dead, victim.state.result, victim.attempts, stats.dead, stats.claimed], [true, null, 2, 1, 5]);
  rival.close();
  store.close();
});

test('fenced results under concurrency: a failing statement fails its own job alone', async () => {
  const store = await open();
  const setup = await LeaseStore.open(store.path);
  setup.enqueue('setup');
  const f = setup.claim('setup', 'x', now(), 30);
  assert.equal(setup.fenced('setup', 'x', f, now(), [{ sql: 'CREATE TABLE out (job TEXT)', params: [] }], { complete: true, result: 'ok' }), true);
  setup.close();
  for (let i = 0; i < 12; i++) store.enqueue(`f${i}`);
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 6, maxAttempts: 1, backoff: fixedBackoff(1) });
  const stats = await worker.run(async (job) => {
    await sleep(5);
    const sql = job === 'f5' ? 'INSERT INTO missing_table VALUES ($1)' : 'INSERT INTO out VALUES ($1)';
    return fencedResult([{ sql, params: [job] }], `wrote ${job}`);
  }, { untilEmpty: true });
  assert.deepEqual([stats.completed, stats.dead], [11, 1]);
  const dead = store.inspect('f5');
  assert.equal(dead.dead, true);
  assert.match(dead.failures[0].error, /missing_table/);
  for (let i = 0; i < 12; i++) {
    if (i !== 5) assert.equal(store.state(`f${i}`).result, `wrote f${i}`);
  }
  store.close();
});

test('stop() signals every running handler and hands every lease back', async () => {
  const store = await open();
  for (let i = 0; i < 10; i++) store.enqueue(`s${i}`);
  const started = [];
  const reasons = [];
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 4 });
  const running = worker.run(async (job, { signal }) => {
    started.push(job);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    reasons.push(signal.reason.code);
  });
  while (started.length < 4) await sleep(10);
  await worker.stop();
  const stats = await running;
  assert.deepEqual(reasons, ['stopped', 'stopped', 'stopped', 'stopped']);
  assert.equal(stats.claimed, 4);
  for (const job of started) assert.equal(store.state(job).owner, null, `${job} handed back`);
  assert.equal(store.claimNext('other', now(), 30) !== null, true, 'a handed-back job is claimable at once');
  store.close();
});

test('concurrency is checked', async () => {
  const store = await open();
  for (const concurrency of [0, 1.5, 1025, '4']) {
    assert.throws(() => new JobWorker(store, { ttl: 30, concurrency }), (e) => e instanceof LeaseError && e.code === 'invalid_argument' && /concurrency/.test(e.message));
  }
  store.close();
});

test('64 slots are claimed a quarter at a time, and all 64 still run at once', async () => {
  const store = await open();
  for (let i = 0; i < 300; i++) store.enqueue(`q${i}`);
  // The sizes the worker asks for, seen on the store's grouped operations it claims through.
  const asked = [];
  aroundClaims(store, (n, claim) => {
    asked.push(n);
    return claim();
  });
  let running = 0;
  let most = 0;
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 64 });
  const stats = await worker.run(async () => {
    running += 1;
    most = Math.max(most, running);
    await sleep(20);
    running -= 1;
    return 'ok';
  }, { untilEmpty: true });
  store.close();
  assert.equal(stats.completed, 300);
  assert.equal(asked[0], 16, `the first claim asks for a quarter of the slots: ${asked}`);
  assert.ok(asked.every((n) => n >= 1 && n <= 16), `never more than 16 at once: ${asked}`);
  assert.equal(most, 64, 'the staggered claims still fill every slot');
});

test('a claim beside running jobs does not hold the loop, and the slots it will fill count against concurrency', async () => {
  const store = await open();
  for (let i = 0; i < 40; i++) store.enqueue(`b${i}`);
  let onTheirWay = 0;
  let mostOnTheirWay = 0;
  let reserved = 0; // slots asked for by claims not yet answered
  let running = 0;
  let most = 0;
  const overbooked = [];
  // Every claim answers 40 ms late (a busy pool, a slow disk): the jobs are leased meanwhile.
  aroundClaims(store, async (n, claim) => {
    if (running + reserved + n > 4) overbooked.push({ running, reserved, n });
    onTheirWay += 1;
    mostOnTheirWay = Math.max(mostOnTheirWay, onTheirWay);
    reserved += n;
    try {
      const claimed = await claim();
      await sleep(40);
      return claimed;
    } finally {
      onTheirWay -= 1;
      reserved -= n;
    }
  });
  const handled = [];
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 4 });
  // A claim that went again at once after a slow empty answer would keep the run from ever ending.
  const stats = await withTimeout(worker.run(async (job) => {
    running += 1;
    most = Math.max(most, running);
    await sleep(5 + (Number(job.slice(1)) % 4) * 15); // the slots free one by one
    running -= 1;
    handled.push(job);
    return 'ok';
  }, { untilEmpty: true }), 30_000, 'the drain with slow claims');
  store.close();
  assert.deepEqual([stats.claimed, stats.completed], [40, 40]);
  assert.equal(new Set(handled).size, 40, 'each job handled once');
  assert.ok(most <= 4, `never more than 4 handlers at once: ${most}`);
  assert.deepEqual(overbooked, [], 'a claim never asked for more slots than were free, counting the claims on their way');
  assert.ok(mostOnTheirWay >= 2, `a freed slot was claimed while an earlier claim was still on its way (at most ${mostOnTheirWay} at once)`);
});

test('stop() while a claim beside running jobs is on its way: its jobs are handed back, none run', async () => {
  const store = await open();
  for (let i = 0; i < 12; i++) store.enqueue(`w${i}`);
  let running = 0;
  let besideAnswered = null; // the jobs of the claim made while handlers ran
  let claimedBeside = null;
  aroundClaims(store, async (n, claim) => {
    const beside = running > 0;
    const claimed = await claim();
    if (beside && claimedBeside === null) {
      claimedBeside = claimed.map((lease) => lease.job);
      await new Promise((resolve) => (besideAnswered = resolve)); // answered once stop() was called
    }
    return claimed;
  });
  const started = [];
  const worker = new JobWorker(store, { owner: 'w', ttl: 30, idle: 0.02, concurrency: 4 });
  const run = worker.run(async (job, { signal }) => {
    started.push(job);
    running += 1;
    // w0 frees a slot; the others hold theirs until stop() signals them.
    if (job === 'w0') await sleep(20);
    else await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    running -= 1;
    return 'ok';
  }, { untilEmpty: true });
  while (besideAnswered === null) await sleep(5);
  const stopped = worker.stop();
  besideAnswered();
  await stopped;
  const stats = await run;
  assert.ok(claimedBeside.length >= 1, 'the claim beside found a job');
  for (const job of claimedBeside) {
    assert.ok(!started.includes(job), `${job}, claimed while stopping, never ran`);
    assert.equal(store.state(job).owner, null, `${job} handed back`);
  }
  assert.equal(stats.claimed, 4 + claimedBeside.length, 'the jobs handed back count as claimed');
  store.close();
});

// One process of bench/peers for the Node systems: leasefence (the npm package), BullMQ, pg-boss,
// graphile-worker, plainjob, liteque. bench/peers/bench.mjs starts it in one of three modes:
//
//   node node_worker.mjs SYSTEM enqueue --target T --jobs N    add N jobs (untimed set-up)
//   node node_worker.mjs SYSTEM work --target T --owner NAME   connect, print `ready`, wait for a
//       line on stdin, then claim + complete one job at a time until nothing is left; print one
//       JSON line {jobs, errors, start_ms, end_ms, latencies_ms, ids, durability}
//   node node_worker.mjs SYSTEM best --target T --jobs N --concurrency C --hold-ms H   one process at
//       the system's best settings for throughput (its own concurrency option, C jobs in flight),
//       each job held H ms by its handler; `ready`, go, then drain the N jobs; the same JSON line
//       as `work`, plus `setting` (what was set). Latency: from the claim call that took the job
//       to the acknowledgement of its completion, seen where the system's runner calls the store
//       (a wrapper that only notes the time, see `stopwatch`)
//   node node_worker.mjs SYSTEM stale --target T               the stale-worker story, both
//       orders ("after": B completes before A's late completion; "during": A's late completion
//       while B still holds the job), one JSON line per order
//
// Every call on a peer is its own public API; where a peer's lock cannot be made short, the
// stall is fast-forwarded in its table and the record says so. T is a file path, a postgres://
// URL or a Redis port, depending on SYSTEM.
import { createRequire } from 'node:module';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const peers = path.join(repo, 'target/bench/peers');
const requirePeer = createRequire(path.join(peers, 'package.json'));
const importPeer = (entry) => import(pathToFileURL(path.join(peers, 'node_modules', entry)).href);

const [system, mode, ...rest] = process.argv.slice(2);
const { values: opt } = parseArgs({
  args: rest,
  options: {
    target: { type: 'string' }, jobs: { type: 'string', default: '0' }, owner: { type: 'string', default: 'w' },
    concurrency: { type: 'string', default: '64' }, 'hold-ms': { type: 'string', default: '5' },
  },
});
const jobs = Number(opt.jobs);
const concurrency = Number(opt.concurrency);
const holdMs = Number(opt['hold-ms']);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const wallMs = () => performance.timeOrigin + performance.now();
const nowS = () => Date.now() / 1000;
const emit = (record) => process.stdout.write(JSON.stringify(record) + '\n');
const QUEUE = 'peers';

/** Waits for the orchestrator's go line, so that every worker starts together. */
async function waitForGo() {
  emit('ready');
  const lines = createInterface({ input: process.stdin });
  for await (const _ of lines) break;
}

/**
 * The measured loop: `next()` claims one job (its handle, or null when the queue is drained),
 * `done(handle)` completes it. A thrown storage error (SQLite busy) is counted and retried.
 */
async function drain(next, done, idOf) {
  await waitForGo();
  const latencies = [];
  const ids = [];
  let errors = 0;
  const start = wallMs();
  for (;;) {
    const began = performance.now();
    let handle;
    try {
      handle = await next();
    } catch (error) {
      if (!isBusy(error)) throw error;
      errors++;
      await sleep(1);
      continue;
    }
    if (handle == null) break;
    for (;;) {
      try {
        await done(handle);
        break;
      } catch (error) {
        if (!isBusy(error)) throw error;
        errors++;
        await sleep(1);
      }
    }
    latencies.push(performance.now() - began);
    ids.push(String(idOf(handle)));
  }
  return { jobs: latencies.length, errors, start_ms: start, end_ms: wallMs(), latencies_ms: latencies, ids };
}

/**
 * For `best`: per job, when its claim was asked for and when its completion was acknowledged
 * (wall-clock ms). A completion of a job never seen claimed, or seen twice, is kept in `ids` (the
 * orchestrator counts duplicates and missing ids from them) and fails loudly if unclaimed.
 */
function stopwatch() {
  const asked = new Map();
  const latencies = [];
  const ids = [];
  return {
    ask(id, at) {
      asked.set(String(id), at);
    },
    done(id, at = wallMs()) {
      const from = asked.get(String(id));
      if (from === undefined) throw new Error(`job ${id} completed without a claim seen`);
      latencies.push(at - from);
      ids.push(String(id));
    },
    get count() {
      return ids.length;
    },
    result(start, end, extra) {
      return { jobs: ids.length, errors: 0, start_ms: start, end_ms: end, latencies_ms: latencies, ids, ...extra };
    },
  };
}

/**
 * A stand-in for `target` whose methods stay bound to it (private fields) and `wrap` replaces
 * some. The Proxy's own target is an empty object: the package's objects are frozen, and a Proxy
 * must answer a frozen property with its own value.
 */
function intercept(target, wrap) {
  return new Proxy({}, {
    get(_, key) {
      const value = Reflect.get(target, key, target);
      if (Object.hasOwn(wrap, key)) return wrap[key](value, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
    has: (_, key) => key in target,
  });
}

/** The handler's work in `best`: hold the job `holdMs` ms (a stand-in for I/O). */
const hold = () => sleep(holdMs);

const isBusy = (error) => /SQLITE_BUSY|database is locked|busy/i.test(`${error?.code} ${error?.message}`);

/** The two orders of the story, written once; each system supplies its own steps. */
async function story(steps) {
  for (const order of ['after', 'during']) {
    const s = await steps.setup(order);
    const a = await s.claimA();
    await s.stall();
    const b = await s.claimB();
    let bOutcome;
    if (order === 'after') bOutcome = await settle(() => s.complete(b, 'B'));
    const aOutcome = await settle(() => s.complete(a, 'A'));
    if (order === 'during') bOutcome = await settle(() => s.complete(b, 'B'));
    const final = await s.inspect();
    await s.close?.();
    emit({ order, same_job: s.sameJob(a, b), a_call: aOutcome, b_call: bOutcome, final, how: s.how });
  }
}

async function settle(fn) {
  try {
    const value = await fn();
    return { ok: true, value: value === undefined ? null : value };
  } catch (error) {
    return { ok: false, error: String(error?.message ?? error).slice(0, 200) };
  }
}

// ---------------------------------------------------------------------------------------------
// leasefence, the npm package on a file: its native engine (the addon: WAL, synchronous=FULL, POSIX
// locks, as the Rust library) or its wasm fallback (rollback journal, synchronous=EXTRA, dot-file
// lock), as LEASEFENCE_ENGINE picks; or, given a postgres:// target, on PostgreSQL (the crate's statements in wasm, `pg` carrying
// them; every call a Promise, so each is awaited: a file store's answers pass through `await`).
const onPostgres = () => /^postgres(ql)?:/.test(opt.target);
/** The package's store on the target: `LeaseStore.connect` for a postgres:// URL, `open` for a file. */
const openLeasefence = (LeaseStore) => (onPostgres() ? LeaseStore.connect(opt.target) : LeaseStore.open(opt.target));
/** What the store's engine makes durable, by the engine the store reports it opened with. */
const leasefenceDurability = (store) => {
  if (onPostgres()) return 'PostgreSQL synchronous_commit=on';
  if (store.engine === 'native') return 'journal_mode=WAL, synchronous=FULL (the native engine, set by the library)';
  return 'journal_mode=DELETE, synchronous=EXTRA (the wasm engine, set by the package)';
};
const leasefence = {
  async load() {
    return requirePeer(path.join(repo, 'target/npm/leasefence'));
  },
  async enqueue() {
    const { LeaseStore } = await this.load();
    const store = await openLeasefence(LeaseStore);
    for (let i = 0; i < jobs; i++) await store.enqueue(`job-${String(i).padStart(7, '0')}`);
    await store.close();
  },
  async work() {
    const { LeaseStore } = await this.load();
    // Many processes opening one file at once: the package can answer a busy file with "not a
    // leasefence database (... database is locked)" instead of waiting (reported; the crate is
    // not changed here), so the worker retries the open and reports how often it had to.
    let store;
    let openRetries = 0;
    for (;;) {
      try {
        store = await openLeasefence(LeaseStore);
        break;
      } catch (error) {
        if (!/database is locked/.test(error.message) || openRetries >= 100) throw error;
        openRetries++;
        await sleep(20 + Math.random() * 80);
      }
    }
    const me = opt.owner;
    const result = await drain(
      () => store.claimNext(me, nowS(), 30),
      async ({ job, fence }) => {
        if (!(await store.complete(job, me, fence, nowS(), 'ok'))) throw new Error(`complete of ${job} refused`);
      },
      (h) => h.job,
    );
    await store.close();
    return { ...result, open_retries: openRetries, durability: leasefenceDurability(store) };
  },
  async best() {
    const { LeaseStore, JobWorker } = await this.load();
    const store = await openLeasefence(LeaseStore);
    const watch = stopwatch();
    // The worker's store calls at concurrency > 1 all go through store.grouped: note the time of
    // each claimNextMany (per job it hands out) and of each granted withReason.complete.
    const withReason = intercept(store.grouped.withReason, {
      complete: (complete, t) => async (...args) => {
        const answer = await complete.apply(t, args);
        if (answer.value) watch.done(args[0]);
        return answer;
      },
    });
    const grouped = intercept(store.grouped, {
      withReason: () => withReason,
      claimNextMany: (claim, t) => async (...args) => {
        const at = wallMs();
        const claims = await claim.apply(t, args);
        for (const c of claims) watch.ask(c.job, at);
        return claims;
      },
    });
    const worker = new JobWorker(intercept(store, { grouped: () => grouped }), { owner: opt.owner, ttl: 30, idle: 0.01, concurrency });
    await waitForGo();
    const start = wallMs();
    const stats = await worker.run(() => hold().then(() => 'ok'), { untilEmpty: true });
    const end = wallMs();
    await store.close();
    return watch.result(start, end, { stats, durability: leasefenceDurability(store),
      setting: `new JobWorker(store, {concurrency: ${concurrency}})${onPostgres() ? ' (its pool: 10 connections, the default)' : ''}` });
  },
  async stale() {
    const { LeaseStore } = await this.load();
    await story({
      async setup(order) {
        const job = `stale-${order}`;
        const a = await openLeasefence(LeaseStore);
        const b = await openLeasefence(LeaseStore); // B: its own connection
        await a.enqueue(job);
        return {
          how: 'claim(ttl 0.5 s), real sleep 0.7 s, B claim, then complete(job, owner, fence) for each',
          claimA: async () => ({ store: a, owner: 'worker-a', fence: await a.claim(job, 'worker-a', nowS(), 0.5) }),
          stall: () => sleep(700),
          claimB: async () => ({ store: b, owner: 'worker-b', fence: await b.claim(job, 'worker-b', nowS(), 30) }),
          sameJob: (x, y) => x.fence != null && y.fence != null,
          complete: (h, value) => h.store.withReason.complete(job, h.owner, h.fence, nowS(), value),
          inspect: () => a.state(job),
          close: async () => { await a.close(); await b.close(); },
        };
      },
    });
  },
};

// ---------------------------------------------------------------------------------------------
// BullMQ on Redis (the orchestrator sets appendonly yes and appendfsync always or everysec).
const bullmq = {
  connection: () => ({ host: '127.0.0.1', port: Number(opt.target), maxRetriesPerRequest: null }),
  async enqueue() {
    const { Queue } = requirePeer('bullmq');
    const queue = new Queue(QUEUE, { connection: this.connection() });
    for (let i = 0; i < jobs; i += 500) {
      const batch = [];
      for (let k = i; k < Math.min(jobs, i + 500); k++) batch.push({ name: 'job', data: { k } });
      await queue.addBulk(batch);
    }
    await queue.close();
  },
  async work() {
    const { Worker } = requirePeer('bullmq');
    const IORedis = requirePeer('ioredis');
    // Manual processing (no processor function): getNextJob + moveToCompleted with our token.
    const worker = new Worker(QUEUE, null, { connection: this.connection(), autorun: false });
    await worker.waitUntilReady();
    const token = opt.owner;
    const result = await drain(
      () => worker.getNextJob(token, { block: false }).then((job) => job ?? null),
      (job) => job.moveToCompleted('ok', token, false),
      (job) => job.id,
    );
    const redis = new IORedis(this.connection());
    const [, fsync] = await redis.config('GET', 'appendfsync');
    const [, aof] = await redis.config('GET', 'appendonly');
    redis.disconnect();
    await worker.close();
    return { ...result, durability: `appendonly ${aof}, appendfsync ${fsync}` };
  },
  async best() {
    const { Worker } = requirePeer('bullmq');
    const IORedis = requirePeer('ioredis');
    const watch = stopwatch();
    // Its own worker: `concurrency` processor calls at once. A job's claim is its move to active,
    // stamped `processedOn` (the time the worker asked for it); 'completed' is emitted once
    // moveToCompleted has returned.
    const worker = new Worker(QUEUE, async (job) => {
      watch.ask(job.id, job.processedOn ?? wallMs());
      await hold();
      return 'ok';
    }, { connection: this.connection(), concurrency, autorun: false });
    let errors = 0;
    let drained;
    const allDone = new Promise((resolve) => { drained = resolve; });
    worker.on('completed', (job) => {
      watch.done(job.id);
      if (watch.count === jobs) drained();
    });
    worker.on('failed', () => { errors++; });
    await worker.waitUntilReady();
    await waitForGo();
    const start = wallMs();
    const running = worker.run();
    await allDone;
    const end = wallMs();
    await worker.close();
    await running;
    const redis = new IORedis(this.connection());
    const [, fsync] = await redis.config('GET', 'appendfsync');
    const [, aof] = await redis.config('GET', 'appendonly');
    redis.disconnect();
    return { ...watch.result(start, end), errors, durability: `appendonly ${aof}, appendfsync ${fsync}`,
      setting: `new Worker(queue, processor, {concurrency: ${concurrency}})` };
  },
  async stale() {
    const { Queue, Worker, Job } = requirePeer('bullmq');
    const connection = this.connection();
    await story({
      async setup(order) {
        const name = `stale-${order}-${process.pid}`;
        const queue = new Queue(name, { connection });
        const settings = { connection, autorun: false, lockDuration: 500, stalledInterval: 200, maxStalledCount: 5 };
        const workerA = new Worker(name, null, settings);
        const workerB = new Worker(name, null, settings);
        await queue.add('job', { order });
        return {
          how: 'Worker(null processor, lockDuration 500 ms, stalledInterval 200 ms); getNextJob(token) and ' +
            'job.moveToCompleted(value, token); the stall is a real sleep; B runs the stalled-job checker',
          claimA: async () => ({ job: await workerA.getNextJob('token-a'), token: 'token-a' }),
          async stall() {
            await sleep(700); // A's lock (500 ms) lapses
            await workerB.startStalledCheckTimer(); // BullMQ's own stalled-job check moves it back to wait
            const id = (await queue.getJobs(['wait'])).map((j) => j.id);
            for (let i = 0; i < 50 && id.length === 0; i++) {
              await sleep(100);
              id.push(...(await queue.getJobs(['wait'])).map((j) => j.id));
            }
          },
          claimB: async () => ({ job: await workerB.getNextJob('token-b'), token: 'token-b' }),
          sameJob: (x, y) => Boolean(x.job && y.job && x.job.id === y.job.id),
          complete: (h, value) => h.job.moveToCompleted(value, h.token, false).then(() => 'completed'),
          async inspect() {
            const jobs = await queue.getJobs(['completed', 'active', 'wait', 'failed']);
            const job = jobs[0] && (await Job.fromId(queue, jobs[0].id));
            return job ? { state: await job.getState(), returnvalue: job.returnvalue } : null;
          },
          async close() {
            await workerA.close(true);
            await workerB.close(true);
            await queue.obliterate({ force: true });
            await queue.close();
          },
        };
      },
    });
  },
};

// ---------------------------------------------------------------------------------------------
// pg-boss on PostgreSQL (synchronous_commit=on, the server's default).
const pgBoss = {
  async boss(config = {}) {
    const { default: PgBoss } = await import(pathToFileURL(requirePeer.resolve('pg-boss')).href).then((m) => ({ default: m.default ?? m }));
    const boss = new PgBoss({ connectionString: opt.target, supervise: false, schedule: false, max: 2, ...config });
    boss.on('error', () => {});
    await boss.start();
    return boss;
  },
  async enqueue() {
    const boss = await this.boss();
    await boss.createQueue(QUEUE);
    for (let i = 0; i < jobs; i += 500) {
      const batch = [];
      for (let k = i; k < Math.min(jobs, i + 500); k++) batch.push({ name: QUEUE, data: { k } });
      await boss.insert(batch);
    }
    await boss.stop({ graceful: false, wait: true });
  },
  async work() {
    const boss = await this.boss({ migrate: false });
    const result = await drain(
      async () => (await boss.fetch(QUEUE))[0] ?? null,
      (job) => boss.complete(QUEUE, job.id, { r: 'ok' }),
      (job) => job.id,
    );
    await boss.stop({ graceful: false, wait: true });
    return { ...result, durability: 'PostgreSQL synchronous_commit=on' };
  },
  async best() {
    const pg = requirePeer('pg');
    const pool = new pg.Pool({ connectionString: opt.target, max: 4 });
    const watch = stopwatch();
    let errors = 0;
    let drained;
    const allDone = new Promise((resolve) => { drained = resolve; });
    // Its own `db` option (a pool of ours behind executeSql): the fetch (state -> active) notes
    // when each job was asked for, the completion (state -> completed) when it was acknowledged.
    const db = {
      async executeSql(text, values) {
        const at = wallMs();
        const result = await pool.query(text, values);
        if (/FOR UPDATE SKIP LOCKED/.test(text) && /started_on = now\(\)/.test(text)) {
          for (const row of result.rows) watch.ask(row.id, at);
        } else if (/completed_on = now\(\)/.test(text) && Array.isArray(values?.[1])) {
          if (Number(result.rows[0]?.count) !== values[1].length) errors++;
          for (const id of values[1]) watch.done(id);
          if (watch.count >= jobs) drained();
        }
        return result;
      },
    };
    const boss = await this.boss({ db, migrate: false });
    await waitForGo();
    const start = wallMs();
    // One work() loop fetching `concurrency` jobs at a time; the handler gets the batch and holds
    // every job at once. Its loop waits out the polling interval (0.5 s at the least) after each
    // batch; the completion is sent without waiting for it.
    await boss.work(QUEUE, { batchSize: concurrency, pollingIntervalSeconds: 0.5 }, (batch) => Promise.all(batch.map(() => hold())));
    await allDone;
    const end = wallMs();
    await boss.stop({ graceful: false, wait: true });
    await pool.end();
    return { ...watch.result(start, end), errors, durability: 'PostgreSQL synchronous_commit=on',
      setting: `work(queue, {batchSize: ${concurrency}, pollingIntervalSeconds: 0.5}, handler)` };
  },
  async stale() {
    // Its lease is the job's expiration: expireInSeconds (at least 1), enforced by its own
    // maintenance (supervise, every second), which fails the job into retry.
    const boss = await this.boss({ supervise: true, maintenanceIntervalSeconds: 1, monitorStateIntervalSeconds: 1 });
    await story({
      async setup(order) {
        const name = `stale_${order}_${process.pid}`;
        await boss.createQueue(name);
        const id = await boss.send(name, { order }, { expireInSeconds: 1, retryLimit: 3, retryDelay: 0 });
        return {
          how: 'send(expireInSeconds 1, retryLimit 3); fetch(); real sleep until its maintenance expires the job ' +
            'into retry; fetch() by B; complete(name, id, data) for each',
          claimA: async () => (await boss.fetch(name))[0],
          async stall() {
            for (let i = 0; i < 100; i++) {
              await sleep(250);
              const job = await boss.getJobById(name, id);
              if (job && job.state === 'retry') return;
            }
          },
          claimB: async () => (await boss.fetch(name))[0],
          sameJob: (x, y) => Boolean(x && y && x.id === y.id),
          complete: (job, value) => boss.complete(name, job.id, { by: value }),
          async inspect() {
            const job = await boss.getJobById(name, id);
            return job && { state: job.state, output: job.output };
          },
        };
      },
    });
    await boss.stop({ graceful: false, wait: true });
  },
};

// ---------------------------------------------------------------------------------------------
// graphile-worker on PostgreSQL. Its own concurrency model: runOnce() in each process runs jobs
// until none is left; a job is claimed, run, and deleted on success.
const graphile = {
  async enqueue() {
    const { makeWorkerUtils } = requirePeer('graphile-worker');
    const utils = await makeWorkerUtils({ connectionString: opt.target });
    await utils.migrate();
    for (let i = 0; i < jobs; i += 500) {
      const batch = [];
      for (let k = i; k < Math.min(jobs, i + 500); k++) batch.push({ identifier: 'job', payload: { k } });
      await utils.addJobs(batch);
    }
    await utils.release();
  },
  async work() {
    const { runOnce, Logger } = requirePeer('graphile-worker');
    const pg = requirePeer('pg');
    const pgPool = new pg.Pool({ connectionString: opt.target, max: 2 });
    await pgPool.query('select 1');
    const quiet = new Logger(() => () => {});
    await waitForGo();
    // The task runs between graphile's claim and its completion: the latency of a job is the
    // time from one task start to the next (claim, run, complete), and the last one to the end.
    const starts = [];
    const ids = [];
    const start = wallMs();
    await runOnce({
      pgPool, concurrency: 1, logger: quiet, noHandleSignals: true,
      taskList: { job: async (_payload, helpers) => { starts.push(performance.now()); ids.push(String(helpers.job.id)); } },
    });
    const end = performance.now();
    const latencies = starts.map((t, i) => (starts[i + 1] ?? end) - t);
    await pgPool.end();
    return { jobs: ids.length, errors: 0, start_ms: start, end_ms: wallMs(), latencies_ms: latencies, ids,
      durability: 'PostgreSQL synchronous_commit=on' };
  },
  async best() {
    const { runOnce, Logger } = requirePeer('graphile-worker');
    const pg = requirePeer('pg');
    const watch = stopwatch();
    const pgPool = new pg.Pool({ connectionString: opt.target, max: 10 });
    // Its completions are batched and sent without the task waiting (completeJobBatchDelay), so
    // the time is noted where they reach the server: on every client of the pool we hand it, the
    // job fetch (rows locked for this pool) and the completion (delete of the job rows).
    pgPool.on('connect', (client) => {
      const query = client.query;
      client.query = function timedQuery(config, ...rest) {
        const answer = query.call(this, config, ...rest);
        if (!config || typeof config !== 'object' || typeof answer?.then !== 'function') return answer;
        const at = wallMs();
        return answer.then((result) => {
          if (/delete from \S*_private_jobs/i.test(config.text)) {
            const ids = Array.isArray(config.values[0]) ? config.values[0] : [config.values[0]];
            for (const id of ids) watch.done(id);
          } else if (result.rows?.length && 'task_id' in result.rows[0] && 'locked_at' in result.rows[0]) {
            for (const row of result.rows) watch.ask(row.id, at);
          }
          return result;
        });
      };
    });
    await pgPool.query('select 1');
    const quiet = new Logger(() => () => {});
    const localQueue = concurrency + 1; // its docs' starting point: concurrent jobs + 1
    await waitForGo();
    const start = wallMs();
    await runOnce({
      pgPool, concurrency, logger: quiet, noHandleSignals: true,
      preset: { worker: { localQueue: { size: localQueue }, completeJobBatchDelay: 0 } },
      taskList: { job: () => hold() },
    });
    const end = wallMs();
    await pgPool.end();
    return watch.result(start, end, { durability: 'PostgreSQL synchronous_commit=on',
      setting: `runOnce({concurrency: ${concurrency}, localQueue: {size: ${localQueue}}, completeJobBatchDelay: 0})` });
  },
  async stale() {
    const { run, makeWorkerUtils, Logger } = requirePeer('graphile-worker');
    const quiet = new Logger(() => () => {});
    const utils = await makeWorkerUtils({ connectionString: opt.target });
    await utils.migrate();
    await story({
      async setup(order) {
        const identifier = `stale_${order}`;
        const gates = { a: deferred(), b: deferred(), aStarted: deferred(), bStarted: deferred() };
        const events = [];
        const task = (who) => async (_payload, helpers) => {
          gates[`${who}Started`].resolve(helpers.job.id);
          await gates[who].promise;
          return who;
        };
        const runner = (who) => run({
          connectionString: opt.target, concurrency: 1, logger: quiet, noHandleSignals: true, pollInterval: 100,
          taskList: { [identifier]: task(who) },
        }).then((r) => {
          for (const e of ['job:success', 'job:error', 'job:failed', 'job:complete']) {
            r.events.on(e, ({ job }) => events.push(`${who} ${e} ${job.id}`));
          }
          return r;
        });
        const job = await utils.addJob(identifier, { order });
        let runnerA;
        let runnerB;
        return {
          how: 'run({concurrency 1}) for A and for B, one task each that waits for the story; graphile\'s lock ' +
            'is a fixed 4 hours, so A\'s stall is fast-forwarded: locked_at is set 4 h 1 min back in its jobs table',
          claimA: async () => { runnerA = await runner('a'); return { who: 'a', id: await gates.aStarted.promise }; },
          stall: () => utils.withPgClient((client) => client.query(
            "update graphile_worker._private_jobs set locked_at = now() - interval '4 hours 1 minute' where id = $1", [job.id])),
          claimB: async () => { runnerB = await runner('b'); return { who: 'b', id: await gates.bStarted.promise }; },
          sameJob: (x, y) => String(x.id) === String(y.id),
          async complete(h) {
            // The task returns: graphile's worker completes the job with its own call.
            const exists = () => utils.withPgClient(async (client) =>
              (await client.query('select 1 from graphile_worker._private_jobs where id = $1', [job.id])).rowCount === 1);
            const before = await exists();
            gates[h.who].resolve();
            await sleep(600);
            return { events: events.filter((e) => e.startsWith(h.who)), changed: before && !(await exists()) ? 1 : 0 };
          },
          inspect: () => utils.withPgClient(async (client) =>
            (await client.query('select id, locked_by, attempts from graphile_worker._private_jobs where id = $1', [job.id])).rows[0] ??
              'deleted (completed)'),
          async close() {
            await runnerA?.stop();
            await runnerB?.stop();
          },
        };
      },
    });
    await utils.release();
  },
};

function deferred() {
  let resolve;
  const promise = new Promise((r) => { resolve = r; });
  return { promise, resolve };
}

// ---------------------------------------------------------------------------------------------
// plainjob on better-sqlite3 (WAL; it sets synchronous=NORMAL, the bench raises it to FULL).
const plainjob = {
  async queue(timeout) {
    const { defineQueue, better } = await importPeer('plainjob/dist/plainjob.js');
    const Database = requirePeer('better-sqlite3');
    const db = new Database(opt.target);
    const queue = defineQueue({ connection: better(db), timeout, logger: quietLogger });
    db.pragma('synchronous = FULL');
    return { queue, db };
  },
  async enqueue() {
    const { queue } = await this.queue();
    const data = [];
    for (let k = 0; k < jobs; k++) data.push({ k });
    queue.addMany('job', data);
    queue.close();
  },
  async work() {
    const { queue, db } = await this.queue();
    const result = await drain(
      () => queue.getAndMarkJobAsProcessing('job') ?? null,
      (job) => queue.markJobAsDone(job.id),
      (job) => job.id,
    );
    const sync = db.pragma('synchronous', { simple: true });
    queue.close();
    return { ...result, durability: `journal_mode=WAL, synchronous=${sync} (FULL set by the bench; plainjob sets NORMAL)` };
  },
  async best() {
    // No concurrency option (defineWorker runs one job at a time): `concurrency` loops of its
    // own calls in this process, on one connection (better-sqlite3 is synchronous: the claims and
    // completions take turns, the holds overlap).
    const { queue, db } = await this.queue();
    const watch = stopwatch();
    await waitForGo();
    const start = wallMs();
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (;;) {
        const at = wallMs();
        const job = queue.getAndMarkJobAsProcessing('job');
        if (!job) break;
        watch.ask(job.id, at);
        await hold();
        queue.markJobAsDone(job.id);
        watch.done(job.id);
      }
    }));
    const end = wallMs();
    const sync = db.pragma('synchronous', { simple: true });
    queue.close();
    return watch.result(start, end, { durability: `journal_mode=WAL, synchronous=${sync} (FULL set by the bench; plainjob sets NORMAL)`,
      setting: `${concurrency} loops of getAndMarkJobAsProcessing + markJobAsDone in one process (it has no concurrency option)` });
  },
  async stale() {
    await story({
      async setup(order) {
        const a = await plainjob.queue(500);
        const b = await plainjob.queue(500);
        const type = `stale-${order}`;
        const { id } = a.queue.add(type, { order });
        return {
          how: 'defineQueue({timeout: 500 ms}); getAndMarkJobAsProcessing; real sleep 0.7 s; requeueTimedOutJobs(500) ' +
            '(what its maintenance timer runs); markJobAsDone(id) for each',
          claimA: () => ({ queue: a.queue, job: a.queue.getAndMarkJobAsProcessing(type) }),
          async stall() { await sleep(700); b.queue.requeueTimedOutJobs(500); },
          claimB: () => ({ queue: b.queue, job: b.queue.getAndMarkJobAsProcessing(type) }),
          sameJob: (x, y) => Boolean(x.job && y.job && x.job.id === y.job.id),
          complete: (h) => h.queue.markJobAsDone(h.job.id),
          inspect: () => a.queue.getJobById(id),
          close: () => { a.queue.close(); b.queue.close(); },
        };
      },
    });
  },
};

const quietLogger = { error() {}, warn() {}, info() {}, debug() {} };

// ---------------------------------------------------------------------------------------------
// liteque on better-sqlite3 through drizzle (WAL; it sets synchronous=NORMAL, the bench FULL).
const liteque = {
  async queue() {
    const { buildDBClient, SqliteQueue } = await importPeer('liteque/dist/index.js');
    const db = buildDBClient(opt.target, { runMigrations: true });
    const raw = db.session.client; // the better-sqlite3 Database under drizzle
    raw.pragma('synchronous = FULL');
    raw.pragma('busy_timeout = 10000');
    const queue = new SqliteQueue(QUEUE, db, { defaultJobArgs: { numRetries: 3 }, keepFailedJobs: false });
    return { queue, raw };
  },
  async enqueue() {
    const { queue, raw } = await this.queue();
    raw.exec('BEGIN');
    for (let k = 0; k < jobs; k++) await queue.enqueue({ k });
    raw.exec('COMMIT');
    raw.close();
  },
  async work() {
    const { queue, raw } = await this.queue();
    const result = await drain(
      async () => (await queue.attemptDequeue({ timeoutSecs: 30 })) ?? null,
      (job) => queue.finalize(job.id, job.allocationId, 'completed'),
      (job) => job.id,
    );
    const sync = raw.pragma('synchronous', { simple: true });
    raw.close();
    return { ...result, durability: `journal_mode=WAL, synchronous=${sync} (FULL set by the bench; liteque sets NORMAL)` };
  },
  async best() {
    const { Runner } = await importPeer('liteque/dist/index.js');
    const { queue, raw } = await this.queue();
    const watch = stopwatch();
    // Its Runner with its own `concurrency`; its claim (attemptDequeue) and completion (finalize)
    // are noted on the queue it runs.
    const attemptDequeue = queue.attemptDequeue.bind(queue);
    const finalize = queue.finalize.bind(queue);
    queue.attemptDequeue = async (options) => {
      const at = wallMs();
      const job = await attemptDequeue(options);
      if (job) watch.ask(job.id, at);
      return job;
    };
    queue.finalize = async (id, ...rest) => {
      await finalize(id, ...rest);
      if (rest[1] === 'completed') watch.done(id);
    };
    const runner = new Runner(queue, { run: () => hold() }, { pollIntervalMs: 10, timeoutSecs: 30, concurrency });
    await waitForGo();
    const start = wallMs();
    await runner.runUntilEmpty();
    const end = wallMs();
    const sync = raw.pragma('synchronous', { simple: true });
    raw.close();
    return watch.result(start, end, { durability: `journal_mode=WAL, synchronous=${sync} (FULL set by the bench; liteque sets NORMAL)`,
      setting: `new Runner(queue, funcs, {concurrency: ${concurrency}, pollIntervalMs: 10}).runUntilEmpty()` });
  },
  async stale() {
    await story({
      async setup() {
        const a = await liteque.queue();
        const b = await liteque.queue();
        const job = await a.queue.enqueue({ stale: true });
        return {
          how: 'attemptDequeue({timeoutSecs: 1}) (its lease; whole seconds); real sleep 2.1 s; attemptDequeue by B; ' +
            'finalize(id, allocationId, "completed") for each',
          claimA: async () => ({ queue: a.queue, raw: a.raw, job: await a.queue.attemptDequeue({ timeoutSecs: 1 }) }),
          stall: () => sleep(2100),
          claimB: async () => ({ queue: b.queue, raw: b.raw, job: await b.queue.attemptDequeue({ timeoutSecs: 30 }) }),
          sameJob: (x, y) => Boolean(x.job && y.job && x.job.id === y.job.id),
          async complete(h) {
            const total = () => h.raw.prepare('select total_changes() as n').get().n;
            const before = total();
            await h.queue.finalize(h.job.id, h.job.allocationId, 'completed');
            return { changed: total() - before };
          },
          inspect: () => a.raw.prepare('select id, status, allocationId from tasks where id = ?').get(job.id) ?? 'deleted (completed)',
          close: () => { a.raw.close(); b.raw.close(); },
        };
      },
    });
  },
};

const systems = { leasefence, bullmq, 'pg-boss': pgBoss, 'graphile-worker': graphile, plainjob, liteque };

async function main() {
  const impl = systems[system];
  if (!impl || !['enqueue', 'work', 'best', 'stale'].includes(mode)) {
    throw new Error(`usage: node_worker.mjs {${Object.keys(systems).join('|')}} {enqueue|work|best|stale} --target T`);
  }
  const result = await impl[mode]();
  if (mode === 'work' || mode === 'best') emit(result);
}

main().then(() => process.exit(0), (error) => {
  console.error(`node_worker ${system} ${mode}: ${error.stack ?? error}`);
  process.exit(1);
});

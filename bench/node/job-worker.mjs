// What the worker runtime costs per job: jobs per second through JobWorker.run (heartbeat timers,
// awaits, the attempt check) against a bare claimNext + complete loop on the same kind of file, in
// the same run, alternating, median (min-max) over the repeats. A second pair has handlers that
// hold each job for `--hold` ms, so the heartbeat renews (ttl 3 x hold) while they run.
// Then a row in the caller's table with each job: fencedResult (one commit) against a fenced write
// and then complete (two commits).
// Then how late a lost lease is signalled after it ends while the event loop is free: the file
// is held busy (an empty <db>.lock directory, as a native holder leaves it) from the claim on, so
// no renew gets through, over `--signal-rounds` rounds.
//
//   npm run package && node bench/node/job-worker.mjs [--dir /dev/shm] [--jobs 300] [--repeats 5] [--hold 30] [--held-jobs 40] [--signal-rounds 30]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { LeaseStore, JobWorker, fencedResult } = require(process.env.LEASEFENCE_PKG ?? path.join(repo, 'target/npm/leasefence'));

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '300' },
    repeats: { type: 'string', default: '5' },
    hold: { type: 'string', default: '30' },
    'held-jobs': { type: 'string', default: '40' },
    'signal-rounds': { type: 'string', default: '30' },
    dir: { type: 'string', default: os.tmpdir() },
  },
});
const jobs = Number(values.jobs);
const repeats = Number(values.repeats);
const holdMs = Number(values.hold);
const heldJobs = Number(values['held-jobs']);
// --dir /dev/shm (tmpfs: fsync costs nothing) shows the runtime's own cost without the disk's noise.
const dir = fs.mkdtempSync(path.join(values.dir, 'leasefence-bench-worker-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const now = () => Date.now() / 1000;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let files = 0;
async function seeded(count) {
  const db = path.join(dir, `b${files++}.db`);
  const store = await LeaseStore.open(db);
  for (let i = 0; i < count; i++) store.enqueue(`job-${i}`, null, `payload ${i}`);
  return store;
}

/** The loop a user writes without the runtime: claim, handle, complete (no heartbeat). */
async function bare(count, ttl, handle) {
  const store = await seeded(count);
  const started = performance.now();
  let done = 0;
  for (;;) {
    const claimed = store.claimNext('bare', now(), ttl);
    if (!claimed) break;
    const result = await handle(claimed.job);
    if (store.complete(claimed.job, 'bare', claimed.fence, now(), result)) done += 1;
  }
  const seconds = (performance.now() - started) / 1000;
  store.close();
  if (done !== count) throw new Error(`bare loop completed ${done} of ${count}`);
  return { perSecond: count / seconds, renewals: 0 };
}

async function runtime(count, ttl, handle) {
  const store = await seeded(count);
  const worker = new JobWorker(store, { owner: 'runtime', ttl });
  const started = performance.now();
  const stats = await worker.run((job) => handle(job), { untilEmpty: true });
  const seconds = (performance.now() - started) / 1000;
  store.close();
  if (stats.completed !== count) throw new Error(`runtime completed ${stats.completed} of ${count}`);
  return { perSecond: count / seconds, renewals: stats.renewals };
}

const summary = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0], max: sorted.at(-1) };
};
const fmt = ({ median, min, max }, digits = 1) => `${median.toFixed(digits)} (${min.toFixed(digits)}-${max.toFixed(digits)})`;

const cases = [
  { name: 'instant handler', count: jobs, ttl: 30, handle: (job) => `done ${job}` },
  {
    name: `handler holding each job ${holdMs} ms, ttl ${(3 * holdMs) / 1000} s (a renew every ${holdMs} ms)`,
    count: heldJobs,
    ttl: (3 * holdMs) / 1000,
    handle: async (job) => {
      await sleep(holdMs);
      return `done ${job}`;
    },
  },
];
for (const c of cases) {
  const ratios = [];
  const bareRates = [];
  const runtimeRates = [];
  let renewals = 0;
  for (let r = 0; r < repeats; r++) {
    const b = await bare(c.count, c.ttl, c.handle);
    const w = await runtime(c.count, c.ttl, c.handle);
    bareRates.push(b.perSecond);
    runtimeRates.push(w.perSecond);
    ratios.push(w.perSecond / b.perSecond);
    renewals += w.renewals;
  }
  const line = { case: c.name, jobs: c.count, repeats, bare: summary(bareRates), runtime: summary(runtimeRates), ratio: summary(ratios), renewalsPerJob: renewals / (repeats * c.count) };
  console.log(JSON.stringify(line));
  console.error(`${c.name}: bare ${fmt(line.bare)} jobs/s, runtime ${fmt(line.runtime)} jobs/s, runtime/bare ${fmt(line.ratio, 2)}x, ${line.renewalsPerJob.toFixed(2)} renewals a job`);
}

// A row in the caller's table with each job: fencedResult (one commit: the row and the completion)
// against the handler's own fenced write followed by the runtime's complete (two commits).
async function withRows(count, oneCommit) {
  const store = await seeded(count);
  store.enqueue('setup'); // the table is made by a fenced write of a job of its own
  const fence = store.claim('setup', 'setup', now(), 30);
  store.fenced('setup', 'setup', fence, now(), [{ sql: 'CREATE TABLE totals(job TEXT PRIMARY KEY, total INTEGER NOT NULL)' }], { complete: true });
  const worker = new JobWorker(store, { owner: 'rows', ttl: 30 });
  const insert = (job) => ({ sql: 'INSERT INTO totals(job, total) VALUES (?, ?)', params: [job, job.length] });
  const started = performance.now();
  const stats = await worker.run((job, { fence }) => {
    if (oneCommit) return fencedResult([insert(job)], 'filed');
    if (!store.fenced(job, 'rows', fence, now(), [insert(job)])) throw new Error('the row was refused');
    return 'filed';
  }, { untilEmpty: true });
  const seconds = (performance.now() - started) / 1000;
  store.close();
  if (stats.completed !== count) throw new Error(`completed ${stats.completed} of ${count}`);
  return count / seconds;
}
{
  const one = [];
  const two = [];
  const ratios = [];
  for (let r = 0; r < repeats; r++) {
    const a = await withRows(jobs, false);
    const b = await withRows(jobs, true);
    two.push(a);
    one.push(b);
    ratios.push(b / a);
  }
  const line = { case: 'a row with each job', jobs, repeats, twoCommits: summary(two), fencedResult: summary(one), ratio: summary(ratios) };
  console.log(JSON.stringify(line));
  console.error(`a row with each job: fenced write then complete ${fmt(line.twoCommits)} jobs/s, fencedResult ${fmt(line.fencedResult)} jobs/s, ratio ${fmt(line.ratio, 2)}x`);
}

// Signal latency: the lease ends with every renew refused as busy; the handler notes when told.
const rounds = Number(values['signal-rounds']);
const lateMs = [];
const busyStore = await LeaseStore.open(path.join(dir, 'signal.db'), { busyTimeout: 0.01 });
for (let i = 0; i < rounds; i++) busyStore.enqueue(`s${i}`);
const lock = `${busyStore.path}.lock`;
const worker = new JobWorker(busyStore, { owner: 'signal', ttl: 0.3, idle: 0.01 });
await worker.run(async (job, { signal, attempt }) => {
  if (attempt > 1) return 'later';
  fs.mkdirSync(lock);
  await new Promise((resolve) => signal.addEventListener('abort', resolve));
  lateMs.push((now() - signal.reason.reason.until) * 1000);
  fs.rmdirSync(lock);
  return 'discarded';
}, { untilEmpty: true });
busyStore.close();
const late = summary(lateMs);
console.log(JSON.stringify({ case: 'signal after the lease end, renews busy', rounds, lateMs: late }));
console.error(`signalled after the lease end (busy file, loop free), ${rounds} rounds: median ${late.median.toFixed(1)} ms, worst ${late.max.toFixed(1)} ms (best ${late.min.toFixed(1)})`);

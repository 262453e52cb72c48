// The npm package on PostgreSQL next to the Rust backend on the same server, in the same run:
// the cost of one claim_next + complete cycle (ms) from one caller, the package's against a native
// `leasefence batch` process's (the two take turns, swapped every other repeat); and jobs/s of a
// JobWorker in one Node process at concurrency 1 and 64 (handlers answering at once). Every
// measurement works in a schema of its own, filled by the package (enqueueMany) before the clock.
//
//   cargo build --release -p leasefence-cli && bash scripts/package.sh
//   bash scripts/postgres.sh node bench/node/pg-ops.mjs [--cycles 300] [--repeats 3] [--jobs 2000]
//
// Prints one JSON line per repeat and a markdown table at the end.
import { createRequire } from 'node:module';
import path from 'node:path';
import readline from 'node:readline';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { LeaseStore, JobWorker } = require(process.env.LEASEFENCE_PKG ?? path.join(repo, 'target/npm/leasefence'));
const { Client } = require('pg');
const CLI = process.env.LEASEFENCE_CLI ?? path.join(repo, 'target/release/leasefence');

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '300' }, repeats: { type: 'string', default: '3' }, jobs: { type: 'string', default: '2000' } } });
const CYCLES = Number(values.cycles);
const REPEATS = Number(values.repeats);
const JOBS = Number(values.jobs);
const BASE = process.env.LEASEFENCE_PG_URL;
if (!BASE) throw new Error('pg-ops: LEASEFENCE_PG_URL is not set (run through scripts/postgres.sh)');

let schemas = 0;
async function freshSchema() {
  const name = `bench_${process.pid}_${schemas++}`;
  const admin = new Client({ connectionString: BASE });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  await admin.end();
  return `${BASE}${BASE.includes('?') ? '&' : '?'}options=-csearch_path%3D${name}`;
}

async function filled(count) {
  const url = await freshSchema();
  const store = await LeaseStore.open(url);
  for (let i = 0; i < count; i += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - i) }, (_, k) => ({ job: `j${i + k}` }));
    await store.enqueueMany(batch);
  }
  return { url, store };
}

/** A native `leasefence batch` process, one request at a time. */
function nativeBatch(url) {
  const child = spawn(CLI, ['--db', url, 'batch'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const waiting = [];
  readline.createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()(JSON.parse(line)));
  return {
    request: (obj) => new Promise((resolve) => { waiting.push(resolve); child.stdin.write(`${JSON.stringify(obj)}\n`); }),
    end: () => new Promise((resolve) => { child.on('close', resolve); child.stdin.end(); }),
  };
}

/** ms per claim_next + complete, `cycles` of them, from the package. */
async function nodeCycles(cycles) {
  const { store } = await filled(cycles);
  const started = performance.now();
  for (let i = 0; i < cycles; i++) {
    const job = await store.claimNext('n', 1000, 600);
    if (!(await store.complete(job.job, 'n', job.fence, 1001, 'r'))) throw new Error('refused');
  }
  const ms = (performance.now() - started) / cycles;
  await store.close();
  return ms;
}

/** ms per claim_next + complete from a native `leasefence batch` process (the Rust backend). */
async function nativeCycles(cycles) {
  const { url, store } = await filled(cycles);
  await store.close();
  const batch = nativeBatch(url);
  await batch.request({ op: 'stats', now: 0 }); // connected and set up before the clock starts
  const started = performance.now();
  for (let i = 0; i < cycles; i++) {
    const claimed = await batch.request({ op: 'claim_next', owner: 'r', now: 1000, ttl: 600 });
    const done = await batch.request({ op: 'complete', job: claimed.value.job, owner: 'r', fence: claimed.value.fence, now: 1001, result: 'r' });
    if (done.value !== true) throw new Error(JSON.stringify(done));
  }
  const ms = (performance.now() - started) / cycles;
  await batch.end();
  return ms;
}

/** jobs/s of one JobWorker at `concurrency` draining `jobs`; handlers answer at once. */
async function workerRate(concurrency, jobs) {
  const { url, store } = await filled(jobs);
  await store.close();
  const worker = new JobWorker(await LeaseStore.open(url, { maxConnections: Math.min(concurrency + 2, 40) }), { owner: 'w', ttl: 60, idle: 0.05, concurrency });
  const started = performance.now();
  const stats = await worker.run(async () => 'r', { untilEmpty: true });
  if (stats.completed !== jobs) throw new Error(`completed ${stats.completed} of ${jobs}`);
  return jobs / ((performance.now() - started) / 1000);
}

const rows = [];
for (let repeat = 0; repeat < REPEATS; repeat++) {
  // The two sides take turns (their order swapped every other repeat).
  const sides = repeat % 2 === 0 ? ['npm', 'native'] : ['native', 'npm'];
  const cycle = {};
  for (const side of sides) cycle[side] = side === 'npm' ? await nodeCycles(CYCLES) : await nativeCycles(CYCLES);
  const one = await workerRate(1, Math.min(JOBS, 500));
  const many = await workerRate(64, JOBS);
  const row = { repeat, npm_ms_per_cycle: cycle.npm, native_ms_per_cycle: cycle.native, npm_vs_native: cycle.npm / cycle.native, worker_c1_jobs_s: one, worker_c64_jobs_s: many, c64_vs_c1: many / one };
  rows.push(row);
  console.log(JSON.stringify(row));
}
const fmt = (x, d = 2) => x.toFixed(d);
console.log('\n| repeat | npm ms/cycle | native ms/cycle | npm / native | JobWorker c=1 jobs/s | c=64 jobs/s | 64 / 1 |');
console.log('|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.repeat + 1} | ${fmt(r.npm_ms_per_cycle)} | ${fmt(r.native_ms_per_cycle)} | ${fmt(r.npm_vs_native)}x | ${fmt(r.worker_c1_jobs_s, 0)} | ${fmt(r.worker_c64_jobs_s, 0)} | ${fmt(r.c64_vs_c1, 1)}x |`);
}

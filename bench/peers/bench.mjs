// The peers section of `npm run bench` (BENCH_ONLY=peers): leasefence next to the queues a user
// would pick instead, on one machine, in one run. For every system the same job: enqueue N jobs
// (untimed), then W worker processes claim and complete one job at a time until the queue is
// drained. Throughput is N over the time from the first worker's start to the last one's end;
// latency is each job's claim-to-acknowledged-completion time in its worker. Systems and W are
// interleaved, and the order rotates every repeat. Then, in the same repeat, the best-settings
// table: each system in ONE process at its best settings for throughput (its own concurrency
// option at `--best` jobs in flight, each job held `--hold-ms` ms by its handler), the same N jobs
// (section "peers_best"). Then the stale-worker story against each.
// One JSON line per measurement on stdout, progress on stderr.
//
//   node bench/peers/bench.mjs --dir DIR --pg-url URL [--repeats 3] [--jobs 300] [--workers 1,8,64]
//                              [--best 64 | --no-best] [--hold-ms 5] [--systems a,b] [--no-stale]
// Run it through bench/run.sh (which installs the peers and starts PostgreSQL); Redis is started
// and stopped here.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const peersDir = path.join(repo, 'target/bench/peers');
const requirePeer = createRequire(path.join(peersDir, 'package.json'));
const nodeWorker = path.join(repo, 'bench/peers/node_worker.mjs');
const pyWorker = path.join(repo, 'bench/peers/py_worker.py');
const python = path.join(peersDir, 'venv/bin/python');
const rustWorker = path.join(repo, 'target/release/leasefence-peer-worker');

const { values: opt } = parseArgs({
  options: {
    dir: { type: 'string' },
    'pg-url': { type: 'string' },
    repeats: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '300' },
    workers: { type: 'string', default: '1,8,64' },
    systems: { type: 'string' },
    'no-stale': { type: 'boolean', default: false },
    best: { type: 'string', default: '64' },
    'no-best': { type: 'boolean', default: false },
    'hold-ms': { type: 'string', default: '5' },
  },
});
if (!opt.dir || !opt['pg-url']) throw new Error('--dir and --pg-url are required');
const dir = path.resolve(opt.dir);
mkdirSync(dir, { recursive: true });
const repeats = Number(opt.repeats);
const jobs = Number(opt.jobs);
const workerCounts = opt.workers ? opt.workers.split(',').map(Number) : [];
const bestConcurrency = opt['no-best'] ? null : Number(opt.best);
const holdMs = Number(opt['hold-ms']);
if (bestConcurrency !== null && !(Number.isInteger(bestConcurrency) && bestConcurrency >= 1)) {
  throw new Error(`--best must be a whole number of jobs in flight (or --no-best), not ${opt.best}`);
}
const emit = (record) => process.stdout.write(JSON.stringify(record) + '\n');
const say = (line) => process.stderr.write(`  ${line}\n`);

// ---- Redis, started here: appendonly on, appendfsync switched per case --------------------------
let redis;
let redisPort;
async function startRedis() {
  redisPort = await freePort();
  const data = path.join(dir, 'redis');
  rmSync(data, { recursive: true, force: true });
  mkdirSync(data, { recursive: true });
  redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--dir', data,
    '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--protected-mode', 'yes'], { stdio: 'ignore' });
  const IORedis = requirePeer('ioredis');
  for (let i = 0; i < 100; i++) {
    const client = new IORedis({ port: redisPort, host: '127.0.0.1', lazyConnect: true, retryStrategy: null });
    client.on('error', () => {});
    try {
      await client.connect();
      const version = (await client.info('server')).match(/redis_version:(\S+)/)?.[1];
      client.disconnect();
      return version;
    } catch {
      client.disconnect();
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error('redis-server did not start');
}
async function redisCommand(...args) {
  const IORedis = requirePeer('ioredis');
  const client = new IORedis({ port: redisPort, host: '127.0.0.1' });
  try {
    return await client.call(...args);
  } finally {
    client.disconnect();
  }
}
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

// ---- PostgreSQL: the server bench/run.sh started (scripts/postgres.sh) -------------------------
const pg = requirePeer('pg');
async function pgQuery(sql, params = []) {
  const client = new pg.Client({ connectionString: opt['pg-url'] });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}
/** A fresh schema, or database for the peers that want their own schema names. */
async function freshPgDatabase(name) {
  await pgQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await pgQuery(`CREATE DATABASE ${name}`);
  const url = new URL(opt['pg-url']);
  url.pathname = `/${name}`;
  return url.toString();
}

// ---- The systems ---------------------------------------------------------------------------------
// `prepare(run)` makes a fresh store and returns the target the worker gets; `command` the worker.
const fresh = (name) => {
  const file = path.join(dir, name);
  for (const suffix of ['', '-journal', '-wal', '-shm', '.lock']) rmSync(file + suffix, { recursive: true, force: true });
  return file;
};
const node = (system, env = {}) => (mode, target, extra) => ['node', [nodeWorker, system, mode, '--target', target, ...extra], env];
const py = (system) => (mode, target, extra) => [python, [pyWorker, system, mode, '--target', target, ...extra]];
const rust = (mode, target, extra) => [rustWorker, [mode, '--db', target, ...extra]];
// The best-settings table leaves out the peers with no way to run jobs concurrently in one
// process (`noBest` says why; the report prints it).
const NO_CONCURRENCY = 'no concurrency option: its queue object is used by one thread at a time';

const SYSTEMS = [
  { id: 'leasefence-native', label: 'leasefence (Rust lib, SQLite file)', run: rust, store: 'SQLite file',
    prepare: () => fresh('lf-native.db') },
  // The npm package's two engines: the addon (its default where it ships one) and the wasm
  // fallback, each forced so that a missing addon cannot hide behind the fallback.
  { id: 'leasefence-node', label: 'leasefence (npm package, SQLite file)', run: node('leasefence', { LEASEFENCE_ENGINE: 'native' }),
    store: 'SQLite file', prepare: () => fresh('lf-node.db') },
  { id: 'leasefence-node-wasm', label: 'leasefence (npm package, wasm fallback, SQLite file)',
    run: node('leasefence', { LEASEFENCE_ENGINE: 'wasm' }), store: 'SQLite file', prepare: () => fresh('lf-node-wasm.db') },
  { id: 'leasefence-pg', label: 'leasefence (Rust lib, PostgreSQL)', run: rust, store: 'PostgreSQL',
    prepare: async () => `${await freshPgDatabase('peers_leasefence')}?sslmode=disable` },
  { id: 'leasefence-node-pg', label: 'leasefence (npm package, PostgreSQL)', run: node('leasefence'), store: 'PostgreSQL',
    prepare: async () => `${await freshPgDatabase('peers_leasefence_npm')}?sslmode=disable` },
  { id: 'bullmq-always', label: 'BullMQ (Redis, appendfsync always)', run: node('bullmq'), store: 'Redis',
    prepare: async () => { await redisCommand('FLUSHALL'); await redisCommand('CONFIG', 'SET', 'appendfsync', 'always'); return String(redisPort); } },
  { id: 'bullmq-everysec', label: 'BullMQ (Redis, appendfsync everysec)', run: node('bullmq'), store: 'Redis',
    prepare: async () => { await redisCommand('FLUSHALL'); await redisCommand('CONFIG', 'SET', 'appendfsync', 'everysec'); return String(redisPort); } },
  { id: 'pg-boss', label: 'pg-boss (PostgreSQL)', run: node('pg-boss'), store: 'PostgreSQL',
    prepare: () => freshPgDatabase('peers_pgboss') },
  { id: 'graphile-worker', label: 'graphile-worker (PostgreSQL)', run: node('graphile-worker'), store: 'PostgreSQL',
    prepare: () => freshPgDatabase('peers_graphile') },
  { id: 'plainjob', label: 'plainjob (better-sqlite3)', run: node('plainjob'), store: 'SQLite file', prepare: () => fresh('plainjob.db') },
  { id: 'liteque', label: 'liteque (better-sqlite3)', run: node('liteque'), store: 'SQLite file', prepare: () => fresh('liteque.db') },
  { id: 'litequeue', label: 'litequeue (Python sqlite3)', run: py('litequeue'), store: 'SQLite file', prepare: () => fresh('litequeue.db'),
    noBest: `${NO_CONCURRENCY} (LiteQueue holds one sqlite3 connection, made in the thread that opens it)` },
  { id: 'huey', label: 'huey (SqliteHuey)', run: py('huey'), store: 'SQLite file', prepare: () => fresh('huey.db') },
  { id: 'persist-queue', label: 'persist-queue (SQLiteAckQueue)', run: py('persist-queue'), store: 'SQLite file',
    prepare: () => { const d = fresh('persist-queue'); mkdirSync(d, { recursive: true }); return d; },
    noBest: `${NO_CONCURRENCY} (a queue, not a worker: get + ack from the caller's own loop; its \`multithreading=True\` only puts a lock around the connection, and in the W table it already delivers jobs twice)` },
].filter((s) => !opt.systems || opt.systems.split(',').includes(s.id));

/** Runs a child to its end; rejects with its stderr when it fails. */
function runToEnd(cmd, args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${err}`))));
  });
}

/** W worker processes: all connect and say ready, then all get go at once. */
async function drainWith(system, target, w, mode = 'work', extra = []) {
  const children = [];
  for (let i = 0; i < w; i++) {
    const [cmd, args, env = {}] = system.run(mode, target, ['--owner', `w${i}`, ...extra]);
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    const lines = createInterface({ input: child.stdout });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    const state = { child, ready: null, result: null };
    state.ready = new Promise((resolve, reject) => {
      state.result = new Promise((resolveResult, rejectResult) => {
        lines.on('line', (line) => {
          if (line === '"ready"' || line === 'ready') resolve();
          else if (line.startsWith('{')) resolveResult(JSON.parse(line));
        });
        child.on('close', (code) => {
          const failure = new Error(`${system.id} worker ${i}: exit ${code}\n${err.slice(-2000)}`);
          if (code !== 0) { reject(failure); rejectResult(failure); }
        });
      });
    });
    children.push(state);
  }
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.child.stdin.write('go\n');
  const results = await Promise.all(children.map((c) => c.result));
  for (const c of children) c.child.stdin.end();
  return results;
}

function quantile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** One measurement; a failure is recorded (and shown in the report), not fatal to the run. */
async function measure(system, w, repeat) {
  try {
    await measureOnce(system, w, repeat);
  } catch (error) {
    const message = String(error.message ?? error).split('\n').slice(0, 3).join(' ').slice(0, 400);
    emit({ section: 'peers_failed', case: system.id, label: system.label, workers: w, repeat, error: message });
    say(`[peers ${repeat + 1}/${repeats}] W=${String(w).padStart(2)} ${system.id.padEnd(18)} FAILED: ${message.slice(0, 200)}`);
  }
}

async function measureOnce(system, w, repeat) {
  const target = await system.prepare();
  await runToEnd(...system.run('enqueue', target, ['--jobs', String(jobs)]));
  const results = await drainWith(system, target, w);
  const start = Math.min(...results.map((r) => r.start_ms));
  const end = Math.max(...results.map((r) => r.end_ms));
  const done = results.reduce((a, r) => a + r.jobs, 0);
  const ids = results.flatMap((r) => r.ids);
  const duplicates = ids.length - new Set(ids).size;
  const latencies = results.flatMap((r) => r.latencies_ms).sort((a, b) => a - b);
  const seconds = (end - start) / 1e3;
  const record = {
    section: 'peers', case: system.id, label: system.label, store: system.store, workers: w, repeat, jobs,
    completed: done, duplicates, errors: results.reduce((a, r) => a + r.errors, 0), seconds, rate: jobs / seconds,
    p50_ms: quantile(latencies, 0.5), p99_ms: quantile(latencies, 0.99), durability: results[0].durability,
    open_retries: results.reduce((a, r) => a + (r.open_retries ?? 0), 0),
  };
  emit(record);
  say(`[peers ${repeat + 1}/${repeats}] W=${String(w).padStart(2)} ${system.id.padEnd(18)} ${record.rate.toFixed(0).padStart(6)} jobs/s` +
    `  p50 ${record.p50_ms.toFixed(2)} ms  p99 ${record.p99_ms.toFixed(2)} ms` +
    `${done !== jobs ? `  COMPLETED ${done} of ${jobs}` : ''}${duplicates ? `  ${duplicates} delivered twice` : ''}`);
}

/** The best-settings table: one process at `--best` jobs in flight; a failure is recorded. */
async function measureBest(system, repeat) {
  try {
    await measureBestOnce(system, repeat);
  } catch (error) {
    const message = String(error.message ?? error).split('\n').slice(0, 3).join(' ').slice(0, 400);
    emit({ section: 'peers_failed', case: system.id, label: system.label, best: bestConcurrency, repeat, error: message });
    say(`[best ${repeat + 1}/${repeats}] ${system.id.padEnd(18)} FAILED: ${message.slice(0, 200)}`);
  }
}

async function measureBestOnce(system, repeat) {
  const target = await system.prepare();
  await runToEnd(...system.run('enqueue', target, ['--jobs', String(jobs)]));
  const [result] = await drainWith(system, target, 1, 'best',
    ['--jobs', String(jobs), '--concurrency', String(bestConcurrency), '--hold-ms', String(holdMs)]);
  const seconds = (result.end_ms - result.start_ms) / 1e3;
  const unique = new Set(result.ids).size;
  const latencies = [...result.latencies_ms].sort((a, b) => a - b);
  const record = {
    section: 'peers_best', case: system.id, label: system.label, store: system.store, concurrency: bestConcurrency,
    hold_ms: holdMs, repeat, jobs, completed: result.jobs, duplicates: result.ids.length - unique, missing: jobs - unique,
    errors: result.errors, seconds, rate: jobs / seconds, p50_ms: quantile(latencies, 0.5), p99_ms: quantile(latencies, 0.99),
    durability: result.durability, setting: result.setting,
  };
  emit(record);
  say(`[best ${repeat + 1}/${repeats}] ${system.id.padEnd(18)} ${record.rate.toFixed(0).padStart(6)} jobs/s` +
    `  p50 ${record.p50_ms.toFixed(2)} ms  p99 ${record.p99_ms.toFixed(2)} ms` +
    `${record.missing ? `  ${record.missing} of ${jobs} never completed` : ''}${record.duplicates ? `  ${record.duplicates} completed twice` : ''}`);
}

async function stale(system) {
  try {
    await staleOnce(system);
  } catch (error) {
    emit({ section: 'peers_failed', case: system.id, label: system.label, story: true, error: String(error.message).slice(0, 400) });
    say(`[stale] ${system.id} FAILED: ${String(error.message).slice(0, 200)}`);
  }
}

async function staleOnce(system) {
  const target = await system.prepare();
  const out = await runToEnd(...system.run('stale', target, []));
  for (const line of out.split('\n').filter((l) => l.startsWith('{'))) {
    const story = JSON.parse(line);
    emit({ section: 'peers_stale', case: system.id, label: system.label, ...story });
    say(`[stale] ${system.id.padEnd(18)} ${story.order.padEnd(6)} A: ${JSON.stringify(story.a_call ?? story.a_told ?? story.a_refused).slice(0, 110)}`);
  }
}

async function main() {
  if (!existsSync(rustWorker)) throw new Error(`${rustWorker} is missing: cargo build --release -p leasefence-pg-bench`);
  const redisVersion = await startRedis();
  const [{ server_version: pgVersion }] = await pgQuery('SHOW server_version');
  const [{ synchronous_commit: syncCommit }] = await pgQuery('SHOW synchronous_commit');
  emit({ section: 'peers_env', redis: redisVersion, postgres: pgVersion, synchronous_commit: syncCommit, jobs, repeats,
    workers: workerCounts, best: bestConcurrency, hold_ms: holdMs,
    best_left_out: SYSTEMS.filter((s) => s.noBest).map((s) => ({ case: s.id, label: s.label, why: s.noBest })), versions: requirePeer('./package.json').dependencies, python: (await runToEnd(python, ['--version'])).trim() });
  try {
    for (let r = 0; r < repeats; r++) {
      for (const w of workerCounts) {
        // Rotate the order every repeat so no system always runs first (or after a busy one).
        for (let k = 0; k < SYSTEMS.length; k++) await measure(SYSTEMS[(k + r) % SYSTEMS.length], w, r);
      }
      if (bestConcurrency !== null) {
        const best = SYSTEMS.filter((s) => !s.noBest);
        for (let k = 0; k < best.length; k++) await measureBest(best[(k + r) % best.length], r);
      }
    }
    if (!opt['no-stale']) {
      for (const system of SYSTEMS.filter((s) => s.id !== 'bullmq-everysec')) await stale(system);
    }
  } finally {
    redis.kill('SIGTERM');
  }
}

main().catch((error) => {
  console.error(`bench/peers: ${error.stack ?? error}`);
  redis?.kill('SIGTERM');
  process.exit(1);
});

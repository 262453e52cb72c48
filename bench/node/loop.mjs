// The W = 1 loop of issue 42: one worker process draining fresh jobs with claimNext + complete,
// the npm package on its native engine (the Node-API addon) and on its wasm engine, against the
// Rust library's own loop (leasefence-bench loop), each a process of its own on a fresh file on
// the repository's disk (real fsync), the three alternated within each repeat; the ratio to the
// Rust loop per repeat. Then the syncs per job of each side, counted by strace (fsync and
// fdatasync of the drain alone, between two marks the drainer writes).
//
//   npm run package && cargo build --release -p leasefence-bench &&
//   node bench/node/loop.mjs [--jobs 1000] [--repeats 5] [--dir target/bench-tmp] [--out FILE.md]
//
// One JSON line per drain and one per summary on stdout (section "node-loop"); --out writes the
// table as Markdown.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = fileURLToPath(import.meta.url);
const repo = path.resolve(path.dirname(here), '../..');
const pkg = process.env.LEASEFENCE_PKG ?? path.join(repo, 'target/npm/leasefence');
const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '1000' },
    repeats: { type: 'string', default: '5' },
    dir: { type: 'string', default: path.join(repo, 'target/bench-tmp') },
    bin: { type: 'string', default: path.join(repo, 'target/release/leasefence-bench') },
    out: { type: 'string' },
    drain: { type: 'string' }, // internal: drain this file in this process and print {jobs, secs}
  },
});
const jobs = Number(values.jobs);

if (values.drain) {
  // The drainer: the package as a user gets it, its engine from LEASEFENCE_ENGINE.
  const { createRequire } = await import('node:module');
  const { LeaseStore } = createRequire(import.meta.url)(pkg);
  const store = await LeaseStore.open(values.drain);
  store.enqueueMany(Array.from({ length: jobs }, (_, i) => ({ job: `job-${i}` })));
  fs.writeSync(1, 'MARK\n');
  const started = process.hrtime.bigint();
  let done = 0;
  for (;;) {
    const claimed = store.claimNext('worker', 1000, 30);
    if (!claimed) break;
    if (!store.complete(claimed.job, 'worker', claimed.fence, 1001, 'ok')) throw new Error(`complete of ${claimed.job} refused`);
    done++;
  }
  const secs = Number(process.hrtime.bigint() - started) / 1e9;
  fs.writeSync(1, 'END\n');
  if (done !== jobs) throw new Error(`drained ${done} of ${jobs}`);
  console.log(JSON.stringify({ engine: store.engine, jobs, secs }));
  store.close();
  process.exit(0);
}

const repeats = Number(values.repeats);
fs.mkdirSync(values.dir, { recursive: true });
if (!fs.existsSync(values.bin)) throw new Error(`${values.bin} is missing: cargo build --release -p leasefence-bench`);

const SIDES = {
  'rust library': (db) => [values.bin, ['loop', '--db', db, '--jobs', String(jobs)], {}],
  'npm, native engine': (db) => [process.execPath, [here, '--drain', db, '--jobs', String(jobs)], { LEASEFENCE_ENGINE: 'native' }],
  'npm, wasm engine': (db) => [process.execPath, [here, '--drain', db, '--jobs', String(jobs)], { LEASEFENCE_ENGINE: 'wasm' }],
};

let files = 0;
/** Every file a store makes beside its database (the wasm engine's `.lock` is a directory at times). */
const SIDE_FILES = ['', '-wal', '-shm', '-journal', '-leasefence-gate', '.lock'];
function cleanup(db) {
  for (const suffix of SIDE_FILES) fs.rmSync(db + suffix, { force: true, recursive: true });
}
function freshDb() {
  const db = path.join(values.dir, `node-loop-${process.pid}-${files++}.db`);
  cleanup(db);
  return db;
}
function drain(side) {
  const db = freshDb();
  const [command, args, env] = SIDES[side](db);
  const run = spawnSync(command, args, { encoding: 'utf8', env: { ...process.env, ...env } });
  cleanup(db);
  if (run.status !== 0) throw new Error(`${side}: ${run.stderr}`);
  const answer = JSON.parse(run.stdout.trim().split('\n').pop());
  return answer.jobs / answer.secs;
}

const rates = Object.fromEntries(Object.keys(SIDES).map((side) => [side, []]));
const ratios = Object.fromEntries(Object.keys(SIDES).map((side) => [side, []]));
for (let repeat = 0; repeat < repeats; repeat++) {
  const order = Object.keys(SIDES);
  if (repeat % 2) order.reverse(); // neither side always runs on a warmer disk
  const seen = {};
  for (const side of order) seen[side] = drain(side);
  for (const side of order) {
    rates[side].push(seen[side]);
    ratios[side].push(seen[side] / seen['rust library']);
    console.log(JSON.stringify({ section: 'node-loop', case: side, repeat, jobs, jobs_per_sec: seen[side], ratio_to_rust: seen[side] / seen['rust library'] }));
  }
  console.error(`  repeat ${repeat + 1}: ${order.map((side) => `${side} ${seen[side].toFixed(0)} jobs/s`).join(', ')}`);
}

// Syncs per job: the drain alone, between the drainer's two marks (strace follows every thread).
function syncsPerJob(side) {
  // The Rust drain prints no marks: its syncs per job are the library's, measured in throughput.
  if (side === 'rust library' || spawnSync('strace', ['-V']).error) return null;
  const db = freshDb();
  const trace = `${db}.strace`;
  const [command, args, env] = SIDES[side](db);
  const run = spawnSync('strace', ['-f', '-e', 'trace=fsync,fdatasync,write', '-o', trace, command, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  cleanup(db);
  if (run.status !== 0) throw new Error(`${side} under strace: ${run.stderr}`);
  const log = fs.readFileSync(trace, 'utf8');
  fs.rmSync(trace);
  const counted = (text) => (text.match(/\b(fsync|fdatasync)\(/g) ?? []).length;
  const from = log.indexOf('"MARK\\n"');
  const to = log.indexOf('"END\\n"');
  return counted(log.slice(from, to)) / jobs;
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;
const rows = [];
for (const side of Object.keys(SIDES)) {
  const syncs = syncsPerJob(side);
  const summary = {
    section: 'node-loop', case: side, summary: true, jobs, repeats,
    jobs_per_sec: median(rates[side]), ratio_to_rust: median(ratios[side]),
    ratio_min: Math.min(...ratios[side]), ratio_max: Math.max(...ratios[side]), syncs_per_job: syncs,
  };
  console.log(JSON.stringify(summary));
  rows.push(`| ${side} | ${median(rates[side]).toFixed(0)} | ${median(ratios[side]).toFixed(2)}x (${spread(ratios[side])}) | ${syncs === null ? '-' : syncs.toFixed(2)} |`);
}
const goal = median(ratios['npm, native engine']) >= 0.9 ? 'met' : 'missed';
const table = [
  `One worker process, claimNext + complete, ${jobs} fresh jobs per drain, ${repeats} repeats, the three sides alternated in each repeat; each a process of its own on a fresh file on the repository's disk (WAL, synchronous = FULL, real fsync; the wasm engine its rollback journal). Ratios to the Rust library's loop in the same repeat, median (min-max). Syncs per job: fsync + fdatasync of the drain alone, by strace. Goal (issue 42): the native engine >= 0.9x: **${goal}**.`,
  '',
  '| side | jobs/s (median) | ratio to the Rust loop | syncs per job |',
  '| --- | --- | --- | --- |',
  ...rows,
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} with \`node bench/node/loop.mjs --jobs ${jobs} --repeats ${repeats}\`.`,
].join('\n');
console.error(table);
if (values.out) fs.writeFileSync(values.out, `# The npm package's W = 1 loop next to the Rust library's\n\n${table}\n`);

// JobWorker at concurrency 1 / 8 / 64 / 256 (one Node process, one SQLite file on the repository's
// disk, real fsync): jobs per second draining `--jobs` jobs whose handler waits `--hold` ms, and
// the syncs per job the Node VFS counted, alternating the concurrencies in each repeat; ratios to
// concurrency 1 per repeat. One JSON line per concurrency with the medians (min-max); with
// --records, one line per drain instead (section "throughput", runtime "npm"), what
// `npm run bench` (its throughput section) reads.
//
// --exclusive opens each store with `exclusive: true` (WAL, one sync per commit); --modes
// default,exclusive runs both, alternated within each repeat, with the ratio exclusive/default per
// repeat in a line of its own (section "node-exclusive").
//
//   npm run package && node bench/node/concurrency.mjs [--jobs 600] [--repeats 3] [--hold 5] [--levels 1,8,64,256] [--dir target/bench-tmp] [--records] [--exclusive | --modes default,exclusive]
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = process.env.LEASEFENCE_PKG ?? path.join(repo, 'target/npm/leasefence');
const { LeaseStore, JobWorker } = require(pkg);
const wasm = require(path.join(pkg, 'wasm', 'leasefence.js'));

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '600' },
    repeats: { type: 'string', default: '3' },
    hold: { type: 'string', default: '5' },
    levels: { type: 'string', default: '1,8,64,256' },
    records: { type: 'boolean', default: false },
    exclusive: { type: 'boolean', default: false },
    modes: { type: 'string' },
    dir: { type: 'string', default: path.join(repo, 'target/bench-tmp') },
  },
});
const jobs = Number(values.jobs);
const holdMs = Number(values.hold);
const levels = values.levels.split(',').map(Number);
const modes = (values.modes ?? (values.exclusive ? 'exclusive' : 'default')).split(',');
for (const mode of modes) {
  if (mode !== 'default' && mode !== 'exclusive') throw new Error(`--modes: default or exclusive, got ${mode}`);
}
fs.mkdirSync(values.dir, { recursive: true });
const dir = fs.mkdtempSync(path.join(values.dir, 'concurrency-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
const syncs = () => JSON.parse(wasm.vfsStats()).syncs;
let files = 0;

async function drain(concurrency, mode) {
  const store = await LeaseStore.open(path.join(dir, `q${files++}.db`), { exclusive: mode === 'exclusive' });
  await Promise.all(Array.from({ length: jobs }, (_, i) => store.grouped.enqueue(`j${i}`)));
  const worker = new JobWorker(store, { owner: 'bench', ttl: 30, idle: 0.01, concurrency });
  // The wasm engine's VFS counts its syncs; the native engine's are SQLite's own system calls,
  // counted under strace by bench/node/loop.mjs (a tracer here would slow what is measured).
  const counted = store.engine === 'wasm';
  const [at, t0] = [counted ? syncs() : 0, performance.now()];
  const stats = await worker.run(() => new Promise((resolve) => setTimeout(resolve, holdMs, 'ok')), { untilEmpty: true });
  const seconds = (performance.now() - t0) / 1000;
  const perJob = counted ? (syncs() - at) / jobs : null;
  store.close();
  if (stats.completed !== jobs) throw new Error(`concurrency ${concurrency}: ${stats.completed} of ${jobs} completed`);
  return { jobsPerSecond: jobs / seconds, syncsPerJob: perJob, seconds };
}

const key = (c, mode) => `${c}/${mode}`;
const runs = Object.fromEntries(levels.flatMap((c) => modes.map((mode) => [key(c, mode), []])));
for (let r = 0; r < Number(values.repeats); r++) {
  for (const c of r % 2 ? [...levels].reverse() : levels) {
    for (const mode of r % 2 ? [...modes].reverse() : modes) {
      const loadavg = os.loadavg();
      const run = await drain(c, mode);
      runs[key(c, mode)].push(run);
      if (values.records) {
        console.log(JSON.stringify({
          section: 'throughput', runtime: mode === 'exclusive' ? 'npm-exclusive' : 'npm', concurrency: c, repeat: r, jobs, hold_ms: holdMs,
          seconds: run.seconds, rate: run.jobsPerSecond, syncs_per_job: run.syncsPerJob, sync_counter: run.syncsPerJob === null ? null : 'vfsStats', loadavg,
        }));
      }
      console.error(`  throughput ${r + 1}/${values.repeats}  npm${mode === 'exclusive' ? ' exclusive' : ''} concurrency ${String(c).padStart(3)}: ${run.jobsPerSecond.toFixed(0).padStart(7)} jobs/s, ${run.syncsPerJob === null ? '(syncs not counted on the native engine)' : `${run.syncsPerJob.toFixed(2)} syncs/job`}`);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
for (const c of values.records ? [] : levels) {
  for (const mode of modes) {
    const mine = runs[key(c, mode)];
    const ratio = mine.map((run, i) => run.jobsPerSecond / runs[key(levels[0], mode)][i].jobsPerSecond);
    console.log(JSON.stringify({
      section: 'node-concurrency', mode, concurrency: c, jobs, holdMs,
      jobsPerSecond: spread(mine.map((run) => run.jobsPerSecond)),
      syncsPerJob: spread(mine.map((run) => run.syncsPerJob)),
      ratioToFirst: spread(ratio),
    }));
  }
  if (modes.length === 2) {
    const [a, b] = [runs[key(c, 'default')], runs[key(c, 'exclusive')]];
    console.log(JSON.stringify({
      section: 'node-exclusive', concurrency: c, jobs, holdMs,
      jobsPerSecondExclusiveOverDefault: spread(b.map((run, i) => run.jobsPerSecond / a[i].jobsPerSecond)),
      syncsPerJob: { default: spread(a.map((run) => run.syncsPerJob)), exclusive: spread(b.map((run) => run.syncsPerJob)) },
    }));
  }
}

// Syncs per job in the npm package: N enqueues, then N claimNext + complete cycles, from one Node
// process on one file, for each open mode. Counts every fsync, fdatasync and sync_file_range with
// strace (-f -y: each call with the path of its descriptor, so each is put down to the file it
// made durable: the database, its journal or WAL, the directory, the lock record), then times the
// same work again without strace.
//
//   node bench/node/syncs.mjs [--jobs 100] [--dir DIR] [--modes shared] [--pkg DIR]...
//
// --dir must be on the disk to measure (not tmpfs: its syncs cost nothing); the default is
// target/bench-syncs. --pkg may be given more than once (a build of another commit, say), to
// compare packages in one run. Prints a table on stderr and one JSON line per package and mode on
// stdout.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = fileURLToPath(import.meta.url);
const REPO = path.resolve(path.dirname(HERE), '../..');

const { values: opt } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100' },
    dir: { type: 'string', default: path.join(REPO, 'target/bench-syncs') },
    modes: { type: 'string', default: 'shared' },
    pkg: { type: 'string', multiple: true },
    child: { type: 'boolean', default: false },
    db: { type: 'string' },
    mode: { type: 'string' },
  },
});

/** The open options of each mode (`LeaseStore.open`'s second argument). */
const MODES = { shared: {} };

if (opt.child) {
  await child();
} else {
  parent();
}

/** Runs the work once; marks the phases on stdout (strace sees the writes) and ends with timings. */
async function child() {
  const { createRequire } = await import('node:module');
  const { LeaseStore } = createRequire(HERE)(opt.pkg[0]);
  const jobs = Number(opt.jobs);
  const mark = (phase) => fs.writeSync(1, `PHASE ${phase}\n`);
  const t0 = performance.now();
  const store = await LeaseStore.open(opt.db, MODES[opt.mode]);
  mark('enqueue');
  const t1 = performance.now();
  for (let i = 0; i < jobs; i++) {
    if (!store.enqueue(`job-${i}`)) throw new Error(`job-${i} was not enqueued`);
  }
  mark('cycle');
  const t2 = performance.now();
  for (let i = 0; i < jobs; i++) {
    const claimed = store.claimNext('worker', 1000 + i, 30);
    if (claimed === null) throw new Error(`cycle ${i}: nothing to claim`);
    if (!store.complete(claimed.job, 'worker', claimed.fence, 1000 + i, 'ok')) {
      throw new Error(`cycle ${i}: ${claimed.job} was not completed`);
    }
  }
  mark('close');
  const t3 = performance.now();
  store.close();
  const t4 = performance.now();
  fs.writeSync(1, `TIMES ${JSON.stringify({ open: t1 - t0, enqueue: t2 - t1, cycle: t3 - t2, close: t4 - t3 })}\n`);
}

/** Which file a synced descriptor belongs to, from its path. */
function kind(fdPath, db) {
  if (fdPath === path.dirname(db)) return 'directory';
  if (fdPath === db) return 'database';
  if (fdPath === `${db}-journal`) return 'journal';
  if (fdPath === `${db}-wal`) return 'wal';
  if (fdPath.startsWith(`${db}.lock`)) return 'lock record';
  return `other (${fdPath})`;
}

function runChild(pkg, mode, db, traceFile) {
  const args = [HERE, '--child', '--pkg', pkg, '--mode', mode, '--db', db, '--jobs', opt.jobs];
  const command = traceFile
    ? ['strace', ['-f', '-y', '-e', 'trace=fsync,fdatasync,sync_file_range,write', '-o', traceFile, process.execPath, ...args]]
    : [process.execPath, args];
  const run = spawnSync(command[0], command[1], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (run.status !== 0) throw new Error(`${mode} run failed (${run.status}): ${run.stderr.slice(-2000)}`);
  return JSON.parse(/TIMES (.*)/.exec(run.stdout)[1]);
}

/** Syncs per phase and per file, from an strace -f -y log. */
function countSyncs(traceFile, db) {
  const counts = {}; // phase -> kind -> n
  let phase = 'open';
  for (const line of fs.readFileSync(traceFile, 'utf8').split('\n')) {
    const marker = /write\(1<[^>]*>, "PHASE (\w+)\\n"/.exec(line);
    if (marker) {
      phase = marker[1];
      continue;
    }
    const sync = /\b(fsync|fdatasync|sync_file_range)\(\d+<([^>]*)>/.exec(line);
    if (!sync || /= -1/.test(line)) continue;
    const k = `${kind(sync[2], db)} ${sync[1]}`;
    counts[phase] ??= {};
    counts[phase][k] = (counts[phase][k] ?? 0) + 1;
  }
  return counts;
}

function parent() {
  const jobs = Number(opt.jobs);
  const pkgs = (opt.pkg ?? [path.join(REPO, 'target/npm/leasefence')]).map((p) => path.resolve(p));
  const modes = opt.modes.split(',');
  for (const mode of modes) if (!MODES[mode]) throw new Error(`unknown mode ${mode}; one of ${Object.keys(MODES).join(', ')}`);
  fs.mkdirSync(opt.dir, { recursive: true });
  const fresh = (name) => {
    const dir = fs.mkdtempSync(path.join(opt.dir, `${name}-`));
    return { dir, db: path.join(dir, 'queue.db') };
  };
  const sum = (o) => Object.values(o ?? {}).reduce((a, b) => a + b, 0);
  for (const pkg of pkgs) {
    for (const mode of modes) {
      const traced = fresh(mode);
      const traceFile = path.join(traced.dir, 'strace.log');
      try {
        runChild(pkg, mode, traced.db, traceFile);
      } catch (e) {
        console.error(`${pkg} ${mode}: ${e.message.split('\n')[0]}`);
        continue;
      }
      const counts = countSyncs(traceFile, traced.db);
      const timed = fresh(`${mode}-timed`);
      const times = runChild(pkg, mode, timed.db, null);
      fs.rmSync(traced.dir, { recursive: true, force: true });
      fs.rmSync(timed.dir, { recursive: true, force: true });
      const result = {
        pkg,
        mode,
        jobs,
        syncsPerEnqueue: sum(counts.enqueue) / jobs,
        syncsPerCycle: sum(counts.cycle) / jobs, // claimNext + complete
        syncsPerJob: (sum(counts.enqueue) + sum(counts.cycle)) / jobs,
        byFile: counts,
        enqueuesPerSecond: (jobs / times.enqueue) * 1000,
        cyclesPerSecond: (jobs / times.cycle) * 1000,
        jobsPerSecond: (jobs / (times.enqueue + times.cycle)) * 1000,
      };
      console.log(JSON.stringify(result));
      const per = (phase) =>
        Object.entries(counts[phase] ?? {})
          .map(([k, n]) => `${k} ${(n / jobs).toFixed(2)}`)
          .join(', ');
      console.error(
        `${path.relative(process.cwd(), pkg) || pkg} ${mode}: ${result.syncsPerJob.toFixed(2)} syncs/job ` +
          `(enqueue ${result.syncsPerEnqueue.toFixed(2)}, claimNext+complete ${result.syncsPerCycle.toFixed(2)}); ` +
          `${result.jobsPerSecond.toFixed(0)} jobs/s (enqueue ${result.enqueuesPerSecond.toFixed(0)}/s, cycle ${result.cyclesPerSecond.toFixed(0)}/s)\n` +
          `  per enqueue: ${per('enqueue')}\n  per cycle:   ${per('cycle')}`,
      );
    }
  }
}

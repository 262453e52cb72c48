// Writes the peers report from bench/peers/bench.mjs's JSON lines: OUT_DIR/peers.md (the tables:
// W worker processes; one process at its best settings; the stale worker) and OUT_DIR/peers.svg
// (throughput per system and W).
//
//   node bench/peers/report.mjs RESULTS.jsonl OUT_DIR
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lines as lineChart } from '../svg.mjs';

const [file, outDir] = process.argv.slice(2);
if (!file || !outDir) throw new Error('usage: node bench/peers/report.mjs RESULTS.jsonl OUT_DIR');
mkdirSync(outDir, { recursive: true });
const records = readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const env = records.find((r) => r.section === 'peers_env');
const runs = records.filter((r) => r.section === 'peers');
const stories = records.filter((r) => r.section === 'peers_stale');
const bests = records.filter((r) => r.section === 'peers_best');
const started = records.find((r) => r.section === 'env' && r.case === 'start');
const BASE = 'leasefence-native';
// One colour per system (the chart has more series than svg.mjs's palette).
const PALETTE = ['#1d4ed8', '#0891b2', '#7c3aed', '#dc2626', '#f97316', '#16a34a', '#65a30d', '#a16207', '#db2777',
  '#475569', '#0d9488', '#9333ea'];

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const f0 = (v) => v.toFixed(0);
const f2 = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const SYNC = { 0: 'OFF', 1: 'NORMAL', 2: 'FULL', 3: 'EXTRA' };
for (const r of [...runs, ...bests]) r.durability = String(r.durability).replace(/synchronous=(\d)/, (_, n) => `synchronous=${SYNC[n]}`);
const systems = [...new Map(runs.map((r) => [r.case, r])).values()];
const workers = [...new Set(runs.map((r) => r.workers))].sort((a, b) => a - b);
const cell = (id, w) => runs.filter((r) => r.case === id && r.workers === w);

/** Per repeat: this system's rate over leasefence-native's at the same W in the same repeat. */
function ratios(id, w, base_ = BASE) {
  const out = [];
  for (const r of cell(id, w)) {
    const base = runs.find((b) => b.case === base_ && b.workers === w && b.repeat === r.repeat);
    if (base) out.push(r.rate / base.rate);
  }
  return out.length ? spread(out) : null;
}

// ---- The stale-worker verdicts ---------------------------------------------------------------
/** What A's late completion did: {changed: bool|null, told: string|null} from the story's record. */
function lateCall(s) {
  if (s.a_refused !== undefined) return { changed: !s.a_refused, told: s.a_told }; // the Rust lib
  const call = s.a_call;
  if (!s.same_job) return { changed: null, told: null };
  if (!call.ok) return { changed: false, told: call.error };
  const v = call.value;
  if (v && typeof v === 'object') {
    if ('reason' in v) return { changed: v.value, told: v.reason ? `${v.reason.code}${v.reason.fence ? ` (current fence ${v.reason.fence})` : ''}` : null };
    if ('affected' in v) return { changed: v.affected > 0, told: v.affected > 0 ? null : 'answer says affected: 0 (no error)' };
    if ('changes' in v) return { changed: v.changes > 0, told: null };
    if ('changed' in v) return { changed: v.changed > 0, told: null };
  }
  return { changed: true, told: null };
}

function verdict(id) {
  const mine = stories.filter((s) => s.case === id);
  if (!mine.length) return null;
  const byOrder = Object.fromEntries(mine.map((s) => [s.order, { ...lateCall(s), story: s }]));
  const all = Object.values(byOrder);
  if (all.every((o) => o.changed === null)) {
    return { accepts: 'cannot be expressed', detail: 'no lease: once A has dequeued the job, B never gets it (if A dies, the job is lost)', byOrder };
  }
  const accepted = all.some((o) => o.changed);
  const told = all.every((o) => o.changed || o.told);
  return {
    accepts: accepted ? 'yes' : told ? 'no (refused, A is told)' : 'no (ignored, A is not told)',
    byOrder,
  };
}

const describe = (o) => {
  if (!o) return '–';
  if (o.changed === null) return 'B never got the job';
  if (o.changed) return 'accepted (stored state changed)';
  if (o.told && /affected: 0/.test(o.told)) return 'not applied, no error (the answer counts affected: 0)';
  return o.told ? `refused: ${String(o.told).replace(/\|/g, '/')}` : 'not applied, no error';
};

// ---- peers.md ----------------------------------------------------------------------------------
const when = (started?.when ?? new Date().toISOString()).slice(0, 10);
const machine = started ? `${started.cpus} × ${started.cpu}, ${started.memory_gb} GB, Linux ${started.kernel}` :
  `${os.cpus().length} × ${os.cpus()[0]?.model}, Linux ${os.release()}`;
const out = [];
out.push('# leasefence next to the queues a user would pick instead', '');
out.push(`Generated by \`npm run bench\` or \`BENCH_ONLY=peers npm run bench\` (bench/peers; this run: ${env.jobs} jobs, ` +
  `W = ${env.workers.join(', ')}${env.best ? `, and one process at ${env.best} jobs in flight` : ''}, ${env.repeats} repeats) on ${when}, ${machine} (a shared machine; ` +
  `its disk's fsync is slow and noisy, so compare within a column, not with other pages). Throughput here is ` +
  `bounded by the disk's sync time, and on a shared machine one system's figure can differ several-fold between ` +
  `runs (see the min–max); the stale-write column does not depend on timing. ` +
  `${env.repeats} repeat(s) of ${env.jobs} jobs per system and worker count, interleaved: every repeat runs ` +
  `each W for every system in turn, the order rotated per repeat. Redis ${env.redis}, PostgreSQL ${env.postgres} ` +
  `(\`synchronous_commit = ${env.synchronous_commit}\`), ${env.python}, Node ${started?.node ?? process.version}.`, '');
out.push('**The workload.** Enqueue N jobs (untimed; each system\'s own enqueue call), then start W worker ' +
  'processes, each with its own connection; once all are connected they start together, and each claims one job, ' +
  'completes it, and goes on until nothing is left to claim. Throughput: N over the time from the first worker\'s ' +
  'start to the last one\'s end. Latency: one job in one worker, from asking for it to the store acknowledging its ' +
  'completion (graphile-worker: from one task start to the next, as it claims and completes inside its own loop). ' +
  'Workers are always real OS processes; graphile-worker runs its own `runOnce` loop (concurrency 1) in each.', '');
out.push('**Ratio** is the system\'s throughput over leasefence (Rust lib, SQLite file) at the same W in the same ' +
  'repeat, median (min–max) over the repeats.', '');

out.push('## Throughput and latency', '');
out.push(`| system | durability | ${workers.map((w) => `W=${w} jobs/s`).join(' | ')} | ${workers.map((w) => `W=${w} ratio`).join(' | ')} | p50 / p99 at W=1 | p50 / p99 at W=${workers.at(-1)} | accepts the stale write |`);
out.push(`|---|---|${workers.map(() => '---:').join('|')}|${workers.map(() => '---:').join('|')}|---:|---:|---|`);
const notes = [];
for (const s of systems) {
  const rates = workers.map((w) => {
    const c = cell(s.case, w);
    if (!c.length) return '–';
    const sp = spread(c.map((r) => r.rate));
    return `${f0(sp.median)} (${f0(sp.min)}–${f0(sp.max)})`;
  });
  const rs = workers.map((w) => {
    const r = ratios(s.case, w);
    return r ? `${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)})` : '–';
  });
  const lat = (w) => {
    const c = cell(s.case, w);
    return c.length ? `${f2(median(c.map((r) => r.p50_ms)))} / ${f2(median(c.map((r) => r.p99_ms)))} ms` : '–';
  };
  const v = verdict(s.case);
  const stale = s.case === 'bullmq-everysec' ? verdict('bullmq-always')?.accepts ?? '–' : v?.accepts ?? '–';
  out.push(`| ${s.label} | ${s.durability} | ${rates.join(' | ')} | ${rs.join(' | ')} | ${lat(workers[0])} | ${lat(workers.at(-1))} | ${stale} |`);
  const dup = runs.filter((r) => r.case === s.case && r.duplicates > 0);
  const short = runs.filter((r) => r.case === s.case && r.completed !== r.jobs);
  if (dup.length) notes.push(`- **${s.label}** handed the same job to two workers in ${dup.length} run(s): ${dup.map((r) => `W=${r.workers}: ${r.duplicates}`).join(', ')} duplicate deliveries.`);
  if (short.length) notes.push(`- **${s.label}** completed another number of jobs than it enqueued (each job once) in ${short.length} run(s): ${short.map((r) => `W=${r.workers}: ${r.completed} of ${r.jobs}`).join(', ')}.`);
  const retried = runs.filter((r) => r.case === s.case && r.open_retries > 0);
  if (retried.length) notes.push(`- **${s.label}**: opening the file while many processes open it at once failed with "not a leasefence database (cannot read the \`jobs\` table: database is locked)" instead of waiting; the worker retried the open, ${retried.map((r) => `W=${r.workers}: ${r.open_retries} retries`).join(', ')}.`);
  const errors = runs.filter((r) => r.case === s.case && r.errors > 0);
  if (errors.length) notes.push(`- **${s.label}**: ${errors.reduce((a, r) => a + r.errors, 0)} busy errors, retried by the worker, over ${errors.length} run(s).`);
}
for (const f of records.filter((r) => r.section === 'peers_failed' && r.best === undefined)) {
  notes.push(`- **${f.label}** failed ${f.story ? 'the stale-worker story' : `at W=${f.workers}, repeat ${f.repeat + 1}`}: ${f.error.replace(/\|/g, '/')}`);
}
out.push('');
// Issue 42's goal for the package's default engine: at least plainjob's throughput at every W.
const npmOverPlainjob = workers.map((w) => [w, ratios('leasefence-node', w, 'plainjob')]).filter(([, r]) => r);
if (npmOverPlainjob.length) {
  const met = npmOverPlainjob.every(([, r]) => r.median >= 1);
  out.push(`**The npm package (native engine) next to plainjob**, its throughput over plainjob's in the same repeat, ` +
    `median (min–max): ${npmOverPlainjob.map(([w, r]) => `W=${w} ${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)})`).join(', ')}. ` +
    `Goal (issue 42, at least 1× at every W measured): **${met ? 'met' : 'missed'}**` +
    `${met && npmOverPlainjob.some(([, r]) => r.min < 1) ? ' by the median, not in every repeat' : ''}.`, '');
}
if (notes.length) out.push('Anomalies seen in this run (counted by the bench from the job ids every worker reports):', '', ...notes, '');

out.push('**Durability.** Every row makes each claim and each completion durable before it is acknowledged, except ' +
  'where the column says otherwise: SQLite rows in WAL mode use `synchronous = FULL` (leasefence\'s own native ' +
  'setting; set by the bench where the peer\'s default is `NORMAL`, which can lose the last commits on power loss), ' +
  'the leasefence npm package\'s native engine (its default, the Node-API addon in the package) the same WAL and ' +
  '`synchronous = FULL` as the Rust library, its wasm fallback a rollback journal with `synchronous = EXTRA` (it ' +
  'cannot use WAL without memory shared between processes), the PostgreSQL rows the server\'s `synchronous_commit = on`. BullMQ with `appendfsync always` fsyncs ' +
  'its append-only file on every write; `everysec`, its default, fsyncs once a second and can lose about a second ' +
  'of acknowledged writes: it is shown for reference and is not equal durability. Each worker reads its setting ' +
  'back and reports it; the column shows what it read.', '');

// ---- One process at its best settings ----------------------------------------------------------
const BEST_BASE = 'leasefence-node';
/** Per repeat: `id`'s best rate over `base`'s best rate in the same repeat. */
function bestRatios(id, base = BEST_BASE) {
  const out = [];
  for (const r of bests.filter((b) => b.case === id)) {
    const other = bests.find((b) => b.case === base && b.repeat === r.repeat);
    if (other) out.push(r.rate / other.rate);
  }
  return out.length ? spread(out) : null;
}
const fx = (sp) => `${sp.median.toFixed(2)}× (${sp.min.toFixed(2)}–${sp.max.toFixed(2)})`;
if (bests.length || env.best) {
  const c = env.best ?? bests[0]?.concurrency;
  const hold = env.hold_ms ?? bests[0]?.hold_ms;
  out.push('## One process at its best settings', '');
  out.push(`Each system in **one** process at its best settings for throughput: ${c} jobs in flight through its own ` +
    'concurrency option (the setting column: what the bench set), each handler holding its job ' +
    `${hold} ms (a stand-in for I/O, as in the throughput section of \`npm run bench\`, results.md) ` +
    `and then completing it; the same ${env.jobs} jobs, enqueued untimed, in every repeat right after that repeat's ` +
    'W-process runs, the order rotated per repeat. Throughput: the jobs over the time from the go to the last ' +
    'completion acknowledged. Latency: one job, from the claim call that took it (for a system that claims in ' +
    'batches, that batch\'s call) to the acknowledgement of its completion (the completion call returned, or for a ' +
    'system that sends completions in the background, the query that wrote it returned): so it includes the hold ' +
    `of ${hold} ms, the wait for a batch to fill and the completion's commit. The times are noted by a wrapper ` +
    'around the calls each system\'s own runner makes on its store (it only reads the clock): leasefence\'s ' +
    '`claim_next_many`/`complete_many` (native) and `store.grouped` (npm); BullMQ\'s `processedOn` and its ' +
    '`completed` event; pg-boss\'s `db` option; graphile-worker\'s `pgPool`; liteque\'s queue object; plainjob\'s ' +
    'calls in the bench\'s loops; huey\'s `dequeue` and `SIGNAL_COMPLETE`.', '');
  out.push(`**Ratio** is the system's throughput over the leasefence npm package's at concurrency ${c} in the same repeat, ` +
    'median (min–max) over the repeats. **Each job once**: every worker reports the ids it completed; the bench ' +
    'counts those completed twice and those never completed.', '');
  const goal = bestRatios(BEST_BASE, 'plainjob');
  if (goal) {
    const repeatsBoth = bests.filter((b) => b.case === BEST_BASE && bests.some((x) => x.case === 'plainjob' && x.repeat === b.repeat)).length;
    const met = goal.median >= 10;
    out.push(`**The goal of issue 23** ("the npm package at concurrency ${c} ≥ 10× plainjob's best"): npm@${c} / plainjob ` +
      `per repeat ${fx(goal)} over ${repeatsBoth} repeat(s): **${met ? 'met' : 'not met'}**` +
      `${met && goal.min < 10 ? ' by the median, not in every repeat' : ''}${!met && goal.max >= 10 ? ' (by the median; some repeats reached it)' : ''}.`, '');
  } else {
    out.push(`**The goal of issue 23** ("the npm package at concurrency ${c} ≥ 10× plainjob's best"): not measured in this run ` +
      '(leasefence-node or plainjob missing from the best-settings table).', '');
  }
  out.push(`| system | setting | durability | jobs/s | ratio to npm@${c} | p50 / p99 | each job once | accepts the stale write |`);
  out.push('|---|---|---|---:|---:|---:|---|---|');
  const bestSystems = [...new Map(bests.map((r) => [r.case, r])).values()];
  const order = systems.map((s) => s.case).filter((id) => bestSystems.some((b) => b.case === id));
  for (const id of [...order, ...bestSystems.map((b) => b.case).filter((x) => !order.includes(x))]) {
    const mine = bests.filter((b) => b.case === id);
    const first = mine[0];
    const sp = spread(mine.map((r) => r.rate));
    const ratio = bestRatios(id);
    const once = mine.every((r) => r.duplicates === 0 && r.missing === 0)
      ? `yes (${mine.length} run${mine.length > 1 ? 's' : ''})`
      : mine.filter((r) => r.duplicates || r.missing).map((r) => `repeat ${r.repeat + 1}: ${r.duplicates} twice, ${r.missing} never`).join('; ');
    const v = id === 'bullmq-everysec' ? verdict('bullmq-always') : verdict(id);
    out.push(`| ${first.label} | ${String(first.setting).replace(/\|/g, '/')} | ${first.durability} | ${f0(sp.median)} (${f0(sp.min)}–${f0(sp.max)}) | ` +
      `${ratio ? fx(ratio) : '–'} | ${f2(median(mine.map((r) => r.p50_ms)))} / ${f2(median(mine.map((r) => r.p99_ms)))} ms | ${once} | ${v?.accepts ?? '–'} |`);
  }
  out.push('');
  const bestNotes = [];
  for (const l of env.best_left_out ?? []) bestNotes.push(`- **${l.label}** is left out: ${l.why}.`);
  for (const f of records.filter((r) => r.section === 'peers_failed' && r.best !== undefined)) {
    bestNotes.push(`- **${f.label}** failed in repeat ${f.repeat + 1}: ${f.error.replace(/\|/g, '/')}`);
  }
  const has = (id) => bests.some((b) => b.case === id);
  if (has('pg-boss')) bestNotes.push('- **pg-boss**: one `work()` loop fetches a batch of up to `batchSize` jobs, hands the whole batch to ' +
    'the handler (which holds every job at once), sends the completion without waiting for it, and then waits out ' +
    'the rest of its polling interval (0.5 s at the least) before it fetches again: at most one batch per half second ' +
    'per `work()` call.');
  if (has('plainjob')) bestNotes.push('- **plainjob** has no concurrency option (its `defineWorker` runs one job at a time): the bench runs ' +
    `${c} loops of its own calls in the one process, on one connection; better-sqlite3 is synchronous, so the claims and ` +
    'completions take turns (each its own durable commit) while the holds overlap.');
  if (has('graphile-worker')) bestNotes.push('- **graphile-worker**: `runOnce` with `concurrency`, a local queue of concurrency + 1 jobs (its docs\' ' +
    'starting point) and `completeJobBatchDelay: 0` (the completions finished in the same tick share one query).');
  out.push('Notes on this table:', '', ...bestNotes, '');
}

out.push('## The stale worker', '');
out.push('Worker A takes a job and stalls past its lease (or lock, visibility timeout, expiry: each system\'s own ' +
  'mechanism, set as short as it allows); B takes the job. Order **after**: B completes, then A completes with its ' +
  'old claim. Order **during**: A completes while B still holds the job, then B completes. Each through the ' +
  'system\'s own API (bench/peers/node_worker.mjs, py_worker.py, bench/postgres/src/peer_worker.rs), run, not ' +
  'read from the documentation. A and B are two connections (two clients) in one process.', '');
out.push('| system | accepts the stale write | A completes after B | A completes while B holds it | how the stall is made |');
out.push('|---|---|---|---|---|');
for (const s of systems.filter((x) => x.case !== 'bullmq-everysec')) {
  const v = verdict(s.case);
  if (!v) continue;
  const how = v.byOrder.after?.story.how ?? 'claim(ttl 0.5 s), real sleep 0.7 s, claim by B, complete(job, owner, fence)';
  out.push(`| ${s.label.replace(', appendfsync always', '')} | **${v.accepts}** | ${describe(v.byOrder.after)} | ${describe(v.byOrder.during)} | ${how.replace(/\|/g, '/')} |`);
}
out.push('');
out.push('"Accepted" means A\'s late call succeeded and changed the stored job: it marked done (or deleted) a job ' +
  'B was still working on, or rewrote B\'s completion. "Not applied, no error" means the store did not apply it, but ' +
  'A was not told, so A believes its result was recorded.', '');

const profiles = records.filter((r) => r.section === 'peers_profile');
if (profiles.length) {
  const p = Object.fromEntries(profiles.map((r) => [r.case, r]));
  out.push('## Where leasefence is slower, and why', '');
  out.push(`\`bash bench/peers/profile.sh ${profiles[0].jobs}\` (run by the bench after the table): one worker drains ` +
    `${profiles[0].jobs} jobs under \`strace -f -c -w\`; per job, the sync calls, all system calls and the wall time ` +
    'inside sync calls (under strace, so inflated, and as noisy as the disk), and the wall time per job of the same ' +
    'drain without strace.', '');
  out.push('| system | fsync / job | fdatasync / job | system calls / job | ms in sync calls / job | wall ms / job (no strace) | most frequent calls per job |');
  out.push('|---|---:|---:|---:|---:|---:|---|');
  for (const r of profiles) {
    out.push(`| ${r.case} | ${r.fsync_per_job.toFixed(2)} | ${r.fdatasync_per_job.toFixed(2)} | ${r.calls_per_job.toFixed(1)} | ${r.sync_ms_per_job.toFixed(2)} | ${r.wall_ms_per_job.toFixed(2)} | ${r.top} |`);
  }
  out.push('');
  const syncs = (id, fallback) => (p[id] ? p[id].syncs_per_job.toFixed(0) : fallback);
  out.push('- **The npm package against the Node SQLite peers (plainjob, liteque).** Its native engine (the addon, ' +
    'its default) is the Rust library in the Node process: WAL, one sync per commit, ' +
    `${syncs('leasefence-node', '2')} syncs per job as plainjob's ${syncs('plainjob', '2')}, and it waits for another ` +
    'process\'s write lock in SQLite\'s busy handler on a POSIX lock, as the WAL peers do. Its wasm fallback (for ' +
    'platforms without an addon) shares its file through dot-file locks and a rollback journal, and ' +
    '`synchronous = EXTRA` makes every commit durable including the journal\'s deletion: ' +
    `${syncs('leasefence-node-wasm', 'about 8')} syncs per job; on a disk whose sync takes milliseconds that is the ` +
    'whole difference at W=1, and with more processes it polls for the lock file as well.');
  const walls = (id) => profiles.filter((r) => r.case === id).map((r) => r.wall_ms_per_job);
  const [plain, fdsync] = [walls('leasefence-native'), walls('leasefence-native-fdatasync')];
  const ab = fdsync.length
    ? `Tried here: the same worker built with \`LIBSQLITE3_FLAGS=-DHAVE_FDATASYNC=1\` (row leasefence-native-fdatasync), ` +
      `run in turn with the normal build: ${median(fdsync).toFixed(2)} against ${median(plain).toFixed(2)} ms per job ` +
      `(medians of ${fdsync.length} and ${plain.length} drains of 100 to 150 jobs, while one build's own drains ranged ` +
      `${Math.min(...fdsync, ...plain).toFixed(1)} to ${Math.max(...fdsync, ...plain).toFixed(1)} ms), within the noise: ` +
      'the flag is not a fix worth making on this disk, and nothing was changed.'
    : 'Building the worker with `LIBSQLITE3_FLAGS=-DHAVE_FDATASYNC=1` (see profile.sh) tests whether that matters.';
  const pwrites = (id) => p[id]?.pwrite_per_job ?? null;
  const [ours, theirs] = [pwrites('leasefence-native'), pwrites('plainjob')];
  const pages = ours !== null && theirs !== null
    ? ` It does write more: ${ours.toFixed(1)} \`pwrite\` calls per job against plainjob's ${theirs.toFixed(1)} (SQLite ` +
      'writes a WAL frame\'s header and its page in two calls), since a claim and a completion each rewrite the job\'s ' +
      'row, its row in the claim-order table (`leasefence_order`, kept by triggers) and the indexes of both, and a ' +
      'commit\'s sync takes longer the more pages it flushes. Fewer pages per commit means a leaner schema (issue ' +
      '"PostgreSQL at peer speed" found the same side table costly there, and moved its columns into `jobs`, which ' +
      'only PostgreSQL may do: an SQLite file is shared with programs that expect six columns).'
    : '';
  out.push('- **The native library against the SQLite peers in WAL (huey, litequeue, plainjob, persist-queue).** Where ' +
    'it trails them (it did in some runs on this machine, led in others: the spread between repeats is wide), the ' +
    'syncs per job are those of every WAL peer (two commits, one sync each).' + pages + ' The sync call differs too: ' +
    'leasefence\'s bundled SQLite (rusqlite\'s `bundled` build, like better-sqlite3\'s under plainjob and liteque) ' +
    'calls `fsync`, the system SQLite under Python `fdatasync`. ' + ab + ' What decides these rows is the disk\'s ' +
    'sync time, shared with everything else the machine runs.');
  out.push('');
}

out.push('## Versions', '');
out.push(`npm (bench/peers/package.json, installed by bench/peers/setup.sh into target/bench/peers): ${Object.entries(env.versions).map(([k, v]) => `${k} ${v}`).join(', ')}. ` +
  'PyPI (bench/peers/requirements.txt, in a venv there): ' + readFileSync(path.join(path.dirname(new URL(import.meta.url).pathname), 'requirements.txt'), 'utf8').trim().split('\n').join(', ') + '.', '');

writeFileSync(path.join(outDir, 'peers.md'), out.join('\n'));

// ---- peers-README-section.md: the short table for the README's Performance section ----------------
const SHORT = {
  'leasefence-native': 'WAL, FULL', 'leasefence-node': 'WAL, FULL (native engine)',
  'leasefence-node-wasm': 'rollback journal, EXTRA', 'leasefence-pg': 'synchronous_commit on',
  'leasefence-node-pg': 'synchronous_commit on',
  'bullmq-always': 'AOF, fsync always', 'bullmq-everysec': 'AOF, fsync every second (not equal)',
  'pg-boss': 'synchronous_commit on', 'graphile-worker': 'synchronous_commit on', plainjob: 'WAL, FULL (raised from NORMAL)',
  liteque: 'WAL, FULL (raised from NORMAL)', litequeue: 'WAL, FULL (raised from NORMAL)', huey: 'WAL, FULL (fsync=True)',
  'persist-queue': 'WAL, FULL',
};
const readme = [];
readme.push(`| system | durability | ${workers.map((w) => `W=${w} jobs/s`).join(' | ')} | p50 / p99 at W=1 | accepts the stale write |`);
readme.push(`|---|---|${workers.map(() => '---:').join('|')}|---:|---|`);
for (const s of systems) {
  const rates = workers.map((w) => { const c = cell(s.case, w); return c.length ? f0(median(c.map((r) => r.rate))) : '–'; });
  const c1 = cell(s.case, workers[0]);
  const lat = c1.length ? `${f2(median(c1.map((r) => r.p50_ms)))} / ${f2(median(c1.map((r) => r.p99_ms)))} ms` : '–';
  const v = s.case === 'bullmq-everysec' ? verdict('bullmq-always') : verdict(s.case);
  readme.push(`| ${s.label} | ${SHORT[s.case] ?? s.durability} | ${rates.join(' | ')} | ${lat} | ${v?.accepts ?? '–'} |`);
}
writeFileSync(path.join(outDir, 'peers-README-section.md'), readme.join('\n') + '\n');

// ---- peers.svg -----------------------------------------------------------------------------------
const svg = lineChart({
  title: 'Jobs drained per second, W worker processes (log scale)',
  subtitle: `${env.jobs} jobs; median and min–max over ${env.repeats} repeat(s); every commit durable except BullMQ everysec`,
  xs: workers.map((w) => `W=${w}`),
  xLabel: 'worker processes',
  yLabel: 'jobs/s',
  logY: true,
  width: 860,
  height: 460,
  series: systems.map((s) => ({
    name: s.label.replace(/ \(.*appendfsync (\w+)\)/, ' ($1)').replace('(Rust lib, SQLite file)', '(Rust, file)')
      .replace('(npm package, SQLite file)', '(npm, file)')
      .replace('(npm package, wasm fallback, SQLite file)', '(npm wasm, file)').replace('(Rust lib, PostgreSQL)', '(Rust, PostgreSQL)'),
    dashed: !s.case.startsWith('leasefence'),
    color: PALETTE[systems.indexOf(s) % PALETTE.length],
    points: workers.map((w) => { const c = cell(s.case, w); return c.length ? spread(c.map((r) => r.rate)) : null; }),
  })),
});
writeFileSync(path.join(outDir, 'peers.svg'), svg);
console.error(`  wrote ${path.join(outDir, 'peers.md')}, peers-README-section.md and peers.svg`);

// Turns one `npm run bench` results file (JSON lines) into docs/bench: results.md, the SVG
// charts and README-section.md. Every comparison is a ratio computed per repeat between two
// things measured in the same run, then summarised as median (min-max) over the repeats.
//
//   node bench/report.mjs RESULTS.jsonl OUT_DIR
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hbar, lines, COLORS } from './svg.mjs';

const [resultsFile, outDir = 'docs/bench'] = process.argv.slice(2);
if (!resultsFile) {
  console.error('usage: node bench/report.mjs RESULTS.jsonl [OUT_DIR]');
  process.exit(2);
}
const records = readFileSync(resultsFile, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
mkdirSync(outDir, { recursive: true });

// ---------------------------------------------------------------------------------------------
// Statistics

const sorted = (xs) => [...xs].sort((a, b) => a - b);
function quantile(xs, q) {
  const s = sorted(xs);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (pos - lo);
}
/** {median, min, max, q1, q3, n} of a list, or null when empty. */
function stat(xs) {
  const v = xs.filter((x) => Number.isFinite(x));
  if (!v.length) return null;
  return { median: quantile(v, 0.5), min: Math.min(...v), max: Math.max(...v), q1: quantile(v, 0.25), q3: quantile(v, 0.75), n: v.length };
}
const pick = (filter) => records.filter((r) => Object.entries(filter).every(([k, v]) => r[k] === v));
const repeatsOf = (rs) => [...new Set(rs.map((r) => r.repeat))].sort((a, b) => a - b);
/** Per-repeat ratio a/b of `field` between two record sets keyed by repeat. */
function ratios(as, bs, field = 'rate', invert = false) {
  const out = [];
  for (const r of repeatsOf(as)) {
    const a = as.find((x) => x.repeat === r)?.[field];
    const b = bs.find((x) => x.repeat === r)?.[field];
    if (a != null && b != null) out.push(invert ? b / a : a / b);
  }
  return stat(out);
}

// ---------------------------------------------------------------------------------------------
// Formatting

function fmtNum(v, digits) {
  if (v == null || !Number.isFinite(v)) return '–';
  if (digits != null) return v.toFixed(digits);
  if (Math.abs(v) >= 100) return Math.round(v).toLocaleString('en-US');
  if (Math.abs(v) >= 10) return v.toFixed(1);
  if (Math.abs(v) >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}
const spread = (s, digits) => (s ? `${fmtNum(s.median, digits)} (${fmtNum(s.min, digits)}–${fmtNum(s.max, digits)})` : '–');
const xr = (s) => (s ? `**${s.median.toFixed(2)}×** (${s.min.toFixed(2)}–${s.max.toFixed(2)})` : '–');
/** A markdown table; `align` has one letter per column (l or r), numbers right by default. */
const table = (head, rows, align = 'l' + 'r'.repeat(head.length - 1)) => [`| ${head.join(' | ')} |`,
  `|${head.map((h, i) => (align[i] === 'r' ? '---:' : '---')).join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const kb = (bytes) => `${(bytes / 1000).toFixed(0)} KB`;

/** Whether a ratio meets a target (higher is better): at the median, and in every repeat. */
function verdict(s, target) {
  if (!s) return 'not measured';
  if (s.min >= target) return 'met';
  if (s.median >= target) return 'met at the median, not in every repeat';
  if (s.max >= target) return 'missed at the median (met in some repeats)';
  return 'missed';
}

/** Whether a figure meets a ceiling (lower is better): at the median, and in every repeat. */
function verdictAtMost(s, ceiling) {
  if (!s) return 'not measured';
  if (s.max <= ceiling) return 'met';
  if (s.median <= ceiling) return 'met at the median, not in every repeat';
  if (s.min <= ceiling) return 'missed at the median (met in some repeats)';
  return 'missed';
}

const charts = {};
const md = [];
const summary = [];
const env = pick({ section: 'env', case: 'start' })[0] ?? {};
const envEnd = pick({ section: 'env', case: 'end' })[0] ?? {};
const repeats = env.repeats ?? '?';

// ---------------------------------------------------------------------------------------------
// 1. Native

const nat = (c) => pick({ section: 'native', case: c });
const natSettings = pick({ section: 'settings', case: 'native' })[0];
let native = null;
if (nat('store').length) {
  const r = {
    storeFloor: ratios(nat('store'), nat('floor')),
    storePython: ratios(nat('store'), nat('python')),
    seedPython: ratios(nat('seed'), nat('python')),
    seedStore: ratios(nat('seed'), nat('store')),
    seedPythonHeld: nat('seed-held').length ? ratios(nat('seed-held'), nat('python-held')) : null,
  };
  native = r;
  summary.push(
    { short: 'store API vs raw floor', what: 'Store API (`LeaseStore`) claim + complete', base: 'raw rusqlite floor: 2 single-statement write transactions', s: r.storeFloor, target: 0.8, targetText: '≥ 0.80× (within 1.25× of the floor)' },
    { short: 'seed functions vs Python seed', what: 'Seed-parity functions (`leasefence::seed`)', base: 'Python seed module (`tests/interop/seed.py`)', s: r.seedPython, target: 0.9, targetText: '≥ 0.9× (parity: a connection per call, as the seed does, costs the same syncs on both sides)' },
  );
  if (r.seedPythonHeld) {
    summary.push({ short: 'same, file held open by another connection', what: 'Seed-parity functions, while another connection holds the file open', base: 'Python seed module, file held open the same way', s: r.seedPythonHeld, info: true });
  }
  const cases = [
    ['floor', 'raw rusqlite floor (baseline a)', 'one connection, `UPDATE counter SET n = n + 1` twice per cycle, prepared'],
    ['store', 'leasefence `LeaseStore`', 'one connection: `claim` + `complete`, each a `BEGIN IMMEDIATE` transaction'],
    ['seed', 'leasefence `seed::claim` + `seed::complete`', 'a new connection for every call, like the seed'],
    ['python', 'Python seed module (baseline b)', '`seed.claim` + `seed.complete`, a new connection for every call'],
    ['seed-held', 'leasefence `seed::*`, file held open', 'as `seed`, while another connection keeps the file open'],
    ['python-held', 'Python seed module, file held open', 'as `python`, while another connection keeps the file open'],
  ].filter(([c]) => nat(c).length);
  const rows = cases.map(([c, label, how]) => {
    const rates = stat(nat(c).map((x) => x.rate));
    // Ratios only within a pair measured together: floor-store, seed-python, held-held.
    const pair = { floor: ['floor', null], store: ['floor', null], seed: [null, 'python'], python: [null, 'python'],
      'seed-held': [null, 'python-held'], 'python-held': [null, 'python-held'] }[c];
    return [label, how, spread(rates), fmtNum(1e3 / rates.median, 3),
      pair[0] ? xr(ratios(nat(c), nat(pair[0]))) : '–', pair[1] ? xr(ratios(nat(c), nat(pair[1]))) : '–'];
  });
  const n = nat('store')[0]?.cycles;
  const ns = nat('seed')[0]?.cycles;
  md.push('## 1. Native: claim-then-complete cycles on a file', '',
    `Each repeat runs ${n} cycles on the store and the floor and ${ns} on each seed-style path. One cycle is two write transactions, each fsynced. Ratios are only taken within a pair measured together (short blocks taking turns), so the absolute rates of different pairs can come from calmer or busier moments of the shared disk.`, '',
    table(['path', 'what one cycle does', 'cycles/s median (min–max)', 'ms/cycle', 'vs floor', 'vs Python seed (held: vs Python held)'], rows, 'llrrrr'), '',
    'The store and the floor are measured as one pair, the seed-style paths as other pairs (their WAL churn must not land in the floor\'s fsyncs). "Held": a third connection keeps the file open, as a long-running process sharing the file would; a call\'s connection is then never the last one, so closing it neither checkpoints nor deletes the WAL.', '',
    natSettings ? `Durability as each connection reports it: store \`${natSettings.store.journal_mode}\`/synchronous=${natSettings.store.synchronous}, floor \`${natSettings.floor.journal_mode}\`/synchronous=${natSettings.floor.synchronous} (both SQLite ${natSettings.store.sqlite}, bundled), Python seed \`${natSettings.python.journal_mode}\`/synchronous=${natSettings.python.synchronous} (Python ${natSettings.python.python}, system SQLite ${natSettings.python.sqlite}). synchronous=2 is FULL, 3 is EXTRA.` : '', '',
    'Every floor transaction changes the row (the counter ends at exactly 2 × cycles, checked), and every store cycle ends with the job done (checked).', '',
    '![native throughput](native.svg)', '');
  charts['native.svg'] = hbar({
    title: 'Native: claim + complete cycles per second (file, WAL, synchronous=FULL)',
    subtitle: `median and min-max over ${repeats} repeats, interleaved in one run`,
    unit: '',
    rows: cases.map(([c, label], i) => {
      const s = stat(nat(c).map((x) => x.rate));
      return { label: label.replace(/`/g, ''), ...s, color: COLORS[i], note: `${fmtNum(s.median)}/s` };
    }),
  });
}

// ---------------------------------------------------------------------------------------------
// 2. Contention

const cont = pick({ section: 'contention' });
if (cont.length) {
  const threads = [...new Set(cont.map((r) => r.threads))].sort((a, b) => a - b);
  const by = (c, t) => cont.filter((r) => r.case === c && r.threads === t);
  const short = cont.some((r) => r.case === 'store-short-sleeps');
  const rows = threads.map((t) => [
    String(t),
    spread(stat(by('store', t).map((r) => r.rate))),
    spread(stat(by('store', t).map((r) => r.p50_ms))),
    spread(stat(by('store', t).map((r) => r.p99_ms))),
    spread(stat(by('floor', t).map((r) => r.rate))),
    spread(stat(by('floor', t).map((r) => r.p99_ms))),
    xr(ratios(by('store', t), by('floor', t))),
    xr(ratios(by('store', t), by('store', threads[0]))),
    ...(short ? [spread(stat(by('store-short-sleeps', t).map((r) => r.rate))), spread(stat(by('store-short-sleeps', t).map((r) => r.p99_ms))),
      xr(ratios(by('store-short-sleeps', t), by('store', t)))] : []),
  ]);
  const cycles = cont[0].cycles;
  md.push('## 2. Contention: threads claiming and completing over a shared set of jobs', '',
    `Each thread has its own connection (its own \`LeaseStore\`) on one WAL file and loops \`claim_next\` + \`complete\` until ${cycles} cycles are done in all; the floor's threads run its two counter updates per cycle the same way. Throughput is cycles over the wall time from the start barrier to the last thread; latency is one cycle, waiting for the write lock included. Every job is completed exactly once (checked).` +
    ' The store waits for the write lock with its own busy handler (jittered sleeps growing from 50 µs to 2 ms); the floor keeps SQLite\'s default (1, 2, 5, 10, ... 100 ms between tries), which sleeps through most moments the lock is free: before leasefence had its own handler the store scaled like the floor (209 cycles/s at 16 threads, p99 4.3 s at 64).' +
    (short ? ' The last three columns are a comparison, not leasefence as shipped: the same store with constant 50-225 µs sleeps set through `store.connection()`.' : ''), '',
    table(['threads', 'store cycles/s', 'store p50 ms', 'store p99 ms', 'floor cycles/s', 'floor p99 ms', 'store vs floor', `store vs ${threads[0]} thread`,
      ...(short ? ['short sleeps: cycles/s', 'short sleeps: p99 ms', 'short sleeps vs store'] : [])], rows), '',
    '![contention throughput](contention.svg)', '', '![contention latency](contention-latency.svg)', '');
  const pts = (c, f) => threads.map((t) => stat(by(c, t).map((r) => r[f])));
  charts['contention.svg'] = lines({
    title: 'Contention: cycles per second vs threads (claim_next + complete)', subtitle: `one WAL file, a connection per thread; ${repeats} repeats`,
    xs: threads.map(String), xLabel: 'threads', yLabel: 'cycles/s',
    series: [{ name: 'leasefence store', points: pts('store', 'rate') }, { name: 'raw floor', points: pts('floor', 'rate'), dashed: true, color: COLORS[5] },
      ...(short ? [{ name: 'store, short sleeps*', points: pts('store-short-sleeps', 'rate'), color: COLORS[2] }] : [])],
  });
  charts['contention-latency.svg'] = lines({
    title: 'Contention: cycle latency vs threads (log scale)', subtitle: 'p50 and p99 of one claim_next + complete, waiting for the lock included',
    xs: threads.map(String), xLabel: 'threads', yLabel: 'ms', logY: true,
    series: [
      { name: 'store p50', points: pts('store', 'p50_ms'), color: COLORS[0] },
      { name: 'store p99', points: pts('store', 'p99_ms'), color: COLORS[3] },
      { name: 'floor p50', points: pts('floor', 'p50_ms'), color: COLORS[0], dashed: true },
      { name: 'floor p99', points: pts('floor', 'p99_ms'), color: COLORS[3], dashed: true },
    ],
  });
}
const cm = pick({ section: 'claim_many' });
if (cm.length) {
  const store = cm.filter((r) => r.case === 'store');
  const py = cm.filter((r) => r.case === 'python');
  const owners = store[0]?.owners;
  const r = ratios(store, py, 'seconds', true);
  summary.push({ short: `claim_many (${owners}) vs Python seed`, what: `\`claim_many\`, ${owners} owners on a fresh job (latency)`, base: 'Python seed `claim_many` (threads)', s: r, info: true });
  md.push(`### claim_many with ${owners} owners`, '',
    `One fresh job per repeat; every owner on its own OS thread and connection, released by a barrier. Exactly one winner and fence 1 in every repeat (checked: ${[...store, ...py].every((x) => x.winners === 1) ? 'yes' : 'NO'}).`, '',
    table(['', 'latency ms median (min–max)', 'speed vs Python seed'], [
      [`leasefence \`claim_many\``, spread(stat(store.map((x) => x.seconds * 1e3))), xr(r)],
      ['Python seed `claim_many`', spread(stat(py.map((x) => x.seconds * 1e3))), '1.00×'],
    ]), '');
}

const procs = pick({ section: 'processes' });
if (procs.length) {
  const counts = [...new Set(procs.map((r) => r.workers))].sort((a, b) => a - b);
  // Runs that were made; a skipped run (not enough memory for W Node processes) says why instead.
  const by = (c, w) => procs.filter((r) => r.case === c && r.workers === w && !r.skipped);
  const skipped = procs.filter((r) => r.skipped);
  const native = procs.filter((r) => ['gated', 'blocking', 'sleeping'].includes(r.case) && !r.skipped);
  const compiled = native.every((r) => r.setlk_compiled);
  const hasNpm = procs.some((r) => r.case === 'npm');
  const hasGated = procs.some((r) => r.case === 'gated');
  const loads = procs.map((r) => r.loadavg?.[0]).filter((x) => Number.isFinite(x));
  const busy = (c, w) => (by(c, w).length ? fmtNum(stat(by(c, w).map((r) => r.errors)).median, 0) : '–');
  const npmCells = (w) => {
    if (!by('npm', w).length) return [skipped.some((r) => r.case === 'npm' && r.workers === w) ? 'not run' : '–', '–', '–', '–'];
    return [spread(stat(by('npm', w).map((r) => r.rate))), spread(stat(by('npm', w).map((r) => r.p50_ms))),
      spread(stat(by('npm', w).map((r) => r.p99_ms))), xr(ratios(by('npm', w), by('sleeping', w)))];
  };
  const rows = counts.map((w) => [
    String(w),
    spread(stat(by('blocking', w).map((r) => r.rate))),
    spread(stat(by('blocking', w).map((r) => r.p50_ms))),
    spread(stat(by('blocking', w).map((r) => r.p99_ms))),
    spread(stat(by('sleeping', w).map((r) => r.rate))),
    spread(stat(by('sleeping', w).map((r) => r.p50_ms))),
    spread(stat(by('sleeping', w).map((r) => r.p99_ms))),
    xr(ratios(by('blocking', w), by('sleeping', w))),
    ...(hasGated ? [spread(stat(by('gated', w).map((r) => r.rate))), spread(stat(by('gated', w).map((r) => r.p99_ms))), xr(ratios(by('gated', w), by('sleeping', w)))] : []),
    ...(hasNpm ? npmCells(w) : []),
    [busy('blocking', w), busy('sleeping', w), ...(hasGated ? [busy('gated', w)] : []), ...(hasNpm ? [busy('npm', w)] : [])].join(' / '),
  ]);
  // The goals of issue 23 for processes on one file, per runtime, from per-repeat figures.
  const runtimes = [['gated', 'native (as shipped: the write gate, case "gated")'], ['sleeping', 'native without the write gate (case "sleeping", `write_gate(false)`)'],
    ['blocking', 'native with blocking WAL locks and no gate (case "blocking")'],
    ['npm', 'npm package (Node processes, case "npm")']].filter(([c]) => procs.some((r) => r.case === c));
  const perRepeat = (c, w, f) => repeatsOf(by(c, w)).map((r) => f(by(c, w).find((x) => x.repeat === r))).filter(Number.isFinite);
  const goals = runtimes.flatMap(([c, label]) => {
    const many = ratios(by(c, 64), by(c, 8));
    const tail = stat(perRepeat(c, 64, (x) => x.p99_ms / x.p50_ms));
    const tailText = tail ? `p99 / p50 at 64 processes **${tail.median.toFixed(1)}×** (${tail.min.toFixed(1)}–${tail.max.toFixed(1)}): ${verdictAtMost(tail, 10)}` : 'p99 / p50 at 64 processes: not measured';
    const manyText = many ? `64 processes vs 8 **${many.median.toFixed(2)}×** (${many.min.toFixed(2)}–${many.max.toFixed(2)}): ${verdict(many, 1)}` : '64 processes vs 8: not measured';
    if (c === 'gated' || c === 'npm') {
      summary.push({ short: `${c === 'npm' ? 'npm' : 'native'}: 64 processes vs 8`, what: `${c === 'npm' ? 'npm package' : 'native'}: 64 processes on one SQLite file (jobs/s)`, base: 'the same with 8 processes', s: many, target: 1, targetText: '≥ 1× (no collapse)' });
    }
    return [`- ${label}: ${manyText}; ${tailText}.`];
  });
  const jobs = procs[0].jobs;
  md.push(`### Processes on one file: native (write gate, blocking WAL locks, sleeps)${hasNpm ? ' and the npm package' : ''}`, '',
    `W worker processes, each with its own store on one file of ${jobs} jobs, started together (each opens its store, then all are released at once), loop \`claim_next\` + \`complete\` until none is left; jobs/s is the jobs over the time from the release to the last process's end; latency is one cycle, from the \`claim_next\` that got the job to its granted \`complete\`, waiting included. A busy error (the lock still taken after the 10 s busy timeout) is counted and the call made again. ` +
    `Natively the file is WAL (synchronous=FULL): "gated" is the store as shipped, with the write gate (\`OpenOptions::write_gate(true)\`, lock timeout 0; [docs/decisions/write-gate.md](../decisions/write-gate.md)); "blocking" and "sleeping" turn the gate off (\`write_gate(false)\`) and set \`sqlite3_setlk_timeout\` to the busy timeout or to 0, in the same build. ` +
    (hasNpm ? `"npm": W Node processes, each opening the file with the npm package on its native engine (\`LeaseStore.open\`; bench/node/processes-worker.mjs), the same loop on the same kind of file (WAL, synchronous=FULL, POSIX locks, the write gate). ` : '') +
    `The cases take turns for each W in every repeat (the order rotating), so a ratio is between runs a few seconds apart. ` +
    `The SQLite linked natively here ${compiled ? 'is' : 'is **not**'} compiled with \`SQLITE_ENABLE_SETLK_TIMEOUT\`${compiled ? '' : ', so the blocking and sleeping columns measure the same thing'}. Why blocking locks are off in the shipped builds: [docs/decisions/blocking-locks.md](../decisions/blocking-locks.md). ` +
    `Load average (1 min) at the runs' starts: ${loads.length ? `${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}` : 'not recorded'}.`, '',
    table(['processes', 'blocking jobs/s', 'blocking p50 ms', 'blocking p99 ms', 'sleeping jobs/s', 'sleeping p50 ms', 'sleeping p99 ms', 'blocking vs sleeping',
      ...(hasGated ? ['gated jobs/s', 'gated p99 ms', 'gated vs sleeping'] : []),
      ...(hasNpm ? ['npm jobs/s', 'npm p50 ms', 'npm p99 ms', 'npm vs sleeping'] : []), `busy retries, median (blocking / sleeping${hasGated ? ' / gated' : ''}${hasNpm ? ' / npm' : ''})`], rows), '',
    ...(skipped.length ? [[...new Set(skipped.map((r) => `${r.case}/${r.workers}`))].map((key) => {
      const runs = skipped.filter((r) => `${r.case}/${r.workers}` === key);
      return `"${runs[0].case}" at ${runs[0].workers} processes not run in ${runs.length} of ${repeatsOf(procs).length} repeats: ${runs[0].skipped}.`;
    }).join(' '), ''] : []),
    'The goals (issue 23): 64 processes on one file at least the 8-process figure (no collapse), and p99 at most 10× p50 at 64 processes, each checked per repeat.', '', ...goals, '',
    ...(hasNpm ? ['The third goal, the npm package with one worker process at least plainjob\'s throughput, is a comparison with another project: the peers section ([peers.md](peers.md)) measures it.', ''] : []));
  md.push(...gateTable(procs, counts, by));
}

// ---------------------------------------------------------------------------------------------
// 2c. Throughput of one process: a worker at several concurrencies, native and npm

const tp = pick({ section: 'throughput' });
if (tp.length) {
  const levels = [...new Set(tp.map((r) => r.concurrency))].sort((a, b) => a - b);
  const by = (rt, c) => tp.filter((r) => r.runtime === rt && r.concurrency === c);
  // [runtime, label, column heading]
  const runtimes = [['native', 'native (`Worker::run_concurrent`)', 'native'], ['postgres', 'native on PostgreSQL (`Worker::run_concurrent`)', 'PostgreSQL'],
    ['npm', 'npm package (`JobWorker`)', 'npm']].filter(([rt]) => tp.some((r) => r.runtime === rt));
  const onFile = runtimes.filter(([rt]) => rt !== 'postgres');
  const base = levels[0];
  const goal = 64;
  const rows = levels.map((c) => [String(c), ...runtimes.flatMap(([rt]) => [
    spread(stat(by(rt, c).map((r) => r.rate))),
    spread(stat(by(rt, c).map((r) => r.syncs_per_job)), 2),
    xr(ratios(by(rt, c), by(rt, base))),
  ])]);
  const first = (rt) => tp.find((r) => r.runtime === rt);
  const loads = tp.map((r) => r.loadavg?.[0]).filter((x) => Number.isFinite(x));
  const verdicts = onFile.map(([rt, label]) => {
    const r = ratios(by(rt, goal), by(rt, base));
    summary.push({ short: `${rt}: concurrency ${goal} vs ${base}`, what: `${label.replace(/ \(.*/, '')}: one process at concurrency ${goal} on one SQLite file (jobs/s)`, base: `the same at concurrency ${base}`, s: r, target: 10, targetText: '≥ 10×' });
    return `- ${label}: ${r ? `**${r.median.toFixed(1)}×** (${r.min.toFixed(1)}–${r.max.toFixed(1)}) at concurrency ${goal}: ${verdict(r, 10)}` : 'not measured'}.`;
  });
  // The second goal: the SQLite file at concurrency 64 against leasefence on PostgreSQL with 64
  // handlers, per repeat (both native, interleaved in the same repeat); the npm package's the same
  // way, for information.
  const pgGoal = 3;
  const pgVerdicts = [];
  if (first('postgres')) {
    for (const [rt, label] of onFile) {
      const r = ratios(by(rt, goal), by('postgres', goal));
      const info = rt !== 'native';
      summary.push({ short: `${rt} vs PostgreSQL, ${goal} handlers`, what: `${label.replace(/ \(.*/, '')}: one process at concurrency ${goal} on one SQLite file (jobs/s)`, base: `leasefence on PostgreSQL, one process at concurrency ${goal}`, s: r, target: info ? undefined : pgGoal, targetText: `≥ ${pgGoal}×`, info });
      pgVerdicts.push(`- ${label} on one SQLite file / native on PostgreSQL, both at concurrency ${goal}: ${r ? `**${r.median.toFixed(2)}×** (${r.min.toFixed(2)}–${r.max.toFixed(2)})` : 'not measured'}${info ? ' (for information: the npm package runs after the native drains, not interleaved with them)' : `: ${verdict(r, pgGoal)}`}.`);
    }
  }
  const pg = first('postgres');
  md.push('### Throughput of one process: a worker at concurrency 1 to 256', '',
    `One process drains one SQLite file on the repository's disk (real fsync) with a worker running up to N handlers at once; every handler holds its job ${tp[0].hold_ms} ms (a stand-in for an I/O-bound handler) and answers. ` +
    `Natively: \`Worker::run_concurrent\` on ${first('native')?.jobs ?? '–'} jobs (WAL, synchronous=FULL), handlers on threads; its syncs are the drain process's \`fsync\` + \`fdatasync\` calls, all threads included, counted by \`strace -f -c --seccomp-bpf\` in a second drain right after the timed one (the timed drain runs untraced). ` +
    (pg ? `PostgreSQL: the same native drain (\`Worker::run_concurrent\` in the same child process) on leasefence's PostgreSQL backend, ${pg.jobs} jobs, right after each SQLite drain of the same concurrency in the same repeat; ${pg.server ?? 'PostgreSQL'} on a throwaway local server (\`scripts/postgres.sh\`, its data directory on the same disk) with the server's defaults (fsync on, synchronous_commit = on), over plain TCP on 127.0.0.1; each drain on a schema made afresh, filled through leasefence, vacuumed, analyzed and checkpointed. Its syncs per job count **the server's** syncs, not the drain process's: the WAL syncs of every server process (\`pg_stat_wal.wal_sync\`, read before and after the drain once every other client has gone and the count holds still), divided by the jobs; data-file syncs at checkpoints are not in it. ` : '') +
    `npm package: \`new JobWorker(store, {concurrency: N})\` on ${first('npm')?.jobs ?? '–'} jobs (rollback journal, synchronous=EXTRA), handlers as timers on one event loop; its syncs are the ones the wasm VFS counted (\`vfsStats()\`). ` +
    `The hold alone caps concurrency N at N / ${tp[0].hold_ms} ms = ${Math.round(1000 / tp[0].hold_ms)}·N jobs/s. The concurrencies take turns in every repeat (reversed every other repeat); a ratio is to concurrency ${base} of the same runtime in the same repeat. Every drain ends with every job done (checked). ` +
    `Load average (1 min) at the drains' starts: ${loads.length ? `${Math.min(...loads).toFixed(1)} to ${Math.max(...loads).toFixed(1)}` : 'not recorded'}.`, '',
    table(['concurrency', ...runtimes.flatMap(([rt, , col]) => [`${col} jobs/s`, `${col} syncs/job`, `${col} vs ${base}`])], rows), '',
    `The goal (issue 23): one process at concurrency ${goal} on one SQLite file at least 10× its concurrency-${base} throughput.`, '', ...verdicts, '',
    ...(pg ? [`The goal (issue 23): one process at concurrency ${goal} on one SQLite file at least ${pgGoal}× leasefence on PostgreSQL with ${goal} workers (here: the same worker at concurrency ${goal} on PostgreSQL, in the same repeat); the ratio is per repeat.`, '', ...pgVerdicts, '']
      : [`The goal (issue 23) against leasefence on PostgreSQL with ${goal} workers: not measured in this run (no PostgreSQL server).`, '']));
}

// ---------------------------------------------------------------------------------------------
// 3. Scale

const sc = pick({ section: 'scale' });
if (sc.length) {
  const sizes = [...new Set(sc.map((r) => r.jobs))].sort((a, b) => a - b);
  const setup = pick({ section: 'scale_setup' });
  const by = (op, n) => sc.filter((r) => r.case === op && r.jobs === n);
  const rows = [];
  for (const op of ['claim_next', 'claim_next_delayed', 'claim']) {
    if (!by(op, sizes[0]).length) continue;
    for (const n of sizes) {
      rows.push([`\`${op}\``, n.toLocaleString('en-US'), spread(stat(by(op, n).map((r) => r.p50_ms)), 3),
        spread(stat(by(op, n).map((r) => r.ms_per_op)), 3), xr(ratios(by(op, n), by(op, sizes[0]), 'p50_ms'))]);
    }
  }
  const top = sizes[sizes.length - 1];
  const r = ratios(by('claim_next', top), by('claim_next', sizes[0]), 'p50_ms');
  summary.push({ what: `\`claim_next\` per-op cost at ${top.toLocaleString('en-US')} jobs`, base: `the same at ${sizes[0].toLocaleString('en-US')} jobs`, s: r, info: true, lowerBetter: true });
  md.push('## 3. Scale: per-operation cost vs number of jobs', '',
    `Each table is filled in one transaction by one \`INSERT ... SELECT\` through \`store.connection()\`, then checkpointed. Per repeat, ${sc[0].ops} \`claim_next\` and ${sc[0].ops} \`claim\` (distinct unclaimed jobs) run one operation per size in turn, so the sizes share the same disk moments. \`claim_next_delayed\` is \`claim_next\` on a table of the same size where nine jobs in ten are enqueued for later (\`until\` far ahead, as \`enqueue_with(job, run_at, ...)\` stores them): the delayed jobs sit past the claimable ones in the partial index, so they cost nothing. Each operation is one fsynced transaction; the ratio is to the same operation at ${sizes[0].toLocaleString('en-US')} jobs in the same repeat.`, '',
    table(['operation', 'jobs', 'p50 ms/op', 'mean ms/op', 'p50 vs 1,000 jobs'], rows, 'lrrrr'), '',
    setup.length ? table(['jobs', 'fill (one transaction)', 'file size', '`claim_next` query plan'], setup.map((s) => [s.jobs.toLocaleString('en-US'), `${s.fill_seconds.toFixed(2)} s`, `${(s.bytes / 1e6).toFixed(1)} MB`, `\`${s.claim_next_plan}\``]), 'rrrl') : '', '',
    '![scale](scale.svg)', '');
  charts['scale.svg'] = lines({
    title: 'Scale: median cost of one operation vs jobs in the table', subtitle: `file, WAL, synchronous=FULL; every op one fsynced transaction; ${repeats} repeats`,
    xs: sizes.map((n) => n.toLocaleString('en-US')), xLabel: 'jobs (log-spaced)', yLabel: 'ms per operation (p50)',
    series: ['claim_next', 'claim_next_delayed', 'claim'].filter((op) => by(op, sizes[0]).length).map((op) => ({ name: op, points: sizes.map((n) => stat(by(op, n).map((r) => r.p50_ms))) })),
  });
}

// ---------------------------------------------------------------------------------------------
// 4. Node

/** The instrumented pass: where a leasefence cycle's time goes in Node. */
function nodeProfile() {
  const p = pick({ section: 'node_fs_profile' })[0];
  if (!p) return [];
  const parts = Object.entries(p.fs).sort((a, b) => b[1].ms - a[1].ms)
    .map(([name, v]) => `\`${name}\` ${v.calls.toFixed(0)}× ${v.ms.toFixed(2)} ms`);
  const rest = p.ms_per_cycle - p.fs_ms_per_cycle;
  return [`Where leasefence's time goes (one extra pass of ${p.cycles} cycles with Node's \`fs\` calls timed): ${p.ms_per_cycle.toFixed(2)} ms per cycle, of which ${p.fs_ms_per_cycle.toFixed(2)} ms (${((p.fs_ms_per_cycle / p.ms_per_cycle) * 100).toFixed(0)}%) inside \`fs\`: ${parts.join(', ')}; everything else (SQLite in wasm, the VFS, JSON, JavaScript) ${rest.toFixed(2)} ms.`, ''];
}

const nd = pick({ section: 'node' });
if (nd.length) {
  const lf = nd.filter((r) => r.case === 'leasefence');
  const bs = nd.filter((r) => r.case === 'better-sqlite3');
  const r = ratios(lf, bs);
  const set = pick({ section: 'settings', case: 'node' })[0];
  const prof = pick({ section: 'node_fs_profile' })[0];
  const vfsSyncs = stat(lf.map((x) => x.fsyncs_per_cycle)).median;
  const fsyncText = prof?.fs?.fsyncSync
    ? `${fmtNum(prof.fs.fsyncSync.calls, 0)} (${fmtNum(vfsSyncs, 0)} file + ${fmtNum(prof.fs.fsyncSync.calls - vfsSyncs, 0)} directory)`
    : fmtNum(vfsSyncs, 1);
  summary.push({ short: 'Node vs better-sqlite3', what: 'Node: the npm package, claim + complete', base: 'better-sqlite3 with the same SQL', s: r, target: 0.5, targetText: '≥ 0.5×' });
  md.push('## 4. Node: the npm package vs better-sqlite3', '',
    `Both on a file with journal_mode=DELETE and synchronous=EXTRA (the directory is synced after the journal's unlink, which is the commit); better-sqlite3 runs the contract's SQL from \`crate/src/sqlite/sql/*.sql\` verbatim, each operation a \`BEGIN IMMEDIATE\` transaction with prepared statements. ${lf[0].cycles} cycles per repeat in interleaved blocks.`, '',
    table(['', 'cycles/s median (min–max)', 'ms/cycle', 'fsyncs/cycle', 'vs better-sqlite3'], [
      ['leasefence (npm package, wasm + Node fs VFS, dot-file locks)', spread(stat(lf.map((x) => x.rate))), fmtNum(1e3 / stat(lf.map((x) => x.rate)).median, 2), fsyncText, xr(r)],
      [`better-sqlite3 ${set?.better?.sqlite ? `(SQLite ${set.better.sqlite}, POSIX locks)` : ''}`, spread(stat(bs.map((x) => x.rate))), fmtNum(1e3 / stat(bs.map((x) => x.rate)).median, 2), 'the same (strace)', '1.00×'],
    ]), '', ...nodeProfile(), set ? `Node ${set.node}; better-sqlite3 reports \`${set.better.journal_mode}\`/synchronous=${set.better.synchronous}; leasefence's Node build opens with the rollback journal and synchronous=EXTRA (its VFS counts the real fsyncs above).` : '', '');
}

// ---------------------------------------------------------------------------------------------
// 5. Browser

const br = pick({ section: 'browser' });
if (br.length) {
  const set = pick({ section: 'settings', case: 'browser' })[0];
  const rows = [];
  for (const mode of ['api', 'worker']) {
    const lf = br.filter((r) => r.mode === mode && r.case === 'leasefence');
    const of = br.filter((r) => r.mode === mode && r.case === 'official');
    if (!lf.length) continue;
    const r = ratios(lf, of);
    summary.push({
      short: mode === 'api' ? 'browser page API vs official' : 'browser in-worker vs official',
      what: mode === 'api' ? 'Browser: page-side `LeaseStore` on OPFS' : 'Browser: inside the dedicated worker',
      base: mode === 'api' ? 'official sqlite-wasm, opfs-sahpool, same SQL, same message round trip' : 'official sqlite-wasm, opfs-sahpool, same SQL, in its worker',
      s: r, target: 1, targetText: '≥ 1.0× (on par)',
    });
    const flush = (xs) => stat(xs.map((x) => (x.opfs ? x.opfs.flush.calls / x.cycles : NaN)));
    const flushMs = (xs) => stat(xs.map((x) => (x.opfs ? x.opfs.flush.ms / x.cycles : NaN)));
    rows.push([mode === 'api' ? 'page → worker per call' : 'loop inside the worker', 'leasefence', spread(stat(lf.map((x) => x.rate))), fmtNum(1e3 / stat(lf.map((x) => x.rate)).median, 2), spread(flush(lf), 1), spread(flushMs(lf), 2), xr(r)]);
    rows.push(['', 'official 3.54.1 opfs-sahpool', spread(stat(of.map((x) => x.rate))), fmtNum(1e3 / stat(of.map((x) => x.rate)).median, 2), spread(flush(of), 1), spread(flushMs(of), 2), '1.00×']);
  }
  md.push('## 5. Browser: headless Chromium, OPFS', '',
    `leasefence's browser build (as the playground builds it, web/app/pkg, for its reset between blocks: the crate on the sahpool VFS of sqlite-wasm-vfs, rollback journal, synchronous=EXTRA) against the official \`@sqlite.org/sqlite-wasm\` ${set?.official?.sqlite ? `(SQLite ${set.official.sqlite})` : ''} on its opfs-sahpool VFS with journal_mode=${set?.official?.journal_mode ?? 'delete'} and synchronous=${set?.official?.synchronous ?? 3}, each in a dedicated worker, running the same SQL. "page → worker" drives leasefence through its own page-side API (web/store/lease-store.js) and the official worker through the same kind of message per call; "inside the worker" times a loop in each worker. OPFS calls are counted by wrapping \`FileSystemSyncAccessHandle\` in the bench's own workers (so only for the in-worker rows).`, '',
    table(['how', 'store', 'cycles/s median (min–max)', 'ms/cycle', 'OPFS flushes/cycle', 'ms in flush/cycle', 'vs official'], rows, 'llrrrrr'), '',
    set ? `Browser: ${set.userAgent}.` : '', '');
}

// Runtimes chart: Node and browser ratios side by side.
{
  const rows = summary.filter((s) => /Node|Browser/.test(s.what) && s.s).map((s, i) => ({
    label: s.short, ...s.s, target: s.target, color: COLORS[i], note: `${s.s.median.toFixed(2)}×`,
  }));
  if (rows.length) {
    charts['runtimes.svg'] = hbar({ title: 'Node and browser: leasefence throughput relative to the anchor', subtitle: 'claim + complete cycles; 1.0 = the anchor in the same run', rows, refLine: 1, refLabel: 'anchor' });
  }
}

// ---------------------------------------------------------------------------------------------
// 6. Size

const sz = pick({ section: 'size' });
if (sz.length) {
  const official = sz.find((s) => s.case === 'official');
  const rows = sz.map((s) => [
    s.case === 'official' ? `official sqlite3.wasm (@sqlite.org/sqlite-wasm ${s.version})` : `leasefence ${s.case} (\`${s.path}\`)`,
    `${kb(s.raw)} (${s.raw.toLocaleString('en-US')} B)`, `${kb(s.gzip)} (${s.gzip.toLocaleString('en-US')} B)`,
    official ? `${(s.gzip / official.gzip).toFixed(2)}×` : '–', s.case === 'official' ? '–' : s.gzip < 450_000 ? 'yes' : 'no',
  ]);
  for (const s of sz.filter((x) => x.case !== 'official')) {
    summary.push({ what: `wasm size, ${s.case} build (gzip -9)`, base: 'official sqlite3.wasm', sizeRow: s, official, target: 450_000 });
  }
  md.push('## 6. Size of the shipped .wasm', '',
    'Deterministic, so measured once: the file as shipped, and `gzip -9 -n`. KB = 1,000 bytes.', '',
    table(['file', 'raw', 'gzip -9', 'gzip vs official', 'under 450 KB gzip'], rows), '', '![size](size.svg)', '');
  charts['size.svg'] = hbar({
    title: 'Size of the .wasm (KB, gzip -9)', subtitle: 'target: under 450 KB gzipped; raw size in the label',
    unit: '', rows: sz.map((s, i) => ({ label: `${s.case} (raw ${kb(s.raw)})`, median: s.gzip / 1000, target: s.case === 'official' ? null : 450, color: COLORS[i], note: kb(s.gzip) })),
  });
}

// ---------------------------------------------------------------------------------------------
// 7b. Waking

const wk = pick({ section: 'waking' });
if (wk.length) {
  const names = { native: 'native `leasefence work`, SQLite (inotify)', npm: 'npm `JobWorker`, SQLite (fs.watch)', postgres: 'native `leasefence work`, PostgreSQL (LISTEN/NOTIFY)' };
  const rows = wk.map((w) => [names[w.case] ?? w.case, String(w.workers), String(w.enqueues),
    `${fmtNum(w.p50_ms, 1)} ms`, `${fmtNum(w.p99_ms, 1)} ms`, w.p99_ms <= 50 ? 'yes' : 'no',
    `${w.idle_ticks} ticks in ${w.idle_secs} s (${fmtNum(w.idle_cpu_ms_per_worker_minute, 2)} ms per worker-minute)`]);
  md.push('## 7b. Waking: idle workers woken by an enqueue', '',
    'Idle worker processes with a 300 s poll; one job at a time enqueued by another process. Latency: the worker\'s claim time (its lease\'s `until` minus the ttl) minus the time the enqueue began, so the enqueue\'s commit is included. Idle CPU: user + system time of all the workers (`/proc/PID/stat`, 10 ms ticks) while nothing is enqueued. Target: p99 within 50 ms, no measurable CPU while idle.', '',
    table(['case', 'workers', 'enqueues', 'p50', 'p99', 'p99 within 50 ms', 'idle CPU (all workers)'], rows, 'lrrrrll'), '');
}

const dash = pick({ section: 'dashboard' });
if (dash.length) {
  const sizes = [...new Set(dash.map((d) => d.jobs))].sort((a, b) => a - b);
  const [small, large] = [sizes[0], sizes[sizes.length - 1]];
  const requests = [...new Set(dash.map((d) => d.case))];
  const rows = requests.map((c) => {
    const at = (jobs) => dash.filter((d) => d.case === c && d.jobs === jobs);
    return [c, `${spread(stat(at(small).map((d) => d.ms)), 1)} ms`, `${spread(stat(at(large).map((d) => d.ms)), 1)} ms`,
      xr(ratios(at(large), at(small), 'ms'))];
  });
  md.push('## 7c. Dashboard: `leasefence ui` at ' + small.toLocaleString('en-US') + ' and ' + large.toLocaleString('en-US') + ' jobs', '',
    `Each request the page makes, over HTTP on loopback from another process (median of 5 calls, after one warm-up call, per repeat; median and min–max over the repeats); the counts are taken by a thread of the server every refresh interval while the page is open, and its cost is a row of its own, on an SQLite file filled with 80 % done, 1 % dead, 14 % queued, 3 % leased and 2 % scheduled jobs in three queues (bench/dashboard.mjs). The ratio is the large store's time over the small one's in the same repeat: a page is one indexed read (about 1× expected), a count reads every job (it grows with them). Page load: the document and its twelve files (six at a time, as a browser fetches them), then the page's six API calls together (counts, chart, schedules, first page of jobs, leases, workers), each on a connection of its own (the server answers HTTP/1.0: docs/decisions/dashboard-server.md); a refresh is the six calls.`, '',
    table(['request', `${small.toLocaleString('en-US')} jobs`, `${large.toLocaleString('en-US')} jobs`, 'ratio'], rows, 'lrrr'), '');
}

// ---------------------------------------------------------------------------------------------
// Summary, results.md, README section

function summaryRow(s) {
  if (s.sizeRow) {
    return [s.what, s.base, `${kb(s.sizeRow.gzip)}; **${(s.sizeRow.gzip / s.official.gzip).toFixed(2)}×** official (${kb(s.official.gzip)})`, '< 450 KB', s.sizeRow.gzip < s.target ? 'met' : 'missed'];
  }
  const target = s.info ? (s.lowerBetter ? 'flat (≈ 1×)' : '–') : s.targetText;
  return [s.what, s.base, xr(s.s), target, s.info ? 'info' : verdict(s.s, s.target)];
}
const summaryTable = table(['leasefence', 'baseline (same run)', 'ratio: median (min–max)', 'target', 'status'], summary.map(summaryRow), 'llrll');
const ratioRows = summary.filter((s) => s.s && !s.lowerBetter);
if (ratioRows.length) {
  charts['summary.svg'] = hbar({
    title: 'leasefence relative to its baselines (throughput or speed; higher is better)',
    subtitle: `ratio per repeat, median and min-max over ${repeats} repeats; dashed red: target`,
    rows: ratioRows.map((s, i) => ({ label: s.short, ...s.s, target: s.target ?? null, color: COLORS[i % COLORS.length], note: `${s.s.median.toFixed(2)}×` })),
    refLine: 1, refLabel: '1× = baseline',
  });
}

const machine = `${env.cpus ?? '?'} × ${env.cpu ?? '?'}, ${env.memory_gb ?? '?'} GB, Linux ${env.kernel ?? '?'}, Node ${env.node ?? '?'}`;
const load = `load average ${env.loadavg?.map((x) => x.toFixed(1)).join(' / ') ?? '?'} at the start, ${envEnd.loadavg?.map((x) => x.toFixed(1)).join(' / ') ?? '?'} at the end`;
const head = [
  '# leasefence benchmarks', '',
  `Generated by \`npm run bench\` (\`bench/run.sh\`) on ${env.when?.slice(0, 16).replace('T', ' ') ?? '?'} UTC: ${machine}; ${load}. The machine is shared, so absolute numbers move with other people's work; **the ratios are the result**: each is computed between two things measured in the same run, in interleaved blocks, per repeat, and shown as median (min–max) over ${repeats} repeats.`, '',
  'Durability is the same on both sides of every comparison: every commit is durable before it is answered. Natively that is the WAL journal (leasefence\'s default) with synchronous=FULL; in Node and the browser it is the rollback journal (`DELETE`) with synchronous=EXTRA, what leasefence uses there.', '',
  '## Summary against the targets', '', summaryTable, '',
  charts['summary.svg'] ? '![summary](summary.svg)\n' : '',
  charts['runtimes.svg'] ? '![node and browser](runtimes.svg)\n' : '',
  'Why the missed targets are missed, with the profiles: [findings.md](findings.md).', '',
];
writeFileSync(path.join(outDir, 'results.md'), [...head, ...md,
  '## Reproduce', '', '```sh', 'npm run bench                        # everything, about an hour here (builds included)',
  'BENCH_REPEATS=3 npm run bench        # fewer repeats', 'BENCH_ONLY=native,scale npm run bench # some sections (native contention processes throughput scale node browser size postgres waking dashboard peers)',
  '```', '', `Raw results of this run: \`${resultsFile}\` (JSON lines; \`node bench/report.mjs FILE docs/bench\` rebuilds this page).`, ''].join('\n'));
for (const [name, svg] of Object.entries(charts)) writeFileSync(path.join(outDir, name), svg);

writeFileSync(path.join(outDir, 'README-section.md'), [
  '## Performance', '',
  `Measured with \`npm run bench\` on ${machine.replace(/, Node.*/, '')} (a shared machine), ${env.when?.slice(0, 10) ?? ''}. Every figure is a ratio to a baseline measured in the same run, median (min–max) over ${repeats} repeats, with every commit durable before its answer on both sides (WAL with synchronous=FULL natively, the rollback journal with synchronous=EXTRA in Node and the browser).`, '',
  summaryTable, '',
  '![summary](docs/bench/summary.svg)', '',
  'What bounds the numbers: each claim and each complete is its own durable transaction, so natively a cycle costs about two fsyncs, the same as the raw floor. The seed-style functions open a connection per call, as the seed does; on WAL the last connection to close checkpoints and deletes the WAL, which costs more fsyncs than the operation itself. Under contention, waiting for the write lock decides throughput: native writers of one WAL file queue at the write gate, each woken in turn by the one ahead ([docs/decisions/write-gate.md](docs/decisions/write-gate.md)); behind it the native store retries after short jittered sleeps (50 µs to 2 ms), where SQLite\'s default handler, which the floor keeps, sleeps 1 to 100 ms and misses most moments the lock is free. Details, charts and profiles: [docs/bench/results.md](docs/bench/results.md) and [docs/bench/findings.md](docs/bench/findings.md).', '',
  '```sh', 'npm run bench                        # builds what it needs, runs every section (about an hour here), writes docs/bench',
  'BENCH_REPEATS=3 npm run bench        # fewer repeats', 'BENCH_ONLY=native,node npm run bench  # some sections: native contention processes throughput scale node browser size postgres', '```', '',
].join('\n'));
console.error(`  wrote ${path.join(outDir, 'results.md')}, README-section.md and ${Object.keys(charts).length} charts`);

/**
 * The write gate on and off for each kind of fleet the processes section ran (native, Node on the
 * native engine, both on one file): jobs/s, p99 and the ratio on / off per repeat. Empty when the
 * run had no pair.
 */
function gateTable(procs, counts, by) {
  const fleets = [['native', 'gated', 'sleeping'], ['npm (Node, native engine)', 'npm', 'npm-ungated'],
    ['mixed (half native, half Node)', 'mixed', 'mixed-ungated']]
    .filter(([, on, off]) => procs.some((r) => r.case === on) && procs.some((r) => r.case === off));
  if (!fleets.length) return [];
  const rows = [];
  for (const w of counts) {
    for (const [label, on, off] of fleets) {
      const rate = (c) => stat(by(c, w).map((r) => r.rate));
      const p99 = (c) => stat(by(c, w).map((r) => r.p99_ms));
      rows.push([String(w), label, spread(rate(on)), spread(rate(off)), xr(ratios(by(on, w), by(off, w))), spread(p99(on)), spread(p99(off))]);
    }
  }
  return ['#### The write gate on and off, by who shares the file', '',
    '"On" is each side\'s default (the Rust library\'s `write_gate(true)`, the npm package\'s `writeGate: true`); "off" is `write_gate(false)` natively (case "sleeping") and `LeaseStore.open(file, {writeGate: false})` in Node (case "npm-ungated"); "mixed" runs even-numbered workers natively and odd ones in Node on one WAL file, both sides with the gate ("mixed") or both without it ("mixed-ungated"). The ratio is on over off, per repeat.', '',
    table(['processes', 'fleet', 'gate on jobs/s', 'gate off jobs/s', 'on vs off', 'gate on p99 ms', 'gate off p99 ms'], rows), ''];
}

// bench/peers/report.mjs turns the peers benchmark's records into docs/bench/peers.md. Its
// verdicts ("accepts the stale write") and anomaly notes are what the page claims about other
// projects, so they are checked here on records shaped like the ones the workers write (the
// benchmark itself is `BENCH_ONLY=peers npm run bench`, not part of npm test).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const run = (id, label, repeat, workers, rate, extra = {}) => ({
  section: 'peers', case: id, label, store: 'x', workers, repeat, jobs: 100, completed: 100, duplicates: 0, errors: 0,
  seconds: 100 / rate, rate, p50_ms: 1, p99_ms: 2, durability: 'journal_mode=WAL, synchronous=2', ...extra,
});
const story = (id, label, order, fields) => ({ section: 'peers_stale', case: id, label, order, how: `${id} steps`, ...fields });

function report(records) {
  const dir = mkdtempSync(path.join(tmpdir(), 'peers-report-'));
  const file = path.join(dir, 'results.jsonl');
  writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
  execFileSync('node', [path.join(repo, 'bench/peers/report.mjs'), file, dir], { stdio: 'pipe' });
  return { md: readFileSync(path.join(dir, 'peers.md'), 'utf8'), svg: readFileSync(path.join(dir, 'peers.svg'), 'utf8') };
}

const env = { section: 'peers_env', redis: '7', postgres: '15', synchronous_commit: 'on', jobs: 100, repeats: 2,
  workers: [1, 8], versions: { 'pg-boss': '10.4.2' }, python: 'Python 3' };

const records = [
  env,
  run('leasefence-native', 'leasefence (Rust lib, SQLite file)', 0, 1, 100),
  run('leasefence-native', 'leasefence (Rust lib, SQLite file)', 1, 1, 200),
  run('pg-boss', 'pg-boss (PostgreSQL)', 0, 1, 50),
  run('pg-boss', 'pg-boss (PostgreSQL)', 1, 1, 300),
  run('persist-queue', 'persist-queue (SQLiteAckQueue)', 0, 1, 100, { duplicates: 9, completed: 109 }),
  run('liteque', 'liteque (better-sqlite3)', 0, 1, 100),
  run('huey', 'huey (SqliteHuey)', 0, 1, 100),
  // leasefence: the Rust worker's shape
  story('leasefence-native', 'leasefence (Rust lib, SQLite file)', 'after', { a_refused: true, a_told: 'done (job is already done)' }),
  story('leasefence-native', 'leasefence (Rust lib, SQLite file)', 'during', { a_refused: true, a_told: 'stale_fence (stale fence, current is 2)' }),
  // pg-boss: after B completed, affected 0; while B holds it, affected 1
  story('pg-boss', 'pg-boss (PostgreSQL)', 'after', { same_job: true, a_call: { ok: true, value: { affected: 0 } } }),
  story('pg-boss', 'pg-boss (PostgreSQL)', 'during', { same_job: true, a_call: { ok: true, value: { affected: 1 } } }),
  // liteque: its allocation id makes A's finalize a silent no-op
  story('liteque', 'liteque (better-sqlite3)', 'after', { same_job: true, a_call: { ok: true, value: { changed: 0 } } }),
  story('liteque', 'liteque (better-sqlite3)', 'during', { same_job: true, a_call: { ok: true, value: { changed: 0 } } }),
  // huey: B never gets the job
  story('huey', 'huey (SqliteHuey)', 'after', { same_job: false, a_call: { ok: true, value: 'ok' } }),
  story('huey', 'huey (SqliteHuey)', 'during', { same_job: false, a_call: { ok: true, value: 'ok' } }),
];

const row = (md, label, section) => md.split(section)[1].split('\n').find((l) => l.startsWith(`| ${label} |`));

test('the stale-write verdicts follow what the late call did to the stored job', () => {
  const { md } = report(records);
  const stale = '## The stale worker';
  assert.match(row(md, 'leasefence (Rust lib, SQLite file)', stale), /\*\*no \(refused, A is told\)\*\* \| refused: done .* \| refused: stale_fence/);
  assert.match(row(md, 'pg-boss (PostgreSQL)', stale), /\*\*yes\*\* \| not applied, no error \(the answer counts affected: 0\) \| accepted/);
  assert.match(row(md, 'liteque (better-sqlite3)', stale), /\*\*no \(ignored, A is not told\)\*\*/);
  assert.match(row(md, 'huey (SqliteHuey)', stale), /\*\*cannot be expressed\*\* \| B never got the job/);
});

test('ratios are per repeat against leasefence, and anomalies are reported', () => {
  const { md, svg } = report(records);
  const table = '## Throughput and latency';
  // pg-boss / leasefence: 50/100 = 0.5 and 300/200 = 1.5, median 1.0
  assert.match(row(md, 'pg-boss (PostgreSQL)', table), /\| 1\.00× \(0\.50–1\.50\) \|/);
  assert.match(row(md, 'pg-boss (PostgreSQL)', table), /synchronous=2|PostgreSQL|WAL, synchronous=FULL/);
  assert.match(md, /\*\*persist-queue \(SQLiteAckQueue\)\*\* handed the same job to two workers in 1 run\(s\): W=1: 9/);
  assert.match(md, /completed another number of jobs than it enqueued .*W=1: 109 of 100/);
  assert.match(svg, /^<svg/);
});

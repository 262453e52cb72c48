// bench/report.mjs renders the `processes` section of `npm run bench` (W processes draining one
// SQLite file: native with the write gate (as shipped), without it with blocking WAL locks on and
// off, and the npm package). Its ratios and
// the issue-23 goal verdicts ("64 processes >= 8", "p99 <= 10x p50 at 64") are claims about the
// project, so they are checked here on records shaped like the ones processes.rs writes (the
// benchmark itself is `BENCH_ONLY=processes npm run bench`, not part of npm test).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const run = (kase, workers, repeat, rate, p50, p99, errors = 0) => ({
  section: 'processes', case: kase, workers, repeat, jobs: 600, seconds: 600 / rate, rate, p50_ms: p50, p99_ms: p99,
  max_ms: p99, errors, setlk_compiled: true, loadavg: [2, 2, 2],
});

function report(records) {
  const dir = mkdtempSync(path.join(tmpdir(), 'processes-report-'));
  const file = path.join(dir, 'results.jsonl');
  writeFileSync(file, [{ section: 'env', case: 'start', repeats: 2 }, ...records].map((r) => JSON.stringify(r)).join('\n') + '\n');
  execFileSync('node', [path.join(repo, 'bench/report.mjs'), file, dir], { stdio: 'pipe' });
  return readFileSync(path.join(dir, 'results.md'), 'utf8');
}

const section = (md) => md.split('### Processes on one file')[1].split('\n## ')[0];
const row = (md, w) => section(md).split('\n').find((l) => l.startsWith(`| ${w} |`));
const goal = (md, label) => section(md).split('\n').find((l) => l.startsWith(`- ${label}`));

const records = [
  // native gated (as shipped): 64 holds up against 8 in both repeats; its tail stays inside 10x p50
  run('gated', 8, 0, 300, 5, 12), run('gated', 8, 1, 250, 5, 12),
  run('gated', 64, 0, 345, 50, 80), run('gated', 64, 1, 287.5, 50, 90),
  run('gated', 256, 0, 280, 200, 300),
  // native sleeping: 64 holds up against 8 in both repeats; its tail stays inside 10x p50
  run('sleeping', 8, 0, 400, 2, 15), run('sleeping', 8, 1, 300, 2, 15),
  run('sleeping', 64, 0, 440, 20, 150), run('sleeping', 64, 1, 330, 20, 190),
  run('blocking', 8, 0, 500, 2, 15), run('blocking', 8, 1, 300, 2, 15),
  run('blocking', 64, 0, 200, 20, 900), run('blocking', 64, 1, 150, 20, 900),
  // npm: per-repeat ratios to sleeping 0.5 and 1.0 at W=8 (median 0.75); 64 collapses in one repeat
  run('npm', 8, 0, 200, 4, 30, 3), run('npm', 8, 1, 300, 4, 30, 5),
  run('npm', 64, 0, 220, 40, 300, 7), run('npm', 64, 1, 150, 40, 500, 9),
  // 256: native ran, npm did not fit
  run('sleeping', 256, 0, 20, 100, 900), run('blocking', 256, 0, 10, 100, 900),
  { section: 'processes', case: 'npm', workers: 256, repeat: 0, jobs: 600, skipped: '256 Node processes need about 23040 MB (90 MB each), 1000 MB available' },
];

test('the npm columns are its runs, with the ratio to native sleeping per repeat', () => {
  const md = report(records);
  // 200/400 = 0.5, 300/300 = 1.0: median 0.75
  assert.match(row(md, 8), /\| 250 \(200–300\) \| 4\.00 \(4\.00–4\.00\) \| 30\.0 \(30\.0–30\.0\) \| \*\*0\.75×\*\* \(0\.50–1\.00\) \|/);
  // busy retries: medians of blocking / sleeping / gated / npm
  assert.match(row(md, 8), /\| 0 \/ 0 \/ 0 \/ 4 \|$/);
  assert.match(row(md, 256), /\| not run \| – \| – \| – \|/);
  assert.match(section(md), /"npm" at 256 processes not run in 1 of 2 repeats: 256 Node processes need about 23040 MB/);
});

test('the goals are judged per runtime and per repeat', () => {
  const md = report(records);
  // gated, as shipped: 345/300 = 1.15, 287.5/250 = 1.15; p99/p50 1.6 and 1.8
  assert.match(goal(md, 'native (as shipped: the write gate'), /64 processes vs 8 \*\*1\.15×\*\* \(1\.15–1\.15\): met; p99 \/ p50 at 64 processes \*\*1\.7×\*\* \(1\.6–1\.8\): met\./);
  assert.match(md, /\| native: 64 processes on one SQLite file \(jobs\/s\) \| the same with 8 processes \| \*\*1\.15×\*\* \(1\.15–1\.15\) \| ≥ 1× \(no collapse\) \| met \|/);
  // sleeping: 440/400 = 1.10, 330/300 = 1.10; p99/p50 7.5 and 9.5
  assert.match(goal(md, 'native without the write gate'), /64 processes vs 8 \*\*1\.10×\*\* \(1\.10–1\.10\): met; p99 \/ p50 at 64 processes \*\*8\.5×\*\* \(7\.5–9\.5\): met\./);
  // blocking: 200/500 = 0.40, 150/300 = 0.50; p99/p50 45
  assert.match(goal(md, 'native with blocking'), /\*\*0\.45×\*\* \(0\.40–0\.50\): missed; p99 \/ p50 at 64 processes \*\*45\.0×\*\* \(45\.0–45\.0\): missed\./);
  // npm: 220/200 = 1.10, 150/300 = 0.50 (median 0.80); p99/p50 7.5 and 12.5 (median 10.0)
  assert.match(goal(md, 'npm package'), /\*\*0\.80×\*\* \(0\.50–1\.10\): missed at the median \(met in some repeats\); p99 \/ p50 at 64 processes \*\*10\.0×\*\* \(7\.5–12\.5\): met at the median, not in every repeat\./);
  assert.match(md, /\| npm package: 64 processes on one SQLite file \(jobs\/s\) \| the same with 8 processes \| \*\*0\.80×\*\* \(0\.50–1\.10\) \| ≥ 1× \(no collapse\) \| missed at the median \(met in some repeats\) \|/);
  assert.match(section(md), /plainjob's throughput, is a comparison with another project: the peers section/);
});

test('without npm runs the section is the native table alone', () => {
  const md = report(records.filter((r) => r.case !== 'npm'));
  assert.doesNotMatch(section(md), /npm jobs\/s/);
  assert.match(row(md, 8), /\| 0 \/ 0 \/ 0 \|$/);
  assert.equal(goal(md, 'npm package'), undefined);
});

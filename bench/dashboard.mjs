// The dashboard (`leasefence ui`) at 1,000 and at 1,000,000 jobs: how long each request the page
// makes takes, and the page's load and refresh, each size's figure against the small store's in
// the same repeat (a page read through an index costs about the same at both; a count grows with
// the jobs). One JSON line per request and size and repeat on stdout.
//
//   node bench/dashboard.mjs --cli target/release/leasefence --dir target/bench-tmp \
//     [--sizes 1000,1000000] [--repeats 3] [--calls 5]
//
// The store is filled the way any program following the contract may write it (rows in `jobs`,
// the dead marks and failures beside them), through better-sqlite3 in one transaction, so that a
// million jobs take seconds rather than a million claims: 80 % done, 1 % dead, 14 % queued, 3 %
// leased, 2 % scheduled, over three queues, one job in five at priority 10.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const Database = require('better-sqlite3');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const cli = arg('cli', 'target/release/leasefence');
const dir = arg('dir', 'target/bench-tmp');
const sizes = arg('sizes', '1000,1000000').split(',').map(Number);
const repeats = Number(arg('repeats', '3'));
const calls = Number(arg('calls', '5'));
const say = (...m) => console.error('  [dashboard]', ...m);

const QUEUES = ['default', 'mail', 'billing'];

function fill(path, jobs, now) {
  rmSync(path, { force: true });
  rmSync(`${path}-wal`, { force: true });
  rmSync(`${path}-shm`, { force: true });
  // The library makes the schema (and its triggers) first; the rows follow the contract's shape.
  execFileSync(cli, ['--db', path, 'stats'], { stdio: 'ignore' });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  const insert = db.prepare('INSERT INTO jobs(id, owner, until, fence, result, done) VALUES (?, ?, ?, ?, ?, ?)');
  const place = db.prepare('UPDATE leasefence_order SET queue = ?, priority = ? WHERE job = ?');
  const mark = db.prepare('INSERT INTO leasefence_dead(job, fence, at) VALUES (?, 1, ?)');
  const failure = db.prepare('INSERT INTO leasefence_failures(job, fence, at, error) VALUES (?, 1, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < jobs; i++) {
      const id = `job-${i}`;
      const kind = i % 100;
      if (kind < 80) insert.run(id, 'w', now - 60, 1, 'ok', 1);
      else if (kind === 80) {
        insert.run(id, 'w', now - 60, 1, null, 1);
        mark.run(id, now - 60);
        failure.run(id, now - 60, 'boom');
      } else if (kind < 95) insert.run(id, null, 0, 0, null, 0);
      else if (kind < 98) insert.run(id, `w-${i % 8}`, now + 3600 + (i % 1000), 1, null, 0);
      else insert.run(id, null, now + 7200 + (i % 1000), 0, null, 0);
      place.run(QUEUES[i % 3], i % 5 === 0 ? 10 : 0, id);
    }
  })();
  db.close();
}

function startUi(path) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['--db', path, 'ui', '--listen', '127.0.0.1:0', '--read-only'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/(http:\/\/[^/]+)\/\?token=(\S+)/);
      if (m) resolve({ child, base: m[1], token: m[2] });
    });
    child.on('exit', (code) => reject(new Error(`leasefence ui exited with ${code}: ${out}`)));
  });
}

async function timed(ui, path) {
  const t = performance.now();
  const r = await fetch(ui.base + path, { headers: { authorization: `Bearer ${ui.token}` } });
  const body = await r.text();
  const ms = performance.now() - t;
  if (!r.ok) throw new Error(`${path}: ${r.status} ${body}`);
  return { ms, body };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function measure(ui) {
  const figures = {};
  const paths = {
    '/api/stats': '/api/stats',
    '/metrics': '/metrics',
    'jobs: any': '/api/jobs?limit=50',
    'jobs: queued': '/api/jobs?limit=50&state=queued',
    'jobs: scheduled': '/api/jobs?limit=50&state=scheduled',
    'jobs: leased': '/api/jobs?limit=50&state=leased',
    'jobs: done': '/api/jobs?limit=50&state=done',
    'jobs: dead': '/api/jobs?limit=50&state=dead',
    'jobs: leased, queue mail': '/api/jobs?limit=50&state=leased&queue=mail',
    'job report': '/api/job/job-80',
    'workers': '/api/workers',
    'schedules': '/api/schedules',
    'leases (up to 500)': '/api/jobs?state=leased&limit=500',
  };
  for (const [name, path] of Object.entries(paths)) {
    await timed(ui, path); // warm the statement cache and the page cache alike at both sizes
    const ms = [];
    for (let i = 0; i < calls; i++) ms.push((await timed(ui, path)).ms);
    figures[name] = median(ms);
  }
  // A page deep into a listing: the cursor of each page's `next` followed ten times (pages of 2,
  // so that the small store has an 11th page of leases too).
  let path = '/api/jobs?limit=2&state=leased';
  for (let i = 0; i < 10; i++) {
    const page = JSON.parse((await timed(ui, path)).body);
    if (!page.next) throw new Error(`the leases end after ${i + 1} pages of 2`);
    path = `/api/jobs?limit=2&state=leased&after=${encodeURIComponent(page.next)}`;
  }
  const deep = [];
  for (let i = 0; i < calls; i++) deep.push((await timed(ui, path)).ms);
  figures['jobs: leased, 11th page of 2'] = median(deep);
  // What the page does (web/dashboard/main.js): the document and its twelve files (as a browser
  // fetches them: six at a time), then together the counts, the chart, the schedules, the first
  // page of jobs, the leases and the workers. A refresh: every 2 s the counts, chart, schedules
  // and first page, every second the leases and workers; timed here as all of them once.
  const files = ['/dashboard/style.css', '/dashboard/main.js', '/common/i18n.js', '/common/dom.js',
    '/dashboard/model/lanes.js', '/dashboard/view/counts-view.js', '/dashboard/view/jobs-view.js',
    '/dashboard/view/lanes-view.js', '/dashboard/view/registry-view.js', '/common/messages/en.js',
    '/common/messages/ja.js', '/common/messages/zh.js'];
  const api = ['/api/stats', '/api/history', '/api/schedules', '/api/jobs?limit=50',
    '/api/jobs?state=leased&limit=500', '/api/workers'];
  const load = [];
  const refresh = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await timed(ui, '/');
    for (let at = 0; at < files.length; at += 6) await Promise.all(files.slice(at, at + 6).map((f) => timed(ui, f)));
    const r = performance.now();
    await Promise.all(api.map((path) => timed(ui, path)));
    const end = performance.now();
    load.push(end - t);
    refresh.push(end - r);
  }
  figures['page load (/, its files, every API call)'] = median(load);
  // What the server's counting thread pays for one count (it counts again every refresh
  // interval while the page is open, and the page reads the latest count).
  const counted = [];
  for (let i = 0; i < calls; i++) {
    counted.push(JSON.parse((await timed(ui, '/api/stats')).body).count_ms);
    await new Promise((r) => setTimeout(r, 200));
  }
  figures['one count of every queue, in the server'] = median(counted);
  figures['page refresh (every API call)'] = median(refresh);
  return figures;
}

mkdirSync(dir, { recursive: true });
const now = Date.now() / 1000;
const stores = sizes.map((jobs) => {
  const path = join(dir, `dashboard-${jobs}.db`);
  const t = performance.now();
  fill(path, jobs, now);
  say(`${jobs} jobs filled in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return { jobs, path };
});
for (let repeat = 0; repeat < repeats; repeat++) {
  for (const { jobs, path } of stores) {
    const ui = await startUi(path);
    try {
      const figures = await measure(ui);
      for (const [request, ms] of Object.entries(figures)) {
        console.log(JSON.stringify({ section: 'dashboard', case: request, jobs, repeat, ms }));
      }
      say(`repeat ${repeat + 1}/${repeats}, ${jobs} jobs: stats ${figures['/api/stats'].toFixed(1)} ms, ` +
        `leased page ${figures['jobs: leased'].toFixed(1)} ms, load ${figures['page load (/, its files, every API call)'].toFixed(1)} ms`);
    } finally {
      ui.child.removeAllListeners('exit');
      ui.child.kill();
    }
  }
}
for (const { path } of stores) for (const end of ['', '-wal', '-shm']) rmSync(path + end, { force: true });

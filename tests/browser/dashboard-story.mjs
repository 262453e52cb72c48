// The dashboard's stalled-worker story (used by dashboard.test.mjs on an SQLite file and by
// dashboard-postgres.test.mjs on a PostgreSQL server), and what the dashboard tests share: the
// server started as `leasefence ui` prints it, and readers of the page's lanes and workers.
import assert from 'node:assert/strict';
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, repo } from './harness.mjs';
import { PKG, nativeCli } from '../node/helpers.mjs';

export const cli = nativeCli();

export function startUi(db) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['--db', db, 'ui', '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const url = out.match(/http:\/\/\S+\?token=\S+/);
      if (url) resolve({ child, url: url[0] });
    });
    child.on('exit', (code) => reject(new Error(`leasefence ui exited with ${code}: ${out}`)));
  });
}

/**
 * SIGSTOPs `child` (a `leasefence work` on `db`) at a moment it holds no write of an SQLite file:
 * a process stopped inside its commit keeps the file's lock (the dot-file lock of a file shared
 * with Node locks reads too), and nobody could write, or read, until it resumed, which would test
 * SQLite's lock instead of the lease. Probed with a write that changes nothing (reviving a job that
 * does not exist) under a short busy timeout; when it cannot get through, the child runs on a
 * moment and is stopped again. On PostgreSQL the stop lands where it lands.
 */
/** Waits until every thread of process `pid` is stopped (state T in /proc). */
function waitStopped(pid) {
  const tasks = `/proc/${pid}/task`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const states = readdirSync(tasks).map((t) => {
      try { return readFileSync(`${tasks}/${t}/stat`, 'utf8').split(') ').pop()[0]; } catch { return 'T'; }
    });
    if (states.every((s) => s === 'T')) return;
    if (Date.now() > deadline) throw new Error(`${tasks}: not stopped (${states.join('')})`);
    execFileSync('sleep', ['0.002']);
  }
}

export function pauseOutsideAWrite(child, db) {
  if (/^postgres(ql)?:\/\//.test(db)) {
    child.kill('SIGSTOP');
    return;
  }
  for (let i = 0; i < 50; i++) {
    child.kill('SIGSTOP');
    // kill(2) returns before the threads stop: probe only once every one has.
    waitStopped(child.pid);
    const probe = spawnSync(cli, ['--db', db, '--busy-timeout', '0.3', 'revive', 'no-such-job-probe'], { encoding: 'utf8' });
    // 1: answered "no such job" (the write lock was had); 3: a storage error (busy).
    if (probe.status === 0 || probe.status === 1) return;
    child.kill('SIGCONT');
    execFileSync('sleep', ['0.02']);
  }
  throw new Error('the worker held the lock at each of 50 stops');
}

/** A new page of `browser` opened at `url`, with the page's errors and console errors kept. */
export async function openPage(browser, url) {
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  await page.goto(url);
  return { page, errors };
}

/** The lanes drawn: [{job, fence, look, text}]. */
export async function lanesOf(page) {
  return page.locator('#lanes .lane').evaluateAll((rows) => rows.map((r) => ({
    job: r.dataset.job, fence: Number(r.dataset.fence), look: r.dataset.look, text: r.textContent,
  })));
}

/** The workers table: {owner: {status, lost, refused, holds}}. */
export async function workersOf(page) {
  return page.locator('#workers tbody tr[data-owner]').evaluateAll((rows) => Object.fromEntries(rows.map((r) => {
    const cells = [...r.children].map((c) => c.textContent);
    return [r.dataset.owner, { status: r.dataset.status, holds: cells[5], dead: Number(cells[9]), lost: Number(cells[10]), refused: Number(cells[11]) }];
  })));
}

export async function until(page, what, f, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await f();
    if (last.ok) return last;
    await page.waitForTimeout(200);
  }
  assert.fail(`${what} within ${timeout} ms; last seen ${JSON.stringify(last)}`);
}

/**
 * The stalled-worker story on `db` (a file or a postgres:// URL), its ids and owners suffixed with
 * `tag` (a shared PostgreSQL database holds other runs' rows too): A holds a job and is SIGSTOPped
 * past its lease; the page shows the lease expired and A gone; B takes the job over (fence 2); A,
 * resumed, writes nothing and its registry row counts the lost lease. With `skewed` (a file the
 * Node package shares), a JobWorker whose clock runs a minute behind claims a job that D then
 * takes and completes; the store refuses the skewed worker's late completion, and the page shows
 * it counted.
 */
export async function stalledStory({ db, tag = '', skewed = false, screenshots = false }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-stalled-'));
  const release = path.join(dir, 'release');
  const [stuck, lateJob, pause, skew] = [`job-stuck${tag}`, `job-late${tag}`, `pause${tag}`, `skew${tag}`];
  const [A, B, C, D] = ['A', 'B', 'C', 'D'].map((w) => `${w}${tag}`);
  const children = [];
  const browser = await launchBrowser();
  try {
    if (skewed) {
      // Node makes the file (so it is marked shared, and the native processes use dot-file locks).
      const { LeaseStore } = createRequire(import.meta.url)(PKG);
      const store = await LeaseStore.open(db);
      store.close();
    }
    execFileSync(cli, ['--db', db, 'enqueue', stuck, '--queue', pause]);
    const started = path.join(dir, 'started');
    // A holds the job with a command that runs 30 s; A is then SIGSTOPped past its 2 s lease.
    const a = spawn(cli, ['--db', db, 'work', '--owner', A, '--ttl', '2', '--queue', pause, '--until-empty', '--grace', '1',
      '--', 'sh', '-c', `touch '${started}'; sleep 30`], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(a);
    const ui = await startUi(db);
    children.push(ui.child);
    const { page, errors } = await openPage(browser, ui.url);

    // A's lease, live, renewed (the polls see its end move), and A alive, holding it.
    await until(page, "A's lane live with renewals seen", async () => {
      const lane = (await lanesOf(page)).find((l) => l.job === stuck);
      return { ok: lane?.look === 'live' && /[1-9]\d* renewals/.test(lane.text), lane };
    });
    const before = await workersOf(page);
    assert.equal(before[A]?.status, 'alive', JSON.stringify(before));
    assert.ok(before[A].holds.includes(stuck), JSON.stringify(before));

    pauseOutsideAWrite(a, db);
    // The lease lapses: the lane turns expired, and A, no longer beating, shows gone.
    const expired = await until(page, "A's lane expired", async () => {
      const lane = (await lanesOf(page)).find((l) => l.job === stuck && l.fence === 1);
      return { ok: lane?.look === 'expired', lane };
    });
    assert.match(expired.lane.text, /expired .* ago/);
    await until(page, 'A gone', async () => ({ ok: (await workersOf(page))[A]?.status === 'gone' }));

    // B takes the job over (fence 2): A's lane says so, B's lane is live.
    const b = spawn(cli, ['--db', db, 'work', '--owner', B, '--ttl', '10', '--queue', pause, '--until-empty',
      '--', 'sh', '-c', 'sleep 3; echo B'], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(b);
    await until(page, 'the take-over drawn', async () => {
      const lanes = await lanesOf(page);
      const old = lanes.find((l) => l.job === stuck && l.fence === 1);
      const taker = lanes.find((l) => l.job === stuck && l.fence === 2);
      return { ok: old?.look === 'taken' && old.text.includes(`taken over by ${B} (fence 2)`) && taker?.look === 'live', lanes };
    });
    if (screenshots) await page.screenshot({ path: path.join(repo, 'docs', 'dashboard-takeover.png'), fullPage: true });

    // A resumes: its command is stopped, its result never written; its registry row counts the
    // lost lease once it has beaten again (its last beat, as it stops).
    a.kill('SIGCONT');
    await until(page, "A's lost lease counted", async () => {
      const w = (await workersOf(page))[A];
      return { ok: w?.status === 'stopped' && w.lost === 1 && w.refused === 0, w };
    }, 20000);
    const results = [[stuck, 'B\n']];

    if (skewed) {
      // C, whose clock runs a minute behind, claims the job: by everyone else's clock its lease
      // is over at once, so D takes the job and completes it; C's late completion is refused by
      // the store (the fence moved on) and counted.
      execFileSync(cli, ['--db', db, 'enqueue', lateJob, '--queue', skew]);
      const c = spawn(process.execPath, [path.join(repo, 'tests/browser/skewed-worker.mjs'), PKG, db, release, C, skew],
        { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(c);
      let cOut = '';
      c.stdout.on('data', (d) => { cOut += d; });
      await until(page, 'C holding the job', async () => ({ ok: cOut.includes('"holding":true'), cOut }));
      const d = spawn(cli, ['--db', db, 'work', '--owner', D, '--queue', skew, '--until-empty', '--', 'sh', '-c', 'echo D'],
        { stdio: ['ignore', 'ignore', 'inherit'] });
      children.push(d);
      await until(page, 'D completing the job', async () => {
        const state = JSON.parse(execFileSync(cli, ['--db', db, 'state', lateJob], { encoding: 'utf8' })).value;
        return { ok: state.done && state.fence === 2, state };
      });
      writeFileSync(release, '');
      await until(page, "C's refused write counted", async () => {
        const w = (await workersOf(page))[C];
        return { ok: w?.refused === 1 && w.status === 'stopped', w };
      }, 20000);
      assert.equal(JSON.parse(cOut.trim().split('\n').at(-1)).staleWritesRefused, 1, cOut);
      results.push([lateJob, 'D\n']);
    }
    // The results are the newer holders', each at fence 2.
    for (const [job, result] of results) {
      const { state } = await until(page, `${job} done`, async () => {
        const now = JSON.parse(execFileSync(cli, ['--db', db, 'state', job], { encoding: 'utf8' })).value;
        return { ok: now.done, state: now };
      });
      assert.deepEqual([state.done, state.fence, state.result], [true, 2, result], job);
    }
    if (screenshots) await page.screenshot({ path: path.join(repo, 'docs', 'dashboard-workers.png'), fullPage: true });
    assert.deepEqual(errors, []);
  } finally {
    for (const child of children) {
      try { child.kill('SIGCONT'); child.kill('SIGTERM'); } catch { /* gone */ }
    }
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

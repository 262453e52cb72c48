// The dashboard (`leasefence ui`) in Chromium against a live queue: `leasefence work` drains a
// real SQLite file with three commands at once while the page, opened with the printed URL,
// shows the counts moving by themselves, lists the leases of the running commands, and shows the
// job whose command failed as dead; its Revive button brings it back, and the worker then
// completes it. The page's own requests carry only the cookie it set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, repo } from './harness.mjs';
import { PKG, nativeCli } from '../node/helpers.mjs';

const cli = nativeCli();

function startUi(db) {
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

/** The page's counts table as {queue: {state: n}}. */
async function counts(page) {
  return page.locator('#stats tr').evaluateAll((rows) => {
    const head = [...rows[0].children].map((c) => c.textContent);
    const out = {};
    for (const row of rows.slice(1)) {
      const cells = [...row.children].map((c) => c.textContent);
      out[cells[0]] = Object.fromEntries(head.slice(1).map((h, i) => [h, Number(cells[i + 1])]));
    }
    return out;
  });
}

/** The jobs table's rows as [{id, state, queue, fence}] after choosing `state` in the filter. */
async function listed(page, state) {
  await page.evaluate(() => { delete document.getElementById('jobs').dataset.shown; });
  await page.selectOption('#state', state);
  await page.waitForSelector(`#jobs[data-shown="${state}"]`);
  return page.locator('#jobs tbody tr').evaluateAll((rows) => rows.map((r) => {
    const [id, state, queue, fence, , owner] = [...r.children].map((c) => c.textContent);
    return { id, state, queue, fence: Number(fence), owner };
  }));
}

test('the dashboard follows a live queue in Chromium, and a dead job revived from the page is completed by the worker', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-dashboard-'));
  const db = path.join(dir, 'queue.db');
  const fixed = path.join(dir, 'fixed');
  const children = [];
  const browser = await launchBrowser();
  try {
    // The command holds each job 4 s; `boom` fails until the file `fixed` exists.
    const command = `case "$LEASEFENCE_JOB" in boom) [ -e '${fixed}' ] || { echo broken >&2; exit 1; };; esac; sleep 4`;
    execFileSync(cli, ['--db', db, 'enqueue', 'boom']);
    for (let i = 0; i < 8; i++) execFileSync(cli, ['--db', db, 'enqueue', `slow-${i}`]);
    const work = spawn(cli, ['--db', db, 'work', '--ttl', '3', '--concurrency', '3', '--max-attempts', '1', '--', 'sh', '-c', command],
      { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(work);
    const ui = await startUi(db);
    children.push(ui.child);

    const page = await browser.context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(ui.url);
    assert.ok(!page.url().includes('token='), `the token left the address bar: ${page.url()}`);

    // Live: the counts move without a reload, as the worker leases and completes jobs.
    await page.waitForFunction(() => {
      const rows = [...document.querySelectorAll('#stats tr')];
      const all = rows.find((r) => r.children[0].textContent === 'all');
      return all && Number(all.children[3].textContent) >= 1;
    }, null, { timeout: 15000 });
    const leased = await listed(page, 'leased');
    assert.ok(leased.length >= 1 && leased.length <= 3, `at most the 3 commands' jobs leased: ${JSON.stringify(leased)}`);
    assert.ok(leased.every((j) => j.fence === 1 && j.id.startsWith('slow-') && j.owner.startsWith('work-')), JSON.stringify(leased));

    // `boom` failed on its only attempt: dead, with a Revive button.
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('#stats tr')].find((r) => r.children[0].textContent === 'all');
      return all && Number(all.children[5].textContent) === 1;
    }, null, { timeout: 20000 });
    if (process.env.LEASEFENCE_SCREENSHOTS) {
      // The README's picture: every job, mid-run, the dead one among them.
      await page.selectOption('#state', '');
      await page.waitForSelector('#jobs[data-shown="any"]');
      await page.waitForTimeout(4500); // a few samples for the chart
      await page.screenshot({ path: path.join(repo, 'docs', 'dashboard.png'), fullPage: true });
    }
    const dead = await listed(page, 'dead');
    assert.deepEqual(dead.map((j) => j.id), ['boom']);
    // Its page: the failed attempt with the command's standard error.
    await page.getByRole('link', { name: 'boom' }).click();
    await page.waitForSelector('#job[data-job="boom"]');
    const failures = await page.locator('#job-failures tbody tr').evaluateAll((rows) =>
      rows.map((r) => [r.children[0].textContent, r.children[2].textContent.trim()]));
    assert.deepEqual(failures, [['1', 'broken']]);
    const fields = await page.locator('#job-fields').textContent();
    assert.ok(fields.includes('dead') && fields.includes('lease') , fields);
    mkdirSync(dir, { recursive: true });
    writeFileSync(fixed, '');
    await page.locator('#jobs tbody tr', { hasText: 'boom' }).getByRole('button', { name: 'revive' }).click();
    // The revive is in the next counts at once; then the worker takes the job again and completes it.
    await page.waitForFunction(() => {
      const all = [...document.querySelectorAll('#stats tr')].find((r) => r.children[0].textContent === 'all');
      return all && Number(all.children[5].textContent) === 0;
    }, null, { timeout: 5000 });
    const deadline = Date.now() + 40000;
    let state;
    while (Date.now() < deadline) {
      state = JSON.parse(execFileSync(cli, ['--db', db, 'state', 'boom'], { encoding: 'utf8' })).value;
      if (state.done) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(state.done, true, `boom was not completed after the revive: ${JSON.stringify(state)}`);
    assert.equal(state.fence, 2, 'completed by a second claim');
    const done = await listed(page, 'done');
    assert.ok(done.some((j) => j.id === 'boom' && j.fence === 2), JSON.stringify(done));
    assert.deepEqual(errors, []);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** The lanes drawn: [{job, fence, look, text}]. */
async function lanesOf(page) {
  return page.locator('#lanes .lane').evaluateAll((rows) => rows.map((r) => ({
    job: r.dataset.job, fence: Number(r.dataset.fence), look: r.dataset.look, text: r.textContent,
  })));
}

/** The workers table: {owner: {status, lost, refused, holds}}. */
async function workersOf(page) {
  return page.locator('#workers tbody tr[data-owner]').evaluateAll((rows) => Object.fromEntries(rows.map((r) => {
    const cells = [...r.children].map((c) => c.textContent);
    return [r.dataset.owner, { status: r.dataset.status, holds: cells[5], lost: Number(cells[9]), refused: Number(cells[10]) }];
  })));
}

async function until(page, what, f, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    last = await f();
    if (last.ok) return last;
    await page.waitForTimeout(200);
  }
  assert.fail(`${what} within ${timeout} ms; last seen ${JSON.stringify(last)}`);
}

test('a stalled worker in Chromium: its lease turns expired, another takes the job over, and a late write is refused and counted', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-stalled-'));
  const db = path.join(dir, 'queue.db');
  const release = path.join(dir, 'release');
  const children = [];
  const browser = await launchBrowser();
  try {
    // Node makes the file (so it is marked shared, and the native processes use dot-file locks).
    const { LeaseStore } = (await import('node:module')).createRequire(import.meta.url)(PKG);
    const store = await LeaseStore.open(db);
    store.enqueue('job-stuck', null, null, 'pause');
    store.close();
    const started = path.join(dir, 'started');
    // A holds job-stuck with a command that runs 30 s; A is then SIGSTOPped past its 2 s lease.
    const a = spawn(cli, ['--db', db, 'work', '--owner', 'A', '--ttl', '2', '--queue', 'pause', '--until-empty', '--grace', '1',
      '--', 'sh', '-c', `touch '${started}'; sleep 30`], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(a);
    const ui = await startUi(db);
    children.push(ui.child);
    const page = await browser.context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    await page.goto(ui.url);

    // A's lease, live, renewed (the polls see its end move), and A alive, holding it.
    await until(page, "A's lane live with renewals seen", async () => {
      const lane = (await lanesOf(page)).find((l) => l.job === 'job-stuck');
      return { ok: lane?.look === 'live' && /[1-9]\d* renewals/.test(lane.text), lane };
    });
    const before = await workersOf(page);
    assert.equal(before.A?.status, 'alive', JSON.stringify(before));
    assert.ok(before.A.holds.includes('job-stuck'), JSON.stringify(before));

    a.kill('SIGSTOP');
    // The lease lapses: the lane turns expired, and A, no longer beating, shows gone.
    const expired = await until(page, "A's lane expired", async () => {
      const lane = (await lanesOf(page)).find((l) => l.job === 'job-stuck' && l.fence === 1);
      return { ok: lane?.look === 'expired', lane };
    });
    assert.match(expired.lane.text, /expired .* ago/);
    await until(page, 'A gone', async () => ({ ok: (await workersOf(page)).A?.status === 'gone' }));

    // B takes the job over (fence 2): A's lane says so, B's lane is live.
    const b = spawn(cli, ['--db', db, 'work', '--owner', 'B', '--ttl', '10', '--queue', 'pause', '--until-empty',
      '--', 'sh', '-c', 'sleep 3; echo B'], { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(b);
    await until(page, 'the take-over drawn', async () => {
      const lanes = await lanesOf(page);
      const old = lanes.find((l) => l.job === 'job-stuck' && l.fence === 1);
      const taker = lanes.find((l) => l.job === 'job-stuck' && l.fence === 2);
      return { ok: old?.look === 'taken' && /taken over by B \(fence 2\)/.test(old.text) && taker?.look === 'live', lanes };
    });
    if (process.env.LEASEFENCE_SCREENSHOTS) {
      await page.screenshot({ path: path.join(repo, 'docs', 'dashboard-takeover.png'), fullPage: true });
    }

    // A resumes: its command is stopped, its result never written; its registry row counts the
    // lost lease once it has beaten again (its last beat, as it stops).
    a.kill('SIGCONT');
    await until(page, "A's lost lease counted", async () => {
      const w = (await workersOf(page)).A;
      return { ok: w?.status === 'stopped' && w.lost === 1 && w.refused === 0, w };
    }, 20000);

    // C, whose clock runs a minute behind, claims job-late: by everyone else's clock its lease is
    // over at once, so D takes the job and completes it; C's late completion is refused by the
    // store (the fence moved on) and counted.
    const late = await LeaseStore.open(db);
    late.enqueue('job-late', null, null, 'skew');
    late.close();
    const c = spawn(process.execPath, [path.join(repo, 'tests/browser/skewed-worker.mjs'), PKG, db, release], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(c);
    let cOut = '';
    c.stdout.on('data', (d) => { cOut += d; });
    await until(page, 'C holding job-late', async () => ({ ok: cOut.includes('"holding":true'), cOut }));
    const d = spawn(cli, ['--db', db, 'work', '--owner', 'D', '--queue', 'skew', '--until-empty', '--', 'sh', '-c', 'echo D'],
      { stdio: ['ignore', 'ignore', 'inherit'] });
    children.push(d);
    await until(page, 'D completing job-late', async () => {
      const state = JSON.parse(execFileSync(cli, ['--db', db, 'state', 'job-late'], { encoding: 'utf8' })).value;
      return { ok: state.done && state.fence === 2, state };
    });
    writeFileSync(release, '');
    await until(page, "C's refused write counted", async () => {
      const w = (await workersOf(page)).C;
      return { ok: w?.refused === 1 && w.status === 'stopped', w };
    }, 20000);
    const finalC = JSON.parse(cOut.trim().split('\n').at(-1));
    assert.equal(finalC.staleWritesRefused, 1, cOut);
    // The results are the newer holders': B's and D's, each at fence 2.
    for (const [job, result] of [['job-stuck', 'B\n'], ['job-late', 'D\n']]) {
      const { state } = await until(page, `${job} done`, async () => {
        const now = JSON.parse(execFileSync(cli, ['--db', db, 'state', job], { encoding: 'utf8' })).value;
        return { ok: now.done, state: now };
      });
      assert.deepEqual([state.done, state.fence, state.result], [true, 2, result], job);
    }
    if (process.env.LEASEFENCE_SCREENSHOTS) {
      await page.screenshot({ path: path.join(repo, 'docs', 'dashboard-workers.png'), fullPage: true });
    }
    assert.deepEqual(errors, []);
  } finally {
    for (const child of children) {
      try { child.kill('SIGCONT'); child.kill('SIGTERM'); } catch { /* gone */ }
    }
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the dashboard speaks Japanese and Chinese: no English word left but code and data', async () => {
  const { findUntranslated } = await import('./untranslated.mjs');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-dashboard-lang-'));
  const db = path.join(dir, 'queue.db');
  const children = [];
  const browser = await launchBrowser();
  try {
    for (const job of ['job-ok', 'job-broken', 'job-held']) execFileSync(cli, ['--db', db, 'enqueue', job]);
    execFileSync(cli, ['--db', db, 'enqueue', 'job-later', '--run-at', String(Date.now() / 1000 + 3600)]);
    // One worker run: job-ok done, job-broken dead with its error; then one held by a live worker.
    execFileSync(cli, ['--db', db, 'work', '--owner', 'W', '--until-empty', '--max-attempts', '1', '--',
      'sh', '-c', '[ "$LEASEFENCE_JOB" = job-broken ] && { echo broken >&2; exit 1; }; [ "$LEASEFENCE_JOB" = job-held ] && exit 1; echo ok']);
    execFileSync(cli, ['--db', db, 'revive', 'job-held']);
    const work = spawn(cli, ['--db', db, 'work', '--owner', 'H', '--', 'sleep', '60'], { stdio: 'ignore' });
    children.push(work);
    const ui = await startUi(db);
    children.push(ui.child);
    for (const lang of ['ja', 'zh']) {
      const page = await browser.context.newPage();
      await page.goto(`${ui.url}&lang=${lang}`);
      await page.waitForFunction(() => document.querySelectorAll('#lanes .lane').length === 1
        && document.querySelectorAll('#workers tbody tr[data-owner]').length === 2
        && document.querySelectorAll('#jobs tbody tr').length === 4, null, { timeout: 15000 });
      assert.equal(await page.evaluate(() => document.documentElement.lang), lang === 'zh' ? 'zh-Hans' : 'ja');
      await page.locator('#jobs a', { hasText: 'job-broken' }).click();
      await page.waitForSelector('#job[data-job="job-broken"]');
      await page.waitForTimeout(2200); // the chart has samples
      const left = await page.evaluate(findUntranslated);
      assert.deepEqual(left.map((f) => `"${f.word}" in ${f.where}: ${f.text}`), [], lang);
      await page.close();
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

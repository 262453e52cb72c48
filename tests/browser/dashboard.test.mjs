// The dashboard (`leasefence ui`) in Chromium against a live queue: `leasefence work` drains a
// real SQLite file with three commands at once while the page, opened with the printed URL,
// shows the counts moving by themselves, lists the leases of the running commands, and shows the
// job whose command failed as dead; its Revive button brings it back, and the worker then
// completes it. The page's own requests carry only the cookie it set. Then the stalled-worker
// story (dashboard-story.mjs), and the page in Japanese and Chinese.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { launchBrowser, repo } from './harness.mjs';
import { cli, openPage, stalledStory, startUi, workersOf } from './dashboard-story.mjs';

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

    const { page, errors } = await openPage(browser, ui.url);
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
    // The dead list says why and when: the last error, and a date (the day, not only the time).
    const why = await page.locator('#jobs tbody tr', { hasText: 'boom' }).locator('td.why').textContent();
    assert.ok(why.includes('broken'), why);
    const day = new Date().toLocaleDateString('en');
    assert.ok(why.includes(day), `no date in "${why}" (expected ${day})`);
    // The worker's row counts the job that died.
    // (Its counters arrive with its next beat.)
    let workers;
    for (const until = Date.now() + 15000; Date.now() < until; await page.waitForTimeout(250)) {
      workers = await workersOf(page);
      if (Object.entries(workers).some(([owner, w]) => owner.startsWith('work-') && w.dead === 1)) break;
    }
    assert.ok(Object.entries(workers).some(([owner, w]) => owner.startsWith('work-') && w.dead === 1), JSON.stringify(workers));
    // Its page: its own address, brought into view, the failed attempt with the command's
    // standard error and its date.
    await page.getByRole('link', { name: 'boom' }).click();
    await page.waitForSelector('#job[data-job="boom"]');
    assert.equal(new URL(page.url()).hash, '#job=boom');
    await page.waitForFunction(() => {
      const box = document.getElementById('job').getBoundingClientRect();
      return box.top >= 0 && box.top < window.innerHeight;
    }, null, { timeout: 5000 });
    const failedAt = await page.locator('#job-failures tbody tr td').nth(1).textContent();
    assert.ok(failedAt.includes(day), failedAt);
    const failures = await page.locator('#job-failures tbody tr').evaluateAll((rows) =>
      rows.map((r) => [r.children[0].textContent, r.children[2].textContent.trim()]));
    assert.deepEqual(failures, [['1', 'broken']]);
    const fields = await page.locator('#job-fields').textContent();
    assert.ok(fields.includes('dead') && fields.includes('lease') , fields);
    mkdirSync(dir, { recursive: true });
    writeFileSync(fixed, '');
    await page.locator('#jobs tbody tr', { hasText: 'boom' }).getByRole('button', { name: 'revive' }).click();
    // The job's page follows without a reload: no longer dead.
    await page.waitForFunction(() => document.getElementById('job').dataset.state !== 'dead', null, { timeout: 5000 });
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
    // Back: the job's page closes and the address names no job.
    await page.locator('#job-back').click();
    await page.waitForFunction(() => document.getElementById('job').hidden);
    assert.ok(!new URL(page.url()).hash.startsWith('#job='), page.url());
    assert.deepEqual(errors, []);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('what a job carries never widens the page or poses as another; long lists say they are cut; spans read as spans', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-dashboard-values-'));
  const db = path.join(dir, 'queue.db');
  const children = [];
  const browser = await launchBrowser();
  try {
    const now = Date.now() / 1000;
    const longId = `long-${'x'.repeat(10_000)}`;
    const posing = 'invoice\u202Efdp.exe';
    const big = 'r'.repeat(5_000_000);
    const leased = Array.from({ length: 510 }, (_, i) => `held-${String(i).padStart(3, '0')}`);
    const lines = [
      ...[longId, posing, 'big', 'a-soon', ...leased].map((job) => ({ op: 'enqueue', job })),
      { op: 'claim', job: 'big', owner: 'w', now, ttl: 60 },
      { op: 'complete', job: 'big', owner: 'w', fence: 1, now, result: 'small' },
      { op: 'claim', job: 'a-soon', owner: 'holder', now, ttl: 1192.5 },
      ...leased.map((job) => ({ op: 'claim', job, owner: 'holder', now, ttl: 7380 })),
    ];
    const out = execFileSync(cli, ['--db', db, 'batch'], { input: lines.map((l) => JSON.stringify(l)).join('\n'), maxBuffer: 1 << 26 });
    assert.ok(!out.toString().includes('"error"'), out.toString().slice(0, 500));
    // A result past a store's default 1 MiB limit (a store opened with a higher one, or a
    // program that knows only `jobs`, wrote it): the dashboard shows whatever is stored.
    execFileSync('python3', ['-c', 'import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute("UPDATE jobs SET result = ? WHERE id = ?", (sys.stdin.read(), "big"))\nc.commit()', db], { input: big });
    const ui = await startUi(db);
    children.push(ui.child);
    const { page, errors } = await openPage(browser, ui.url);
    const wide = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    await page.waitForSelector('#jobs tbody tr');
    await page.waitForSelector('#lanes .lane');

    // The 10 kB id is cut in its cell; the page is no wider than the window.
    await listed(page, 'queued');
    assert.ok(await wide() <= 0, `the page is ${await wide()} px wider than the window`);
    const longCell = await page.locator('#jobs tbody tr', { hasText: 'long-xxx' }).locator('td').first().textContent();
    assert.ok(longCell.length < 300 && longCell.includes('more characters'), longCell.slice(0, 300));
    // The right-to-left override is shown, not obeyed.
    const posingRow = await page.locator('#jobs tbody tr', { hasText: 'invoice' }).locator('td').first().textContent();
    assert.ok(posingRow.includes('invoice\\u{202E}fdp.exe'), posingRow);
    // More leases than the lanes draw: the page says so.
    await page.waitForFunction(() => /511/.test(document.getElementById('lanes-cut').textContent), null, { timeout: 10000 });
    const cut = await page.locator('#lanes-cut').textContent();
    assert.ok(await page.locator('#lanes-cut').isVisible() && cut.includes('500'), cut);
    // Spans of time read as spans: 19 min 52 s, 2 h 3 min, never "1192.5 s".
    const lanes = await page.locator('#lanes').textContent();
    assert.ok(/19 min \d+ s left/.test(lanes), lanes.slice(0, 300));
    assert.ok(/2 h [23] min left/.test(lanes), lanes.slice(0, 300));
    assert.ok(!/\d{2,}\.\d s/.test(lanes), lanes.slice(0, 300));
    await listed(page, 'leased');
    const left = await page.locator('#jobs tbody').textContent();
    assert.ok(/2 h [23] min/.test(left) && !/\d{2,}\.\d s/.test(left), left.slice(0, 300));

    // The 5 MB result: its page opens by its address, shows a part, and the whole on request.
    await page.goto(`${new URL(page.url()).origin}/#job=big`);
    await page.waitForSelector('#job[data-job="big"]');
    assert.ok(await wide() <= 0, `the job's page is ${await wide()} px wider than the window`);
    const shown = await page.locator('#job-fields samp').last().textContent();
    assert.ok(shown.length <= 2000, `${shown.length} characters drawn at once`);
    await page.getByRole('button', { name: /Show all 5000000 characters/ }).click();
    assert.equal((await page.locator('#job-fields samp').last().textContent()).length, 5_000_000);
    assert.ok(await wide() <= 0, 'the whole result widened the page');

    // A phone's width: still no wider than the window.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${new URL(page.url()).origin}/`);
    await page.waitForSelector('#jobs tbody tr');
    assert.ok(await wide() <= 0, `at 390 px the page is ${await wide()} px wider than the window`);
    assert.deepEqual(errors, []);
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a stalled worker in Chromium: its lease turns expired, another takes the job over, and a late write is refused and counted', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'leasefence-stalled-db-'));
  try {
    await stalledStory({ db: path.join(dir, 'queue.db'), skewed: true, screenshots: Boolean(process.env.LEASEFENCE_SCREENSHOTS) });
  } finally {
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
    execFileSync(cli, ['--db', db, 'schedule', 'nightly-report', '0 3 * * *', '--tz', 'Asia/Tokyo', '--queue', 'reports']);
    // H serves the default queue; as it ticks it also enqueues the schedule's latest slot (queue
    // reports), which nobody claims.
    const work = spawn(cli, ['--db', db, 'work', '--owner', 'H', '--queue', 'default', '--', 'sleep', '60'], { stdio: 'ignore' });
    children.push(work);
    const ui = await startUi(db);
    children.push(ui.child);
    for (const lang of ['ja', 'zh']) {
      const page = await browser.context.newPage();
      await page.goto(`${ui.url}&lang=${lang}`);
      await page.waitForFunction(() => document.querySelectorAll('#lanes .lane').length === 1
        && document.querySelectorAll('#workers tbody tr[data-owner]').length === 2
        && document.querySelectorAll('#jobs tbody tr').length >= 4
        && document.querySelector('#schedules tr[data-schedule="nightly-report"]') !== null, null, { timeout: 15000 });
      const schedule = await page.locator('#schedules tr[data-schedule="nightly-report"]').textContent();
      assert.ok(schedule.includes('0 3 * * *') && schedule.includes('Asia/Tokyo') && schedule.includes('reports'), schedule);
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

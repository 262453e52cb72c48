// The counterfactual and the check, in headless Chromium: the guided story and every preset from a
// real incident played by clicking, with both tables at the end (leasefence's `jobs` and the
// lease-only `lease_only_jobs`), the statements "The check" shows compared with the SQL files the
// store is built from, and each preset's share link replayed in a fresh browser profile.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repo, startServer, launchBrowser, withBrowser, bothTables, openPlayground, settled } from './harness.mjs';

let server;
before(async () => {
  server = await startServer();
});
after(() => server?.stop());

const sql = (file) => readFileSync(path.join(repo, file), 'utf8').trim();
const FENCED_SQL = Object.fromEntries(['claim', 'renew', 'complete', 'release', 'enqueue', 'read_lease',
  'fail_retry', 'fail_dead', 'record_failure', 'mark_dead']
  .map((op) => [op, sql(`crate/src/sqlite/sql/${op}.sql`)]));
const LEASE_ONLY_SQL = Object.fromEntries(['claim', 'renew', 'complete', 'release', 'enqueue', 'fail_retry', 'fail_dead']
  .map((op) => [op, sql(`playground/src/sql/lease_only_${op}.sql`)]));
const NO_DEAD = { jobs: [], leaseOnly: [] };

const row = (id, owner, until, fence, result, done) => ({ id, owner, until, fence, result, done });
const lo = (id, owner, until, result, done) => ({ id, owner, until, result, done });

// What each scenario leaves in the two tables (`dead`: the jobs whose `done` cell is drawn dead),
// and the statements of its last write (`last.index`: that write's card, when it is not the last
// one; `last.file`: the SQL file, when it is not named after the operation). `during`: both
// tables right after a step (numbered as the story counts them).
const PRESETS = [
  {
    id: 'stale-worker',
    jobs: [row('job-42', 'B', 't=22', '2', "B's result", '✓ yes')],
    // The lease-only table took A's stale result while B held the job, then B's over it.
    leaseOnly: [lo('job-42', 'B', 't=22', "B's result", '✓ yes')],
    differs: [],
    dead: NO_DEAD,
    during: {
      // A's late completion (fence 1) while B holds the job: leasefence refuses it by the fence
      // (the job is not done); the lease-only store stores A's result and marks the job done.
      7: {
        jobs: [row('job-42', 'B', 't=22live', '2', '—', 'no')],
        leaseOnly: [lo('job-42', 'B', 't=22', "A's result", '✓ yes')],
        differs: ['result', 'done'],
        dead: NO_DEAD,
      },
    },
    // B's completion delivered again: refused by `done` (B's fence is the current one).
    last: { op: 'complete', values: ["'job-42'", "'B'", 'fence = 2', "'B''s result'"], fencedChanged: 0, leaseOnlyChanged: 1 },
  },
  {
    id: 'gc-pause',
    jobs: [row('job-33', 'B', 't=21', '2', "B's result", '✓ yes')],
    leaseOnly: [lo('job-33', 'B', 't=21', "B's result", '✓ yes')],
    differs: [],
    dead: NO_DEAD,
    during: {
      // A's write with fence 1 at t=15, while B holds the job: only the fence refuses it.
      5: {
        jobs: [row('job-33', 'B', 't=21live', '2', '—', 'no')],
        leaseOnly: [lo('job-33', 'B', 't=21', "A's result", '✓ yes')],
        differs: ['result', 'done'],
        dead: NO_DEAD,
      },
    },
    // A's stale write, the decisive one: refused in leasefence, taken by the lease-only store.
    last: { index: 3, op: 'complete', values: ["'job-33'", "'A'", 'fence = 1', 'until > 15.0'], fencedChanged: 0, leaseOnlyChanged: 1 },
  },
  {
    id: 'late-renewals',
    jobs: [row('job-1416', 'B', 't=65live', '2', '—', 'no')],
    leaseOnly: [lo('job-1416', 'B', 't=75', "A's result", '✓ yes')], // A stretched B's lease, then completed under B
    differs: ['until', 'result', 'done'],
    dead: NO_DEAD,
    last: { op: 'complete', values: ["'job-1416'", "'A'", 'fence = 1'], fencedChanged: 0, leaseOnlyChanged: 1 },
  },
  {
    id: 'long-job',
    jobs: [row('job-169', 'B', 't=28860live', '2', '—', 'no')],
    leaseOnly: [lo('job-169', 'B', 't=28860', "A's result", '✓ yes')], // done while B runs it again
    differs: ['result', 'done'],
    dead: NO_DEAD,
    last: { op: 'complete', values: ["'job-169'", "'A'", 'fence = 1', 'until > 21600.0'], fencedChanged: 0, leaseOnlyChanged: 1 },
  },
  {
    id: 'late-completion',
    jobs: [row('job-2432', 'B', 't=25live', '2', '—', 'no')],
    leaseOnly: [lo('job-2432', 'A', 't=10', "A's result", '✓ yes')], // done by a lease that had ended; B turned away
    differs: ['owner', 'until', 'result', 'done'],
    dead: NO_DEAD,
    last: { op: 'claim', values: ["'job-2432'", "'B'", '25.0'], fencedChanged: 1, leaseOnlyChanged: 0 },
  },
  {
    id: 'poison-job',
    // Dead at the third attempt (fence 3), C's lease kept as it was; in the lease-only table B's
    // stale failure report (fence 2) took the job from C and set it to wait until t=17 first.
    jobs: [row('job-poison', 'C', 't=15', '3', '—', '✗ dead')],
    leaseOnly: [lo('job-poison', '—', 't=17', '—', '✗ dead')],
    differs: ['owner', 'until'],
    dead: { jobs: ['job-poison'], leaseOnly: ['job-poison'] },
    lastErrors: { jobs: 'last error: “C: handler crashed”', leaseOnly: 'last error: “C: handler crashed”' },
    during: {
      // A's failure at t=1 with a retry at t=4: nobody holds it, and B's claim at t=2 waits.
      5: {
        jobs: [row('job-poison', '—', 't=4waits', '1', '—', 'no')],
        leaseOnly: [lo('job-poison', '—', 't=4waits', '—', 'no')],
        differs: [],
        dead: NO_DEAD,
      },
      // B's stale failure report: refused by leasefence, taken by the lease-only store.
      9: {
        jobs: [row('job-poison', 'C', 't=15live', '3', '—', 'no')],
        leaseOnly: [lo('job-poison', '—', 't=17waits', '—', 'no')],
        differs: ['owner', 'until'],
        dead: NO_DEAD,
      },
    },
    // C's failure at the third attempt, with no retry time: dead, in one transaction.
    last: {
      index: 7, op: 'fail', file: 'fail_dead', values: ["'job-poison'", "'C'", 'fence = 3'], fencedChanged: 1, leaseOnlyChanged: 1,
      alsoRan: ['record_failure', 'mark_dead'],
    },
  },
];

/** The playground at `url`, ready and idle, 900 pixels high. */
const open = (browser, url = server.url) => openPlayground(browser, url, { viewport: { width: 1280, height: 900 } });

/** Both tables as drawn, once the page has settled (harness.mjs). */
const tables = bothTables;

/** The check panel: per store, the summary and the statements (template, bound text, facts). */
async function check(page) {
  await settled(page);
  return page.locator('#check-body').evaluate((body) => {
    const column = (kind) => {
      const col = body.querySelector(`.check-${kind}`);
      if (!col) return null;
      return {
        summary: col.querySelector('.check-summary')?.textContent ?? null,
        statements: [...col.querySelectorAll('.stmt')].map((li) => ({
          sql: li.querySelector('pre.sql:not(.expanded) code').textContent,
          expanded: li.querySelector('pre.sql.expanded code')?.textContent ?? null,
          facts: li.querySelector('.stmt-facts')?.textContent ?? null,
        })),
      };
    };
    return { fenced: column('fenced'), leaseOnly: column('lease-only') };
  });
}

async function playScenario(page, id, during = {}) {
  await page.selectOption('#scenario', id);
  await page.click('#scenario-start');
  await page.waitForFunction(() => /^step 1 of/.test(document.getElementById('story-progress').textContent));
  const steps = await page.evaluate(async (sid) => {
    const { findScenario } = await import('/app/model/scenarios.js');
    return findScenario(sid).steps.map((s) => ({ expect: s.expect ?? null, leaseOnly: s.leaseOnly ?? null, op: s.do?.op ?? null }));
  }, id);
  for (let s = 2; s <= steps.length; s++) {
    await page.click('#story-next');
    await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want), `step ${s} of`);
    await settled(page);
    const step = steps[s - 1];
    if (during[s]) assert.deepEqual(await tables(page), during[s], `${id}: both tables after step ${s}`);
    if (step.op && step.op !== 'enqueue') {
      // The lease-only store's own answer, as the check reports it, is what the narration tells.
      const { leaseOnly } = await check(page);
      if (step.leaseOnly !== null) {
        assert.equal(leaseOnly.summary, step.leaseOnly ? 'Checked by job id only: the write went through.' : 'No row matched: nothing changed.',
          `${id} step ${s}`);
      }
    }
  }
  // Every answer on the timeline is the one the narration tells.
  const answers = await page.locator('#timeline .tl-card').evaluateAll((nodes) => nodes
    .sort((a, b) => Number(a.dataset.index) - Number(b.dataset.index))
    .map((node) => node.querySelector('.c-text').textContent));
  assert.deepEqual(answers, steps.filter((s) => s.op).map((s) => s.expect), `${id}: the store's answers`);
  return steps;
}

test('the story and every incident preset: both tables at the end, the SQL the store ran, a shared link in a fresh profile', async () => {
  const browser = await launchBrowser();
  const links = [];
  try {
    const page = await open(browser);
    const incidents = await page.evaluate(async () => {
      const { SCENARIOS, scenarioSource } = await import('/app/model/scenarios.js');
      return SCENARIOS.filter((sc) => scenarioSource(sc, 'en') || sc.id === 'stale-worker').map((sc) => sc.id);
    });
    assert.deepEqual(PRESETS.map((p) => p.id), incidents, 'every incident preset is played here');
    for (const preset of PRESETS) {
      await playScenario(page, preset.id, preset.during);
      const got = await tables(page);
      assert.deepEqual(got.jobs, preset.jobs, `${preset.id}: leasefence's table`);
      assert.deepEqual(got.leaseOnly, preset.leaseOnly, `${preset.id}: the lease-only table`);
      assert.deepEqual(got.differs, preset.differs, `${preset.id}: the cells marked as differing`);
      assert.deepEqual(got.dead, preset.dead, `${preset.id}: the jobs drawn dead`);
      if (preset.lastErrors) {
        // A dead job's `done` cell names its last error, as each store kept it.
        const title = (selector) => page.locator(`${selector} td.col-done`).first().getAttribute('title');
        assert.deepEqual({ jobs: await title('#jobs-body'), leaseOnly: await title('#lease-only-body') }, preset.lastErrors, preset.id);
      }

      // The last write's statements are the store's own SQL files, with the values bound.
      const { op, values, fencedChanged, leaseOnlyChanged } = preset.last;
      const file = preset.last.file ?? op;
      const lastIndex = preset.last.index ?? (await page.locator('#timeline .tl-card').count()) - 1;
      const lastCard = page.locator(`#timeline .tl-card[data-index="${lastIndex}"]`);
      assert.equal(await lastCard.locator('.c-op').textContent(), op, `${preset.id}: card ${lastIndex} is the ${op}`);
      await lastCard.click();
      await settled(page);
      const shown = await check(page);
      const write = shown.fenced.statements.find((s) => s.sql === FENCED_SQL[file]);
      assert.ok(write, `${preset.id}: the check shows ${file}.sql as the store ran it: ${JSON.stringify(shown.fenced.statements.map((s) => s.sql))}`);
      for (const value of values) assert.ok(write.expanded.includes(value), `${preset.id}: ${value} bound in ${write.expanded}`);
      assert.match(write.facts, new RegExp(`^${fencedChanged} rows? changed`), preset.id);
      assert.equal(shown.fenced.statements[0].sql, 'BEGIN IMMEDIATE', `${preset.id}: the write runs in its transaction`);
      if (fencedChanged === 0) {
        // Refused: the reason is read in the same transaction, then nothing is kept.
        assert.deepEqual(shown.fenced.statements.map((s) => s.sql).slice(-2), [FENCED_SQL.read_lease, 'ROLLBACK'], preset.id);
        assert.match(shown.fenced.summary, /^0 rows, so the reason was read in the same transaction: /);
      } else {
        assert.equal(shown.fenced.statements.at(-1).sql, 'COMMIT', preset.id);
      }
      // The statements that go with the write, in its transaction (a failure's record, the dead mark).
      const ran = shown.fenced.statements.map((s) => s.sql);
      for (const also of preset.last.alsoRan ?? []) {
        const at = ran.indexOf(FENCED_SQL[also]);
        assert.ok(at > ran.indexOf(FENCED_SQL[file]) && at < ran.length - 1, `${preset.id}: ${also}.sql runs after ${file}.sql, before COMMIT: ${JSON.stringify(ran)}`);
      }
      const plain = shown.leaseOnly.statements.find((s) => s.sql === LEASE_ONLY_SQL[file]);
      assert.ok(plain, `${preset.id}: the check shows lease_only_${file}.sql: ${JSON.stringify(shown.leaseOnly.statements.map((s) => s.sql))}`);
      assert.match(plain.facts, new RegExp(`^${leaseOnlyChanged} rows? changed`), preset.id);

      // The link carries the playhead where the last write's card put it: both tables as they are there.
      const shared = await tables(page);
      await page.click('#share');
      links.push({ preset, link: await page.inputValue('#share-url'), want: shared });
    }
    assert.deepEqual(page.errors, []);
  } finally {
    await browser.close();
  }

  for (const { preset, link, want } of links) {
    const fresh = await launchBrowser();
    try {
      const page = await open(fresh, link);
      await page.locator('.banner-notice', { hasText: 'Loaded the timeline from the shared link' }).waitFor();
      assert.deepEqual(await tables(page), want, `${preset.id}: replayed from its link in a fresh profile`);
      assert.deepEqual(page.errors, []);
    } finally {
      await fresh.close();
    }
  }
});

test('the story\'s refusals, step by step: the check names the statement, its values and the reason', () => withBrowser(async (browser) => {
  const page = await open(browser);
  const goTo = async (s) => {
    await page.click(s > Number(await page.locator('#story-progress').getAttribute('data-step')) ? '#story-next' : '#story-back');
    await page.waitForFunction((want) => document.getElementById('story-progress').textContent.startsWith(want), `step ${s} of`);
  };
  for (let s = 2; s <= 7; s++) await goTo(s);
  // A's late completion while B holds the job: not done yet, so the fence is the reason.
  const shown = await check(page);
  assert.equal(shown.fenced.summary,
    '0 rows, so the reason was read in the same transaction: stale fence 1, current 2. Nothing was written (ROLLBACK).');
  assert.deepEqual(shown.fenced.statements.map((s) => [s.sql, s.facts]), [
    ['BEGIN IMMEDIATE', null],
    [FENCED_SQL.complete, '0 rows changed'],
    [FENCED_SQL.read_lease, '1 row returned'],
    ['ROLLBACK', null],
  ]);
  assert.match(shown.fenced.statements[1].expanded,
    /WHERE id = 'job-42' AND owner = 'A' AND fence = 1 AND done = 0 AND until > 14\.0$/);
  assert.deepEqual(shown.leaseOnly.statements.map((s) => [s.sql, s.facts]), [[LEASE_ONLY_SQL.complete, '1 row changed']]);
  assert.match(shown.leaseOnly.statements[0].expanded, /SET result = 'A''s result', done = 1 WHERE id = 'job-42'$/);
  const during = await tables(page);
  assert.deepEqual(during.jobs, [row('job-42', 'B', 't=22live', '2', '—', 'no')], 'leasefence: B still holds the job, not done');
  assert.deepEqual(during.leaseOnly, [lo('job-42', 'B', 't=22', "A's result", '✓ yes')],
    'lease-only: A\'s stale result stored and the job done while B holds the lease');
  assert.deepEqual(during.differs, ['result', 'done']);

  // B's completion, granted by the same statement with B's fence.
  await goTo(8);
  const granted = await check(page);
  assert.equal(granted.fenced.summary, 'The UPDATE matched 1 row: the write is done, in one transaction.');
  assert.match(granted.fenced.statements[1].expanded, /owner = 'B' AND fence = 2/);

  // B's completion again, with the current fence: only `done` refuses it.
  await goTo(9);
  const again = await check(page);
  assert.equal(again.fenced.summary,
    '0 rows, so the reason was read in the same transaction: job already done. Nothing was written (ROLLBACK).');
  assert.match(again.fenced.statements[1].expanded,
    /WHERE id = 'job-42' AND owner = 'B' AND fence = 2 AND done = 0 AND until > 18\.0$/);
  assert.deepEqual(again.leaseOnly.statements.map((s) => [s.sql, s.facts]), [[LEASE_ONLY_SQL.complete, '1 row changed']]);

  // Before A wakes, both tables agree.
  for (const s of [8, 7, 6]) await goTo(s);
  assert.deepEqual((await tables(page)).differs, [], 'before A wakes, both tables agree');
  assert.deepEqual(page.errors, []);
}));

// A share link made before fail and revive existed (the format is unchanged: version 1).
const OLD_LINK = '#timeline=eyJmb3JtYXQiOiJsZWFzZWZlbmNlLXBsYXlncm91bmQiLCJ2IjoxLCJlbnRyaWVzIjpbeyJ0IjowLCJ3b3JrZXIiOiJzdG9yZSIsIm9wIjoiZW5xdWV1ZSIsImFyZ3MiOnsiam9iIjoiam9iLTQyIn19LHsidCI6MCwid29ya2VyIjoiQSIsIm9wIjoiY2xhaW0iLCJhcmdzIjp7ImpvYiI6ImpvYi00MiIsInR0bCI6MTB9fSx7InQiOjMsIndvcmtlciI6IkEiLCJvcCI6ImNvbXBsZXRlIiwiYXJncyI6eyJqb2IiOiJqb2ItNDIiLCJmZW5jZSI6MSwicmVzdWx0IjoiZG9uZSJ9fV0sImsiOjMsIm5vdyI6M30';

test('free play: Fail (with a backoff, then for good) and Revive, from the keyboard and by clicking, in both tables and in a share link', async () => {
  const browser = await launchBrowser();
  let link;
  let want;
  try {
    const page = await open(browser);
    // Free play on an empty timeline.
    await page.click('#reset');
    await page.click('#reset-confirm'); // Reset asks first
    await settled(page);
    // The answer of the operation just played: the card with the highest index (cards are in lane order).
    const last = () => page.locator('#timeline .tl-card').evaluateAll((cards) => cards
      .sort((a, b) => Number(b.dataset.index) - Number(a.dataset.index))[0].querySelector('.c-text').textContent);
    const press = async (selector) => {
      await page.focus(selector); // the buttons are reached and pressed like any other
      await page.keyboard.press('Enter');
      await settled(page);
    };
    await page.fill('#job', 'job-f');
    await press('#enqueue');
    await press('#A-claim');
    await page.fill('#retry', '3');
    await page.fill('#fail-error', 'boom');
    await press('#A-fail');
    assert.equal(await last(), 'failed, retry at t=3');
    assert.deepEqual((await tables(page)).jobs, [row('job-f', '—', 't=3waits', '1', '—', 'no')], 'backing off: nobody holds it, it waits');
    assert.deepEqual((await tables(page)).leaseOnly, [lo('job-f', '—', 't=3waits', '—', 'no')]);
    let shown = await check(page);
    assert.ok(shown.fenced.statements.some((s) => s.sql === FENCED_SQL.fail_retry && s.expanded.includes('until = 3.0')), JSON.stringify(shown.fenced.statements));
    assert.ok(shown.fenced.statements.some((s) => s.sql === FENCED_SQL.record_failure && s.expanded.includes("'boom'")));
    assert.deepEqual(shown.leaseOnly.statements.map((s) => [s.sql, s.facts]), [[LEASE_ONLY_SQL.fail_retry, '1 row changed']]);

    await page.click('#B-claim');
    await settled(page);
    assert.equal(await last(), 'waits until t=3');
    // Once B holds it, A's late failure report with fence 1 is refused (there, it went through).
    await page.click('#plus5');
    await settled(page);
    await page.click('#B-claim');
    await settled(page);
    assert.equal(await last(), 'fence 2, until t=15');
    await page.click('#A-fail');
    await settled(page);
    assert.equal(await last(), 'stale fence 1, current 2');
    // An empty retry box: dead.
    await page.fill('#retry', '');
    await page.click('#B-fail');
    await settled(page);
    assert.equal(await last(), 'failed for good: dead');
    let got = await tables(page);
    assert.deepEqual(got.jobs, [row('job-f', 'B', 't=15', '2', '—', '✗ dead')]);
    assert.deepEqual(got.leaseOnly, [lo('job-f', '—', 't=8', '—', '✗ dead')]); // A's stale report went through there
    assert.deepEqual(got.dead, { jobs: ['job-f'], leaseOnly: ['job-f'] });
    shown = await check(page);
    assert.deepEqual(shown.leaseOnly.statements.map((s) => [s.sql, s.facts]), [[LEASE_ONLY_SQL.fail_dead, '1 row changed']]);
    assert.ok(shown.fenced.statements.some((s) => s.sql === FENCED_SQL.mark_dead), JSON.stringify(shown.fenced.statements));

    // Revive: queued again, claimable from now; a second revive is refused (not dead).
    await press('#revive');
    assert.equal(await last(), 'revived, queued again');
    got = await tables(page);
    assert.deepEqual(got.jobs, [row('job-f', '—', 't=5', '2', '—', 'no')]);
    assert.deepEqual(got.leaseOnly, [lo('job-f', '—', 't=5', '—', 'no')]);
    assert.deepEqual(got.dead, NO_DEAD);
    await page.click('#revive');
    await settled(page);
    assert.equal(await last(), 'not dead');
    await page.click('#C-claim');
    await settled(page);
    assert.equal(await last(), 'fence 3, until t=15');

    // The share link carries the failures as they were made (retryAt a time, or null for dead).
    await page.click('#share');
    link = await page.inputValue('#share-url');
    want = await tables(page);
    const entries = await page.evaluate(async (hash) => {
      const { hashToDoc } = await import('/app/model/encoding.js');
      return hashToDoc(hash).doc.entries.filter((e) => e.op === 'fail' || e.op === 'revive');
    }, new URL(link).hash);
    assert.deepEqual(entries, [
      { t: 0, worker: 'A', op: 'fail', args: { job: 'job-f', fence: 1, retryAt: 3, error: 'boom' } },
      { t: 5, worker: 'A', op: 'fail', args: { job: 'job-f', fence: 1, retryAt: 8, error: 'boom' } },
      { t: 5, worker: 'B', op: 'fail', args: { job: 'job-f', fence: 2, retryAt: null, error: 'boom' } },
      { t: 5, worker: 'store', op: 'revive', args: { job: 'job-f' } },
      { t: 5, worker: 'store', op: 'revive', args: { job: 'job-f' } },
    ]);
    // An old link still decodes; a fail without a retry time or with a bad one is refused.
    const decoded = await page.evaluate(async ([old, bad]) => {
      const { hashToDoc } = await import('/app/model/encoding.js');
      const { docToHash } = await import('/app/model/encoding.js');
      const { validateDoc } = await import('/app/model/timeline.js');
      return {
        old: hashToDoc(old).doc.entries.map((e) => e.op),
        roundTrip: hashToDoc(docToHash(hashToDoc(old).doc)).ok,
        missing: validateDoc({ v: 1, entries: [{ t: 0, worker: 'A', op: 'fail', args: { job: 'j', fence: 1, error: null } }] }).error,
        bad: validateDoc({ v: 1, entries: [{ t: 0, worker: 'A', op: 'fail', args: { job: 'j', fence: 1, retryAt: bad, error: null } }] }).error,
        storeRevive: validateDoc({ v: 1, entries: [{ t: 0, worker: 'A', op: 'revive', args: { job: 'j' } }] }).error,
      };
    }, [OLD_LINK, 'soon']);
    assert.deepEqual(decoded.old, ['enqueue', 'claim', 'complete']);
    assert.equal(decoded.roundTrip, true);
    assert.match(decoded.missing, /entries\[0\]\.args is missing retryAt/);
    assert.match(decoded.bad, /entries\[0\]\.args\.retryAt \(a time, or null for dead\) must be a finite number/);
    assert.match(decoded.storeRevive, /entries\[0\]\.worker must be "store" for revive/);
    assert.deepEqual(page.errors, []);
  } finally {
    await browser.close();
  }

  const fresh = await launchBrowser();
  try {
    const page = await open(fresh, link);
    await page.locator('.banner-notice', { hasText: 'Loaded the timeline from the shared link' }).waitFor();
    assert.deepEqual(await tables(page), want, 'replayed from its link in a fresh profile');
    assert.deepEqual(page.errors, []);
  } finally {
    await fresh.close();
  }
});

test('a database saved before fail existed: its lease-only table gets the failure columns, and fail works on both tables', () => withBrowser(async (browser) => {
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  page.errors = [];
  page.on('pageerror', (error) => page.errors.push(error.message));
  // The playground's database as an older page left it: a claimed job, the lease-only table in
  // its first shape (no error, no dead), and a clean saved timeline, so the page trusts the store.
  await page.goto(`${server.url}store/`);
  const made = await page.evaluate(async () => {
    const { PlaygroundStore } = await import('/app/playground-store.js');
    const { serializeSaved } = await import('/app/model/saved.js');
    const store = await PlaygroundStore.open('playground');
    try {
      await store.eraseEverything();
      await store.enqueue('job-old');
      const fence = await store.claim('job-old', 'A', 0, 10);
      const old = await store.fenced('job-old', 'A', fence, 0, [
        { sql: 'DROP TABLE IF EXISTS lease_only_jobs', params: [] },
        { sql: 'CREATE TABLE lease_only_jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)', params: [] },
        { sql: "INSERT INTO lease_only_jobs(id, owner, until) VALUES (?1, 'A', 10)", params: ['job-old'] },
      ]);
      const doc = {
        entries: [{ t: 0, worker: 'store', op: 'enqueue', args: { job: 'job-old' } }, { t: 0, worker: 'A', op: 'claim', args: { job: 'job-old', ttl: 10 } }],
        k: 2, now: 0,
      };
      await store.appSet('timeline', serializeSaved({ doc, outcomes: [{ value: true, reason: null }, { value: fence, reason: null }], story: null, clean: true }));
      return { fence, old };
    } finally {
      await store.close();
    }
  });
  assert.deepEqual(made, { fence: 1, old: true });

  await page.goto(server.url);
  await page.waitForSelector('html[data-ready="true"]', { timeout: 20_000 });
  assert.equal(await page.evaluate(() => document.documentElement.dataset.restored), 'from-store', 'the store is shown as it was kept');
  assert.deepEqual((await tables(page)).leaseOnly, [lo('job-old', 'A', 't=10live', '—', 'no')]);
  await page.fill('#job', 'job-old');
  await page.fill('#retry', '');
  await page.click('#A-fail');
  await settled(page);
  const got = await tables(page);
  assert.deepEqual(got.jobs, [row('job-old', 'A', 't=10', '1', '—', '✗ dead')]);
  assert.deepEqual(got.leaseOnly, [lo('job-old', 'A', 't=10', '—', '✗ dead')]);
  assert.deepEqual(got.dead, { jobs: ['job-old'], leaseOnly: ['job-old'] });
  assert.deepEqual(page.errors, []);
}));

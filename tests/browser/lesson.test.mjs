// The lesson is the fence: every scenario replayed on the real store (in headless Chromium), and
// each step's narration held to the store's answer at that step. A step that performs an entry
// declares the answer it narrates (`claims`: 'granted' or the store's reason code); the test
// compares that with the reason the store gives, and checks that the narration, in English,
// Japanese and Chinese, says the store's own words for a refusal and not those of another one.
// In the guided story and the GC-pause preset, the stale worker's write is refused by the fence
// while the job is not done yet (a check of `done` alone would have let it in), and a later
// `done` refusal is named as the second line of defence.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { serverAndBrowser } from './harness.mjs';

const env = serverAndBrowser();

// Runs in the page: every scenario's entries on one freshly erased OPFS database (and its
// lease-only table), with the narration of each step in each language.
async function replayAll() {
  const { PlaygroundStore } = await import('/app/playground-store.js');
  const { SCENARIOS, narration } = await import('/app/model/scenarios.js');
  const { applyEntry, readLeaseOnlyRows } = await import('/app/replay.js');
  const { reasonText, outcomeText } = await import('/app/model/describe.js');
  const store = await PlaygroundStore.open('lesson.db');
  const out = [];
  try {
    for (const scenario of SCENARIOS) {
      await store.eraseEverything();
      const steps = [];
      for (const [s, step] of scenario.steps.entries()) {
        if (!step.do) {
          steps.push({ s, claims: step.claims ?? null, say: Object.fromEntries(['en', 'ja', 'zh'].map((l) => [l, narration(scenario, s, l)])) });
          continue;
        }
        const entry = { ...step.do, args: { ...step.do.args } };
        const { outcome } = await applyEntry(store, entry);
        const refused = outcomeText(entry, outcome, 'en').kind !== 'granted';
        const code = outcome.error ? `error:${outcome.error.code}` : refused ? outcome.reason?.code ?? 'refused' : 'granted';
        const words = Object.fromEntries(['en', 'ja', 'zh'].map((l) => [l, outcomeText(entry, outcome, l).text]));
        // The other refusals' words, as this entry would have got them.
        const others = {};
        for (const l of ['en', 'ja', 'zh']) {
          others[l] = ['done', 'stale_fence']
            .filter((c) => c !== code)
            .map((c) => reasonText({ code: c, fence: (entry.args.fence ?? 0) + 1 }, entry, l));
        }
        // claim_next names no job: the one the store picked.
        const leaseOnly = await readLeaseOnlyRows(store, [entry.args.job ?? outcome.job]);
        steps.push({
          s, op: entry.op, worker: entry.worker, t: entry.t, claims: step.claims ?? null, code, words, others, leaseOnly,
          say: Object.fromEntries(['en', 'ja', 'zh'].map((l) => [l, narration(scenario, s, l)])),
        });
      }
      out.push({ id: scenario.id, steps });
    }
  } finally {
    await store.eraseEverything();
    await store.close();
  }
  return out;
}

test('every step that performs an entry claims the answer the store gives, in all three languages', async () => {
  const page = await env.browser.context.newPage();
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  // The store's bare page has no icon: the browser's request for /favicon.ico is not the page's error.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.location().url.endsWith('/favicon.ico')) errors.push(message.text());
  });
  await page.goto(`${env.server.url}store/`);
  const scenarios = await page.evaluate(replayAll);
  assert.ok(scenarios.length >= 7);
  for (const { id, steps } of scenarios) {
    for (const step of steps) {
      const where = `${id} step ${step.s + 1}`;
      if (!step.op) {
        assert.equal(step.claims, null, `${where}: a step that performs nothing claims no answer`);
        continue;
      }
      assert.equal(step.claims, step.code, `${where}: the narration claims ${step.claims}, the store answered ${step.code}`);
      if (step.code === 'granted' || step.op === 'enqueue') continue;
      for (const lang of ['en', 'ja', 'zh']) {
        assert.ok(step.say[lang].includes(step.words[lang]),
          `${where} (${lang}): the narration says the store's words “${step.words[lang]}”: ${step.say[lang]}`);
        for (const other of step.others[lang]) {
          assert.ok(!step.say[lang].includes(other), `${where} (${lang}): the narration does not claim “${other}”`);
        }
      }
    }
  }

  // The story and the GC-pause preset: the stale worker A's first write after B's claim is
  // refused by the fence while B holds the job, before anyone completed it; the lease-only store
  // stores A's result and marks the job done under B's lease. A later refusal is `done`'s, of a
  // writer with the current fence, and its narration calls it the second line of defence.
  const SECOND_LINE = { en: 'second line of defence', ja: '第 2 の防御線', zh: '第二道防线' };
  for (const id of ['stale-worker', 'gc-pause']) {
    const steps = scenarios.find((sc) => sc.id === id).steps.filter((s) => s.op);
    const bClaim = steps.findIndex((s) => s.worker === 'B' && s.op === 'claim' && s.code === 'granted');
    const aLate = steps.slice(bClaim + 1).find((s) => s.worker === 'A');
    assert.ok(aLate, `${id}: A writes after B's claim`);
    assert.equal(aLate.code, 'stale_fence', `${id}: A's late write is refused by the fence`);
    const firstDone = steps.findIndex((s) => s.op === 'complete' && s.code === 'granted');
    assert.ok(steps.indexOf(aLate) < firstDone, `${id}: A's late write comes before any completion`);
    const row = aLate.leaseOnly[0];
    assert.deepEqual({ owner: row.owner, result: row.result, done: row.done }, { owner: 'B', result: "A's result", done: true },
      `${id}: the lease-only store keeps A's stale result, done, while B holds the lease`);
    assert.ok(row.until > aLate.t, `${id}: B's lease is still live in the lease-only table`);
    if (id === 'stale-worker') {
      const later = steps.slice(firstDone + 1).find((s) => s.code === 'done');
      assert.ok(later, 'a later beat is refused by done');
      assert.equal(later.worker, 'B', 'the done refusal is of the current fence holder (the fence cannot explain it)');
      for (const lang of ['en', 'ja', 'zh']) assert.ok(later.say[lang].includes(SECOND_LINE[lang]), `${lang}: ${later.say[lang]}`);
    }
  }
  assert.deepEqual(errors, []);
});

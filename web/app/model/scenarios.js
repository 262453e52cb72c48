// The guided story and the preset scenarios: one file each in scenarios/, their order here, and
// the functions over them. A scenario is a list of steps; a step may perform one entry (or only
// move the clock, with `at`), and says something: its text in each language stands in
// narration/<language>.js under the scenario's id, one text per step in the same order (with the
// scenario's title and source), so a new language is one file.
//
// Narration may mark code with `backticks` (operation names, columns); the story view draws those
// as <code>. Presets from real incidents carry a one-line `source`; their last step says what the
// fence did. Every entry also runs on the lease-only store (a completion checked by job id alone),
// whose table is drawn next to leasefence's, so each step's `expect` is leasefence's answer and
// `leaseOnly` (when given) whether the lease-only store accepted the write.

import { staleWorker } from './scenarios/stale-worker.js';
import { gcPause } from './scenarios/gc-pause.js';
import { lateRenewals } from './scenarios/late-renewals.js';
import { longJob } from './scenarios/long-job.js';
import { lateCompletion } from './scenarios/late-completion.js';
import { poisonJob } from './scenarios/poison-job.js';
import { renewInTime } from './scenarios/renew-in-time.js';
import { releaseReclaim } from './scenarios/release-reclaim.js';
import { tooLate } from './scenarios/too-late.js';
import { priorities } from './scenarios/priorities.js';
import { en } from './narration/en.js';
import { ja } from './narration/ja.js';
import { zh } from './narration/zh.js';

/** Each language's narration of the scenarios, by scenario id. */
export const NARRATION = Object.freeze({ en, ja, zh });

export const SCENARIOS = Object.freeze([
  staleWorker,
  gcPause,
  lateRenewals,
  longJob,
  lateCompletion,
  poisonJob,
  renewInTime,
  releaseReclaim,
  tooLate,
  priorities,
]);

export const STORY_ID = 'stale-worker';

export function findScenario(id) {
  return SCENARIOS.find((s) => s.id === id) ?? null;
}

/** The timeline of a scenario, every entry in the future (the playhead at the start). */
export function scenarioDoc(scenario) {
  const entries = scenario.steps.filter((s) => s.do).map((s) => ({ ...s.do, args: { ...s.do.args } }));
  return { entries, k: 0, now: 0 };
}

/** Where the playhead stands after step `s` of a scenario: {k, now}. */
export function stepPlayhead(scenario, s) {
  let k = 0;
  let now = 0;
  for (let i = 0; i <= s && i < scenario.steps.length; i++) {
    const step = scenario.steps[i];
    if (step.do) {
      k += 1;
      now = step.do.t;
    } else if (typeof step.at === 'number') {
      now = step.at;
    }
  }
  return { k, now };
}

/** The step whose playhead is the latest one not after {k, now}. */
export function stepAt(scenario, { k, now }) {
  let found = 0;
  for (let s = 0; s < scenario.steps.length; s++) {
    const p = stepPlayhead(scenario, s);
    if (p.k < k || (p.k === k && p.now <= now)) found = s;
  }
  return found;
}

/**
 * The story position `{id, step}` that `position` names on `doc`, or null: only on that scenario's
 * own timeline (a saved page, a shared link), with a step it has.
 */
export function storyOn(doc, position) {
  if (!position || typeof position !== 'object' || typeof position.id !== 'string' || !Number.isInteger(position.step)) return null;
  const scenario = findScenario(position.id);
  if (!scenario || position.step < 0 || position.step >= scenario.steps.length) return null;
  if (JSON.stringify(scenarioDoc(scenario).entries) !== JSON.stringify(doc.entries)) return null;
  return { id: scenario.id, step: position.step };
}

/**
 * Whether a step points the reader at the two tables and the check (far below the story): the
 * last step, and every step that compares the two stores (`leaseOnly`).
 */
export function pointsAtTables(scenario, s) {
  const step = scenario.steps[s];
  return !!step && (s === scenario.steps.length - 1 || step.leaseOnly !== undefined);
}

/** What `lang` says of a scenario (English when the language has none). */
function told(scenario, lang) {
  return NARRATION[lang]?.[scenario.id] ?? NARRATION.en[scenario.id] ?? {};
}

/** The narration of a step in a language (English when missing). */
export function narration(scenario, s, lang) {
  return told(scenario, lang).steps?.[s] ?? told(scenario, 'en').steps?.[s] ?? '';
}

export function scenarioTitle(scenario, lang) {
  return told(scenario, lang).title ?? told(scenario, 'en').title ?? scenario.id;
}

/** The one-line source of a preset from a real incident, or null. */
export function scenarioSource(scenario, lang) {
  return told(scenario, lang).source ?? told(scenario, 'en').source ?? null;
}

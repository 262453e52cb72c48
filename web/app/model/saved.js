// What the playground keeps in the database next to the jobs (appSet('timeline', ...)): the
// timeline, the store's answers so far, the story position, and whether the store was left in
// step with the timeline. Read back with the same strictness as an imported file.
import { docToJson, validateDoc, LIMITS } from './timeline.js';
import { storyOn } from './scenarios.js';

const REASONS = ['not_found', 'done', 'held', 'scheduled', 'stale_fence', 'not_owner', 'expired', 'not_dead'];

export function serializeSaved({ doc, outcomes, story, clean }) {
  return JSON.stringify({
    doc: docToJson(doc),
    outcomes: doc.entries.map((_, i) => outcomes[i] ?? null),
    story: story ? { id: story.id, step: story.step } : null,
    clean: Boolean(clean),
  });
}

function validOutcome(o) {
  if (o === null) return true;
  if (typeof o !== 'object' || Array.isArray(o)) return false;
  if ('error' in o) {
    return typeof o.error === 'object' && o.error !== null && typeof o.error.code === 'string' &&
      o.error.code.length <= 40 && typeof o.error.message === 'string' && o.error.message.length <= 500;
  }
  // claim_next's answer names the job the store picked (or null).
  if ('job' in o && o.job !== null && (typeof o.job !== 'string' || o.job.length > LIMITS.string)) return false;
  const v = o.value;
  if (!(typeof v === 'boolean' || v === null || (Number.isInteger(v) && v >= 0))) return false;
  const r = o.reason;
  if (r === null || r === undefined) return true;
  if (typeof r !== 'object' || !REASONS.includes(r.code)) return false;
  if (r.owner !== undefined && r.owner !== null && (typeof r.owner !== 'string' || r.owner.length > LIMITS.string)) return false;
  if (r.until !== undefined && !Number.isFinite(r.until)) return false;
  if (r.fence !== undefined && !Number.isInteger(r.fence)) return false;
  return true;
}

/** Returns {doc, outcomes, story, clean} or null when the text is not a saved playground. */
export function parseSaved(text) {
  if (typeof text !== 'string' || text.length > LIMITS.text * 4) return null;
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!value || typeof value !== 'object') return null;
  const checked = validateDoc(value.doc);
  if (!checked.ok) return null;
  const doc = checked.doc;
  const outcomes = Array.isArray(value.outcomes) && value.outcomes.length === doc.entries.length &&
    value.outcomes.every(validOutcome)
    ? value.outcomes.map((o) => (o === null ? undefined : o))
    : [];
  // A story position only means something on that scenario's own timeline.
  const story = storyOn(doc, value.story);
  // Outcomes are only trusted when every played entry has one.
  const complete = outcomes.length === doc.entries.length && outcomes.slice(0, doc.k).every(Boolean);
  return { doc, outcomes: complete ? outcomes : [], story, clean: value.clean === true && complete };
}

// The playground's model: a timeline of operations and a playhead. Pure data and pure functions,
// no DOM and no store: the controller (../main.js) runs entries against the real store and the
// views (../view/) draw what these functions return.
//
// A document is {entries, k, now}:
//   entries  operations in time order, each {t, worker, op, args}
//              enqueue  worker 'store'        args {job, queue?, priority?}
//                         queue: text (the store's "default" when left out); priority: a safe
//                         integer (0 when left out); docs/contract.md section 11
//              claim    worker 'A'|'B'|'C'    args {job, ttl}
//              claim_next worker 'A'|'B'|'C'  args {ttl}   (the store picks the job: highest
//                         priority, then earliest `until`, then oldest; its answer names it)
//              renew    worker 'A'|'B'|'C'    args {job, fence, ttl}
//              complete worker 'A'|'B'|'C'    args {job, fence, result}   (result: string | null)
//              release  worker 'A'|'B'|'C'    args {job, fence}
//              fail     worker 'A'|'B'|'C'    args {job, fence, retryAt, error}
//                         retryAt: a time (the job waits until then) or null (the job is dead);
//                         error: string | null
//              revive   worker 'store'        args {job}   (a dead job is queued again)
//   k        the playhead: entries[0..k) have happened, entries[k..] are the future
//   now      the clock; entries[0..k) have t <= now and entries[k..] have t >= now
// The store is deterministic given explicit `now`, so entries[0..k) replayed on an empty
// database always give the same answers: that is what makes seeking, sharing and forking work.

export const WORKERS = Object.freeze(['A', 'B', 'C']);
export const LANES = Object.freeze(['store', 'A', 'B', 'C']);
export const WORKER_OPS = Object.freeze(['claim', 'claim_next', 'renew', 'complete', 'release', 'fail']);
/** The operations of the store's own lane: nobody's lease, no fence. */
export const STORE_OPS = Object.freeze(['enqueue', 'revive']);
export const FORMAT = 'leasefence-playground';
/** The worker lab's bucket modes (web/app/worker-lab.js); a link or file may name the run to show. */
export const LAB_MODES = Object.freeze(['none', 'guard', 'fenced', 'poison']);
/** When the lab's stalled worker A wakes (its stall begins at t=7; its lease, renewed at 6, ends at 16). */
export const LAB_WAKE = Object.freeze({ min: 8, max: 60, default: 20 });
export const VERSION = 1;

export const LIMITS = Object.freeze({
  entries: 500, // operations in one timeline
  string: 200, // characters in a job id or a result
  time: 1_000_000, // largest t, now and ttl
  fence: 1_000_000_000, // largest fence an entry may carry
  text: 400_000, // characters of JSON (file) or of the URL hash, checked before parsing
});

const ARGS = Object.freeze({
  enqueue: ['job'],
  claim: ['job', 'ttl'],
  claim_next: ['ttl'],
  renew: ['job', 'fence', 'ttl'],
  complete: ['job', 'fence', 'result'],
  release: ['job', 'fence'],
  fail: ['job', 'fence', 'retryAt', 'error'],
  revive: ['job'],
});

/** Members an entry may leave out (the store's defaults apply): enqueue's queue and priority. */
const OPTIONAL = Object.freeze({ enqueue: ['queue', 'priority'] });

export function emptyDoc() {
  return { entries: [], k: 0, now: 0 };
}

// ---------------------------------------------------------------------------------------------
// Validation: everything that comes from a URL, a file or storage goes through here. The value
// returned is a fresh object built from checked fields only; strings are kept exactly as given
// (the store must receive them unchanged), or the whole document is refused.

class Invalid extends Error {}

function fail(where, what) {
  throw new Invalid(`${where} ${what}`);
}

function isPlainObject(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function onlyKeys(value, allowed, where) {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) fail(where, `has an unknown member (${JSON.stringify(key.slice(0, 20))}${key.length > 20 ? '...' : ''})`);
  }
}

function wellFormed(text) {
  if (typeof text.isWellFormed === 'function') return text.isWellFormed();
  return !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(text);
}

/** Checks a job id, a result or an error text typed or imported; returns an error text or null. */
/** What is wrong with a job id or a text: 'type', 'empty', 'long', 'nul', 'unicode', or null. */
export function stringProblem(value, { allowEmpty = false } = {}) {
  if (typeof value !== 'string') return 'type';
  if (!allowEmpty && value.length === 0) return 'empty';
  if (value.length > LIMITS.string) return 'long';
  if (value.includes('\u0000')) return 'nul';
  if (!wellFormed(value)) return 'unicode';
  return null;
}

const STRING_PROBLEMS = Object.freeze({
  type: 'must be a string',
  empty: 'must not be empty',
  long: `is longer than ${LIMITS.string} characters`,
  nul: 'contains a NUL character',
  unicode: 'is not well-formed Unicode (a lone surrogate)',
});

export function checkString(value, name, options) {
  const problem = stringProblem(value, options);
  return problem && `${name} ${STRING_PROBLEMS[problem]}`;
}

function string(value, where, options) {
  const problem = checkString(value, where, options);
  if (problem) throw new Invalid(problem);
  return value;
}

function time(value, where) {
  if (typeof value !== 'number' || !Number.isFinite(value)) fail(where, 'must be a finite number');
  if (value < 0 || value > LIMITS.time) fail(where, `must be from 0 to ${LIMITS.time}`);
  return value;
}

// Characters that draw as nothing (format, control and line/paragraph separators): in a typed
// job id they make two ids that look the same, or one that looks like no id at all.
const INVISIBLE = /[\p{Cf}\p{Cc}\p{Zl}\p{Zp}]/u;

/**
 * What is wrong with a job id typed into the page, beyond stringProblem: 'blank' (only spaces),
 * 'edges' (a space at either end) or 'invisible' (with `char`, its code point as U+XXXX); or
 * null. Imported timelines keep their ids exactly; this is for what a person types.
 */
export function typedJobProblem(value) {
  if (value.trim() === '') return { problem: 'blank' };
  const hidden = value.match(INVISIBLE);
  if (hidden) return { problem: 'invisible', char: `U+${hidden[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}` };
  if (value.trim() !== value) return { problem: 'edges' };
  return null;
}

/** What the page's ttl box accepts, as its min, max and step say: whole seconds from 1. */
export function typedTtlProblem(value) {
  return Number.isInteger(value) && value >= 1 && value <= LIMITS.time ? null : 'ttl';
}

export function checkTtl(value) {
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'ttl must be a finite number';
  if (value <= 0 || value > LIMITS.time) return `ttl must be above 0 and at most ${LIMITS.time}`;
  return null;
}

function ttl(value, where) {
  const problem = checkTtl(value);
  if (problem) fail(where, problem.replace(/^ttl /, ''));
  return value;
}

function fence(value, where) {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > LIMITS.fence) {
    fail(where, `must be a whole number from 0 to ${LIMITS.fence}`);
  }
  return value;
}

/** A priority as JavaScript can pass it to the store: a safe integer (docs/contract.md section 11). */
function priority(value, where) {
  if (!Number.isSafeInteger(value)) fail(where, 'must be a whole number within ±(2^53 - 1)');
  return value;
}

/** What the page's priority box accepts: a whole number, as the store takes it from JavaScript. */
export function typedPriorityProblem(value) {
  return Number.isSafeInteger(value) ? null : 'priority';
}

function entry(value, where) {
  if (!isPlainObject(value)) fail(where, 'must be an object');
  onlyKeys(value, ['t', 'worker', 'op', 'args'], where);
  const op = value.op;
  if (typeof op !== 'string' || !Object.hasOwn(ARGS, op)) {
    fail(`${where}.op`, `must be one of ${Object.keys(ARGS).join(', ')}`);
  }
  const worker = value.worker;
  const storeOp = STORE_OPS.includes(op);
  if (storeOp ? worker !== 'store' : !WORKERS.includes(worker)) {
    fail(`${where}.worker`, storeOp ? `must be "store" for ${op}` : 'must be "A", "B" or "C"');
  }
  const t = time(value.t, `${where}.t`);
  const raw = value.args;
  if (!isPlainObject(raw)) fail(`${where}.args`, 'must be an object');
  onlyKeys(raw, [...ARGS[op], ...(OPTIONAL[op] ?? [])], `${where}.args`);
  const args = {};
  for (const name of ARGS[op]) {
    if (!Object.hasOwn(raw, name)) fail(`${where}.args`, `is missing ${name}`);
    const at = `${where}.args.${name}`;
    if (name === 'job') args.job = string(raw.job, at);
    else if (name === 'ttl') args.ttl = ttl(raw.ttl, at);
    else if (name === 'fence') args.fence = fence(raw.fence, at);
    else if (name === 'result') args.result = raw.result === null ? null : string(raw.result, at, { allowEmpty: true });
    else if (name === 'retryAt') args.retryAt = raw.retryAt === null ? null : time(raw.retryAt, `${at} (a time, or null for dead)`);
    else if (name === 'error') args.error = raw.error === null ? null : string(raw.error, at, { allowEmpty: true });
  }
  if (Object.hasOwn(raw, 'queue')) args.queue = string(raw.queue, `${where}.args.queue`);
  if (Object.hasOwn(raw, 'priority')) args.priority = priority(raw.priority, `${where}.args.priority`);
  return { t, worker, op, args };
}

/**
 * Validates a parsed document (export file, URL, storage). Returns {ok: true, doc} or
 * {ok: false, error} with an English sentence that never repeats the offending data.
 */
export function validateDoc(value) {
  try {
    if (!isPlainObject(value)) fail('the timeline', 'must be a JSON object');
    onlyKeys(value, ['format', 'v', 'entries', 'k', 'now', 'lab', 'story'], 'the timeline');
    if (value.format !== undefined && value.format !== FORMAT) fail('format', `must be "${FORMAT}"`);
    if (value.v !== VERSION) fail('v (the format version)', `must be ${VERSION}`);
    if (!Array.isArray(value.entries)) fail('entries', 'must be an array');
    if (value.entries.length > LIMITS.entries) fail('entries', `has more than ${LIMITS.entries} operations`);
    const entries = value.entries.map((item, index) => entry(item, `entries[${index}]`));
    for (let i = 1; i < entries.length; i++) {
      if (entries[i].t < entries[i - 1].t) fail(`entries[${i}].t`, 'goes back in time (times must not decrease)');
    }
    let k = entries.length;
    if (value.k !== undefined) {
      if (!Number.isInteger(value.k) || value.k < 0 || value.k > entries.length) {
        fail('k (the playhead)', `must be a whole number from 0 to ${entries.length}`);
      }
      k = value.k;
    }
    let now = k > 0 ? entries[k - 1].t : 0;
    if (value.now !== undefined) now = time(value.now, 'now');
    if ((k > 0 && now < entries[k - 1].t) || (k < entries.length && now > entries[k].t)) {
      fail('now', 'does not fit the playhead (it must lie between the last played and the next operation)');
    }
    const doc = { entries, k, now };
    if (value.lab !== undefined) doc.lab = labRun(value.lab);
    if (value.story !== undefined) doc.story = storyPosition(value.story);
    return { ok: true, doc };
  } catch (error) {
    if (error instanceof Invalid) return { ok: false, error: `Invalid timeline: ${error.message}.` };
    throw error;
  }
}

/** Parses JSON text with a size cap first, then validates it. */
export function parseDocText(text) {
  if (typeof text !== 'string') return { ok: false, error: 'Invalid timeline: not text.' };
  if (text.length > LIMITS.text) {
    return { ok: false, error: `Invalid timeline: larger than ${LIMITS.text} characters.` };
  }
  let value;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: 'Invalid timeline: not valid JSON.' };
  }
  return validateDoc(value);
}

/** The portable form of a document (export file, share URL). */
export function docToJson(doc) {
  const json = { format: FORMAT, v: VERSION, entries: doc.entries, k: doc.k, now: doc.now };
  if (doc.lab) json.lab = { mode: doc.lab.mode, stall: doc.lab.stall, wake: doc.lab.wake };
  if (doc.story) json.story = { id: doc.story.id, step: doc.story.step };
  return json;
}

/**
 * The story step a shared timeline was at: `{id, step}`, checked for its shape here; whether that
 * scenario and step exist, on this timeline, is the scenarios' to say (scenarios.js storyOn).
 */
function storyPosition(value) {
  if (!isPlainObject(value)) fail('story', 'must be an object {id, step}');
  onlyKeys(value, ['id', 'step'], 'story');
  if (typeof value.id !== 'string' || value.id.length === 0 || value.id.length > 100 || !wellFormed(value.id)) {
    fail('story.id', 'must be a scenario id (text, at most 100 characters)');
  }
  if (!Number.isInteger(value.step) || value.step < 0 || value.step > LIMITS.entries) {
    fail('story.step', `must be a whole number from 0 to ${LIMITS.entries}`);
  }
  return { id: value.id, step: value.step };
}

/** The worker lab run a timeline carries: `{mode, stall, wake}` (the run is replayed, never stored). */
function labRun(value) {
  if (!isPlainObject(value)) fail('lab', 'must be an object {mode, stall, wake}');
  onlyKeys(value, ['mode', 'stall', 'wake'], 'lab');
  if (!LAB_MODES.includes(value.mode)) fail('lab.mode', `must be one of ${LAB_MODES.join(', ')}`);
  if (typeof value.stall !== 'boolean') fail('lab.stall', 'must be true or false');
  const wake = value.wake ?? LAB_WAKE.default; // links made before the wake time existed
  if (!Number.isInteger(wake) || wake < LAB_WAKE.min || wake > LAB_WAKE.max) {
    fail('lab.wake', `must be a whole number from ${LAB_WAKE.min} to ${LAB_WAKE.max}`);
  }
  return { mode: value.mode, stall: value.stall, wake };
}

// ---------------------------------------------------------------------------------------------
// The playhead. Every function returns a new document.

/** How many entries happen at or before time t. */
export function countUpTo(entries, t) {
  let n = 0;
  while (n < entries.length && entries[n].t <= t) n++;
  return n;
}

function clampTime(t) {
  return Math.min(Math.max(0, t), LIMITS.time);
}

/** Moves the clock to t; every entry at or before t has happened, every later one not. */
export function seekTime(doc, t) {
  const now = clampTime(t);
  return { ...doc, now, k: countUpTo(doc.entries, now) };
}

/** Steps the clock by d seconds (replaying the future entries it passes). */
export function advance(doc, d) {
  return seekTime(doc, doc.now + d);
}

/** Plays the next entry (if any), moving the clock to its time. */
export function stepForward(doc) {
  if (doc.k >= doc.entries.length) return doc;
  const next = doc.entries[doc.k];
  return { ...doc, k: doc.k + 1, now: Math.max(doc.now, next.t) };
}

/** Undoes the last entry: the playhead goes back to just before it, at its time. */
export function stepBack(doc) {
  if (doc.k === 0) return doc.now === 0 ? doc : { ...doc, now: 0 };
  return { ...doc, k: doc.k - 1, now: doc.entries[doc.k - 1].t };
}

export function toStart(doc) {
  return { ...doc, k: 0, now: 0 };
}

export function toEnd(doc) {
  const last = doc.entries.at(-1);
  return { ...doc, k: doc.entries.length, now: Math.max(doc.now, last ? last.t : 0) };
}

/**
 * A user action at the playhead: the future is cut off and the action appended (the timeline
 * forks, as in RaftScope). Returns {doc} or {error}.
 */
export function act(doc, { worker, op, args }) {
  const kept = doc.entries.slice(0, doc.k);
  if (kept.length >= LIMITS.entries) {
    return { error: `The timeline is full (${LIMITS.entries} operations). Step back or reset.`, full: true };
  }
  const checked = validateDoc({ v: VERSION, entries: [...kept, { t: doc.now, worker, op, args }] });
  if (!checked.ok) return { error: checked.error };
  const entries = checked.doc.entries;
  return { doc: { entries, k: entries.length, now: doc.now }, forked: doc.entries.length > doc.k };
}

/** The end of the time slider: past the last thing that happens, in round numbers. */
export function timeSpan(doc) {
  const last = doc.entries.at(-1);
  const latest = Math.max(doc.now, last ? last.t : 0);
  return Math.min(LIMITS.time, Math.max(30, Math.ceil((latest + 15) / 10) * 10));
}

// A worker lab run (web/app/worker-lab.js) as a timeline: every call the runtime made to the
// jobs table becomes the timeline operation it is (claim, renew, complete, fail, release, at the
// page time it was made), so the timeline replays the runtime's own calls on both tables, with
// the check's statements for each. Pure: events in, a validated timeline out.
//
// What does not carry over: the bucket's writes (they are not calls on the jobs table), the rows
// a fenced completion commits (the timeline's complete has none), and a lagging worker clock
// (an entry runs at the page time, not the `now` the worker passed; the store's answer is the same
// when the refusal is about the owner, the fence or a done job, as in the lab's runs).
import { VERSION, validateDoc } from './timeline.js';

const WORKER_KINDS = Object.freeze(['claim', 'renew', 'complete', 'fail', 'release']);

/** The timeline operation of one lab event, or null for events that are not jobs-table calls. */
function entryOf(event, job, ttl) {
  if (event.lane === 'store' && event.kind === 'enqueue') return { t: event.t, worker: 'store', op: 'enqueue', args: { job } };
  if ((event.lane !== 'A' && event.lane !== 'B') || !WORKER_KINDS.includes(event.kind)) return null;
  const base = { t: event.t, worker: event.lane, op: event.kind };
  switch (event.kind) {
    case 'claim': return { ...base, args: { job, ttl } };
    case 'renew': return { ...base, args: { job, fence: event.fence, ttl } };
    case 'complete': return { ...base, args: { job, fence: event.fence, result: event.result ?? null } };
    case 'fail': return { ...base, args: { job, fence: event.fence, retryAt: event.retryAt ?? null, error: event.error ?? null } };
    default: return { ...base, args: { job, fence: event.fence } };
  }
}

/**
 * `{doc}`: the run's jobs-table calls as a timeline played to its end; `{error}` when the run
 * cannot be one (a run from an older page without the calls' data).
 */
export function labRunToDoc(run) {
  const entries = run.events.map((event) => entryOf(event, run.job, run.ttl)).filter(Boolean);
  const checked = validateDoc({ v: VERSION, entries, now: run.end });
  return checked.ok ? { doc: checked.doc } : { error: checked.error };
}

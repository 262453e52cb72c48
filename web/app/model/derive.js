// Facts derived from a timeline and the store's answers (outcomes), for the controller and the
// views. Pure functions. An outcome is what the store answered for one entry:
//   {value, reason}            value: true/false, a fence number or null; reason {code, ...} or null
//   {value, reason, job}       claim_next: the fence or null, and the job the store picked (or null)
//   {error: {code, message}}   the store refused the call itself (invalid argument, storage)
//   undefined                  not run yet (the future of a timeline just loaded)
import { WORKERS } from './timeline.js';

/** Whether the store granted the entry's operation. */
export function granted(entry, outcome) {
  if (!outcome || outcome.error) return false;
  if (entry.op === 'claim' || entry.op === 'claim_next') return typeof outcome.value === 'number';
  return outcome.value === true;
}

/**
 * The job an entry is about: its own `job`, or for `claim_next` the one the store picked (null
 * before it ran, or when nothing was claimable).
 */
export function jobOf(entry, outcome) {
  return entry.args.job ?? outcome?.job ?? null;
}

/**
 * Whether a timeline puts a job in a queue other than "default" or gives one a priority other
 * than 0: then the jobs table shows the queue and priority columns (section 11), else it stays
 * the six columns of `jobs`.
 */
export function usesQueues(entries) {
  return entries.some((e) => e.op === 'enqueue' &&
    ((e.args.queue !== undefined && e.args.queue !== 'default') || (e.args.priority !== undefined && e.args.priority !== 0)));
}

/**
 * What each worker remembers after entries[0..k): the fence it last got for each job.
 * Returns Map(worker -> Map(job -> fence)). Maps, never plain objects: job ids are user text.
 */
export function fenceMemory(entries, outcomes, k) {
  const memory = new Map(WORKERS.map((w) => [w, new Map()]));
  for (let i = 0; i < k && i < entries.length; i++) {
    const entry = entries[i];
    if ((entry.op === 'claim' || entry.op === 'claim_next') && granted(entry, outcomes[i])) {
      memory.get(entry.worker).set(jobOf(entry, outcomes[i]), outcomes[i].value);
    }
  }
  return memory;
}

/** Job ids enqueued in entries[0..k), in order of first appearance. */
export function knownJobs(entries, k) {
  const seen = new Set();
  for (let i = 0; i < k && i < entries.length; i++) {
    if (entries[i].op === 'enqueue') seen.add(entries[i].args.job);
  }
  return [...seen];
}

/**
 * The job the timeline shows at its playhead: that of the last operation played, else of the
 * first one to come; null for an empty timeline (or a `claim_next` that claimed nothing, or has
 * not run). The side panel's job box follows it.
 */
export function jobOnShow(entries, k, outcomes = []) {
  const at = Math.min(k, entries.length) - 1;
  const index = at >= 0 ? at : 0;
  const entry = entries[index];
  return entry ? jobOf(entry, outcomes[index]) : null;
}

/**
 * Leases as the store granted them, for drawing: one per granted claim, with the time it started,
 * the time it was due to end (`until`, moved by renewals) and how it ended.
 * end.kind: 'expired' (until reached), 'completed', 'released', 'failed' or 'live' (until is after
 * `now`).
 */
export function leases(entries, outcomes, now) {
  const list = [];
  const open = new Map(); // `${worker}\u0000${job}` -> lease
  const key = (entry, outcome) => `${entry.worker}\u0000${jobOf(entry, outcome)}`;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    const outcome = outcomes[i];
    if (!granted(entry, outcome)) continue;
    if (entry.op === 'claim' || entry.op === 'claim_next') {
      const lease = {
        worker: entry.worker, job: jobOf(entry, outcome), fence: outcome.value,
        from: entry.t, until: entry.t + entry.args.ttl, ended: null, endKind: null, index: i,
      };
      list.push(lease);
      open.set(key(entry, outcome), lease);
    } else if (WORKERS.includes(entry.worker)) {
      const lease = open.get(key(entry, outcome));
      if (!lease || lease.fence !== entry.args.fence) continue;
      if (entry.op === 'renew') {
        lease.until = entry.t + entry.args.ttl;
      } else {
        lease.ended = entry.t;
        lease.endKind = { complete: 'completed', release: 'released', fail: 'failed' }[entry.op];
        open.delete(key(entry, outcome));
      }
    }
  }
  for (const lease of list) {
    if (lease.endKind === null) lease.endKind = lease.until > now ? 'live' : 'expired';
    lease.end = lease.ended ?? lease.until;
  }
  return list;
}

/** The fence a worker will present for a job (0 when it never got one). */
export function fenceFor(memory, worker, job) {
  return memory.get(worker)?.get(job) ?? 0;
}

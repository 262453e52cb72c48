// The leases the dashboard draws as lanes, followed from one poll to the next. Pure: given the
// lanes so far, one poll's live leases and the poll's time (the server's clock), the next lanes.
// The store lists live leases only, so what a lane became is read from what the poll lacks: a
// lease whose end passed without a renew expired (its owner lost it); one whose job shows a newer
// fence was taken over; one gone before its end ended (completed, failed or released).

/** How long (seconds) a lane stays drawn after its lease ended, expired or was taken over. */
export const KEEP_ENDED = 30;

/**
 * The lanes after a poll. `lanes` are the previous answer (start with []); `leased` the poll's
 * leases `[{id, owner, fence, until}]`; `now` its time. A lane is `{job, owner, fence, until,
 * since, renewals, status, endedAt, by, byFence}`, `status` one of `live`, `expired`, `taken`,
 * `ended`; `renewals` counts the renews the polls saw (the lease's end moving later).
 *
 *   let lanes = followLeases([], [{ id: 'a', owner: 'A', fence: 1, until: 10 }], 0);
 *   lanes = followLeases(lanes, [], 11); // lanes[0].status === 'expired'
 */
export function followLeases(lanes, leased, now) {
  const current = new Map(leased.map((job) => [job.id, job]));
  const kept = new Set();
  const next = [];
  for (const lane of lanes) {
    const job = current.get(lane.job);
    const open = lane.status === 'live' || lane.status === 'expired';
    if (open && job && job.fence === lane.fence && job.owner === lane.owner) {
      kept.add(job.id);
      const renewed = job.until > lane.until;
      next.push({ ...lane, status: 'live', until: job.until, renewals: lane.renewals + (renewed ? 1 : 0) });
    } else if (open && job && job.fence > lane.fence) {
      next.push({ ...lane, status: 'taken', endedAt: lane.endedAt ?? Math.min(now, lane.until), by: job.owner, byFence: job.fence });
    } else if (lane.status === 'live') {
      const expired = now >= lane.until;
      next.push({ ...lane, status: expired ? 'expired' : 'ended', endedAt: expired ? lane.until : now });
    } else if (now - lane.endedAt < KEEP_ENDED) {
      next.push(lane);
    }
  }
  for (const job of leased) {
    if (kept.has(job.id)) continue;
    next.push({ job: job.id, owner: job.owner, fence: job.fence, until: job.until, since: now, renewals: 0, status: 'live', endedAt: null, by: null, byFence: null });
  }
  return next;
}

/**
 * How a lane looks at `now` (the page's running estimate of the server's clock, between polls):
 * a live lane whose end has passed shows as expired at once, before the next poll says so.
 */
export function laneLook(lane, now) {
  if (lane.status === 'live' && now >= lane.until) return 'expired';
  return lane.status;
}

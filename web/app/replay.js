// The bridge between the model and the real store: one entry becomes one store call, with the
// entry's own time as `now` (the store never reads a clock, so replays are exact).

/** Runs one entry; returns its outcome ({value, reason} or {error}). Storage errors throw. */
export async function applyEntry(store, entry) {
  const a = entry.args;
  const w = store.withReason;
  try {
    switch (entry.op) {
      case 'enqueue': return await w.enqueue(a.job);
      case 'claim': return await w.claim(a.job, entry.worker, entry.t, a.ttl);
      case 'renew': return await w.renew(a.job, entry.worker, a.fence, entry.t, a.ttl);
      case 'complete': return await w.complete(a.job, entry.worker, a.fence, entry.t, a.result);
      case 'release': return await w.release(a.job, entry.worker, a.fence);
      default: throw new Error(`unknown operation ${entry.op}`);
    }
  } catch (error) {
    if (error && error.code === 'invalid_argument') {
      return { error: { code: 'invalid_argument', message: String(error.message).slice(0, 300) } };
    }
    throw error;
  }
}

/** The jobs table: the stored row of every job id, read through the store. */
export async function readRows(store, ids) {
  const rows = [];
  for (const id of ids) {
    const { value } = await store.withReason.state(id);
    if (value) rows.push(value);
  }
  return rows;
}

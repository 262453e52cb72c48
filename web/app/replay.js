// The bridge between the model and the real store: one entry becomes one store call, with the
// entry's own time as `now` (the store never reads a clock, so replays are exact), and the same
// call on the lease-only table next to it (the counterfactual without fencing). Both come back
// with the statements SQLite ran for them.

function callArgs(entry) {
  const a = entry.args;
  switch (entry.op) {
    case 'enqueue': return [a.job];
    case 'claim': return [a.job, entry.worker, entry.t, a.ttl];
    case 'renew': return [a.job, entry.worker, a.fence, entry.t, a.ttl];
    case 'complete': return [a.job, entry.worker, a.fence, entry.t, a.result];
    case 'release': return [a.job, entry.worker, a.fence];
    case 'fail': return [a.job, entry.worker, a.fence, entry.t, a.retryAt, a.error];
    case 'revive': return [a.job, entry.t];
    default: throw new Error(`unknown operation ${entry.op}`);
  }
}

/**
 * Runs one entry on both stores. Returns {outcome, trace}: outcome is leasefence's answer
 * ({value, reason} or {error}); trace is {fenced: statements, leaseOnly: {value, statements}}.
 * Storage errors throw.
 */
export async function applyEntry(store, entry) {
  const args = callArgs(entry);
  let outcome;
  let fenced = [];
  try {
    const { statements, ...answer } = await store.callTraced(entry.op, args);
    outcome = { value: answer.value, reason: answer.reason ?? null };
    fenced = statements;
  } catch (error) {
    if (error && error.code === 'invalid_argument') {
      // Refused before anything ran: the lease-only store is not asked either.
      return { outcome: { error: { code: 'invalid_argument', message: String(error.message).slice(0, 300) } }, trace: { fenced: [], leaseOnly: { value: false, statements: [] } } };
    }
    throw error;
  }
  const leaseOnly = await store.leaseOnly(entry.op, args);
  return { outcome, trace: { fenced, leaseOnly: { value: leaseOnly.value, statements: leaseOnly.statements } } };
}

/**
 * The jobs table: the stored row of every job id, read through the store (`inspect`: the state,
 * plus whether the job is dead and the error of its last failure).
 */
export async function readRows(store, ids) {
  const rows = [];
  for (const id of ids) {
    const { value } = await store.withReason.inspect(id);
    if (value) rows.push({ ...value.state, dead: value.dead, error: value.failures.at(-1)?.error ?? null });
  }
  return rows;
}

/** The lease-only table's rows for the same ids. */
export async function readLeaseOnlyRows(store, ids) {
  const rows = [];
  for (const id of ids) {
    const { row } = await store.leaseOnly('state', [id]);
    if (row) rows.push(row);
  }
  return rows;
}

// The bridge between the model and the real store: one entry becomes one store call, with the
// entry's own time as `now` (the store never reads a clock, so replays are exact), and the same
// call on the lease-only table next to it (the counterfactual without fencing). Both come back
// with the statements SQLite ran for them.

function callArgs(entry) {
  const a = entry.args;
  switch (entry.op) {
    // A queue or priority left out is the store's default (null: "not given").
    case 'enqueue': return a.queue === undefined && a.priority === undefined ? [a.job] : [a.job, null, null, a.queue ?? null, a.priority ?? null];
    case 'claim': return [a.job, entry.worker, entry.t, a.ttl];
    case 'claim_next': return [entry.worker, entry.t, a.ttl];
    case 'renew': return [a.job, entry.worker, a.fence, entry.t, a.ttl];
    case 'complete': return [a.job, entry.worker, a.fence, entry.t, a.result];
    case 'release': return [a.job, entry.worker, a.fence];
    case 'fail': return [a.job, entry.worker, a.fence, entry.t, a.retryAt, a.error];
    case 'revive': return [a.job, entry.t];
    default: throw new Error(`unknown operation ${entry.op}`);
  }
}

/** The store's name of an entry's operation (the timeline spells them as the protocol does). */
const STORE_OP = Object.freeze({ claim_next: 'claimNext' });

/**
 * Runs one entry on both stores. Returns {outcome, trace}: outcome is leasefence's answer
 * ({value, reason} or {error}); trace is {fenced: statements, leaseOnly: {value, statements}}.
 * A `claim_next` answers like a claim, `value` the fence or null, plus `job`: the job the store
 * picked (null when nothing was claimable). The lease-only table has no queues nor priorities, so
 * it is asked to claim that same job by id (nothing, when leasefence claimed nothing): the two
 * tables differ in what fencing refuses, not in the order of the queue.
 * Storage errors throw.
 */
export async function applyEntry(store, entry) {
  const args = callArgs(entry);
  let outcome;
  let fenced = [];
  try {
    const { statements, ...answer } = await store.callTraced(STORE_OP[entry.op] ?? entry.op, args);
    outcome = entry.op === 'claim_next'
      ? { value: answer.value?.fence ?? null, reason: null, job: answer.value?.job ?? null }
      : { value: answer.value, reason: answer.reason ?? null };
    fenced = statements;
  } catch (error) {
    if (error && error.code === 'invalid_argument') {
      // Refused before anything ran: the lease-only store is not asked either.
      return { outcome: { error: { code: 'invalid_argument', message: String(error.message).slice(0, 300) } }, trace: { fenced: [], leaseOnly: { value: false, statements: [] } } };
    }
    throw error;
  }
  if (entry.op === 'claim_next' && outcome.job === null) {
    return { outcome, trace: { fenced, leaseOnly: { value: false, statements: [] } } };
  }
  const leaseOnly = entry.op === 'claim_next'
    ? await store.leaseOnly('claim', [outcome.job, entry.worker, entry.t, entry.args.ttl])
    : await store.leaseOnly(entry.op, args);
  return { outcome, trace: { fenced, leaseOnly: { value: leaseOnly.value, statements: leaseOnly.statements } } };
}

/**
 * The jobs table: the stored row of every job id, read through the store (`inspect`: the state,
 * plus whether the job is dead, the error of its last failure, its queue and its priority).
 */
export async function readRows(store, ids) {
  const rows = [];
  for (const id of ids) {
    const { value } = await store.withReason.inspect(id);
    if (value) {
      rows.push({
        ...value.state, dead: value.dead, error: value.failures.at(-1)?.error ?? null,
        queue: value.queue, priority: value.priority,
      });
    }
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

// The preset 'priorities'; scenarios.js says what a step holds, narration/<language>.js what it
// says. The workers call `claim_next`, so the store picks each job (docs/contract.md section 11):
// an urgent job overtakes an older one, and the fence still refuses a worker that stalled past
// its lease.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const priorities = {
  id: 'priorities',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-low-1', priority: 0 }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'store', 'enqueue', { job: 'job-low-2', priority: 0 }), expect: 'queued', claims: 'granted' },
    { do: e(1, 'A', 'claim_next', { ttl: 10 }), expect: 'fence 1, until t=11', claims: 'granted' },
    { do: e(3, 'store', 'enqueue', { job: 'job-urgent', priority: 10 }), expect: 'queued', claims: 'granted' },
    { do: e(4, 'B', 'claim_next', { ttl: 10 }), expect: 'fence 1, until t=14', claims: 'granted' },
    { do: e(6, 'B', 'complete', { job: 'job-urgent', fence: 1, result: B_RESULT }), expect: 'done, result stored', claims: 'granted' },
    { do: e(7, 'B', 'claim_next', { ttl: 10 }), expect: 'fence 1, until t=17', claims: 'granted' },
    { at: 11 },
    { do: e(12, 'C', 'claim_next', { ttl: 10 }), expect: 'fence 2, until t=22', claims: 'granted' },
    { do: e(14, 'A', 'complete', { job: 'job-low-1', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    {},
  ],
};

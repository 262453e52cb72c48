// The guided story ('stale-worker'); scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const staleWorker = {
  id: 'stale-worker',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-42' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-42', ttl: 10 }), expect: 'fence 1, until t=10', claims: 'granted' },
    { do: e(5, 'B', 'claim', { job: 'job-42', ttl: 10 }), expect: 'held by A until t=10', claims: 'held' },
    { at: 10 },
    { do: e(12, 'B', 'claim', { job: 'job-42', ttl: 10 }), expect: 'fence 2, until t=22', claims: 'granted' },
    { do: e(14, 'A', 'complete', { job: 'job-42', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    { do: e(16, 'B', 'complete', { job: 'job-42', fence: 2, result: B_RESULT }), expect: 'done, result stored', claims: 'granted', leaseOnly: true },
    { do: e(18, 'B', 'complete', { job: 'job-42', fence: 2, result: B_RESULT }), expect: 'job already done', claims: 'done', leaseOnly: true },
    {},
  ],
};

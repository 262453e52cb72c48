// The preset 'release-reclaim'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const releaseReclaim = {
  id: 'release-reclaim',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-9' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-9', ttl: 10 }), expect: 'fence 1, until t=10', claims: 'granted' },
    { do: e(3, 'A', 'release', { job: 'job-9', fence: 1 }), expect: 'released, fence 1 stays', claims: 'granted' },
    { do: e(4, 'B', 'claim', { job: 'job-9', ttl: 10 }), expect: 'fence 2, until t=14', claims: 'granted' },
    { do: e(5, 'A', 'complete', { job: 'job-9', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    { do: e(7, 'B', 'complete', { job: 'job-9', fence: 2, result: B_RESULT }), expect: 'done, result stored', claims: 'granted' },
    {},
  ],
};

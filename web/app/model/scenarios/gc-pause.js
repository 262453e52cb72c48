// The preset 'gc-pause'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const gcPause = {
  id: 'gc-pause',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-33' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-33', ttl: 10 }), expect: 'fence 1, until t=10', claims: 'granted' },
    { do: e(11, 'B', 'claim', { job: 'job-33', ttl: 10 }), expect: 'fence 2, until t=21', claims: 'granted' },
    { do: e(15, 'A', 'complete', { job: 'job-33', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    { do: e(17, 'B', 'complete', { job: 'job-33', fence: 2, result: B_RESULT }), expect: 'done, result stored', claims: 'granted', leaseOnly: true },
    {},
  ],
};

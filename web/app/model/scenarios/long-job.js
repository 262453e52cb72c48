// The preset 'long-job'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT } from './entry.js';

export const longJob = {
  id: 'long-job',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-169' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-169', ttl: 14400 }), expect: 'fence 1, until t=14400', claims: 'granted' },
    { do: e(14460, 'B', 'claim', { job: 'job-169', ttl: 14400 }), expect: 'fence 2, until t=28860', claims: 'granted' },
    { do: e(21600, 'A', 'complete', { job: 'job-169', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    {},
  ],
};

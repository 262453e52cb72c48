// The preset 'late-completion'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT } from './entry.js';

export const lateCompletion = {
  id: 'late-completion',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-2432' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-2432', ttl: 10 }), expect: 'fence 1, until t=10', claims: 'granted' },
    { do: e(14, 'A', 'complete', { job: 'job-2432', fence: 1, result: A_RESULT }), expect: 'lease expired at t=10', claims: 'expired', leaseOnly: true },
    { do: e(15, 'B', 'claim', { job: 'job-2432', ttl: 10 }), expect: 'fence 2, until t=25', claims: 'granted', leaseOnly: false },
    {},
  ],
};

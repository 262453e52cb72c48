// The preset 'late-renewals'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT } from './entry.js';

export const lateRenewals = {
  id: 'late-renewals',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-1416' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-1416', ttl: 30 }), expect: 'fence 1, until t=30', claims: 'granted' },
    { do: e(35, 'B', 'claim', { job: 'job-1416', ttl: 30 }), expect: 'fence 2, until t=65', claims: 'granted' },
    { do: e(45, 'A', 'renew', { job: 'job-1416', fence: 1, ttl: 30 }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    { do: e(50, 'A', 'complete', { job: 'job-1416', fence: 1, result: A_RESULT }), expect: 'stale fence 1, current 2', claims: 'stale_fence', leaseOnly: true },
    {},
  ],
};

// The preset 'poison-job'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e } from './entry.js';

export const poisonJob = {
  id: 'poison-job',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-poison' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-poison', ttl: 5 }), expect: 'fence 1, until t=5', claims: 'granted' },
    { do: e(1, 'A', 'fail', { job: 'job-poison', fence: 1, retryAt: 4, error: 'A: handler crashed' }), expect: 'failed, retry at t=4', claims: 'granted', leaseOnly: true },
    { do: e(2, 'B', 'claim', { job: 'job-poison', ttl: 5 }), expect: 'waits until t=4', claims: 'scheduled', leaseOnly: false },
    { do: e(4, 'B', 'claim', { job: 'job-poison', ttl: 5 }), expect: 'fence 2, until t=9', claims: 'granted' },
    { at: 9 },
    { do: e(10, 'C', 'claim', { job: 'job-poison', ttl: 5 }), expect: 'fence 3, until t=15', claims: 'granted' },
    { do: e(11, 'B', 'fail', { job: 'job-poison', fence: 2, retryAt: 17, error: 'B: handler crashed' }), expect: 'stale fence 2, current 3', claims: 'stale_fence', leaseOnly: true },
    { do: e(12, 'C', 'fail', { job: 'job-poison', fence: 3, retryAt: null, error: 'C: handler crashed' }), expect: 'failed for good: dead', claims: 'granted', leaseOnly: true },
    { do: e(20, 'A', 'claim', { job: 'job-poison', ttl: 5 }), expect: 'job already done', claims: 'done', leaseOnly: false },
    {},
  ],
};

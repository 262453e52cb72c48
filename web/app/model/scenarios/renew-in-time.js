// The preset 'renew-in-time'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e, A_RESULT } from './entry.js';

export const renewInTime = {
  id: 'renew-in-time',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-7' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'A', 'claim', { job: 'job-7', ttl: 10 }), expect: 'fence 1, until t=10', claims: 'granted' },
    { do: e(8, 'A', 'renew', { job: 'job-7', fence: 1, ttl: 10 }), expect: 'renewed until t=18', claims: 'granted' },
    { do: e(12, 'B', 'claim', { job: 'job-7', ttl: 10 }), expect: 'held by A until t=18', claims: 'held' },
    { do: e(15, 'A', 'complete', { job: 'job-7', fence: 1, result: A_RESULT }), expect: 'done, result stored', claims: 'granted' },
    {},
  ],
};

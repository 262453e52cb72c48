// The preset 'too-late'; scenarios.js says what a step holds, narration/<language>.js what it says.

import { e } from './entry.js';

export const tooLate = {
  id: 'too-late',
  steps: [
    {},
    { do: e(0, 'store', 'enqueue', { job: 'job-5' }), expect: 'queued', claims: 'granted' },
    { do: e(0, 'C', 'claim', { job: 'job-5', ttl: 5 }), expect: 'fence 1, until t=5', claims: 'granted' },
    { do: e(7, 'C', 'renew', { job: 'job-5', fence: 1, ttl: 5 }), expect: 'lease expired at t=5', claims: 'expired' },
    { do: e(8, 'C', 'complete', { job: 'job-5', fence: 1, result: "C's late result" }), expect: 'lease expired at t=5', claims: 'expired' },
    { do: e(9, 'C', 'claim', { job: 'job-5', ttl: 5 }), expect: 'fence 2, until t=14', claims: 'granted' },
    { do: e(10, 'C', 'complete', { job: 'job-5', fence: 2, result: "C's result" }), expect: 'done, result stored', claims: 'granted' },
    {},
  ],
};

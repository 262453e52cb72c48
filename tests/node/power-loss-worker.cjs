// Child of power-loss.test.mjs, run under power-loss-fs.cjs: claims, re-claims after expiry and
// completes jobs on one file, and writes every acknowledged answer to stdout before going on.
// Mode `grouped`: the same through store.grouped, three jobs per group (enqueue, claimNext,
// complete), each answer written once its group's promise settled.
// LEASEFENCE_EXCLUSIVE=1 opens the store with `exclusive: true` (power-loss.test.mjs runs both).
'use strict';
const fs = require('node:fs');
const { LeaseStore } = require(process.env.LEASEFENCE_PKG);

const [db, roundsText, mode = 'single'] = process.argv.slice(2);
const ack = (record) => fs.writeSync(1, `${JSON.stringify(record)}\n`);

function single(store) {
  let now = 0;
  for (let round = 0; round < Number(roundsText); round++) {
    const job = `j${round}`;
    if (store.enqueue(job)) ack({ op: 'enqueue', job });
    now += 1;
    const first = store.claim(job, 'A', now, 1);
    if (first !== null) ack({ op: 'claim', job, fence: first });
    now += 1; // A's lease has ended: B takes the job with the next fence
    const second = store.claim(job, 'B', now, 10);
    if (second !== null) ack({ op: 'claim', job, fence: second });
    const result = `r${round}`;
    if (store.complete(job, 'B', second, now, result)) ack({ op: 'complete', job, fence: second, result });
  }
}

async function grouped(store) {
  let now = 0;
  for (let round = 0; round < Number(roundsText); round++) {
    const jobs = ['a', 'b', 'c'].map((x) => `g${round}${x}`);
    const added = await Promise.all(jobs.map((job) => store.grouped.enqueue(job)));
    jobs.forEach((job, i) => added[i] && ack({ op: 'enqueue', job }));
    now += 1;
    const claims = (await Promise.all(jobs.map(() => store.grouped.claimNext('A', now, 10)))).filter(Boolean);
    for (const { job, fence } of claims) ack({ op: 'claim', job, fence });
    const done = await Promise.all(claims.map(({ job, fence }) => store.grouped.complete(job, 'A', fence, now, `r-${job}`)));
    claims.forEach(({ job, fence }, i) => done[i] && ack({ op: 'complete', job, fence, result: `r-${job}` }));
  }
}

LeaseStore.open(db, { exclusive: process.env.LEASEFENCE_EXCLUSIVE === '1' }).then(async (store) => {
  if (mode === 'grouped') await grouped(store);
  else single(store);
  store.close();
});

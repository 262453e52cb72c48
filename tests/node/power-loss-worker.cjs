// Child of power-loss.test.mjs, run under power-loss-fs.cjs: claims, re-claims after expiry and
// completes jobs on one file, and writes every acknowledged answer to stdout before going on.
'use strict';
const fs = require('node:fs');
const { LeaseStore } = require(process.env.LEASEFENCE_PKG);

const [db, roundsText] = process.argv.slice(2);
const ack = (record) => fs.writeSync(1, `${JSON.stringify(record)}\n`);

LeaseStore.open(db).then((store) => {
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
  store.close();
});

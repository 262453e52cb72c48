// A Node worker process on the native engine that drains `db` and prints one line per answer it
// has in hand, only after the call returned: {claim: [job, fence]} and {done: [job, fence, result]}.
// `grouped` sends every call through store.grouped (the Promise path JobWorker uses, a group
// committed on libuv's pool). It runs until the file is drained, or until it is killed.
//   node native-crash-child.mjs DB OWNER [grouped]
import fs from 'node:fs';

import { loadPackage } from './helpers.mjs';

const [db, owner, mode] = process.argv.slice(2);
const { LeaseStore } = loadPackage();
const store = await LeaseStore.open(db, { busyTimeout: 30 });
const say = (line) => fs.writeSync(1, `${JSON.stringify(line)}\n`); // unbuffered: printed means acknowledged
const api = mode === 'grouped' ? store.grouped : store;
say({ ready: store.engine });
for (;;) {
  const now = Date.now() / 1000;
  const claimed = await api.claimNext(owner, now, 60);
  if (!claimed) break;
  say({ claim: [claimed.job, claimed.fence] });
  const result = `${owner}:${claimed.job}`;
  if (await api.complete(claimed.job, owner, claimed.fence, now, result)) say({ done: [claimed.job, claimed.fence, result] });
}
store.close();

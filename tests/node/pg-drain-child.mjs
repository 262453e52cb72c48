// A Node worker process for postgres.test.mjs: opens the package's store on the PostgreSQL URL
// (argv[2]) as owner argv[3], claims and completes until nothing is claimable, and prints one
// JSON line per job: {job, fence, completed}; then {end: true}. A retryable error is retried;
// any other ends the process with the error on stderr.
import { loadPackage } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const [url, owner] = process.argv.slice(2);
const NOW = 1000;
const TTL = 600;

async function retrying(call) {
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (!error.retryable) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

const store = await LeaseStore.connect(url);
try {
  for (;;) {
    const claimed = await retrying(() => store.claimNext(owner, NOW, TTL));
    if (claimed === null) break;
    const completed = await retrying(() => store.complete(claimed.job, owner, claimed.fence, NOW + 1, `by ${owner}`));
    process.stdout.write(`${JSON.stringify({ job: claimed.job, fence: claimed.fence, completed })}\n`);
  }
  process.stdout.write(`${JSON.stringify({ end: true })}\n`);
} finally {
  await store.close();
}

// A stress worker for stress.test.mjs and native-mix.test.mjs (not a test file itself).
//
//   node stress-worker.mjs '<config JSON>'
//
// config: {db, id, ops, pool, threads?, seed?, ttlMin?, ttlMax?, pauseEvery?, pauseMs?}
// With `threads: N` the process runs N worker_threads (ids `${id}.t0` ...), each with its own
// store; otherwise it runs the loop itself. Every worker prints one JSON line when done:
// {id, ops, grants: [[job, fence, now, until]], completes: [[job, fence, result]], enqueued,
//  staleCompleteOk, violations, errors, ms, vfs}.
//
// Time is a logical clock: every worker's `now` is its own counter, advanced by one per
// operation, so all workers' clocks run at about the same speed; ttl is a few ticks, so leases
// expire while their holder is busy elsewhere and are stolen by other workers.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, workerData, parentPort } from 'node:worker_threads';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKG = process.env.LEASEFENCE_PKG || path.resolve(HERE, '../../target/npm/leasefence');
const require = createRequire(import.meta.url);

function rng(seed) {
  // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

async function runLoop(config) {
  const { LeaseStore } = require(PKG);
  const wasm = require(path.join(PKG, 'wasm', 'leasefence.js'));
  const { db, id, ops, pool } = config;
  const ttlMin = config.ttlMin ?? 2;
  const ttlMax = config.ttlMax ?? 6;
  const random = rng(config.seed ?? 1);
  const pick = (n) => Math.floor(random() * n);
  const store = await LeaseStore.open(db, { busyTimeout: (config.busyTimeoutMs ?? 30_000) / 1000 });
  const out = {
    id,
    ops: 0,
    grants: [],
    completes: [],
    enqueued: [],
    staleCompleteOk: [],
    violations: [],
    errors: [],
    counts: { claimNext: 0, claim: 0, renew: 0, complete: 0, release: 0, stale: 0, enqueue: 0, renewOk: 0, releaseOk: 0, completeRefused: 0 },
  };
  const held = []; // {job, fence, until}
  const old = []; // leases we no longer hold (completed, released, abandoned)
  let clock = config.clockStart ?? 0;
  const started = performance.now();
  for (let op = 0; op < ops; op++) {
    clock += 1;
    const now = clock;
    const ttl = ttlMin + pick(ttlMax - ttlMin + 1);
    const r = random();
    try {
      if (old.length > 0 && random() < 0.08) {
        // A stale worker comes back: completing a lease it no longer holds must fail.
        const lease = old[pick(old.length)];
        // An abandoned lease may still be live (then completing it would be legitimate): wait.
        if (!(lease.abandoned && now < lease.until)) {
          out.counts.stale++;
          const { value, reason } = store.withReason.complete(lease.job, id, lease.fence, now, `stale:${id}`);
          if (value) out.staleCompleteOk.push([lease.job, lease.fence, now]);
          else if (!reason) out.violations.push(['a refused complete without a reason', lease]);
        }
      } else if (held.length > 0 && r < 0.45) {
        const lease = held.splice(pick(held.length), 1)[0];
        const sub = random();
        if (sub < 0.6) {
          out.counts.complete++;
          const result = `${id}:${lease.job}:${lease.fence}:${now}`;
          const ok = store.complete(lease.job, id, lease.fence, now, result);
          if (ok) out.completes.push([lease.job, lease.fence, result]);
          else out.counts.completeRefused++;
          if (ok && now >= lease.until) out.violations.push(['complete of an expired lease succeeded', lease, now]);
          old.push(lease);
        } else if (sub < 0.8) {
          out.counts.renew++;
          const ok = store.renew(lease.job, id, lease.fence, now, ttl);
          if (ok && now >= lease.until) out.violations.push(['renew of an expired lease succeeded', lease, now]);
          if (ok) {
            out.counts.renewOk++;
            lease.until = now + ttl;
            held.push(lease);
          } else {
            old.push(lease);
          }
        } else {
          out.counts.release++;
          if (store.release(lease.job, id, lease.fence)) out.counts.releaseOk++;
          old.push(lease);
        }
      } else if (r < 0.97) {
        let grant;
        if (r < 0.85) {
          out.counts.claimNext++;
          grant = store.claimNext(id, now, ttl);
        } else {
          out.counts.claim++;
          const job = `s${pick(pool)}`;
          const fence = store.claim(job, id, now, ttl);
          grant = fence === null ? null : { job, fence };
        }
        if (grant) {
          out.grants.push([grant.job, grant.fence, now, now + ttl]);
          held.push({ job: grant.job, fence: grant.fence, until: now + ttl });
          // Hold at most three leases: the oldest is abandoned and left to expire.
          if (held.length > 3) {
            const abandoned = held.shift();
            abandoned.abandoned = true;
            old.push(abandoned);
          }
        }
      } else {
        out.counts.enqueue++;
        const job = `extra-${pick(40)}`;
        if (store.enqueue(job)) out.enqueued.push(job);
      }
    } catch (error) {
      out.errors.push(`${error.code}: ${error.message}`);
    }
    out.ops++;
    if (config.pauseEvery && op % config.pauseEvery === 0) sleepSync(config.pauseMs ?? 1);
  }
  out.ms = performance.now() - started;
  store.close();
  out.vfs = JSON.parse(wasm.vfsStats());
  return out;
}

if (!isMainThread) {
  parentPort.postMessage(await runLoop(workerData));
} else {
  const config = JSON.parse(process.argv[2]);
  if (config.threads) {
    const results = await Promise.all(
      Array.from({ length: config.threads }, (_, t) =>
        new Promise((resolve, reject) => {
          const worker = new Worker(fileURLToPath(import.meta.url), {
            workerData: { ...config, id: `${config.id}.t${t}`, seed: (config.seed ?? 1) * 31 + t, threads: 0 },
          });
          worker.once('message', resolve);
          worker.once('error', reject);
          worker.once('exit', (code) => code !== 0 && reject(new Error(`thread ${t} exited ${code}`)));
        }),
      ),
    );
    for (const r of results) process.stdout.write(`${JSON.stringify(r)}\n`);
  } else {
    process.stdout.write(`${JSON.stringify(await runLoop(config))}\n`);
  }
}

// A child for crash.test.mjs (not a test file itself).
//
//   node crash-worker.mjs loop  DB OWNER [busyTimeoutMs]  claims, renews, completes forever
//   node crash-worker.mjs check DB PROBE [busyTimeoutMs]  opens, one claim+complete of PROBE, closes
//
// `loop` writes every answer to stdout synchronously (fs.writeSync) before it does anything
// else with it, so a SIGKILL loses at most the answer of the operation it interrupted:
//   {"opening": pid}                     the package is loaded; about to open the file
//   {"ready": pid}                       after opening
//   {"g": [job, fence]}                  a granted fence
//   {"a": [job, fence, result]}          about to complete
//   {"c": [job, fence, result, ok]}      the complete's answer
// It stops between operations on SIGTERM and prints {"stats": vfsStats, "errors": [...]}.
// Time is the wall clock in seconds; leases last 50 ms, so a killed worker's lease soon expires.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PKG = process.env.LEASEFENCE_PKG || path.resolve(HERE, '../../target/npm/leasefence');
const require = createRequire(import.meta.url);
const { LeaseStore } = require(PKG);
const wasm = require(path.join(PKG, 'wasm', 'leasefence.js'));

const [mode, db, name, timeout] = process.argv.slice(2);
const busyTimeoutMs = Number(timeout ?? 10_000);
const say = (obj) => fs.writeSync(1, `${JSON.stringify(obj)}\n`);
const TTL = 0.05;
const now = () => Date.now() / 1000;

if (mode === 'check') {
  const started = performance.now();
  const store = await LeaseStore.open(db, { busyTimeout: busyTimeoutMs / 1000 });
  store.enqueue(name);
  const fence = store.claim(name, 'checker', now(), 60);
  const completed = fence !== null && store.complete(name, 'checker', fence, now(), 'checked');
  const ms = performance.now() - started;
  store.close();
  say({ fence, completed, ms, stats: JSON.parse(wasm.vfsStats()) });
} else if (mode === 'loop') {
  say({ opening: process.pid });
  const store = await LeaseStore.open(db, { busyTimeout: busyTimeoutMs / 1000 });
  const errors = [];
  let stop = false;
  let made = 0;
  process.on('SIGTERM', () => {
    stop = true;
  });
  say({ ready: process.pid });
  const step = () => {
    const grant = store.claimNext(name, now(), TTL);
    if (grant === null) {
      store.enqueue(`${name}-new-${made++}`);
      return;
    }
    say({ g: [grant.job, grant.fence] });
    const { job, fence } = grant;
    const roll = Math.random();
    if (roll < 0.5) store.renew(job, name, fence, now(), TTL);
    if (roll < 0.1) {
      store.release(job, name, fence);
      return;
    }
    if (roll > 0.95) return; // abandoned: expires
    const result = `${name}:${job}:${fence}`;
    say({ a: [job, fence, result] });
    const ok = store.complete(job, name, fence, now(), result);
    say({ c: [job, fence, result, ok] });
  };
  const chunk = () => {
    for (let i = 0; i < 5 && !stop; i++) {
      try {
        step();
      } catch (error) {
        errors.push(`${error.code}: ${error.message}`);
        if (errors.length > 50) stop = true;
      }
    }
    if (stop) {
      store.close();
      say({ stats: JSON.parse(wasm.vfsStats()), errors });
    } else {
      setImmediate(chunk);
    }
  };
  chunk();
} else {
  throw new Error(`unknown mode ${mode}`);
}

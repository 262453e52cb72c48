// Child of faults.test.mjs, run under power-loss-fs.cjs (the disk model and fault layer).
//
//   power DB SEED STEPS ROUND   two workers (two stores) enqueue, claimNext, renew, complete,
//                               fail and release on one file, printing every acknowledged answer before
//                               going on; the model cuts the power at its LEASEFENCE_PLFS_CUT-th sync.
//   io DIR TRIALS SEED OUT      I/O-error trials: before most steps a fault is armed; a failed
//                               step must throw code 'storage' having changed nothing, and the next
//                               step without a fault must succeed. Writes a summary and every
//                               file's acknowledged answers to OUT for the parent to check.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { LeaseStore } = require(process.env.LEASEFENCE_PKG);

const RENEW_TTL = 8; // longer than any claim's ttl: an acknowledged lease end only grows

/** xorshift32: the same choices for the same seed. */
function rng(seed) {
  let x = seed >>> 0 || 1;
  return (n) => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x % n;
  };
}

/** One worker; step() performs one operation and returns its acknowledgement, or null. */
function worker(prefix, owner, clock) {
  const held = [];
  let made = 0;
  return {
    owner,
    known: new Set(),
    step(store, pick) {
      const now = clock.tick();
      const ttl = 2 + pick(6);
      const choice = held.length === 0 ? pick(5) : pick(12);
      if (choice <= 1) {
        made += 1;
        const job = `${prefix}-${owner}-${made}`;
        this.known.add(job);
        return store.enqueue(job) ? { op: 'enqueue', job } : null;
      }
      if (choice <= 3) {
        const claimed = store.claimNext(owner, now, ttl);
        if (!claimed) return null;
        held.push([claimed.job, claimed.fence]);
        return { op: 'claim', job: claimed.job, fence: claimed.fence };
      }
      if (choice === 4) {
        clock.stall(5); // some leases run out
        return null;
      }
      const at = pick(held.length);
      const [job, fence] = held[at];
      if (choice <= 6) {
        if (store.renew(job, owner, fence, now, RENEW_TTL)) return { op: 'renew', job, fence, until: now + RENEW_TTL };
        held.splice(at, 1);
        return null;
      }
      if (choice <= 8) {
        const result = `done-by-${owner}-${fence}`;
        const ok = store.complete(job, owner, fence, now, result); // throws: still held
        held.splice(at, 1);
        return ok ? { op: 'complete', job, fence, result } : null;
      }
      if (choice >= 10) {
        // SPEC section 7: released to retry 3 s later, or dead.
        const retryAt = choice === 10 ? now + 3 : null;
        const error = `failed-by-${owner}-${fence}`;
        const ok = store.fail(job, owner, fence, now, retryAt, error);
        held.splice(at, 1);
        return ok ? { op: 'fail', job, fence, retryAt, error } : null;
      }
      const ok = store.release(job, owner, fence);
      held.splice(at, 1);
      return ok ? { op: 'release', job, fence } : null;
    },
  };
}

function clockFrom(start) {
  let t = start;
  return { tick: () => t++, stall: (d) => (t += d) };
}

async function power([db, seedText, stepsText, round]) {
  const pick = rng(Number(seedText));
  const clock = clockFrom(Number(round) * 1000);
  const stores = [await LeaseStore.open(db), await LeaseStore.open(db)];
  const workers = [worker(`r${round}`, 'a', clock), worker(`r${round}`, 'b', clock)];
  for (let i = 0; i < Number(stepsText); i++) {
    const w = pick(2);
    const ack = workers[w].step(stores[w], pick);
    if (ack) fs.writeSync(1, `${JSON.stringify(ack)}\n`);
  }
  for (const s of stores) s.close();
}

const FAULT_KINDS = ['read', 'write', 'sync', 'truncate'];

/** The rows (JSON arrays of non-null states) that differ between two snapshots, by job id. */
function diffRows(beforeText, afterText) {
  const before = new Map(JSON.parse(beforeText).map((r) => [r.id, JSON.stringify(r)]));
  const after = new Map(JSON.parse(afterText).map((r) => [r.id, JSON.stringify(r)]));
  const ids = new Set([...before.keys(), ...after.keys()]);
  return [...ids].filter((id) => before.get(id) !== after.get(id));
}

async function io([dir, trialsText, seedText, out]) {
  const faults = globalThis.leasefenceFaultFs;
  if (!faults) throw new Error('run under power-loss-fs.cjs with LEASEFENCE_PLFS_ROOT');
  const pick = rng(Number(seedText));
  const summary = { trials: 0, steps: 0, fired: {}, errors: 0, absorbed: 0, syncUnknownApplied: 0, messages: {} };
  const files = [];
  for (let trial = 0; trial < Number(trialsText); trial++) {
    const db = path.join(dir, `io-${trial}.db`);
    const clock = clockFrom(0);
    const stores = [await LeaseStore.open(db), await LeaseStore.open(db)];
    const observer = await LeaseStore.open(db);
    const workers = [worker(`t${trial}`, 'a', clock), worker(`t${trial}`, 'b', clock)];
    const acks = [];
    let mustSucceed = false;
    const rows = () => faults.paused(() => {
      const known = [...workers[0].known, ...workers[1].known].sort();
      // A job a failed enqueue did not add reads as null: leave those out.
      return JSON.stringify(known.map((job) => observer.state(job)).filter((row) => row !== null));
    });
    for (let step = 0; step < 40; step++) {
      const w = pick(2);
      let fault = null;
      if (!mustSucceed && pick(3) !== 0) {
        const kind = FAULT_KINDS[pick(4)];
        fault = { kind, nth: 1 + pick(8), code: kind === 'write' && pick(2) === 0 ? 'ENOSPC' : 'EIO', persistent: pick(4) === 0 };
        faults.arm(fault);
      }
      const before = rows();
      let ack = null;
      let error = null;
      try {
        ack = workers[w].step(stores[w], pick);
      } catch (e) {
        error = e;
      }
      faults.clear();
      const fired = faults.takeFired();
      for (const f of fired) summary.fired[`${f.kind}:${f.code}`] = (summary.fired[`${f.kind}:${f.code}`] ?? 0) + 1;
      summary.steps += 1;
      const context = `trial ${trial} step ${step} (${JSON.stringify(fault)}, fired ${JSON.stringify(fired)}): ${error?.message}`;
      if (!error) {
        if (fired.length) summary.absorbed += 1;
        if (ack) acks.push(ack);
        mustSucceed = false;
        continue;
      }
      if (mustSucceed) throw new Error(`the store did not work on after the fault cleared: ${context}`);
      if (!fired.length) throw new Error(`an error with no fault injected: ${context}`);
      if (error.code !== 'storage') throw new Error(`code ${error.code}, not storage: ${context}`);
      const now = rows();
      if (now !== before) {
        // A failed sync leaves the call's fate unknown: all or nothing, so at most the one row
        // the call writes differs (the directory sync after the journal's deletion, which is
        // the commit itself, failed). Any other fault must leave every row as it was.
        const changed = diffRows(before, now);
        if (!fired.every((f) => f.kind === 'sync') || changed.length !== 1) {
          throw new Error(`half-applied: ${context}\nbefore ${before}\nafter ${now}`);
        }
        summary.syncUnknownApplied += 1;
      }
      const kind = /database or disk is full/.test(error.message) ? 'full' : 'io';
      summary.messages[kind] ??= error.message;
      summary.errors += 1;
      mustSucceed = true;
    }
    for (const s of [...stores, observer]) s.close();
    files.push({ db, acks });
    summary.trials += 1;
  }
  fs.writeFileSync(out, JSON.stringify({ summary, files }));
}

/** A claim whose Nth sync fails, for each N: what the caller got and what the store then holds. */
async function syncs([dir, out]) {
  const faults = globalThis.leasefenceFaultFs;
  const seen = [];
  for (let nth = 1; nth <= 12; nth++) {
    const db = path.join(dir, `sync-${nth}.db`);
    const store = await LeaseStore.open(db);
    store.enqueue('j');
    faults.arm({ kind: 'sync', nth, code: 'EIO' });
    let answer = null;
    let error = null;
    try {
      answer = store.claim('j', 'w', 0, 10);
    } catch (e) {
      error = { code: e.code, message: e.message };
    }
    faults.clear();
    const fired = faults.takeFired().length > 0;
    const row = store.state('j');
    // The store works on once the fault clears: a release of whatever is held, a new job.
    const next = store.enqueue(`after-${nth}`);
    store.close();
    seen.push({ nth, fired, answer, error, row, next });
  }
  fs.writeFileSync(out, JSON.stringify(seen));
}

const [mode, ...args] = process.argv.slice(2);
({ power, io, syncs })[mode](args).catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});

'use strict';
// The Node side of crate/tests/faults.rs's `node_*` trials: the same workload as the harness's
// own child (`Worker::step` there), run by the npm package's native engine in a Node process, on
// an addon built with the fault-injecting VFS inside (feature `addon-faults`, src/addon/faults.rs).
//
//   FAULT_MODE=power  the power-loss child: workers step on one file and append every
//                     acknowledged answer to FAULT_ACKS; the VFS cuts the power (SIGKILL) at the
//                     mutating call LEASEFENCE_FAULT_CUT, and the harness checks the file.
//   FAULT_MODE=io     the I/O-error trials: before most steps a fault is armed; a failed step
//                     must be a `storage` error that changed nothing, and the next one succeeds.
//                     Prints one JSON summary line; acknowledged answers go to FAULT_ACKS.
//   FAULT_MODE=failed-sync  a complete whose commit's sync fails, copied as a crash leaves it.
//
// Worker 0 has a store of its own and calls it synchronously; the others share one store and
// call its `grouped` forms, so their calls of one turn commit together (one transaction, one
// sync): the group commit is under the cut as well.
const fs = require('node:fs');
const path = require('node:path');

const env = (name, fallback) => process.env[name] ?? fallback;
const PKG = env('LEASEFENCE_PKG');
const { LeaseStore } = require(PKG);

const RENEW_TTL = 8;
const STEPS = Number(env('FAULT_STEPS', 12));

// xorshift64 as the harness's support/rng.rs, so a seed means the same kind of run.
class Rng {
  constructor(seed) {
    this.state = BigInt.asUintN(64, BigInt(seed)) | 1n;
  }
  next() {
    let x = this.state;
    x ^= BigInt.asUintN(64, x << 13n);
    x ^= x >> 7n;
    x ^= BigInt.asUintN(64, x << 17n);
    this.state = x;
    return x;
  }
  below(n) {
    return Number(this.next() % BigInt(n));
  }
}

const ackLine = {
  enqueue: (a) => `enqueue ${a.job}\n`,
  claim: (a) => `claim ${a.job} ${a.fence}\n`,
  renew: (a) => `renew ${a.job} ${a.fence} ${a.until}\n`,
  complete: (a) => `complete ${a.job} ${a.fence} ${a.result}\n`,
  release: (a) => `release ${a.job} ${a.fence}\n`,
  fail: (a) => (a.retryAt === null ? `fail ${a.job} ${a.fence} ${a.error}\n` : `fail ${a.job} ${a.fence} ${a.error} ${a.retryAt}\n`),
};

/** One worker of the harness's workload; `call(op, ...args)` runs an operation of its store. */
class Worker {
  constructor(prefix, owner, call) {
    Object.assign(this, { prefix, owner, call, held: [], made: 0 });
  }

  /** One operation: the acknowledgement if the store granted it, else null. Throws a failure. */
  async step(rng, clock) {
    const now = clock.tick();
    const ttl = 2 + rng.below(6);
    const choice = this.held.length === 0 ? rng.below(5) : rng.below(12);
    const lease = ([job, fence]) => ({ job, owner: this.owner, fence });
    const take = () => this.held.splice(rng.below(this.held.length), 1)[0];
    // A held lease taken for an operation goes back when the operation failed (as the harness's).
    const keepOnError = async (held, work) => {
      try {
        return await work();
      } catch (error) {
        this.held.push(held);
        throw error;
      }
    };
    if (choice <= 1) {
      this.made += 1;
      const job = `${this.prefix}-${this.owner}-${this.made}`;
      return (await this.call('enqueue', job)) ? { op: 'enqueue', job } : null;
    }
    if (choice <= 3) {
      const claimed = await this.call('claimNext', this.owner, now, ttl);
      if (!claimed) return null;
      this.held.push([claimed.job, claimed.fence]);
      return { op: 'claim', job: claimed.job, fence: claimed.fence };
    }
    if (choice === 4) {
      clock.stall(5); // some leases run out
      return null;
    }
    if (choice <= 6) {
      const held = this.held[rng.below(this.held.length)];
      // Longer than any claim's ttl: an acknowledged lease end is a lower bound of what is kept.
      if (await this.call('renew', lease(held), now, RENEW_TTL)) {
        return { op: 'renew', job: held[0], fence: held[1], until: now + RENEW_TTL };
      }
      this.held = this.held.filter(([job]) => job !== held[0]);
      return null;
    }
    const held = take();
    if (choice <= 8) {
      const result = `done-by-${this.owner}-${held[1]}`;
      const ok = await keepOnError(held, () => this.call('complete', lease(held), now, result));
      return ok ? { op: 'complete', job: held[0], fence: held[1], result } : null;
    }
    if (choice >= 10) {
      const retryAt = choice === 10 ? now + 3 : null;
      const error = `failed-by-${this.owner}-${held[1]}`;
      const ok = await keepOnError(held, () => this.call('fail', lease(held), now, retryAt, error));
      return ok ? { op: 'fail', job: held[0], fence: held[1], retryAt, error } : null;
    }
    const ok = await keepOnError(held, () => this.call('release', lease(held)));
    return ok ? { op: 'release', job: held[0], fence: held[1] } : null;
  }
}

function clockFrom(start) {
  let now = start;
  return {
    tick: () => now++,
    stall: (seconds) => {
      now += seconds;
    },
  };
}

async function openStores(db, workers) {
  // One after the other: the first creates the file, the second finds it.
  const own = await LeaseStore.open(db);
  const shared = workers > 1 ? await LeaseStore.open(db) : null;
  const calls = [];
  for (let w = 0; w < workers; w++) {
    calls.push(w === 0 ? (op, ...args) => own[op](...args) : (op, ...args) => shared.grouped[op](...args));
  }
  return { stores: [own, shared].filter(Boolean), calls };
}

async function powerChild() {
  const db = env('FAULT_CHILD_DB');
  const seed = BigInt(env('FAULT_SEED'));
  const round = env('FAULT_ROUND');
  const workers = Number(env('FAULT_WORKERS', 3));
  const clock = clockFrom(Number(env('FAULT_CLOCK')));
  const acks = fs.openSync(env('FAULT_ACKS'), 'a');
  const { stores, calls } = await openStores(db, workers);
  await Promise.all(calls.map(async (call, w) => {
    const worker = new Worker(`r${round}`, `w${w}`, async (op, ...args) => call(op, ...args));
    const rng = new Rng(seed * 31n + BigInt(w + 1));
    for (let i = 0; i < STEPS; i++) {
      const ack = await worker.step(rng, clock);
      // One write per answer, before the worker acts on it.
      if (ack) fs.writeSync(acks, ackLine[ack.op](ack));
      // Let the other workers' calls of this turn gather into one group.
      await new Promise((resolve) => setImmediate(resolve));
    }
  }));
  for (const store of stores) store.close(); // the last close writes the event count
}

/** The addon's fault controls: the same file loaded a second time (one copy of its state). */
function faultControls() {
  const file = path.join(PKG, 'prebuilds', fs.readdirSync(path.join(PKG, 'prebuilds'))[0], 'leasefence.node');
  const module = { exports: {} };
  process.dlopen(module, file);
  for (const name of ['faultArm', 'faultClear', 'faultTakeFired']) {
    if (typeof module.exports[name] !== 'function') throw new Error(`${file} is not a build with addon-faults (no ${name})`);
  }
  return module.exports;
}

function randomFault(rng) {
  const kind = ['read', 'write', 'sync', 'truncate'][rng.below(4)];
  return { kind, nth: 1 + rng.below(6), full: kind === 'write' && rng.below(2) === 0, persistent: rng.below(4) === 0 };
}

async function ioTrials() {
  const controls = faultControls();
  const trials = Number(env('FAULT_IO_TRIALS', 10));
  const rng = new Rng(BigInt(env('FAULT_SEED')));
  const acksFile = fs.openSync(env('FAULT_ACKS'), 'a');
  const summary = { trials: 0, steps: 0, errors: 0, absorbed: 0, fired: {}, acks: 0 };
  for (let trial = 0; trial < trials; trial++) {
    const db = path.join(env('LEASEFENCE_FAULT_ROOT'), `io-${trial}.db`);
    const { stores, calls } = await openStores(db, 2);
    const observer = await LeaseStore.open(db);
    const workers = [0, 1].map((w) => new Worker(`t${trial}`, w === 0 ? 'a' : 'b', calls[w]));
    const clock = clockFrom(0);
    let mustSucceed = false;
    for (let step = 0; step < 40; step++) {
      const who = rng.below(2);
      const fault = !mustSucceed && rng.below(3) !== 0 ? randomFault(rng) : null;
      // Read before arming: the observer shares the process's VFS (and so the fault).
      const before = JSON.stringify(observer.listJobs(1e9, null, null, null, 1000));
      if (fault) controls.faultArm(fault.kind, fault.nth, fault.full, fault.persistent);
      let ack = null;
      let failure = null;
      try {
        ack = await workers[who].step(rng, clock);
      } catch (error) {
        failure = error;
      }
      controls.faultClear();
      const fired = controls.faultTakeFired();
      for (const [kind, code] of fired) summary.fired[`${kind}:${code}`] = (summary.fired[`${kind}:${code}`] ?? 0) + 1;
      summary.steps += 1;
      const context = `trial ${trial} step ${step} (${JSON.stringify(fault)}, fired ${JSON.stringify(fired)})`;
      if (!failure) {
        if (fired.length > 0) summary.absorbed += 1;
        if (ack) {
          fs.writeSync(acksFile, `${trial} ${ackLine[ack.op](ack)}`);
          summary.acks += 1;
        }
        mustSucceed = false;
        continue;
      }
      const problem = (what) => {
        throw new Error(`${what}: ${context}: ${failure.code} ${failure.message}`);
      };
      if (mustSucceed) problem('the store did not work on after the fault cleared');
      if (fired.length === 0) problem('an error with no fault injected');
      if (failure.code !== 'storage') problem('not a storage error');
      if (!/disk I\/O error|database or disk is full/.test(failure.message)) problem('not an I/O error or a full disk');
      const after = JSON.stringify(observer.listJobs(1e9, null, null, null, 1000));
      if (after !== before) problem(`half-applied (before ${before}, after ${after})`);
      summary.errors += 1;
      mustSucceed = true;
    }
    for (const store of [...stores, observer]) store.close();
    summary.trials += 1;
  }
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

/**
 * A failed sync during a complete's commit, as crate/tests/faults.rs's `failed_sync_then_crash`:
 * for the commit's syncs 1 to 4 in turn, the complete must fail with a `storage` error and not be
 * visible; the files are then copied as a crash would leave them (to FAULT_COPIES/<nth>-failed),
 * the live store completes again, and the files are copied once more (<nth>-after). The harness
 * opens the copies. Prints one JSON line: per nth, whether the complete failed, and its fence.
 */
async function failedSync() {
  const controls = faultControls();
  const copies = env('FAULT_COPIES');
  const cases = [];
  const copyTo = (db, name) => {
    const dir = path.join(copies, name);
    fs.mkdirSync(dir, { recursive: true });
    for (const suffix of ['', '-wal', '-journal']) {
      if (fs.existsSync(db + suffix)) fs.copyFileSync(db + suffix, path.join(dir, `copy.db${suffix}`));
    }
  };
  for (let nth = 1; nth <= 4; nth++) {
    const db = path.join(env('LEASEFENCE_FAULT_ROOT'), `sync-${nth}.db`);
    const store = await LeaseStore.open(db);
    store.enqueue('j');
    const lease = store.claimLease('j', 'a', 0, 10);
    controls.faultArm('sync', nth, false, false);
    let failure = null;
    let granted = null;
    try {
      granted = store.complete(lease, 1, 'r');
    } catch (error) {
      failure = error;
    }
    controls.faultClear();
    const fired = controls.faultTakeFired();
    if (fired.length === 0 || !failure) {
      // The commit has fewer syncs than nth, or the failed sync was the checkpoint's after it.
      if (granted !== true) throw new Error(`nth ${nth}: the complete answered ${granted} with ${JSON.stringify(fired)} fired`);
      cases.push({ nth, failed: false, fence: lease.fence });
      store.close();
      continue;
    }
    if (failure.code !== 'storage') throw new Error(`nth ${nth}: not a storage error: ${failure.code} ${failure.message}`);
    // Its fate is known only by reading the store: the message must say so.
    if (!/took effect is unknown.*read the job's state/.test(failure.message)) throw new Error(`nth ${nth}: the message does not say to read the state back: ${failure.message}`);
    if (store.state('j').done) throw new Error(`nth ${nth}: a failed complete is visible`);
    copyTo(db, `${nth}-failed`);
    // The live store works on; its next commit overwrites what the failed one left.
    if (store.complete(lease, 2, 'r2') !== true) throw new Error(`nth ${nth}: the store did not work on`);
    copyTo(db, `${nth}-after`);
    cases.push({ nth, failed: true, fence: lease.fence, message: failure.message });
    store.close();
  }
  process.stdout.write(`${JSON.stringify(cases)}\n`);
}

const mode = env('FAULT_MODE', 'power');
const modes = { io: ioTrials, power: powerChild, 'failed-sync': failedSync };
(modes[mode] ?? powerChild)().catch((error) => {
  process.stderr.write(`node fault child (${mode}): ${error.stack ?? error}\n`);
  process.exit(2);
});

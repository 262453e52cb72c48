// The worker's side: the real JobWorker (web/store/job-worker.js) run in the page against the real
// store, on a clock the page controls, and the report bucket it uploads to.
//
// The one adapter: JobWorker waits with setTimeout (heartbeats, watchdog, backoff, idle polling)
// and reads the time from its `clock` option. While a run lasts, `virtualTimers()` stands in for
// the page's setTimeout/clearTimeout: a timer is kept with the virtual time it is due, and the run
// fires them in order of that time, setting the clock to it, after every store call in flight has
// answered. So every heartbeat, lost-lease signal, retry and refusal is the runtime's and the
// store's own, and a run gives the same answers every time (the store never reads a clock).
//
// A stall is a paused process (a GC pause, a blocked event loop): the timers worker A had pending
// when it began are held, not fired, until it ends, while the clock and worker B go on. In the
// fenced mode A's own clock stops with it too, as a suspended VM's does until it is corrected: the
// runtime's lease check before writing then believes the lease is live, and only the store's
// check of the fence is left. That mode's handlers return `fencedResult`, so their rows commit in
// the completion's transaction.
import { JobWorker, fencedResult } from '../store/job-worker.js';
import { LAB_MODES, LAB_WAKE } from './model/timeline.js';
import { t } from '../common/i18n.js';
// The report's body is data, in English ("A's report"); the lab's view draws it in the page's language.

const JOB = 'job-report';
const TTL = 10;
const EVERY = 3;
const STALL_FROM = 7; // A's stall begins here; it wakes at the run's `wake` (default 20)

function virtualTimers() {
  const real = { setTimeout: globalThis.setTimeout.bind(globalThis), clearTimeout: globalThis.clearTimeout.bind(globalThis) };
  const original = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
  const timers = new Map();
  let seq = 1e9; // far from the browser's own ids, so clearTimeout knows whose a timer is
  const clock = { now: 0 };
  const held = new Set();
  return {
    clock,
    install() {
      globalThis.setTimeout = (f, ms = 0) => {
        const id = ++seq;
        timers.set(id, { id, at: clock.now + Math.max(0, Number(ms) || 0) / 1000, f });
        return id;
      };
      globalThis.clearTimeout = (id) => {
        if (!timers.delete(id)) real.clearTimeout(id);
        held.delete(id);
      };
    },
    uninstall() {
      globalThis.setTimeout = original.setTimeout;
      globalThis.clearTimeout = original.clearTimeout;
    },
    /** One turn of the real event loop (store answers arrive as messages). */
    turn: () => new Promise((resolve) => real.setTimeout(resolve, 0)),
    holdAll() {
      for (const id of timers.keys()) held.add(id);
    },
    releaseHeld() {
      held.clear();
    },
    next() {
      let best = null;
      for (const timer of timers.values()) {
        if (held.has(timer.id)) continue;
        if (!best || timer.at < best.at || (timer.at === best.at && timer.id < best.id)) best = timer;
      }
      return best;
    },
    fire(timer) {
      timers.delete(timer.id);
      timer.f();
    },
  };
}

/**
 * Runs one lab timeline and returns `{events, bucket, stats, inspect}`: every store call the
 * workers made with its virtual time and answer, what the bucket holds at the end, each worker's
 * counters and the store's record of the job. Erases the store first (the caller replays its own
 * timeline afterwards).
 */
export async function runLab(store, mode, { stall = true, wake = LAB_WAKE.default } = {}) {
  if (!LAB_MODES.includes(mode)) throw new Error(`unknown lab mode ${mode}`);
  if (!Number.isInteger(wake) || wake < LAB_WAKE.min || wake > LAB_WAKE.max) {
    throw new Error(`A must wake at a whole t from ${LAB_WAKE.min} to ${LAB_WAKE.max}, not ${wake}`);
  }
  await store.eraseEverything();
  const vt = virtualTimers();
  const events = [];
  let inflight = 0;
  const record = (event) => events.push({ t: vt.clock.now, ...event });
  const track = async (promise) => {
    inflight += 1;
    try {
      return await promise;
    } finally {
      inflight -= 1;
    }
  };
  // The store as each worker sees it: the real one, with every call drawn on that worker's lane.
  const storeFor = (lane) => {
    const withReason = {};
    for (const op of Object.keys(store.withReason)) {
      withReason[op] = (...args) => track(store.withReason[op](...args)).then((answer) => {
        // Each event keeps the call's fence and arguments, so the run can become a timeline.
        const call = { fence: args[2], ok: Boolean(answer.value), reason: answer.reason };
        if (op === 'renew' || op === 'release') {
          record({ lane, kind: op, ...call });
        } else if (op === 'complete') {
          record({ lane, kind: op, ...call, result: args[4] });
        } else if (op === 'fail') {
          record({ lane, kind: op, ...call, retryAt: args[4], error: args[5] });
        } else if (op === 'fenced') {
          // The runtime's completion with the handler's rows: one transaction, drawn on both lanes.
          record({ lane: 'bucket', kind: 'fenced', who: lane, fence: args[2], ok: call.ok, reason: call.reason, clock: args[3] });
          record({ lane, kind: 'complete', ...call, result: args[5]?.result ?? null, withRows: true });
        }
        return answer;
      });
    }
    return {
      withReason,
      claimNext: (...args) => track(store.withReason.claimNext(...args)).then(({ value }) => {
        if (value) record({ lane, kind: 'claim', fence: value.fence });
        return value;
      }),
      stats: (...args) => track(store.stats(...args)),
      // The runtime's rules cross to the store's worker too: tracked like a store call.
      workerRules: Object.fromEntries(Object.entries(store.workerRules).map(([rule, f]) => [rule, (...args) => track(f(...args))])),
    };
  };
  const bucketKey = `report.pdf#${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
  const readKey = `${bucketKey}:read`;

  /** An upload to the bucket (the none and guard modes; the fenced mode's rows go with the completion). */
  async function upload(lane, fence) {
    const body = t('en', 'lab.report', lane);
    if (mode === 'none') {
      // A store that takes any write (a bucket's PUT): the last writer wins.
      await track(store.appSet('bucket', JSON.stringify({ body, fence })));
      record({ lane: 'bucket', kind: 'put', who: lane, fence, ok: true });
      return;
    }
    const answer = await track(store.guardWrite(bucketKey, fence, [
      { sql: 'CREATE TABLE IF NOT EXISTS report_bucket(key TEXT PRIMARY KEY, body TEXT NOT NULL, fence INTEGER NOT NULL)' },
      { sql: 'INSERT OR REPLACE INTO report_bucket(key, body, fence) VALUES (?, ?, ?)', params: [bucketKey, body, fence] },
    ]));
    record({ lane: 'bucket', kind: 'guard', who: lane, fence, ok: answer.accepted, current: answer.current });
  }

  /** The fenced mode's handler answer: the report's row, committed with the completion or not at all. */
  const reportRows = (lane, fence) => fencedResult([
    { sql: 'CREATE TABLE IF NOT EXISTS report_rows(key TEXT PRIMARY KEY, body TEXT NOT NULL, fence INTEGER NOT NULL)' },
    { sql: 'INSERT OR REPLACE INTO report_rows(key, body, fence) VALUES (?, ?, ?)', params: [bucketKey, t('en', 'lab.report', lane), fence] },
  ], t('en', 'lab.report', lane));

  async function readBucket() {
    if (mode === 'none') {
      const text = await store.appGet('bucket');
      return text ? JSON.parse(text) : null;
    }
    const table = mode === 'guard' ? 'report_bucket' : 'report_rows';
    // A read through the guard under its own key (fence 0): the rows of the SELECT, nothing written.
    const answer = await store.guardWrite(readKey, 0, [
      { sql: `CREATE TABLE IF NOT EXISTS ${table}(key TEXT PRIMARY KEY, body TEXT NOT NULL, fence INTEGER NOT NULL)` },
      { sql: `SELECT body, fence FROM ${table} WHERE key = ?`, params: [bucketKey] },
    ]);
    return answer.rows[0] ?? null;
  }

  const sleep = (seconds) => new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const workers = [];
  // A's clock: the page's, except in the fenced mode, where it stands still while A is stalled
  // and runs on after it, behind by the stall's length.
  let clockStops = false;
  const clockOf = (lane) => () => {
    if (lane !== 'A' || !clockStops || vt.clock.now < STALL_FROM) return vt.clock.now;
    return vt.clock.now - Math.min(vt.clock.now, wake) + STALL_FROM;
  };
  const start = (lane, handler, options) => {
    // The lab draws the lease's own calls: the workers keep out of the worker registry, so each
    // renew is a `renew` (not a registry beat carrying it) and no beat adds calls of its own.
    const worker = new JobWorker(storeFor(lane), {
      owner: lane, ttl: TTL, heartbeatEvery: EVERY, clock: clockOf(lane), idle: 1, register: false, ...options,
    });
    workers.push({ lane, worker, done: worker.run(handler) });
    return worker;
  };
  const watchSignal = (lane, signal) => signal.addEventListener('abort', () => {
    record({ lane, kind: 'lost', code: signal.reason?.code, reason: signal.reason?.reason ?? null });
  });

  // A report takes `seconds`; then the handler uploads it without looking at its signal, the way
  // a paused process carries on (in the fenced mode it returns the row with its completion).
  const reporter = (lane, seconds) => async (job, { signal, fence }) => {
    watchSignal(lane, signal);
    await sleep(seconds);
    if (mode === 'fenced') return reportRows(lane, fence);
    await upload(lane, fence);
    return t('en', 'lab.report', lane);
  };

  vt.install();
  let stalled = false;
  let startedB = false;
  try {
    await track(store.enqueue(JOB));
    record({ lane: 'store', kind: 'enqueue' });
    let end;
    if (mode === 'poison') {
      end = 30;
      start('A', async (job, { signal }) => {
        watchSignal('A', signal);
        await sleep(1);
        throw new Error('the payload crashes the handler');
      }, { maxAttempts: 3, backoff: 4 });
    } else {
      end = Math.max(26, wake + 6);
      start('A', reporter('A', 8)); // paused at t=7 until `wake`
    }
    for (;;) {
      if (mode !== 'poison' && !startedB) {
        // Run up to the stall, then hold A's timers (if it stalls) and let B in.
        const next = await nextTimer(vt, () => inflight);
        if (!next || next.at >= STALL_FROM) {
          vt.clock.now = STALL_FROM;
          startedB = true;
          if (stall) {
            vt.holdAll();
            stalled = true;
            clockStops = mode === 'fenced';
            record({ lane: 'A', kind: 'stall', until: wake, clockStops });
          }
          // B's report takes 2 s; in the fenced mode 6 s, so that A wakes (at 20 by default)
          // while B still holds the job: the job is not done, and only the fence refuses A.
          start('B', reporter('B', mode === 'fenced' ? 6 : 2));
          continue;
        }
        vt.clock.now = Math.max(vt.clock.now, next.at);
        vt.fire(next);
        continue;
      }
      const next = await nextTimer(vt, () => inflight);
      const resumeAt = stalled && wake;
      if (resumeAt && (!next || next.at >= resumeAt)) {
        vt.clock.now = Math.max(vt.clock.now, resumeAt);
        vt.releaseHeld();
        stalled = false;
        record({ lane: 'A', kind: 'resume', clock: clockOf('A')() });
        continue;
      }
      if (!next || next.at > end) break;
      vt.clock.now = Math.max(vt.clock.now, next.at);
      vt.fire(next);
    }
    vt.clock.now = end;
    for (const { worker } of workers) worker.stop();
    for (let i = 0; i < 50; i++) { // stop() ends the idle waits; let them run out
      const next = await nextTimer(vt, () => inflight);
      if (!next) break;
      vt.fire(next);
    }
    await Promise.all(workers.map((w) => w.done));
  } finally {
    vt.uninstall();
  }
  const stats = Object.fromEntries(workers.map(({ lane, worker }) => [lane, worker.stats]));
  const inspect = await store.inspect(JOB);
  const bucket = mode === 'poison' ? null : await readBucket();
  return { mode, stalled: mode === 'poison' ? null : stall, wake, job: JOB, ttl: TTL, events, bucket, stats, inspect, end: vt.clock.now };
}

/** Waits until no store call is in flight, then answers the earliest timer not held. */
async function nextTimer(vt, inflight) {
  let quiet = 0;
  while (quiet < 3) {
    await vt.turn();
    quiet = inflight() === 0 ? quiet + 1 : 0;
  }
  return vt.next();
}

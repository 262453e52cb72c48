// Lease keeping, written once: renewing a lease while its handler runs, retrying a renew the store
// was too busy to answer, watching for the lease end, and reporting a loss. `keepLease` holds the
// rules; where it runs is a thin driver that gives it a clock, a renew and timers: `keepOnLoop`
// (this thread: the default, and the browser) and node/heartbeat-thread.cjs (Node's
// `heartbeat: 'thread'`, a worker thread with its own connection, reporting by message through
// `keepOnSource`). Both report the same events: `{renewed(end), lost(reason, message),
// error(error, retryIn)}`.
//
// Where the heartbeat runs: on the handler's own thread (the event loop), by default and on
// purpose. A handler that blocks the loop (CPU-bound, or hung in synchronous code) starves the
// heartbeat and loses its lease; when the loop runs again the handler is signalled at once and its
// result discarded. Renewing from another thread would keep a busy handler's lease, but it would
// also keep a hung handler's lease for ever, and the job with it. With fencing a lost lease costs
// duplicate work, never a corrupted result, so losing it is the safe default.
//
// The times are the crate's rules (crate/src/rules/worker.rs, through the store's `workerRules`),
// the same as the Rust heartbeat's: `nextRenewAt(renewedAt, every)` for the next renew and
// `renewRetryDelay(failedRenews, every)` for the wait after a busy one.
import { isStorageError } from './errors.js';
import { later as laterOnThisThread } from './timers.js';

const expired = (until) => ({ code: 'expired', until });

/**
 * Keeps one lease, claimed at `claimedAt` and ending at `end` (seconds), by the rules above:
 * renews for `ttl` when `rules.nextRenewAt` says (every `every` seconds); a busy renew (a storage
 * error) is retried after `rules.renewRetryDelay`; a refused renew, another error, or a lease end
 * reached without a renew (a busy store, a paused process, a blocked thread) is reported as lost,
 * once.
 *
 * The driver gives `rules` (the store's `workerRules`: answers or Promises of them), `clock()`
 * (seconds), `renew(now)` (the store's `{value, reason}`, or a Promise
 * of it), `active()` (false once the lease is lost or given up: nothing more runs), timers
 * (`later(f, seconds)`, `cancel(timer)`), and optionally `track(promise)` for renews in flight and
 * `lost()` (default: not active), true once a renew's answer must no longer be reported: a renew
 * that got through while the handler finished still moves the lease end it is checked against.
 * Returns `{stop()}`, which cancels every timer it set.
 *
 *   const beat = keepLease({ claimedAt: now(), end: now() + 30, ttl: 30, every: 10, rules, clock: now, renew, active: () => held, events });
 */
function keepLease({ claimedAt, end, ttl, every, rules, clock, renew, active, later = laterOnThisThread, cancel = clearTimeout, track = (promise) => promise, lost = () => !active(), events }) {
  let leaseEnd = end;
  let stopped = false;
  const timers = new Set();
  const live = () => !stopped && active();
  const at = (seconds, f) => {
    if (!live()) return null;
    const timer = later(() => {
      timers.delete(timer);
      if (live()) f();
    }, seconds);
    timers.add(timer);
    return timer;
  };
  let watchdog = null;
  const watch = () => {
    if (watchdog !== null) {
      cancel(watchdog);
      timers.delete(watchdog);
    }
    watchdog = at(leaseEnd - clock(), () => {
      watchdog = null;
      // A clock driven by hand (JobWorker's `clock` option) may lag real time: look again later.
      if (clock() < leaseEnd) watch();
      else events.lost(expired(leaseEnd), 'the lease ended before a renew got through');
    });
  };
  const atTime = (time, f) => at(time - clock(), f);
  let failedRenews = 0;
  const tick = () =>
    track(
      (async () => {
        const now = clock();
        if (now >= leaseEnd) {
          events.lost(expired(leaseEnd), 'the lease ended before it could be renewed (the process was paused, or the thread renewing it blocked)');
          return;
        }
        let answer;
        try {
          answer = await renew(now);
        } catch (error) {
          if (!isStorageError(error)) {
            events.lost(null, `the renew failed: ${error.message}`);
            return;
          }
          // A busy database: try again soon, within the lease; the watchdog reports the lease
          // end if it comes first.
          failedRenews += 1;
          const retryIn = await rules.renewRetryDelay(failedRenews, every);
          events.error(error, retryIn);
          at(retryIn, tick);
          return;
        }
        if (lost()) return;
        if (answer.value) {
          leaseEnd = now + ttl;
          events.renewed(leaseEnd);
          failedRenews = 0;
          watch();
          atTime(await rules.nextRenewAt(now, every), tick);
        } else {
          events.lost(answer.reason ?? null, `the store refused the renew (${answer.reason?.code ?? 'no reason'})`);
        }
      })(),
    );
  watch();
  Promise.resolve(rules.nextRenewAt(claimedAt, every)).then((time) => atTime(time, tick));
  return {
    stop() {
      stopped = true;
      for (const timer of timers) cancel(timer);
      timers.clear();
    },
  };
}

/**
 * The renew of one lease through `store`, carrying the worker's registry beat when `beat(now)`
 * answers one (`heartbeat`: the beat and the renew in one transaction), answered `{value, reason}`.
 */
async function renewOne(store, lease, owner, ttl, now, beat) {
  const report = beat?.(now);
  if (!report) return store.withReason.renew(lease.job, owner, lease.fence, now, ttl);
  const answer = await store.withReason.heartbeat(owner, [{ job: lease.job, fence: lease.fence }], now, ttl, report);
  return answer.value[0];
}

/**
 * The driver on this thread: renews through `store` (with the worker's beat when `beat` gives one);
 * the lease's timers and renews in flight are the lease's.
 */
function keepOnLoop(lease, { store, rules, owner, ttl, every, timers, claimedAt, events, beat = null }) {
  keepLease({
    claimedAt,
    end: lease.end,
    ttl,
    every,
    rules,
    clock: timers.now,
    renew: (now) => renewOne(store, lease, owner, ttl, now, beat),
    active: () => !lease.closed && !lease.signal.aborted,
    // The worker's timers (./timers.js): real time, or a clock moved by hand (ManualClock).
    later: (f, seconds) => {
      const timer = timers.after(seconds, () => {
        lease.timers.delete(timer);
        f();
      });
      lease.timers.add(timer);
      return timer;
    },
    cancel: (timer) => {
      timer.cancel();
      lease.timers.delete(timer);
    },
    track: lease.track,
    lost: () => lease.signal.aborted,
    events,
  });
}

/**
 * Renewing elsewhere, through a heartbeat source `{start(lease, events), close()}` (Node: a worker
 * thread running keepLease on its own connection). The source tells `renewed(end)` and
 * `lost(reason, message)` as its messages arrive; `stop()` resolves after every message it sent
 * before, so after `quiet()` the lease end and the signal are what the source last saw. No
 * watchdog on this side: while this thread is blocked its timers and the source's messages wait
 * alike, and a timer could fire before the renewals queued with it.
 */
function keepOnSource(lease, source, { owner, ttl, every, events }) {
  const beat = source.start({ job: lease.job, owner, fence: lease.fence, end: lease.end, ttl, every }, events);
  let stopping = null;
  lease.stopSource = () => (stopping ??= Promise.resolve(beat.stop()));
}

export { keepLease, keepOnLoop, keepOnSource };

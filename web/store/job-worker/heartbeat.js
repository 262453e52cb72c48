// Lease keeping: renewing the lease while the handler runs, and telling the worker the moment it
// is lost. Both drivers report through the same events, `{renewed(end), lost(reason, message),
// error(error)}`.
//
// Where the heartbeat runs: on the handler's own thread (the event loop), on purpose. A handler
// that blocks the loop (CPU-bound, or hung in synchronous code) starves the heartbeat and loses
// its lease; when the loop runs again the handler is signalled at once and its result discarded.
// Renewing from another thread would keep a busy handler's lease, but it would also keep a hung
// handler's lease for ever, and the job with it. With fencing a lost lease costs duplicate work,
// never a corrupted result, so losing it is the safe default.
//
// Node offers the other side as an option (`heartbeat: 'thread'`, node/heartbeat-thread.cjs): it
// plugs in as a heartbeat source, `{start(lease, events), close()}` (see keepOnSource).
import { isStorageError } from './errors.js';

/**
 * Renews on this thread when a renew is due (the first `every` seconds after the claim, then
 * `every` after each granted one: the core's rule, `rules.nextRenewAt`); a refused renew, or a
 * lease end reached without one (a busy store, a paused process, a blocked loop), signals the
 * handler at once. A renew that fails on a busy store is tried again after the core's
 * `rules.renewRetryDelay`. Every wait is on the worker's clock (`timers`, ./timers.js).
 */
function keepOnLoop(lease, { store, rules, owner, ttl, every, timers, claimedAt, events }) {
  const at = (time, f) => {
    if (lease.closed) return;
    const timer = timers.at(time, () => {
      lease.timers.delete(timer);
      if (!lease.closed && !lease.signal.aborted) f();
    });
    lease.timers.add(timer);
  };
  let watchdog = null;
  const watch = () => {
    if (watchdog) {
      watchdog.cancel();
      lease.timers.delete(watchdog);
    }
    const timer = timers.at(lease.end, () => {
      lease.timers.delete(timer);
      if (watchdog === timer) watchdog = null;
      if (lease.closed || lease.signal.aborted) return;
      // A clock driven by hand (the `clock` option) may lag real time: look again later.
      if (timers.now() < lease.end) watch();
      else events.lost({ code: 'expired', until: lease.end }, 'the lease ended before a renew got through');
    });
    watchdog = timer;
    lease.timers.add(timer);
  };
  let failedRenews = 0;
  const tick = () =>
    lease.track(
      (async () => {
        const now = timers.now();
        if (now >= lease.end) {
          events.lost({ code: 'expired', until: lease.end }, 'the lease ended before it could be renewed (the process was paused or the event loop blocked)');
          return;
        }
        let answer;
        try {
          answer = await store.withReason.renew(lease.job, owner, lease.fence, now, ttl);
        } catch (error) {
          if (!isStorageError(error)) {
            events.lost(null, `the renew failed: ${error.message}`);
            return;
          }
          // A busy database: try again soon, within the lease; the watchdog signals the
          // handler if the lease ends first.
          events.error(error);
          failedRenews += 1;
          at(timers.now() + (await rules.renewRetryDelay(failedRenews, every)), tick);
          return;
        }
        if (lease.signal.aborted) return;
        if (answer.value) {
          events.renewed(now + ttl);
          failedRenews = 0;
          watch();
          at(await rules.nextRenewAt(now, every), tick);
        } else {
          events.lost(answer.reason, `the store refused the renew (${answer.reason?.code ?? 'no reason'})`);
        }
      })(),
    );
  watch();
  Promise.resolve(rules.nextRenewAt(claimedAt, every)).then((time) => at(time, tick));
}

/**
 * Renewing elsewhere (Node: a worker thread with its own connection, node/heartbeat-thread.cjs).
 * The source tells `renewed(end)` and `lost(reason, message)` as its messages arrive; `stop()`
 * resolves after every message it sent before, so after `quiet()` the lease end and the signal
 * are what the source last saw. No watchdog here: while this thread is blocked its timers and
 * the source's messages wait alike, and a timer could fire before the renewals queued with it.
 */
function keepOnSource(lease, source, { owner, ttl, every, events }) {
  const beat = source.start({ job: lease.job, owner, fence: lease.fence, end: lease.end, ttl, every }, events);
  let stopping = null;
  lease.stopSource = () => (stopping ??= Promise.resolve(beat.stop()));
}

export { keepOnLoop, keepOnSource };

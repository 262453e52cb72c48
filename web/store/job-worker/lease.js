// The lease a worker holds while its handler runs: the handler's AbortSignal, the timers of the
// lease (heartbeat, watchdog, grace, abandon: handles with `cancel()`, from ./timers.js), and the
// renewals in flight.

/** A held lease on `job` at `fence`, ending at `end` (seconds) until a renew moves it. */
function newLease(job, fence, end) {
  const controller = new AbortController();
  const timers = new Set();
  let inflight = Promise.resolve();
  const lease = {
    job,
    fence,
    end,
    timers,
    closed: false,
    signal: controller.signal,
    abort: (reason) => {
      if (!controller.signal.aborted) controller.abort(reason);
    },
    /** Counts `promise` (a renew) as in flight; `quiet()` waits for it. */
    track(promise) {
      inflight = inflight.then(() => promise);
      return promise;
    },
    /** Stops renewing; resolves once no renew is in flight (or the heartbeat source stopped). */
    quiet() {
      lease.closed = true;
      for (const timer of timers) timer.cancel();
      return inflight.then(() => lease.stopSource?.());
    },
    close() {
      lease.closed = true;
      for (const timer of timers) timer.cancel();
      timers.clear();
      lease.stopSource?.();
    },
  };
  return lease;
}

export { newLease };

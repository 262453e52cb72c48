// Timers in seconds, for every wait of the runtime, on the worker's clock: a clock that follows
// real time waits with setTimeout; a clock moved by hand (an object with `now()` and `at(time, f)`,
// such as ManualClock) runs each wait when it is moved past the wait's end.

/** setTimeout in seconds, capped where timers overflow (2^31 - 1 ms: they would fire at once). */
const later = (f, seconds) => setTimeout(f, Math.min(0x7fffffff, Math.max(0, seconds) * 1000));

/**
 * The waits of a worker on `clock` (a function answering seconds, or a clock with `now()` and
 * `at(time, f)`): `now()`, `after(seconds, f)` and `at(time, f)` answer a handle whose `cancel()`
 * drops the wait; `sleep(seconds)` is a Promise.
 */
function timersFor(clock) {
  if (typeof clock === 'function') {
    const now = clock;
    const after = (seconds, f) => {
      const id = later(f, seconds);
      return { cancel: () => clearTimeout(id) };
    };
    return { now, after, at: (time, f) => after(time - now(), f), sleep: (s) => new Promise((r) => after(s, r)) };
  }
  const now = () => clock.now();
  const at = (time, f) => {
    const cancel = clock.at(time, f);
    return { cancel: typeof cancel === 'function' ? cancel : () => {} };
  };
  const after = (seconds, f) => at(now() + Math.max(0, seconds), f);
  return { now, after, at, sleep: (s) => new Promise((r) => after(s, r)) };
}

/**
 * A clock moved by hand, for running a worker on simulated time (deterministic tests of handlers,
 * replaying a timeline): `new JobWorker(store, {clock: new ManualClock(1000), ...})` reads its
 * time from it, and its waits (the next renew, the lease's end, retries, the idle poll, a stop's
 * grace) run when the clock is moved past their end, in the order of their times.
 *
 *   const clock = new ManualClock(1000);
 *   clock.advance(10); // a renew due at 1010 runs now (after the current code, as a timer would)
 */
class ManualClock {
  #now;
  #waits = [];

  constructor(start = 0) {
    if (typeof start !== 'number' || !Number.isFinite(start)) throw new TypeError('ManualClock: `start` must be a finite number of seconds');
    this.#now = start;
  }

  /** The time it shows, in seconds. */
  now() {
    return this.#now;
  }

  /** Moves it to `seconds` (also backwards); the waits that are then due run, earliest first. */
  set(seconds) {
    if (typeof seconds !== 'number' || !Number.isFinite(seconds)) throw new TypeError('ManualClock.set(): `seconds` must be a finite number');
    this.#now = seconds;
    const due = this.#waits.filter((w) => w.time <= seconds).sort((a, b) => a.time - b.time);
    this.#waits = this.#waits.filter((w) => w.time > seconds);
    for (const wait of due) setTimeout(() => wait.cancelled || wait.f(), 0);
  }

  /** Moves it on by `seconds`. */
  advance(seconds) {
    this.set(this.#now + seconds);
  }

  /** Runs `f` once the clock shows `time` or later (at once, as a timer, if it does already); answers a function that cancels it. */
  at(time, f) {
    const wait = { time, f, cancelled: false };
    if (time <= this.#now) setTimeout(() => wait.cancelled || f(), 0);
    else this.#waits.push(wait);
    return () => {
      wait.cancelled = true;
      this.#waits = this.#waits.filter((w) => w !== wait);
    };
  }
}

export { later, timersFor, ManualClock };

// The worker runtime of leasefence (docs/contract.md section 9), shared by Node (the job-worker.cjs
// that scripts/package.sh derives from this file) and the browser (served as is): a loop over
// claimNext that renews the lease while a handler runs, tells the handler through an AbortSignal
// the moment the lease is lost, completes on success, fails with backoff, and makes a job dead at
// its maximum number of attempts.
//
// It works over any LeaseStoreCore: the Node store answers synchronously, the browser store with
// Promises; every store call here is awaited, which serves both.
//
// Where the heartbeat runs: on the handler's own thread (the event loop), on purpose. A handler
// that blocks the loop (CPU-bound, or hung in synchronous code) starves the heartbeat and loses
// its lease; when the loop runs again the handler is signalled at once and its result discarded.
// Renewing from another thread would keep a busy handler's lease, but it would also keep a hung
// handler's lease for ever, and the job with it. With fencing a lost lease costs duplicate work,
// never a corrupted result, so losing it is the safe default.
//
// Node offers the other side as an option (`heartbeat: 'thread'`, node/heartbeat-thread.cjs): it
// plugs in here as a heartbeat source, `{start(lease, events), close()}` (see #threadHeartbeat).
//
// This file is plain ES module code with one import line (LeaseError, from the core) and one
// `export { ... }` line at the end, which package.sh turns into `require` and `module.exports`;
// keep it that way.
import { LeaseError } from './core.js';

function invalidArgument(message) {
  return new LeaseError(message, { code: 'invalid_argument', retryable: false });
}

/**
 * What `signal.reason` holds when a handler is told to stop: `code` is `lease_lost` (the store
 * refused a renew, or the lease ended before it could be renewed; `reason` is the store's reason,
 * e.g. `{code: 'stale_fence', fence}` or `{code: 'expired', until}`) or `stopped` (`worker.stop()`).
 */
class LeaseLostError extends LeaseError {
  constructor(code, message, reason = null) {
    super(message, { code, retryable: false });
    this.name = 'LeaseLostError';
    this.reason = reason;
  }
}

/** A backoff of the same `seconds` before every retry. */
function fixedBackoff(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw invalidArgument('fixedBackoff(): `seconds` must be a finite number >= 0');
  }
  return () => seconds;
}

/**
 * `initial * factor^(attempt - 1)` seconds, capped at `max`, then shortened by a random part of
 * up to `jitter` of it (0: exact; 0.5, the default: between half and all of it), so that workers
 * failing together do not retry together.
 */
function exponentialBackoff({ initial = 1, factor = 2, max = 300, jitter = 0.5, random = Math.random } = {}) {
  for (const [name, value] of Object.entries({ initial, factor, max })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw invalidArgument(`exponentialBackoff(): \`${name}\` must be a finite number >= 0`);
    }
  }
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw invalidArgument('exponentialBackoff(): `jitter` must be a number from 0 to 1');
  }
  if (typeof random !== 'function') throw invalidArgument('exponentialBackoff(): `random` must be a function');
  return (attempt) => {
    const delay = Math.min(max, initial * factor ** Math.max(0, attempt - 1));
    return delay * (1 - jitter * random());
  };
}

const isStorageError = (error) => error !== null && typeof error === 'object' && error.code === 'storage';

/** A result for the store: a string as is, undefined or null as no result, anything else as JSON. */
function resultText(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  const text = JSON.stringify(value);
  if (typeof text !== 'string') throw new TypeError(`the handler returned ${typeof value}, which has no JSON form`);
  return text;
}

/**
 * What a handler returns to have its own writes commit in the same transaction as the job's
 * completion, or not at all (contract section 8): the runtime calls `fenced(..., {complete: true,
 * result})` instead of `complete`. A stale worker's statements are refused with its completion; a
 * statement that fails (a broken constraint, a write to the library's tables) fails the job, with
 * nothing of it applied. Make one with `fencedResult`.
 */
class FencedResult {
  constructor(statements, result) {
    this.statements = statements;
    this.result = result;
    Object.freeze(this);
  }
}

/**
 * Statements on your own tables (`[{sql, params}]`, bound parameters) to commit with the
 * completion, and the job's result (as a handler's return value: a string, JSON, or none).
 *
 *   await worker.run(async (job, { payload }) => {
 *     const total = await sum(payload);
 *     return fencedResult([{ sql: 'INSERT INTO totals(job, total) VALUES (?, ?)', params: [job, total] }], String(total));
 *   });
 */
function fencedResult(statements, result = null) {
  if (!Array.isArray(statements)) {
    throw invalidArgument('fencedResult(): `statements` must be a list of {sql, params}');
  }
  statements.forEach((statement, i) => {
    if (statement === null || typeof statement !== 'object' || typeof statement.sql !== 'string') {
      throw invalidArgument(`fencedResult(): statement ${i} must be {sql: string, params?: [...]}`);
    }
    if (statement.params !== undefined && !Array.isArray(statement.params)) {
      throw invalidArgument(`fencedResult(): the params of statement ${i} must be a list`);
    }
  });
  return new FencedResult(statements.map((st) => ({ ...st })), result);
}

/** The text recorded by `fail` for what a handler threw. */
function errorText(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

function positive(name, value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`JobWorker: \`${name}\` must be a finite number of seconds > 0`);
  }
  return value;
}

/** setTimeout in seconds, capped where timers overflow (2^31 - 1 ms: they would fire at once). */
const later = (f, seconds) => setTimeout(f, Math.min(0x7fffffff, Math.max(0, seconds) * 1000));
const sleep = (seconds) => new Promise((resolve) => later(resolve, seconds));

/**
 * Runs a handler on every job it claims from `store`, one job at a time (start several workers,
 * each with its own owner, for more).
 *
 *   const worker = new JobWorker(store, { owner: 'worker-1', ttl: 30 });
 *   await worker.run(async (job, { signal, payload }) => work(payload, signal));
 */
class JobWorker {
  #store;
  #owner;
  #ttl;
  #heartbeatEvery;
  #maxAttempts;
  #backoff;
  #clock;
  #idle;
  #abandonAfter;
  #onError;
  #heartbeatSource; // null: renew on the event loop; else the source that renews elsewhere
  #counts = {
    claimed: 0,
    completed: 0,
    failed: 0,
    dead: 0,
    leasesLost: 0,
    staleWritesRefused: 0,
    renewals: 0,
  };
  #running = false;
  #stopping = false;
  #wake = null; // ends the idle wait early, on stop
  #lease = null; // the lease held now, if any
  #stopped = null; // {promise, resolve}: settles when run() returns

  constructor(store, options = {}) {
    if (store === null || typeof store !== 'object' || typeof store.claimNext !== 'function' || !store.withReason) {
      throw invalidArgument('JobWorker: `store` must be a LeaseStore');
    }
    if (options === null || typeof options !== 'object') throw invalidArgument('JobWorker: `options` must be an object');
    const {
      owner = `job-worker-${Math.random().toString(36).slice(2, 10)}`,
      ttl,
      heartbeatEvery,
      maxAttempts = 5,
      backoff = exponentialBackoff(),
      clock = () => Date.now() / 1000,
      idle = 1,
      abandonAfter,
      onError = () => {},
      heartbeat = 'loop',
    } = options;
    if (typeof owner !== 'string' || owner === '') throw invalidArgument('JobWorker: `owner` must be a non-empty string');
    this.#store = store;
    this.#owner = owner;
    this.#ttl = positive('ttl', ttl);
    this.#heartbeatEvery = positive('heartbeatEvery', heartbeatEvery ?? ttl / 3);
    if (this.#heartbeatEvery >= this.#ttl) {
      throw invalidArgument('JobWorker: `heartbeatEvery` must be shorter than `ttl`, or the lease ends between renewals');
    }
    if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
      throw invalidArgument('JobWorker: `maxAttempts` must be an integer >= 1 (or Infinity)');
    }
    this.#maxAttempts = maxAttempts;
    if (typeof backoff === 'number') this.#backoff = fixedBackoff(backoff);
    else if (typeof backoff === 'function') this.#backoff = backoff;
    else throw invalidArgument('JobWorker: `backoff` must be seconds (a number) or a function (attempt, error) => seconds');
    if (typeof clock !== 'function' || !Number.isFinite(clock())) {
      throw invalidArgument('JobWorker: `clock` must be a function answering the time in seconds');
    }
    this.#clock = clock;
    this.#idle = positive('idle', idle);
    this.#abandonAfter = positive('abandonAfter', abandonAfter ?? ttl);
    if (typeof onError !== 'function') throw invalidArgument('JobWorker: `onError` must be a function');
    this.#onError = onError;
    if (heartbeat === 'loop') this.#heartbeatSource = null;
    else if (heartbeat !== null && typeof heartbeat === 'object' && typeof heartbeat.start === 'function') this.#heartbeatSource = heartbeat;
    else if (heartbeat === 'thread') throw invalidArgument("JobWorker: `heartbeat: 'thread'` is offered by the Node package only");
    else throw invalidArgument("JobWorker: `heartbeat` must be 'loop' or (in Node) 'thread'");
  }

  /** The owner name this worker claims as. */
  get owner() {
    return this.#owner;
  }

  /** A copy of the counters: claimed, completed, failed, dead, leasesLost, staleWritesRefused, renewals. */
  get stats() {
    return { ...this.#counts };
  }

  /**
   * Claims and handles jobs until `stop()`, or until nothing is claimable (`untilEmpty`), or until
   * no job is queued, scheduled or leased by anyone (`untilDrained`: waits out retries). Resolves
   * to the counters. Storage errors while claiming are reported to `onError` and retried.
   */
  async run(handler, { untilEmpty = false, untilDrained = false } = {}) {
    if (typeof handler !== 'function') throw invalidArgument('JobWorker.run(): `handler` must be a function');
    if (this.#running) throw invalidArgument('JobWorker.run(): this worker is already running');
    this.#running = true;
    this.#stopping = false;
    let resolveStopped;
    this.#stopped = { promise: new Promise((resolve) => (resolveStopped = resolve)) };
    try {
      await this.#heartbeatSource?.open?.();
      while (!this.#stopping) {
        let claimed;
        // The lease ends at claimedAt + ttl in the store: reckon from the `now` the claim carried.
        const claimedAt = this.#clock();
        try {
          claimed = await this.#store.claimNext(this.#owner, claimedAt, this.#ttl);
        } catch (error) {
          if (!isStorageError(error)) throw error;
          this.#onError(error, { op: 'claimNext' });
          await this.#idleWait();
          continue;
        }
        if (!claimed) {
          if (untilEmpty) break;
          if (untilDrained && (await this.#drained())) break;
          await this.#idleWait();
          continue;
        }
        this.#counts.claimed += 1;
        if (this.#stopping) {
          // stop() came while the claim was on its way: hand the job straight back.
          try {
            await this.#store.release(claimed.job, this.#owner, claimed.fence);
          } catch (error) {
            if (!isStorageError(error)) throw error;
            this.#onError(error, { op: 'release', job: claimed.job }); // its lease runs out by itself
          }
          break;
        }
        await this.#handle(claimed, claimedAt, handler);
      }
    } finally {
      this.#running = false;
      await this.#heartbeatSource?.close?.();
      resolveStopped();
    }
    return this.stats;
  }

  /**
   * Stops gracefully: claims nothing more; the job being handled gets `grace` seconds (default 0)
   * to finish and complete, then its handler is signalled (`signal.reason.code === 'stopped'`) and
   * its lease released, the fence kept, for another worker to claim at once. Resolves when run()
   * has returned.
   */
  stop({ grace = 0 } = {}) {
    if (typeof grace !== 'number' || !(grace >= 0)) throw invalidArgument('JobWorker.stop(): `grace` must be seconds >= 0');
    this.#stopping = true;
    this.#wake?.();
    const lease = this.#lease;
    if (lease) {
      const halt = () => lease.abort(new LeaseLostError('stopped', 'the worker is stopping'));
      if (grace > 0) lease.timers.add(later(halt, grace));
      else halt();
    }
    return this.#stopped ? this.#stopped.promise : Promise.resolve();
  }

  async #idleWait() {
    if (this.#stopping) return;
    await new Promise((resolve) => {
      const timer = later(resolve, this.#idle);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = null;
  }

  async #drained() {
    const counts = await this.#store.stats(this.#clock());
    return counts.queued + counts.scheduled + counts.leased === 0;
  }

  /**
   * Whether a claim past maxAttempts may still run (the rule of the Rust runtime too, so workers
   * of both on one file agree): only when its previous attempt recorded a failure, i.e. the job
   * was revived after that failure made it dead. Otherwise its holders lost their leases or
   * crashed (a poison job kills its worker) and it is made dead at once. null: the store kept
   * failing until the lease ended.
   */
  async #mayRunPastMax(lease) {
    const answer = await this.#withinLease(lease, 'inspect', () => [lease.job]);
    if (answer === null) return null;
    return (answer.value?.failures ?? []).some((failure) => failure.fence === lease.fence - 1);
  }

  async #handle({ job, fence, payload }, claimedAt, handler) {
    const lease = this.#newLease(job, fence, claimedAt + this.#ttl);
    this.#lease = lease;
    try {
      const attempt = fence; // every claim is one attempt (contract section 7)
      const mayRun = attempt <= this.#maxAttempts || (await this.#mayRunPastMax(lease));
      if (mayRun === null) {
        this.#lose(lease, { code: 'expired', until: lease.end }, 'could not read its failures before the lease ended: the store kept failing');
        return;
      }
      if (!mayRun) {
        const why = `attempt ${attempt} of at most ${this.#maxAttempts}: earlier holders lost their leases without completing or failing the job (killed, paused, or blocked past the lease)`;
        await this.#finish(lease, 'fail', (now) => [job, this.#owner, fence, now, null, why], 'dead');
        return;
      }
      if (this.#heartbeatSource) this.#threadHeartbeat(lease);
      else this.#heartbeat(lease);
      const outcome = await this.#runHandler(lease, handler, { job, fence, payload, attempt });
      await lease.quiet();
      if (lease.signal.aborted) {
        if (lease.signal.reason?.code === 'stopped') {
          await this.#finish(lease, 'release', () => [job, this.#owner, fence], null);
        }
        return; // the lease is gone or given up: the result is discarded, never written
      }
      if (this.#clock() >= lease.end) {
        // The loop was blocked (or the process paused) past the lease end, and no timer has run
        // since: the lease ended, whatever the handler made of it.
        this.#lose(lease, { code: 'expired', until: lease.end }, 'the lease ended while the handler blocked the event loop');
        return;
      }
      if (outcome.ok) {
        const fenced = outcome.value instanceof FencedResult ? outcome.value : null;
        let text;
        try {
          text = resultText(fenced ? fenced.result : outcome.value);
        } catch (error) {
          await this.#failed(lease, attempt, error);
          return;
        }
        if (!fenced) {
          await this.#finish(lease, 'complete', (now) => [job, this.#owner, fence, now, text], 'completed');
          return;
        }
        try {
          await this.#finish(lease, 'fenced', (now) => [job, this.#owner, fence, now, fenced.statements, { complete: true, result: text }], 'completed', { retryOnlyRetryable: true });
        } catch (error) {
          // The store rolled the statements back: a statement that failed (a broken constraint:
          // the store names it in `statement`) or was refused (`invalid_argument`) is the
          // handler's failure, retried with backoff like a throw; any other error is the store's.
          if (error === null || typeof error !== 'object' || (typeof error.statement !== 'number' && error.code !== 'invalid_argument')) throw error;
          await this.#failed(lease, attempt, error);
        }
      } else {
        await this.#failed(lease, attempt, outcome.error);
      }
    } finally {
      lease.close();
      if (this.#lease === lease) this.#lease = null;
    }
  }

  async #failed(lease, attempt, error) {
    const text = errorText(error);
    if (attempt >= this.#maxAttempts) {
      await this.#finish(lease, 'fail', (now) => [lease.job, this.#owner, lease.fence, now, null, text], 'dead');
      return;
    }
    let delay = Number(this.#backoff(attempt, error));
    if (!Number.isFinite(delay) || delay < 0) delay = 0;
    await this.#finish(lease, 'fail', (now) => [lease.job, this.#owner, lease.fence, now, now + delay, text], 'failed');
  }

  /** Runs the handler; after the lease is lost, waits at most `abandonAfter` for it to settle. */
  async #runHandler(lease, handler, { job, fence, payload, attempt }) {
    const settled = new Promise((resolve) => resolve(handler(job, { signal: lease.signal, payload, fence, attempt }))).then(
      (value) => ({ ok: true, value }),
      (error) => ({ ok: false, error }),
    );
    const abandoned = new Promise((resolve) => {
      const onAbort = () => lease.timers.add(later(() => resolve({ ok: false, abandoned: true }), this.#abandonAfter));
      if (lease.signal.aborted) onAbort();
      else lease.signal.addEventListener('abort', onAbort, { once: true });
      settled.then(() => lease.signal.removeEventListener('abort', onAbort));
    });
    return Promise.race([settled, abandoned]);
  }

  /**
   * One write that ends the lease (complete, fail, release), retried on storage errors (a busy
   * database) while the lease lasts. A refusal counts as a stale write and a lost lease.
   */
  async #finish(lease, op, args, counter, retry) {
    const answer = await this.#withinLease(lease, op, args, retry);
    if (answer === null) {
      this.#lose(lease, { code: 'expired', until: lease.end }, `could not ${op} before the lease ended: the store kept failing`);
    } else if (answer.value) {
      if (counter) this.#counts[counter] += 1;
    } else {
      this.#counts.staleWritesRefused += 1;
      this.#lose(lease, answer.reason, `the store refused ${op}: the lease was lost`);
    }
  }

  /**
   * `withReason[op]` with a fresh `now`; storage errors retried until the lease ends (then null).
   * With `retryOnlyRetryable`, a storage error the store marks as not retryable (a fenced
   * statement that broke a constraint) is thrown instead: the same call would fail again.
   */
  async #withinLease(lease, op, args, { retryOnlyRetryable = false } = {}) {
    for (let delay = 0.01; ; delay = Math.min(delay * 2, 0.5)) {
      try {
        return await this.#store.withReason[op](...args(this.#clock()));
      } catch (error) {
        if (!isStorageError(error) || (retryOnlyRetryable && error.retryable !== true)) throw error;
        this.#onError(error, { op, job: lease.job });
        const left = lease.end - this.#clock();
        if (left <= 0) return null;
        await sleep(Math.min(delay, left / 2));
      }
    }
  }

  /** Signals the handler that its lease is gone (once) and counts it. */
  #lose(lease, reason, message) {
    if (lease.signal.aborted) return;
    this.#counts.leasesLost += 1;
    lease.abort(new LeaseLostError('lease_lost', `${lease.job} (fence ${lease.fence}): ${message}`, reason));
  }

  #newLease(job, fence, end) {
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
      /** Runs `tick` unless another renew is still in flight; `quiet()` waits for them. */
      track(promise) {
        inflight = inflight.then(() => promise);
        return promise;
      },
      /** Stops renewing; resolves once no renew is in flight (or the heartbeat source stopped). */
      quiet() {
        lease.closed = true;
        for (const timer of timers) clearTimeout(timer);
        return inflight.then(() => lease.stopSource?.());
      },
      close() {
        lease.closed = true;
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        lease.stopSource?.();
      },
    };
    return lease;
  }

  /**
   * Renewing elsewhere (Node: a worker thread with its own connection, node/heartbeat-thread.cjs).
   * The source tells `renewed(end)` and `lost(reason, message)` as its messages arrive; `stop()`
   * resolves after every message it sent before, so after `quiet()` the lease end and the signal
   * are what the source last saw. No watchdog here: while this thread is blocked its timers and
   * the source's messages wait alike, and a timer could fire before the renewals queued with it.
   */
  #threadHeartbeat(lease) {
    const beat = this.#heartbeatSource.start(
      { job: lease.job, owner: this.#owner, fence: lease.fence, end: lease.end, ttl: this.#ttl, every: this.#heartbeatEvery },
      {
        renewed: (end) => {
          this.#counts.renewals += 1;
          lease.end = end;
        },
        lost: (reason, message) => this.#lose(lease, reason, message),
        error: (error) => this.#onError(error, { op: 'renew', job: lease.job }),
      },
    );
    let stopping = null;
    lease.stopSource = () => (stopping ??= Promise.resolve(beat.stop()));
  }

  /**
   * Renews every heartbeatEvery; a refused renew, or a lease end reached without one (a busy
   * store, a paused process, a blocked loop), signals the handler at once.
   */
  #heartbeat(lease) {
    const at = (seconds, f) => {
      if (lease.closed) return;
      const timer = later(() => {
        lease.timers.delete(timer);
        if (!lease.closed && !lease.signal.aborted) f();
      }, seconds);
      lease.timers.add(timer);
    };
    let watchdog = null;
    const watch = () => {
      if (watchdog) {
        clearTimeout(watchdog);
        lease.timers.delete(watchdog);
      }
      watchdog = later(() => {
        lease.timers.delete(watchdog);
        watchdog = null;
        if (lease.closed || lease.signal.aborted) return;
        // A clock driven by hand (the `clock` option) may lag real time: look again later.
        if (this.#clock() < lease.end) watch();
        else this.#lose(lease, { code: 'expired', until: lease.end }, 'the lease ended before a renew got through');
      }, lease.end - this.#clock());
      lease.timers.add(watchdog);
    };
    let retryDelay = 0.01;
    const tick = () =>
      lease.track(
        (async () => {
          const now = this.#clock();
          if (now >= lease.end) {
            this.#lose(lease, { code: 'expired', until: lease.end }, 'the lease ended before it could be renewed (the process was paused or the event loop blocked)');
            return;
          }
          let answer;
          try {
            answer = await this.#store.withReason.renew(lease.job, this.#owner, lease.fence, now, this.#ttl);
          } catch (error) {
            if (!isStorageError(error)) {
              this.#lose(lease, null, `the renew failed: ${error.message}`);
              return;
            }
            // A busy database: try again soon, within the lease; the watchdog signals the
            // handler if the lease ends first.
            this.#onError(error, { op: 'renew', job: lease.job });
            at(Math.max(0.005, Math.min(retryDelay, (lease.end - this.#clock()) / 2)), tick);
            retryDelay = Math.min(retryDelay * 2, this.#heartbeatEvery);
            return;
          }
          if (lease.signal.aborted) return;
          if (answer.value) {
            this.#counts.renewals += 1;
            lease.end = now + this.#ttl;
            retryDelay = 0.01;
            watch();
            at(this.#heartbeatEvery, tick);
          } else {
            this.#lose(lease, answer.reason, `the store refused the renew (${answer.reason?.code ?? 'no reason'})`);
          }
        })(),
      );
    watch();
    at(this.#heartbeatEvery, tick);
  }
}

export { JobWorker, LeaseError, LeaseLostError, fixedBackoff, exponentialBackoff, fencedResult };

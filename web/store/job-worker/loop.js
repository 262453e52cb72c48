// The worker loop (docs/contract.md sections 9 and 10): claims jobs, keeps each lease while its
// handler runs (./heartbeat.js), then completes, fails with backoff, or makes the job dead at its
// maximum number of attempts (./attempt.js). Every store call is awaited, which serves the Node
// store (synchronous answers) and the browser store (Promises) alike. With `concurrency` n > 1, up
// to n handlers run at once and every store call goes through `store.grouped`: the claims that
// fill the free slots, the renews due in the same tick, and the completions and failures that
// finish together share transactions, and a completion counts only once it committed. A claim
// made while jobs run goes beside them (the loop does not wait for its answer, its slots stay
// reserved), and a slot frees when its handler returns, so the claim for it joins the
// transaction of that handler's completion.
import { previousAttemptFailed } from './attempt.js';
import { backoffDelay } from './backoff.js';
import { LeaseLostError, errorText, invalidArgument, isStorageError } from './errors.js';
import { FencedResult, isStatementError, resultText } from './fenced-result.js';
import { keepOnLoop, keepOnSource } from './heartbeat.js';
import { newLease } from './lease.js';
import { workerOptions } from './options.js';
import { timersFor } from './timers.js';

/** What `JobWorker.on` can listen to. */
const WORKER_EVENTS = Object.freeze(['completed', 'failed', 'dead', 'released', 'lost']);

/**
 * Runs a handler on every job it claims from `store`, up to `concurrency` (default 1) at once, each
 * with its own lease and signal, all under the worker's one owner.
 *
 *   const worker = new JobWorker(store, { owner: 'worker-1', ttl: 30, concurrency: 16 });
 *   await worker.run(async (job, { signal, payload }) => work(payload, signal));
 */
class JobWorker {
  #store;
  #dueAt = -Infinity; // the clock at the last enqueueDue
  #retention; // {done, dead} seconds, or null (docs/contract.md section 13)
  #pruneAt = -Infinity; // when retention prunes next, on the worker's clock
  #ops; // where the writes go: the store itself, or store.grouped (concurrency > 1, or off the event loop)
  #concurrency;
  #queues; // the queues served (section 11), or null: every queue
  #owner;
  #ttl;
  #heartbeatEvery;
  #maxAttempts;
  #backoff;
  #clock;
  #timers; // every wait, on the worker's clock (./timers.js)
  #rules; // the crate's worker rules, through the store (crate/src/rules/worker.rs)
  #idle;
  #abandonAfter;
  #onError;
  #heartbeatSource; // null: renew on the event loop; else the source that renews elsewhere
  #registration; // null: the worker does not record itself; else {host, pid}
  #startedAt = 0; // the clock when run() began (the registry's `started`)
  #beatAt = -Infinity; // the clock at the last registry beat sent
  #beatTimer = null; // the registry's idle beat (a renew interval after the last beat)
  #counts = {
    claimed: 0,
    completed: 0,
    failed: 0,
    dead: 0,
    leasesLost: 0,
    staleWritesRefused: 0,
    renewals: 0,
  };
  #listeners = new Map(); // event name -> Set of listeners (on / off)
  #running = false;
  #stopping = false;
  #wake = null; // ends the idle wait early, on stop or when a slot frees
  #waking; // whether to watch the store for new work (docs/contract.md section 11, waking)
  #woken = false; // the store's watch saw a change since the last claim
  #wakeable = false; // the current idle wait is one a change ends (nothing was claimable)
  #leases = new Set(); // the leases held now
  #inFlight = new Set(); // the jobs being handled, their outcomes written (concurrency > 1)
  #claiming = 0; // the slots that claims on their way will fill (concurrency > 1)
  #handling = 0; // the slots held: handlers not yet returned, outcomes waiting to be retried (concurrency > 1)
  #slots = new WeakMap(); // lease -> its job's slot (concurrency > 1)
  #claims = new Set(); // those claims, each settled once its jobs are handed out
  #claimAt = -Infinity; // after a claim beside running jobs found too few: claim again when a job ends, or then
  #crash = null; // the first unexpected error of a job handled in the background
  #stopped = null; // {promise, resolve}: settles when run() returns

  constructor(store, options = {}) {
    if (store === null || typeof store !== 'object' || typeof store.claimNext !== 'function' || !store.withReason) {
      throw invalidArgument('JobWorker: `store` must be a LeaseStore');
    }
    if (store.workerRules === null || typeof store.workerRules !== 'object') {
      throw invalidArgument('JobWorker: `store` must be a LeaseStore (its `workerRules` decide backoff, attempts and renew times)');
    }
    const checked = workerOptions(options);
    if (checked.concurrency > 1 && (store.grouped === null || typeof store.grouped !== 'object')) {
      throw invalidArgument('JobWorker: `concurrency` above 1 needs a LeaseStore with `grouped` (group commit)');
    }
    this.#store = store;
    this.#concurrency = checked.concurrency;
    this.#queues = checked.queues;
    // The grouped calls answer Promises; on Node's native engine they run on libuv's thread pool,
    // so the event loop never waits for a lock or a sync, at any concurrency: every write of the
    // loop (claims, schedules, retention, lease writes) goes there. Reads (stats, nextDue) stay on
    // the store: a WAL reader waits for no writer.
    const offThread = store.engine === 'native' && store.grouped !== null && typeof store.grouped === 'object';
    this.#ops = checked.concurrency > 1 || offThread ? store.grouped : store;
    this.#owner = checked.owner;
    this.#ttl = checked.ttl;
    this.#heartbeatEvery = checked.heartbeatEvery;
    this.#maxAttempts = checked.maxAttempts;
    this.#backoff = checked.backoff;
    this.#timers = timersFor(checked.clock);
    this.#clock = this.#timers.now;
    this.#rules = store.workerRules;
    this.#idle = checked.idle;
    this.#retention = checked.retention;
    this.#abandonAfter = checked.abandonAfter;
    this.#onError = checked.onError;
    this.#heartbeatSource = checked.heartbeatSource;
    this.#waking = checked.wake;
    this.#registration = checked.register ? { host: checked.host, pid: checked.pid } : null;
  }

  /** The owner name this worker claims as. */
  get owner() {
    return this.#owner;
  }

  /**
   * Calls `listener(detail)` each time `event` happens to a job, once it is durable: the write
   * that made it so has committed (as BullMQ's `completed` and `failed`, and unlike the handler's
   * own promise, which settles before its completion is written). Events, each with `job` and
   * `fence`: `completed` (`attempt`, `result`: the text stored), `failed` (`attempt`, `error`,
   * `retryAt`: when it may run again), `dead` (`attempt`, `error`), `released` (given back by
   * `stop()`), `lost` (`reason`, `message`: the lease ended or was taken over; nothing of the
   * attempt was written). A listener that throws or rejects goes to `onError` (op `event`) and the
   * worker goes on. Returns the worker, so calls chain.
   *
   *   worker.on('completed', ({ job, result }) => log(`${job} done: ${result}`))
   *         .on('dead', ({ job, error }) => alert(job, error));
   */
  on(event, listener) {
    if (!WORKER_EVENTS.includes(event)) {
      throw invalidArgument(`JobWorker.on(): \`${String(event)}\` is no event; the events are ${WORKER_EVENTS.join(', ')}`);
    }
    if (typeof listener !== 'function') throw invalidArgument('JobWorker.on(): `listener` must be a function');
    if (!this.#listeners.has(event)) this.#listeners.set(event, new Set());
    this.#listeners.get(event).add(listener);
    return this;
  }

  /** Removes a listener `on` added (nothing when it is not there). Returns the worker. */
  off(event, listener) {
    this.#listeners.get(event)?.delete(listener);
    return this;
  }

  /** Tells the listeners of `event`; a listener's failure is reported, never thrown into the loop. */
  #emit(event, detail) {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) {
      const report = (error) => this.#onError(error, { op: 'event', event, job: detail.job });
      try {
        const returned = listener(detail);
        if (returned && typeof returned.then === 'function') returned.then(undefined, report);
      } catch (error) {
        report(error);
      }
    }
  }

  /** A copy of the counters: claimed, completed, failed, dead, leasesLost, staleWritesRefused, renewals. */
  get stats() {
    return { ...this.#counts };
  }

  /**
   * Claims and handles jobs until `stop()`, or until nothing is claimable (`untilEmpty`), or until
   * no job is queued, scheduled or leased by anyone in the queues it serves (`untilDrained`: waits out retries). Resolves
   * to the counters. Storage errors while claiming are reported to `onError` and retried.
   */
  async run(handler, { untilEmpty = false, untilDrained = false } = {}) {
    if (typeof handler !== 'function') throw invalidArgument('JobWorker.run(): `handler` must be a function');
    if (this.#running) throw invalidArgument('JobWorker.run(): this worker is already running');
    this.#running = true;
    let resolveStopped;
    this.#stopped = { promise: new Promise((resolve) => (resolveStopped = resolve)) };
    let watch = null;
    try {
      await this.#heartbeatSource?.open?.();
      this.#startedAt = this.#clock();
      this.#beatAt = -Infinity;
      await this.#beatAlone();
      watch = this.#watchStore(untilEmpty);
      while (!this.#stopping) {
        // A slot frees when its handler returns, not when its outcome is written: the claim for
        // it then shares the group (one transaction) that writes the outcome, as Rust's
        // coordinator writes a round's completions with its refill claim.
        const free = this.#freeSlots;
        // Jobs run, or claims are on their way: a claim goes beside them, without waiting (below).
        const busy = this.#inFlight.size + this.#claiming > 0;
        if (free <= 0 || (busy && this.#clock() < this.#claimAt)) {
          this.#woken = false; // the claim after a slot frees sees it all
          // Until a job finishes or a claim answers, or stop(); after a short claim, the poll.
          await this.#idleWait(free <= 0 ? Infinity : this.#claimAt - this.#clock());
          continue;
        }
        let claims;
        // The due schedule slots first, in their own transaction: the claim's clock is read after
        // it, so the lease (and its first renew) is reckoned from the claim itself.
        await this.#pruneDue(this.#clock());
        await this.#enqueueDue(this.#clock());
        // The lease ends at claimedAt + ttl in the store: reckon from the `now` the claim carried.
        const claimedAt = this.#clock();
        this.#woken = false; // what the watch announced so far, this claim sees
        try {
          // One job at concurrency 1 (claimNext): no need to ask the rule, a call into the engine
          // (in a page, a message to its worker) on the hot path of every claim.
          const wanted = this.#concurrency === 1 ? 1 : await this.#rules.claimBatch(free, this.#concurrency);
          if (busy) {
            // Beside running jobs the claim does not hold the loop: it joins the group of the
            // completions written meanwhile (one transaction for both), and the next slot to free
            // is claimed at once, not after it answers. Slots may have been taken again during
            // the awaits above (a write waiting to be retried): it asks for no more than are free.
            const stillFree = this.#freeSlots;
            if (stillFree > 0) this.#claimBeside(Math.min(wanted, stillFree), claimedAt, handler);
            continue;
          }
          claims = await this.#claim(wanted, claimedAt);
        } catch (error) {
          if (!isStorageError(error)) throw error;
          this.#onError(error, { op: 'claimNext' });
          await this.#idleWait();
          continue;
        }
        if (claims.length === 0) {
          if (this.#inFlight.size > 0) {
            // Running jobs may fail and come back (or finish and free slots): look again then.
            await this.#idleWait();
            continue;
          }
          if (untilEmpty) break;
          if (untilDrained && (await this.#drained())) break;
          await this.#restUntil(await this.#wakeAt(claimedAt)); // or until the watch sees new work
          continue;
        }
        this.#counts.claimed += claims.length;
        if (this.#stopping) {
          // stop() came while the claims were on their way: hand the jobs straight back.
          await Promise.all(claims.map((claimed) => this.#handBack(claimed)));
          break;
        }
        if (this.#concurrency === 1) {
          await this.#handle(claims[0], claimedAt, handler);
          continue;
        }
        for (const claimed of claims) this.#inBackground(claimed, claimedAt, handler);
      }
      await Promise.all(this.#claims); // their jobs are handed out (or back) first
      await Promise.all(this.#inFlight);
      if (this.#crash) throw this.#crash.error;
    } finally {
      this.#running = false;
      watch?.close();
      await this.#heartbeatSource?.close?.();
      await this.#lastBeat();
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
    for (const lease of this.#leases) {
      const halt = () => lease.abort(new LeaseLostError('stopped', 'the worker is stopping'));
      if (grace > 0) lease.timers.add(this.#timers.after(grace, halt));
      else halt();
    }
    return this.#stopped ? this.#stopped.promise : Promise.resolve();
  }

  /**
   * Retention (docs/contract.md section 13), ticking with the schedules: when due, one bounded
   * transaction of completed jobs past `retention.done` and one of dead jobs past
   * `retention.dead`; again at the next tick while a batch came back full (a backlog), else a
   * minute later. A storage error goes to `onError` and is retried at the next tick.
   */
  async #pruneDue(now) {
    if (this.#retention === null || now < this.#pruneAt) return;
    const batch = 1000; // PRUNE_BATCH: one bounded transaction each
    let backlog = false;
    try {
      const completed = await this.#ops.prune(now - this.#retention.done, true, batch);
      backlog = completed === batch;
      if (this.#retention.dead !== null) {
        const dead = await this.#ops.prune(now - this.#retention.dead, false, batch, true);
        backlog ||= dead === batch;
      }
    } catch (error) {
      if (!isStorageError(error)) throw error;
      this.#onError(error, { op: 'prune' });
      backlog = true;
    }
    this.#pruneAt = backlog ? now : now + 60;
  }

  /**
   * Recurring jobs (docs/contract.md section 11): enqueues the store's due slots as the worker
   * ticks, at its first claim and then at most once a second of its clock (again at once if the
   * clock went back), so any running worker keeps the schedules; racing workers add each slot's
   * job once. A storage error goes to `onError` and is retried at the next tick.
   */
  async #enqueueDue(now) {
    if (typeof this.#store.enqueueDue !== 'function') return;
    if (now >= this.#dueAt && now - this.#dueAt < 1) return;
    this.#dueAt = now;
    try {
      await this.#ops.enqueueDue(now);
    } catch (error) {
      if (!isStorageError(error)) throw error;
      this.#onError(error, { op: 'enqueueDue' });
    }
  }

  /**
   * When to look again after nothing was claimable at `now` (docs/contract.md section 11,
   * waking), on the worker's clock: with waking on, when the next job of the served queues falls
   * due or at the next schedule slot, whichever comes first, at the latest after the poll `idle`.
   * A slot's wake-up is kept past a second after the last tick (enqueueDue runs at most once a
   * second), or the tick would skip the slot. Otherwise, or when the store cannot tell, the poll.
   */
  async #wakeAt(now) {
    const poll = now + this.#idle;
    if (!this.#waking || typeof this.#store.nextDue !== 'function') return poll;
    let next;
    try {
      next = await this.#store.nextDue(now, this.#queues);
    } catch (error) {
      if (!isStorageError(error)) throw error;
      this.#onError(error, { op: 'nextDue' });
      return poll;
    }
    let wakeAt = poll;
    if (next.job !== null && next.job > now) wakeAt = Math.min(wakeAt, next.job);
    if (next.slot !== null) wakeAt = Math.min(wakeAt, Math.max(next.slot, this.#dueAt + 1.001));
    return wakeAt;
  }

  /**
   * Rests until `wakeAt` on the worker's clock, a stop, or a wake-up from the store's watch. A
   * timer can end a little before the clock shows its time (setTimeout counts whole
   * milliseconds): the rest is waited out, or a tick at a slot would still be inside its
   * once-a-second limit and skip the slot.
   */
  async #restUntil(wakeAt) {
    do {
      await this.#idleWait(Math.max(0, wakeAt - this.#clock()), true);
    } while (!this.#stopping && !this.#woken && this.#clock() < wakeAt);
  }

  /** Up to `n` claims at `now`: one claimNext, or with concurrency one claimNextMany for the free slots. */
  async #claim(n, now) {
    if (this.#concurrency === 1) {
      const claimed = await this.#ops.claimNext(this.#owner, now, this.#ttl, this.#queues);
      return claimed ? [claimed] : [];
    }
    return this.#ops.claimNextMany(this.#owner, n, now, this.#ttl, this.#queues);
  }

  /** Slots neither held by a job nor promised to a claim on its way. */
  get #freeSlots() {
    return this.#concurrency - this.#handling - this.#claiming;
  }

  /**
   * A claim of `wanted` jobs beside the running ones (concurrency > 1), as Rust's coordinator
   * claims: the slots stay reserved until it answers; its jobs start in the background (or go
   * back, if stop() came meanwhile); when it finds fewer than it asked for, the next claim waits
   * for a job to end or the idle poll. A storage error goes to `onError`, and the poll.
   */
  #claimBeside(wanted, claimedAt, handler) {
    this.#claiming += wanted;
    const claimed = this.#claim(wanted, claimedAt).then(
      (claims) => {
        this.#claiming -= wanted;
        this.#counts.claimed += claims.length;
        // The poll runs from the answer: a slow claim must not make the next one go at once.
        if (claims.length < wanted) this.#claimAt = this.#clock() + this.#idle;
        if (this.#stopping) return Promise.all(claims.map((job) => this.#handBack(job)));
        for (const job of claims) this.#inBackground(job, claimedAt, handler);
      },
      (error) => {
        this.#claiming -= wanted;
        this.#claimAt = this.#clock() + this.#idle;
        if (!isStorageError(error)) throw error;
        this.#onError(error, { op: 'claimNext' });
      },
    );
    this.#besideTheLoop(this.#claims, claimed);
  }

  /**
   * Keeps `work` in `set` until it settles, beside the loop: an unexpected error (not a storage
   * error) stops claiming and is thrown once the others finished; its end wakes the loop.
   */
  #besideTheLoop(set, work, ended = () => {}) {
    const tracked = work
      .catch((error) => {
        this.#crash ??= { error };
        this.#stopping = true;
      })
      .finally(() => {
        set.delete(tracked);
        ended();
        this.#wake?.();
      });
    set.add(tracked);
  }

  /** Gives a job claimed during stop() straight back. */
  async #handBack(claimed) {
    try {
      await this.#ops.release(claimed.job, this.#owner, claimed.fence);
    } catch (error) {
      if (!isStorageError(error)) throw error;
      this.#onError(error, { op: 'release', job: claimed.job }); // its lease runs out by itself
    }
  }

  /** Handles a job beside the others (concurrency > 1), in a slot of its own (`#slot`). */
  #inBackground(claimed, claimedAt, handler) {
    const slot = this.#slot();
    this.#besideTheLoop(this.#inFlight, this.#handle(claimed, claimedAt, handler, slot), slot.free);
  }

  /**
   * A slot of `concurrency`, held from the claim until the job's handler returns (or its handling
   * ends without one), and again while a write of its outcome waits to be tried again. A freed
   * slot wakes the loop to claim for it at once, so a worker holds at most twice `concurrency`
   * leases (handlers running, outcomes on their way), and no more while writes keep failing.
   */
  #slot() {
    let held = false;
    const slot = {
      /** Holds the slot; false when it was held already. */
      take: () => {
        if (held) return false;
        held = true;
        this.#handling += 1;
        return true;
      },
      free: () => {
        if (!held) return;
        held = false;
        this.#handling -= 1;
        this.#claimAt = -Infinity;
        this.#wake?.();
      },
    };
    slot.take();
    return slot;
  }

  /**
   * Waits `seconds` (the idle poll by default), or until stop() or a finished job wakes it, or
   * (`wakeable`: nothing was claimable) until the store's watch sees new work.
   */
  async #idleWait(seconds = this.#idle, wakeable = false) {
    if (this.#stopping || (wakeable && this.#woken)) return;
    this.#wakeable = wakeable;
    await new Promise((resolve) => {
      const timer = seconds === Infinity ? null : this.#timers.after(seconds, resolve);
      this.#wake = () => {
        timer?.cancel();
        resolve();
      };
    });
    this.#wake = null;
    this.#wakeable = false;
  }

  /**
   * The store's watch for the run (docs/contract.md section 11, waking): Node's store watches its
   * file (`fs.watch`), the browser's hears the enqueues of its origin (BroadcastChannel). A change
   * wakes an idle wait that found nothing claimable; without a watch the worker polls every `idle`.
   */
  #watchStore(untilEmpty) {
    if (!this.#waking || untilEmpty || typeof this.#store.watch !== 'function') return null;
    try {
      return this.#store.watch(() => {
        this.#woken = true;
        if (this.#wakeable) this.#wake?.();
      });
    } catch (error) {
      this.#onError(error, { op: 'watch' }); // polling still finds the jobs
      return null;
    }
  }

  /** Nothing queued, scheduled or leased in the queues served (every queue when none is named). */
  async #drained() {
    const now = this.#clock();
    for (const queue of this.#queues ?? [null]) {
      const counts = await this.#store.stats(now, queue);
      if (counts.queued + counts.scheduled + counts.leased !== 0) return false;
    }
    return true;
  }

  /**
   * The core's verdict on a claimed attempt: `{run: true}`, or `{run: false, error}` for a poison
   * job (made dead at once); null: the store kept failing until the lease ended.
   */
  async #verdict(lease, attempt) {
    if (!(await this.#rules.mustCheckPreviousAttempt(attempt, this.#maxAttempts))) return { run: true };
    const answer = await this.#withinLease(lease, 'inspect', () => [lease.job]);
    if (answer === null) return null;
    const failed = previousAttemptFailed(answer.value?.failures, lease.fence);
    return this.#rules.attemptVerdict(attempt, this.#maxAttempts, failed);
  }

  async #handle({ job, fence, payload, base = 0 }, claimedAt, handler, slot = null) {
    const lease = newLease(job, fence, claimedAt + this.#ttl);
    this.#leases.add(lease);
    if (slot) this.#slots.set(lease, slot);
    try {
      // Every claim is one attempt (contract section 7), counted from the fence the job started
      // at (`base`, the fence floor when it was enqueued: section 13; absent when 0).
      const attempt = fence - base;
      const verdict = await this.#verdict(lease, attempt);
      if (verdict === null) {
        this.#lose(lease, { code: 'expired', until: lease.end }, 'could not read its failures before the lease ended: the store kept failing');
        return;
      }
      if (!verdict.run) {
        await this.#finish(lease, 'fail', (now) => [job, this.#owner, fence, now, null, verdict.error], 'dead', {
          detail: () => ({ attempt, error: verdict.error }),
        });
        return;
      }
      this.#keep(lease, claimedAt);
      const outcome = await this.#runHandler(lease, handler, { job, fence, payload, attempt });
      slot?.free();
      await lease.quiet();
      if (lease.signal.aborted) {
        if (lease.signal.reason?.code === 'stopped') {
          await this.#finish(lease, 'release', () => [job, this.#owner, fence], null, { event: 'released' });
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
          await this.#finish(lease, 'complete', (now) => [job, this.#owner, fence, now, text], 'completed', {
            detail: () => ({ attempt, result: text }),
          });
          return;
        }
        try {
          await this.#finish(lease, 'fenced', (now) => [job, this.#owner, fence, now, fenced.statements, { complete: true, result: text }], 'completed', {
            retryOnlyRetryable: true,
            detail: () => ({ attempt, result: text }),
          });
        } catch (error) {
          // The store rolled the statements back: a statement's failure is the handler's.
          if (!isStatementError(error)) throw error;
          await this.#failed(lease, attempt, error, error.message); // the store's text, as in Rust
        }
      } else {
        await this.#failed(lease, attempt, outcome.error);
      }
    } finally {
      lease.close();
      this.#leases.delete(lease);
    }
  }

  /**
   * The worker registry (the store's `heartbeat`): the worker's report when a beat is due at `now`
   * (`within` seconds after the last: a renew interval), else null. A renew on this loop carries it
   * (in the renew's transaction) when the last beat is half an interval old, so a lease's every
   * renew does and many leases renewed together carry a few, not one each; `#beatAlone` sends it
   * by itself when no renew did for a renew interval.
   */
  #beatDue(now, stopping = false, within = this.#heartbeatEvery) {
    if (this.#registration === null) return null;
    if (!stopping && now < this.#beatAt + within) return null;
    this.#beatAt = now;
    return { ...this.#registration, started: this.#startedAt, stopping, ...this.#counts };
  }

  /** Sends the beat by itself if it is due, then looks again when the next one would be. */
  async #beatAlone() {
    this.#beatTimer?.cancel();
    this.#beatTimer = null;
    if (this.#registration === null) return;
    const now = this.#clock();
    // Leases renewed on this loop carry the beat themselves.
    const renewing = this.#leases.size > 0 && !this.#heartbeatSource;
    const report = renewing ? null : this.#beatDue(now);
    if (report) {
      try {
        await this.#ops.heartbeat(this.#owner, [], now, this.#ttl, report);
      } catch (error) {
        this.#onError(error, { op: 'heartbeat' });
      }
    }
    if (!this.#running) return;
    const next = Math.max(renewing ? this.#heartbeatEvery : 0, this.#beatAt + this.#heartbeatEvery - this.#clock());
    this.#beatTimer = this.#timers.after(next, () => void this.#beatAlone());
  }

  /** The last beat: the worker stopped (the registry shows it gone at once). */
  async #lastBeat() {
    this.#beatTimer?.cancel();
    this.#beatTimer = null;
    if (this.#registration === null) return;
    const now = this.#clock();
    try {
      await this.#ops.heartbeat(this.#owner, [], now, this.#ttl, this.#beatDue(now, true));
    } catch (error) {
      this.#onError(error, { op: 'heartbeat' });
    }
  }

  /** Keeps `lease` while the handler runs: on this loop, or through the heartbeat source. */
  #keep(lease, claimedAt) {
    const events = {
      renewed: (end) => {
        this.#counts.renewals += 1;
        lease.end = end;
      },
      lost: (reason, message) => this.#lose(lease, reason, message),
      error: (error, retryIn) => this.#onError(error, { op: 'renew', job: lease.job, retryIn }),
    };
    const shape = { owner: this.#owner, ttl: this.#ttl, every: this.#heartbeatEvery, events };
    if (this.#heartbeatSource) keepOnSource(lease, this.#heartbeatSource, shape);
    else keepOnLoop(lease, { ...shape, store: this.#ops, rules: this.#rules, timers: this.#timers, claimedAt, beat: (now) => this.#beatDue(now, false, this.#heartbeatEvery / 2) });
  }

  /**
   * Fails the attempt: retried at the core's `retryAt` (the fail call's `now` plus the backoff),
   * or dead (null) at the last attempt.
   */
  async #failed(lease, attempt, error, text = errorText(error)) {
    const delay = await backoffDelay(this.#backoff, this.#rules, attempt, error);
    let retryAt = null;
    const args = async (now) => {
      retryAt = await this.#rules.retryAt(now, attempt, this.#maxAttempts, delay);
      return [lease.job, this.#owner, lease.fence, now, retryAt, text];
    };
    await this.#finish(lease, 'fail', args, () => (retryAt === null ? 'dead' : 'failed'), {
      detail: () => (retryAt === null ? { attempt, error: text } : { attempt, error: text, retryAt }),
    });
  }

  /** Runs the handler; after the lease is lost, waits at most `abandonAfter` for it to settle. */
  async #runHandler(lease, handler, { job, fence, payload, attempt }) {
    // `lease`: what the store's lease calls take (a fenced write of the handler's own, say).
    const held = Object.freeze({ job, owner: this.#owner, fence });
    const settled = new Promise((resolve) => resolve(handler(job, { signal: lease.signal, payload, fence, attempt, lease: held }))).then(
      (value) => ({ ok: true, value }),
      (error) => ({ ok: false, error }),
    );
    const abandoned = new Promise((resolve) => {
      const onAbort = () => lease.timers.add(this.#timers.after(this.#abandonAfter, () => resolve({ ok: false, abandoned: true })));
      if (lease.signal.aborted) onAbort();
      else lease.signal.addEventListener('abort', onAbort, { once: true });
      settled.then(() => lease.signal.removeEventListener('abort', onAbort));
    });
    return Promise.race([settled, abandoned]);
  }

  /**
   * One write that ends the lease (complete, fail, release), retried on storage errors (a busy
   * database) while the lease lasts. A refusal counts as a stale write and a lost lease. Once the
   * write is granted (committed), the counter named `counter` counts it and the listeners of the
   * event of that name (or `event`) hear of it, with `detail()` added to the job and fence.
   */
  async #finish(lease, op, args, counter, { retryOnlyRetryable = false, event = null, detail = () => ({}) } = {}) {
    const answer = await this.#withinLease(lease, op, args, { retryOnlyRetryable });
    if (answer === null) {
      this.#lose(lease, { code: 'expired', until: lease.end }, `could not ${op} before the lease ended: the store kept failing`);
    } else if (answer.value) {
      const name = typeof counter === 'function' ? counter() : counter;
      if (name) this.#counts[name] += 1;
      const heard = event ?? name;
      if (heard) this.#emit(heard, { job: lease.job, fence: lease.fence, ...detail() });
    } else {
      this.#counts.staleWritesRefused += 1;
      this.#lose(lease, answer.reason, `the store refused ${op}: the lease was lost`);
    }
  }

  /**
   * `withReason[op]` with a fresh `now` (`args(now)` answers the arguments, or a Promise of them);
   * storage errors retried after the core's `rules.writeRetryDelay` until the lease ends (then null).
   * With `retryOnlyRetryable`, a storage error the store marks as not retryable (a fenced
   * statement that broke a constraint) is thrown instead: the same call would fail again.
   */
  async #withinLease(lease, op, args, { retryOnlyRetryable = false } = {}) {
    const slot = this.#slots.get(lease);
    let retaken = false;
    try {
      for (let failedTries = 1; ; failedTries++) {
        try {
          return await this.#ops.withReason[op](...(await args(this.#clock())));
        } catch (error) {
          if (!isStorageError(error) || (retryOnlyRetryable && error.retryable !== true)) throw error;
          this.#onError(error, { op, job: lease.job });
          const left = lease.end - this.#clock();
          if (left <= 0) return null;
          // A write waiting to be tried again holds its job's slot again (see #slot).
          retaken ||= slot?.take() === true;
          await this.#timers.sleep(await this.#rules.writeRetryDelay(failedTries));
        }
      }
    } finally {
      if (retaken) slot.free();
    }
  }

  /** Signals the handler that its lease is gone (once) and counts it. */
  #lose(lease, reason, message) {
    if (lease.signal.aborted) return;
    this.#counts.leasesLost += 1;
    lease.abort(new LeaseLostError('lease_lost', `${lease.job} (fence ${lease.fence}): ${message}`, reason));
    this.#emit('lost', { job: lease.job, fence: lease.fence, reason, message });
  }
}

export { JobWorker, WORKER_EVENTS };

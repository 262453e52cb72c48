// The JavaScript player of the worker vectors (format in README.md here): one timeline against
// JobWorker on a ManualClock. Shared by the Node runner (tests/node/worker-vectors.test.mjs), which
// calls it, and the Chromium runner (tests/browser/worker-vectors.test.mjs), which hands it to the
// page: so it is one self-contained function (playwright sends its source), importing what it needs
// from the URLs in `modules`. It answers the list of problems found (empty: the vector holds).
export async function playVector({ vector, modules, target }) {
  // The store class: `modules.storeClass` of `modules.store` (default LeaseStore).
  const LeaseStore = (await import(modules.store))[modules.storeClass ?? 'LeaseStore'];
  const { JobWorker, ManualClock, fencedResult } = await import(modules.worker);
  const { OPERATIONS, protocolName } = await import(modules.core);
  const methods = Object.fromEntries(OPERATIONS.map((op) => [protocolName(op.name), op]));
  const PATIENCE = 5000; // ms of real time to wait for a renew or a signal

  const same = (a, b) => {
    if (typeof b === 'number') return typeof a === 'number' && a === b;
    if (b === null || typeof b !== 'object') return a === b;
    if (Array.isArray(b)) return Array.isArray(a) && a.length === b.length && b.every((x, i) => same(a[i], x));
    if (a === null || typeof a !== 'object' || Array.isArray(a)) return false;
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return same(ka, kb) && kb.every((k) => same(a[k], b[k]));
  };
  const text = (v) => JSON.stringify(v);
  const realSleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  let store;
  let rival;
  if (target.kind === 'node') {
    store = await LeaseStore.open(target.path);
    rival = await LeaseStore.open(target.path);
  } else {
    store = await LeaseStore.open(target.name);
    await store.eraseEverything();
    rival = store; // one OPFS database per page: the rival's calls share the connection
  }

  /** One store call of a step (`op` and its arguments as in tests/vectors), checked; a problem or null. */
  const call = async (step, where) => {
    const op = methods[step.op];
    if (!op) return `${where}: unknown op ${step.op}`;
    const args = op.params.map((p) => step[protocolName(p)]);
    let answer;
    try {
      answer = await rival.withReason[op.name](...args);
    } catch (error) {
      if (step.expect.error === error.code) return null;
      return `${where}: ${step.op} threw ${error.code}: ${error.message}`;
    }
    if (!same(answer.value, step.expect.value)) return `${where}: ${step.op} answered ${text(answer.value)}, expected ${text(step.expect.value)}`;
    if ('reason' in step.expect && !same(answer.reason, step.expect.reason)) {
      return `${where}: ${step.op} gave reason ${text(answer.reason)}, expected ${text(step.expect.reason)}`;
    }
    return null;
  };

  const w = vector.worker;
  const backoff = w.backoff.fixed !== undefined ? w.backoff.fixed
    : await (async () => {
      const { exponentialBackoff } = await import(modules.worker);
      const { base, max, jitter } = w.backoff.exponential;
      return exponentialBackoff({ base, max, jitter });
    })();
  const clock = new ManualClock(vector.clock);
  const worker = new JobWorker(store, {
    owner: w.owner, ttl: w.ttl, heartbeatEvery: w.heartbeat_every, maxAttempts: w.max_attempts, backoff, clock,
  });
  const snake = { leasesLost: 'leases_lost', staleWritesRefused: 'stale_writes_refused' };
  const problems = [];
  try {
    for (const [index, step] of vector.timeline.entries()) {
      const where = `${vector.file} step ${index}`;
      if ('op' in step) {
        const problem = await call(step, where);
        if (problem) {
          problems.push(problem);
          break;
        }
      } else if ('clock' in step) {
        clock.set(step.clock);
      } else if ('run' in step) {
        const handled = [];
        const found = [];
        const handler = async (job, context) => {
          const key = `${job}@${context.fence}`;
          handled.push(key);
          const problem = (why) => found.push(`${where} ${key}: ${why}`);
          const actions = step.handler[key];
          if (!actions) {
            problem('the handler ran, but the vector has no script for it');
            return null;
          }
          for (const [i, action] of actions.entries()) {
            if ('op' in action) {
              const p = await call(action, `${key} action ${i}`);
              if (p) problem(p);
            } else if ('job' in action) {
              const seen = { payload: context.payload, fence: context.fence, attempt: context.attempt };
              if (!same(seen, action.job)) problem(`expected the job ${text(action.job)}, got ${text(seen)}`);
            } else if ('clock' in action) {
              clock.set(action.clock);
            } else if ('await_lease_end' in action) {
              const start = Date.now();
              let until;
              while ((until = (await rival.state(job)).until) !== action.await_lease_end) {
                if (Date.now() - start > PATIENCE) {
                  problem(`the lease end never became ${action.await_lease_end}: ${until}`);
                  break;
                }
                await realSleep(1);
              }
            } else if ('await_signal' in action) {
              if (!context.signal.aborted) {
                await new Promise((resolve) => {
                  context.signal.addEventListener('abort', resolve, { once: true });
                  setTimeout(resolve, PATIENCE);
                });
              }
              const reason = context.signal.aborted ? context.signal.reason : null;
              const told = reason && (reason.code === 'lease_lost' ? { code: reason.code, reason: reason.reason } : { code: reason.code });
              if (!same(told, action.await_signal)) problem(`expected to be told ${text(action.await_signal)}, was told ${text(told)}`);
            } else if ('stop' in action) {
              // Not awaited: stop() resolves when run() has returned, after this handler.
              if (action.stop === 'graceful') worker.stop({ grace: Infinity });
              else if (action.stop === 'interrupt') worker.stop({ grace: 0 });
              else problem(`unknown stop ${action.stop}`);
            } else if ('return' in action) {
              return action.return;
            } else if ('throw' in action) {
              throw action.throw; // a string is recorded as itself (an Error as `Name: message`)
            } else if ('fenced' in action) {
              return fencedResult(action.fenced.statements, action.fenced.result);
            } else {
              problem(`unknown action ${text(action)}`);
            }
          }
          problem('the script ended without return, throw or fenced');
          return null;
        };
        let stats;
        try {
          stats = await worker.run(handler, { untilEmpty: step.run.until_empty === true });
        } catch (error) {
          problems.push(`${where}: the run failed: ${error.code}: ${error.message}`);
          break;
        }
        problems.push(...found);
        const counters = Object.fromEntries(Object.entries(stats).map(([k, v]) => [snake[k] ?? k, v]));
        if (!same(handled, step.handled)) problems.push(`${where}: handled ${text(handled)}, expected ${text(step.handled)}`);
        if (!same(counters, step.counters)) problems.push(`${where}: counters ${text(counters)}, expected ${text(step.counters)}`);
        if (problems.length) break;
      } else {
        problems.push(`${where}: unknown step ${text(step)}`);
        break;
      }
    }
  } finally {
    if (rival !== store) await rival.close();
    await store.close();
  }
  return problems;
}

// The JavaScript core of leasefence, shared by Node (node/index.cjs, bundled with it into the npm
// package by scripts/package.sh) and the browser (./lease-store.js, served as is): the store class
// built over a transport, one method per operation of ./operations.js (generated from the crate's
// one definition of the operations by scripts/generate-operations.mjs). The transport runs one operation and answers `{value, reason}`: synchronously
// in Node (the wasm store on the caller's thread), as a Promise in the browser (messages to the
// store's worker). Argument checks, the contract and the error codes stay in Rust.

import { OPERATIONS } from './operations.js';

/**
 * The protocol's name (docs/contract.md section 4) for a name of the table above: an operation's
 * or a parameter's, `claimNext` is `claim_next`, `runAt?` is `run_at` (the optional mark dropped).
 */
const protocolName = (name) => name.replace(/\?$/, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The one error class of the package: every error it throws is a LeaseError, in Node and in the
 * browser. `code` is the protocol's error code (`invalid_argument`, `storage`; the worker runtime
 * adds `lease_lost` and `stopped`, see LeaseLostError), `retryable` whether the same call may
 * succeed if made again (a busy database). Other fields an error carries (`reason`, ...) are kept.
 */
class LeaseError extends Error {
  constructor(message, { code, retryable = false, ...fields } = {}) {
    super(message);
    this.name = 'LeaseError';
    this.code = code;
    this.retryable = Boolean(retryable);
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined && !(key in this)) this[key] = value;
    }
  }
}

/**
 * The one place errors from the wasm (a plain Error with `code` and `retryable`) or from a worker's
 * message (`{code, message, retryable, ...}`) become LeaseErrors. Anything else (an application's
 * own error rethrown through a fenced callback) passes through unchanged.
 */
function toLeaseError(error) {
  if (error instanceof LeaseError) return error;
  if (error === null || typeof error !== 'object' || typeof error.code !== 'string') return error;
  const plain = Object.getPrototypeOf(error) === Error.prototype || Object.getPrototypeOf(error) === Object.prototype;
  if (!plain || typeof error.retryable !== 'boolean') return error;
  const { message, stack, name, ...fields } = error;
  const wrapped = new LeaseError(String(message ?? error.message ?? ''), { ...fields, code: error.code, retryable: error.retryable });
  if (typeof error.stack === 'string') wrapped.stack = error.stack.replace(/^Error\b/, 'LeaseError');
  return wrapped;
}

/** Runs `f()`, turning what it throws into a LeaseError (see toLeaseError). */
function leaseErrors(f) {
  try {
    return f();
  } catch (error) {
    throw toLeaseError(error);
  }
}

const isThenable = (value) => value !== null && typeof value === 'object' && typeof value.then === 'function';

/** Applies `f` to the answer now, or when it arrives. */
function settle(answer, f) {
  return isThenable(answer) ? answer.then(f) : f(answer);
}

/**
 * `{value, reason}` for the caller, `reason` null when the store agreed. claimMany's answer carries
 * one reason per owner and keeps its `reasons` (Node's threads and the browser's worker alike).
 */
function withReasonOf(answer) {
  if (answer && Array.isArray(answer.reasons)) return { value: answer.value, reasons: answer.reasons };
  return { value: answer.value, reason: answer.reason ?? null };
}

/** renewMany's and completeMany's answer: each item `{value, reason}` as withReason answers one call. */
function withItemReasons(answer) {
  return { value: answer.value.map(withReasonOf), reason: answer.reason ?? null };
}

/**
 * Runs `f` at the end of the event loop's current turn: in Node after the other callbacks of this
 * turn (timers due together, I/O that arrived together), with no delay of its own (setImmediate);
 * in a browser after the current task (a microtask).
 */
const endOfTurn = typeof setImmediate === 'function' ? setImmediate : queueMicrotask;

/**
 * Group commit for concurrent async callers (docs/contract.md section 10): operations called while
 * no group is being committed are sent together at the end of the event loop's turn (never a
 * timer: a lone call waits for nothing but the rest of the turn), as one `callGroup(calls)` of the
 * transport: one transaction, each call in its own savepoint, answered as if it ran alone. In Node
 * the commit blocks the thread (the wasm's file I/O is synchronous), so the calls of one turn are
 * what groups: the handlers whose timers fire together, the completions of one turn. Calls made
 * while a group is in flight (the browser's worker round trip, the native engine's thread pool)
 * form the next group, sent as soon as that group answers and before its answers are handed out,
 * so the engine writes it while this thread runs their continuations; when none waited, the calls
 * made where the answers are read leave together at the end of that turn. A call that
 * cannot join a group (`claimMany`, a `fenced` callback) runs alone on the store.
 */
class GroupCommit {
  #callGroup;
  #callAlone;
  #pending = [];
  #busy = false;

  constructor(callGroup, callAlone) {
    this.#callGroup = callGroup;
    this.#callAlone = callAlone;
  }

  call(op, args) {
    if (op === 'claimMany' || (op === 'fenced' && typeof args[4] === 'function')) {
      return new Promise((resolve) => resolve(this.#callAlone(op, args)));
    }
    return new Promise((resolve, reject) => {
      this.#pending.push({ op, args, resolve, reject });
      if (!this.#busy) {
        this.#busy = true;
        endOfTurn(() => this.#commit());
      }
    });
  }

  async #commit() {
    let group = this.#pending.splice(0);
    let answered = this.#send(group);
    while (group.length > 0) {
      const { failed, answers, error } = await answered;
      // The calls that waited for this group leave before its answers are handed out, so the
      // engine writes them while this thread runs the answers' continuations; calls those make
      // wait for the group after.
      let next = this.#pending.splice(0);
      if (next.length > 0) answered = this.#send(next);
      group.forEach(({ resolve, reject }, i) => {
        if (failed) return reject(toLeaseError(error));
        const answer = answers[i];
        if (answer && answer.error !== undefined) reject(toLeaseError(answer.error));
        else resolve(answer);
      });
      if (next.length === 0) {
        // Nothing waited: the calls made where these answers are read leave together at the
        // end of the turn.
        await new Promise((resolve) => endOfTurn(resolve));
        next = this.#pending.splice(0);
        if (next.length > 0) answered = this.#send(next);
      }
      group = next;
    }
    this.#busy = false;
  }

  /** Sends `group`; answers `{answers}`, or `{failed: true, error}` when the group failed whole. */
  #send(group) {
    return new Promise((resolve) => resolve(this.#callGroup(group.map(({ op, args }) => [op, args])))).then(
      (answers) => ({ failed: false, answers }),
      (error) => ({ failed: true, error }),
    );
  }
}

/**
 * The store over a transport `{call(op, args), promised}` (`promised`: its answers are Promises,
 * so refusals are rejections). Every operation of OPERATIONS is a method
 * answering the bare value, and `withReason.<op>` answers `{value, reason}` with the reason of
 * that very call, so concurrent calls never see each other's reasons (the one way to read why:
 * no "last reason" kept on the store).
 */
class LeaseStoreCore {
  #transport;

  constructor(transport) {
    this.#transport = transport;
    const withReason = {};
    for (const op of OPERATIONS) {
      const shape = op.returns === 'Answer<boolean>[]' ? withItemReasons : withReasonOf;
      withReason[op.name] = (...args) => {
        let positional;
        try {
          positional = leaseArguments(op, args);
        } catch (error) {
          // A store answering Promises rejects, as it does for every refused argument.
          if (transport.promised) return Promise.reject(error);
          throw error;
        }
        return settle(this.#answer(op.name, positional), shape);
      };
    }
    // claimLease: claim, answering the lease (or null) instead of the fence.
    withReason.claimLease = (...args) => settle(withReason.claim(...args), (answer) => ({
      ...answer,
      value: answer.value === null ? null : { job: args[0], owner: args[1], fence: answer.value },
    }));
    /** The same operations, answering `{value, reason}` instead of the bare value. */
    this.withReason = Object.freeze(withReason);
    if (typeof transport.callGroup === 'function') {
      const commit = new GroupCommit((calls) => transport.callGroup(calls), (op, args) => transport.call(op, args));
      /**
       * The same operations, group-committed: each answers a Promise, and the calls made together
       * (e.g. by concurrent handlers) share one transaction and one sync, each checked and
       * answered as if it ran alone. `store.grouped.complete(...)`, `store.grouped.withReason.renew(...)`.
       */
      this.grouped = new LeaseStoreCore({ call: (op, args) => commit.call(op, args), promised: true });
    }
  }

  #answer(op, args) {
    let answer = leaseErrors(() => this.#transport.call(op, args));
    if (isThenable(answer)) answer = answer.then(undefined, (error) => { throw toLeaseError(error); });
    const shaped = JS_ANSWERS[op];
    return shaped ? settle(answer, (a) => ({ ...a, value: shaped(a.value, args) })) : answer;
  }
}

/** A protocol name in JavaScript's spelling: `leases_lost` is `leasesLost`. */
const camelName = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** `object` with every key in JavaScript's spelling. */
const camelKeys = (object) => Object.fromEntries(Object.entries(object).map(([key, value]) => [camelName(key), value]));

/**
 * The answers whose items the wire (the protocol, the SQL) spells in snake_case, in the one casing
 * of the JavaScript surface: a worker row's `lastSeen` and its counters (`leasesLost`,
 * `staleWritesRefused`), as `JobWorker.stats` and the heartbeat's report spell them.
 */
const spelledWorker = (worker) => ({ ...camelKeys(worker), counters: camelKeys(worker.counters ?? {}) });

/**
 * A claimed job as the lease its owner holds (docs/decisions/npm-api-rules.md): the claim's
 * `owner` and the `attempt` (`fence - base`) beside the wire's `job`, `fence`, `payload`, `base`,
 * so it can be handed as is to renew, complete, fail, release and fenced.
 */
const claimedLease = (owner) => (claimed) => ({ ...claimed, owner, attempt: claimed.fence - (claimed.base ?? 0) });

/**
 * Answers reshaped for JavaScript, by operation, from the wire's value and the call's arguments:
 * claims answer leases; rows the wire spells in snake_case get one casing.
 */
const JS_ANSWERS = {
  listWorkers: (workers) => workers.map(spelledWorker),
  claimNext: (claimed, [owner]) => (claimed === null ? null : claimedLease(owner)(claimed)),
  claimNextMany: (claimed, [owner]) => claimed.map(claimedLease(owner)),
};

/** The parameters that make a lease: an operation starting with them (`op.lease`) takes a lease object instead. */
const LEASE_PARAMS = ['job', 'owner', 'fence'];
/** The members a lease object may carry beside a list item's own (`{job, fence, result}`). */
const LEASE_EXTRAS = ['owner', 'payload', 'base', 'attempt'];

const isObject = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);

function leaseRefused(op, message) {
  return new LeaseError(`${op}(): ${message}`, { code: 'invalid_argument', retryable: false });
}

/** The fields of a lease object, refused with a clear error when one is missing. */
function leaseFields(op, lease) {
  const missing = LEASE_PARAMS.filter((key) => lease[key] === undefined);
  if (missing.length > 0) {
    throw leaseRefused(op, `a lease object needs job, owner and fence (as claimNext and claimLease answer them); this one has no ${missing.join(', ')}`);
  }
  return LEASE_PARAMS.map((key) => lease[key]);
}

/**
 * The call's positional arguments, exactly as many as `op` has: a lease object in place of
 * `(job, owner, fence)` is spread into them, and a `leases` list may hold lease objects (their
 * owner must be the call's; what else a lease carries is dropped).
 */
function leaseArguments(op, args) {
  let positional = args;
  if (op.lease && isObject(args[0])) {
    positional = [...leaseFields(op.name, args[0]), ...args.slice(1)];
  }
  positional = op.params.map((_, i) => positional[i]);
  const at = op.params.indexOf('leases');
  if (at >= 0 && Array.isArray(positional[at]) && positional[at].some((item) => isObject(item) && item.owner !== undefined)) {
    const owner = positional[op.params.indexOf('owner')];
    positional[at] = positional[at].map((item, i) => {
      if (!isObject(item) || item.owner === undefined) return item;
      if (item.owner !== owner) throw leaseRefused(op.name, `leases[${i}] is ${JSON.stringify(item.owner)}'s lease, not ${JSON.stringify(owner)}'s`);
      return Object.fromEntries(Object.entries(item).filter(([key]) => !LEASE_EXTRAS.includes(key)));
    });
  }
  return positional;
}

// The bare-value methods, one per operation: `store.claim(...)` is `withReason.claim(...).value`
// (or a Promise of it). Arguments are passed positionally, exactly as many as the operation has.
for (const name of [...OPERATIONS.map((op) => op.name), 'claimLease']) {
  const method = {
    [name](...args) {
      return settle(this.withReason[name](...args), (answer) => answer.value);
    },
  }[name];
  Object.defineProperty(LeaseStoreCore.prototype, name, { value: method, writable: true, configurable: true });
}

/**
 * The worker runtime's rules, computed by the crate's core (crate/src/rules/worker.rs) and exported
 * by the wasm as `worker<Name>` (crate/src/wasm/worker_rules.rs): JobWorker asks its store's
 * `workerRules` for them, so the JavaScript runtime decides as the Rust worker does.
 */
const WORKER_RULES = [
  'exponentialBackoff', 'mustCheckPreviousAttempt', 'attemptVerdict', 'retryAt', 'nextRenewAt', 'renewRetryDelay', 'writeRetryDelay', 'claimBatch',
];

/** The wasm's export of a worker rule: `retryAt` is `workerRetryAt`. */
const wasmRuleName = (rule) => `worker${rule[0].toUpperCase()}${rule.slice(1)}`;

/** `{rule(...args)}` for every worker rule over `call(rule, args)` (an answer or a Promise of one). */
function workerRulesOver(call) {
  return Object.freeze(Object.fromEntries(WORKER_RULES.map((rule) => [rule, (...args) => call(rule, args)])));
}

export { OPERATIONS, GroupCommit, LeaseStoreCore, LeaseError, toLeaseError, leaseErrors, settle, protocolName, WORKER_RULES, wasmRuleName, workerRulesOver };

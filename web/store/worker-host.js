// The store's own thread: a dedicated Web Worker, the only place browsers grant OPFS sync access
// handles. It owns one WasmStore (the Rust crate on SQLite on OPFS) and answers the page's
// requests (./lease-store.js) one at a time, in order. ./worker.js serves the library's wasm; a
// worker built on a wasm of its own that extends the library's (the playground's,
// web/app/playground-worker.js) serves that, with its extra methods.

/**
 * Answers the page's requests in this worker with `wasm`, a wasm-bindgen module of leasefence's
 * browser build (its `default` init, `WasmStore`, `checkArguments`, `opfsCheck`,
 * `storageEstimate`). `methods` adds requests by name: `(store, args) => answer`, with the open
 * WasmStore; the page sends them with `LeaseStore#request(name, args)`.
 *
 *   serveStore(await import('../pkg/leasefence.js'));
 *   serveStore(wasm, { countJobs: (store, []) => wasm.countJobs(store) });
 */
import { WORKER_RULES, wasmRuleName } from './core.js';

export function serveStore(wasm, methods = {}) {
  const { WasmStore, checkArguments, opfsCheck, storageEstimate } = wasm;
  let store = null;
  const ready = wasm.default();

  function need() {
    if (!store) throw Object.assign(new Error('the store is not open'), { code: 'storage', retryable: false });
    return store;
  }

  // claimMany with one reason per owner, as in Node: the claims in turn on this one connection,
  // after the whole call's arguments are checked. Requests run one at a time, so nothing of this
  // tab comes between them.
  function claimMany(args) {
    checkArguments('claimMany', args);
    const [job, owners, now, ttl] = args;
    const value = [];
    const reasons = [];
    for (const owner of owners) {
      const answer = need().call('claim', [job, owner, now, ttl]);
      value.push(answer.value);
      reasons.push(answer.reason ?? null);
    }
    return { value, reasons };
  }

  async function handle(method, args) {
    await ready;
    switch (method) {
      case 'open': {
        opfsCheck(); // Rust (web-sys): throws a `storage` error without OPFS sync access handles
        if (store) store.close();
        store = await WasmStore.openOpfs(args[0]);
        return null;
      }
      case 'call':
        if (args[0] === 'claimMany') {
          need();
          return claimMany(Array.isArray(args[1]) ? args[1] : []);
        }
        return need().call(args[0], args[1]);
      // A group of calls in one transaction (store.grouped); an error item crosses as a plain
      // object, like a single call's.
      case 'callGroup':
        return need().callGroup(args[0]).map((item) => (item && item.error !== undefined ? { error: failure(item.error) } : item));
      // The fence guard (crate/src/wasm/guard.rs): statements run only if `fence` is the highest
      // seen for `key`.
      case 'guardWrite':
        return need().guardWrite(args[0], args[1], args[2]);
      // The worker runtime's rules (crate/src/rules/worker.rs), for the page's JobWorker.
      case 'rule':
        if (!WORKER_RULES.includes(args[0])) throw Object.assign(new Error(`unknown worker rule ${args[0]}`), { code: 'invalid_argument', retryable: false });
        return wasm[wasmRuleName(args[0])](...args[1]);
      case 'storage': // {usage, quota, persisted} of this origin (navigator.storage, from Rust)
        return storageEstimate();
      case 'close':
        if (store) {
          store.close();
          store.free();
          store = null;
        }
        return null;
      default:
        if (Object.hasOwn(methods, method)) return methods[method](need(), args);
        throw Object.assign(new Error(`unknown method ${method}`), { code: 'invalid_argument', retryable: false });
    }
  }

  // Requests are chained so a slow one never overlaps the next.
  let queue = Promise.resolve();
  self.onmessage = (event) => {
    const { id, method, args } = event.data;
    queue = queue.then(async () => {
      try {
        self.postMessage({ id, ok: true, value: await handle(method, args) });
      } catch (error) {
        self.postMessage({ id, ok: false, error: failure(error) });
      }
    });
  };
}

// An error as a message for the page, which makes it a LeaseError again (./lease-store.js): its
// code, message, retryable and any other plain field it carries (e.g. `reason`).
function failure(error) {
  const fields = {};
  if (error !== null && typeof error === 'object') {
    for (const [key, value] of Object.entries(error)) {
      if (key !== 'code' && key !== 'message' && key !== 'retryable' && key !== 'stack') {
        try {
          fields[key] = structuredClone(value);
        } catch {
          // not cloneable: left out
        }
      }
    }
  }
  return {
    ...fields,
    code: error && typeof error.code === 'string' ? error.code : 'storage',
    message: error && error.message ? String(error.message) : String(error),
    retryable: Boolean(error && error.retryable),
    // A failing statement of the caller's names its index (the store's own failures do not).
    ...(error && typeof error.statement === 'number' ? { statement: error.statement } : {}),
  };
}

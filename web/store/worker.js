// The store's own thread: a dedicated Web Worker, the only place browsers grant OPFS sync access
// handles. It owns one WasmStore (the Rust crate on SQLite on OPFS) and answers the page's
// requests one at a time, in order.
import init, { WasmStore, opfsCheck, storageEstimate } from '../pkg/leasefence.js';

let store = null;
const ready = init();

function failure(error) {
  return {
    code: error && typeof error.code === 'string' ? error.code : 'storage',
    message: error && error.message ? String(error.message) : String(error),
    retryable: Boolean(error && error.retryable),
    // A failing statement of the caller's names its index (the store's own failures do not).
    ...(error && typeof error.statement === 'number' ? { statement: error.statement } : {}),
  };
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
      return need().call(args[0], args[1]);
    // The playground's extras (crate/src/wasm/playground.rs): the statements an operation ran,
    // and the same operation on the store without fencing.
    case 'tracing':
      return need().setTracing(Boolean(args[0]));
    case 'callTraced':
      return need().callTraced(args[0], args[1]);
    case 'leaseOnly':
      return need().leaseOnly(args[0], args[1]);
    // The fence guard (crate/src/wasm/guard.rs): statements run only if `fence` is the highest
    // seen for `key`; the playground's report bucket uses it.
    case 'guardWrite':
      return need().guardWrite(args[0], args[1], args[2]);
    case 'appGet':
      return need().appGet(args[0]) ?? null;
    case 'appSet':
      return need().appSet(args[0], args[1]);
    case 'storage': // {usage, quota, persisted} of this origin (navigator.storage, from Rust)
      return storageEstimate();
    case 'erase':
      return need().eraseEverything();
    case 'close':
      if (store) {
        store.close();
        store.free();
        store = null;
      }
      return null;
    default:
      throw Object.assign(new Error(`unknown method ${method}`), { code: 'invalid_argument' });
  }
}

function need() {
  if (!store) throw Object.assign(new Error('the store is not open'), { code: 'storage' });
  return store;
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

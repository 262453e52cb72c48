// leasefence's browser build driven from inside its own dedicated worker, so a timed loop measures
// the store without the page-worker round trips. The playground's build (web/app/pkg: the
// library's, plus the playground's calls, tracing off) for its reset between blocks, which the
// library's store does not offer.
import init, { WasmStore, eraseEverything } from '/web/app/pkg/leasefence_playground.js';
import { serve, loop, instrumentOpfs } from './sql.mjs';

const opfsStats = instrumentOpfs();

let store = null;
const ready = init();

/** The page-side API's method shapes, on the worker's WasmStore (synchronous here). */
const sync = {
  claim: (...args) => store.call('claim', args).value,
  complete: (...args) => store.call('complete', args).value,
};

serve(async (method, args) => {
  await ready;
  switch (method) {
    case 'open':
      store = await WasmStore.openOpfs(args[0]);
      return null;
    case 'reset':
      eraseEverything(store);
      for (let i = 0; i < args[0]; i++) store.call('enqueue', [`job-${i}`]);
      return null;
    case 'loop':
      return loop(sync, args[0], args[1]);
    case 'doneCount': {
      let done = 0;
      for (let i = 0; i < args[0]; i++) done += store.call('state', [`job-${i}`]).value?.done ? 1 : 0;
      return done;
    }
    case 'opfsStats':
      return opfsStats();
    case 'close':
      store?.close();
      store?.free();
      store = null;
      return null;
    default:
      throw new Error(`unknown method ${method}`);
  }
});

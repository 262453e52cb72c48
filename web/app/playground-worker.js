// The page's store worker (./playground-store.js starts it): the library's worker loop
// (../store/worker-host.js) over the playground's wasm (./pkg, built from playground/ by
// scripts/build-wasm.sh playground), which is the library's browser build plus the playground's
// calls, answered here.
import * as wasm from './pkg/leasefence_playground.js';
import { serveStore } from '../store/worker-host.js';

serveStore(wasm, {
  tracing: (store, [on]) => wasm.setTracing(store, Boolean(on)),
  callTraced: (store, [op, args]) => wasm.callTraced(store, op, args),
  leaseOnly: (store, [op, args]) => wasm.leaseOnly(store, op, args),
  appGet: (store, [key]) => wasm.appGet(store, key) ?? null,
  appSet: (store, [key, value]) => wasm.appSet(store, key, value),
  erase: (store) => wasm.eraseEverything(store),
});

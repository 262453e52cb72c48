// The store's worker (./lease-store.js starts it): the library's browser wasm, served by
// ./worker-host.js.
import * as wasm from '../pkg/leasefence.js';
import { serveStore } from './worker-host.js';

serveStore(wasm);

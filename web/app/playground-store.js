// The page's store: the library's browser LeaseStore (../store/lease-store.js), in a worker that
// runs the playground's wasm (./playground-worker.js, built from the playground crate,
// playground/) and so answers the playground's calls too. Only this page has them; the library's
// store does not.
import { LeaseStore } from '../store/lease-store.js';

export class PlaygroundStore extends LeaseStore {
  static workerUrl = new URL('./playground-worker.js', import.meta.url);

  /**
   * Records the statements the store's connection runs (off by default: no hook, no cost), for
   * `callTraced` and `leaseOnly`.
   */
  setTracing(on) { return this.request('tracing', [Boolean(on)]); }
  /** `withReason[op](...args)` plus `statements`: what SQLite ran for it (with tracing on). */
  callTraced(op, args) { return this.request('callTraced', [op, args]); }
  /**
   * The same operation and arguments on the store without fencing (a second table in the same
   * database, checked by job id alone): `{value, row, statements}`.
   */
  leaseOnly(op, args) { return this.request('leaseOnly', [op, args]); }
  /** Reads a string the page stored next to the jobs, or null. */
  appGet(key) { return this.request('appGet', [key]); }
  /** Stores a string next to the jobs. */
  appSet(key, value) { return this.request('appSet', [key, value]); }
  /** Erases every job, the lease-only table and the page's data: a brand-new database (reset). */
  eraseEverything() { return this.request('erase', []); }
}

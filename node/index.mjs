// ES module entry: the same LeaseStore and FenceGuard as the CommonJS entry (one copy of the wasm per process).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const leasefence = require('./index.cjs');

export const LeaseStore = leasefence.LeaseStore;
export const FenceGuard = leasefence.FenceGuard;
export default leasefence;

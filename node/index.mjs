// ES module entry: the same classes and helpers as the CommonJS entry (one copy of the wasm per process).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const leasefence = require('./index.cjs');

export const LeaseStore = leasefence.LeaseStore;
export const JobWorker = leasefence.JobWorker;
export const ManualClock = leasefence.ManualClock;
export const LeaseError = leasefence.LeaseError;
export const LeaseLostError = leasefence.LeaseLostError;
export const fixedBackoff = leasefence.fixedBackoff;
export const exponentialBackoff = leasefence.exponentialBackoff;
export const fencedResult = leasefence.fencedResult;
export const FenceGuard = leasefence.FenceGuard;
export default leasefence;

// The errors of the worker runtime: every one is a LeaseError (../core.js), the package's one class.
import { LeaseError } from '../core.js';

function invalidArgument(message) {
  return new LeaseError(message, { code: 'invalid_argument', retryable: false });
}

/**
 * What `signal.reason` holds when a handler is told to stop: `code` is `lease_lost` (the store
 * refused a renew, or the lease ended before it could be renewed; `reason` is the store's reason,
 * e.g. `{code: 'stale_fence', fence}` or `{code: 'expired', until}`) or `stopped` (`worker.stop()`).
 */
class LeaseLostError extends LeaseError {
  constructor(code, message, reason = null) {
    super(message, { code, retryable: false });
    this.name = 'LeaseLostError';
    this.reason = reason;
  }
}

/** A store error worth retrying while the lease lasts (a busy database), not a refusal or a bug. */
const isStorageError = (error) => error !== null && typeof error === 'object' && error.code === 'storage';

/** The text recorded by `fail` for what a handler threw. */
function errorText(error) {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

export { LeaseError, LeaseLostError, invalidArgument, isStorageError, errorText };

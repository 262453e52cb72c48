// The backoff rules: how long a failed job waits before its next attempt. A backoff is a function
// (attempt, error) => seconds; JobWorker takes one of these, or the application's own.
import { invalidArgument } from './errors.js';

/** A backoff of the same `seconds` before every retry. */
function fixedBackoff(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw invalidArgument('fixedBackoff(): `seconds` must be a finite number >= 0');
  }
  return () => seconds;
}

/**
 * `initial * factor^(attempt - 1)` seconds, capped at `max`, then shortened by a random part of
 * up to `jitter` of it (0: exact; 0.5, the default: between half and all of it), so that workers
 * failing together do not retry together.
 */
function exponentialBackoff({ initial = 1, factor = 2, max = 300, jitter = 0.5, random = Math.random } = {}) {
  for (const [name, value] of Object.entries({ initial, factor, max })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw invalidArgument(`exponentialBackoff(): \`${name}\` must be a finite number >= 0`);
    }
  }
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw invalidArgument('exponentialBackoff(): `jitter` must be a number from 0 to 1');
  }
  if (typeof random !== 'function') throw invalidArgument('exponentialBackoff(): `random` must be a function');
  return (attempt) => {
    const delay = Math.min(max, initial * factor ** Math.max(0, attempt - 1));
    return delay * (1 - jitter * random());
  };
}

export { fixedBackoff, exponentialBackoff };

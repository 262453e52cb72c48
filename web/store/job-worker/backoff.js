// The backoff: how long a failed job waits before its next attempt. JobWorker takes seconds (a
// fixed wait), `fixedBackoff(seconds)`, `exponentialBackoff({...})` (a description whose waits the
// crate's core computes, the same rule as the Rust worker's, through the store's `workerRules`), or
// the application's own function (attempt, error) => seconds.
import { invalidArgument } from './errors.js';

/** A backoff of the same `seconds` before every retry. */
function fixedBackoff(seconds) {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw invalidArgument('fixedBackoff(): `seconds` must be a finite number >= 0');
  }
  return () => seconds;
}

/** An exponential backoff as `exponentialBackoff()` describes it (made only there). */
class ExponentialBackoff {
  constructor(fields) {
    Object.assign(this, fields);
    Object.freeze(this);
  }
}

/**
 * `base * factor^(attempt - 1)` seconds, capped at `max`, then shortened by a random part of up to
 * `jitter` of it (0: exact; 0.5, the default: between half and all of it), so that workers failing
 * together do not retry together. `random` draws the number in [0, 1) (default Math.random). The
 * wait itself is computed by the crate's core (`rules.exponentialBackoff`), as in Rust.
 */
function exponentialBackoff(options = {}) {
  if (options === null || typeof options !== 'object') throw invalidArgument('exponentialBackoff(): `options` must be an object');
  if ('initial' in options) throw invalidArgument('exponentialBackoff(): the first wait is called `base` (as in Rust), not `initial`');
  const { base = 1, factor = 2, max = 300, jitter = 0.5, random = Math.random } = options;
  for (const [name, value] of Object.entries({ base, factor, max })) {
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
      throw invalidArgument(`exponentialBackoff(): \`${name}\` must be a finite number >= 0`);
    }
  }
  if (typeof jitter !== 'number' || !(jitter >= 0 && jitter <= 1)) {
    throw invalidArgument('exponentialBackoff(): `jitter` must be a number from 0 to 1');
  }
  if (typeof random !== 'function') throw invalidArgument('exponentialBackoff(): `random` must be a function');
  return new ExponentialBackoff({ base, factor, max, jitter, random });
}

/** The wait in seconds after `attempt` failed with `error`, by `backoff` (checked by the options). */
async function backoffDelay(backoff, rules, attempt, error) {
  if (backoff instanceof ExponentialBackoff) {
    const { base, factor, max, jitter, random } = backoff;
    return rules.exponentialBackoff(base, factor, max, jitter, attempt, Number(random()));
  }
  return Number(await backoff(attempt, error));
}

export { fixedBackoff, exponentialBackoff, ExponentialBackoff, backoffDelay };

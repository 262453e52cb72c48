'use strict';
// The `busyTimeout` option of every opener (LeaseStore.open / connect, FenceGuard.open / connect):
// seconds, like every other time of the package; the engines underneath take milliseconds.
const { invalidArgument } = require('./errors.cjs');

/** How long an opener waits for another process's write lock when not told: 10 seconds. */
const DEFAULT_BUSY_TIMEOUT = 10;

/**
 * `options.busyTimeout` (seconds, default 10) as the milliseconds the engines take; `what` names
 * the opener in the error (`LeaseStore.open()`). The name before 0.1.0, `busyTimeoutMs`, is refused
 * with the new one, so an old call fails loudly instead of waiting a thousand times too long.
 *
 *   busyTimeoutMsOf({ busyTimeout: 0.25 }, 'LeaseStore.open()') // 250
 */
function busyTimeoutMsOf(options, what) {
  if (options.busyTimeoutMs !== undefined) {
    throw invalidArgument(
      `${what}: \`busyTimeoutMs\` is now \`busyTimeout\`, in seconds like every other time (busyTimeoutMs: 5000 is busyTimeout: 5)`,
    );
  }
  const seconds = options.busyTimeout ?? DEFAULT_BUSY_TIMEOUT;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw invalidArgument(`${what}: \`busyTimeout\` must be a finite number of seconds >= 0 (e.g. 10 or 0.25)`);
  }
  return seconds * 1000;
}

module.exports = { busyTimeoutMsOf };

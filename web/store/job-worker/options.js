// JobWorker's options, checked once: bad options throw `invalid_argument` from the constructor.
import { ExponentialBackoff, exponentialBackoff, fixedBackoff } from './backoff.js';
import { invalidArgument } from './errors.js';

function positive(name, value) {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw invalidArgument(`JobWorker: \`${name}\` must be a finite number of seconds > 0`);
  }
  return value;
}

/**
 * The options with their defaults, checked: `{owner, ttl, heartbeatEvery, maxAttempts, backoff,
 * clock, idle, abandonAfter, onError, heartbeatSource, concurrency, queues, wake, register, host, pid}` (`register`:
 * record the worker in the store's worker registry, as `host` and `pid`) (`wake`: an idle worker is woken by the
 * store's `watch` when there is one; false: it polls every `idle`) (`queues`: the queues served, null for every
 * queue; the store checks the names at each claim) (`retention`: `{done, dead}` in seconds, how
 * long finished jobs are kept before the worker prunes them; null, the default: for ever) (`clock`: a function, or a clock moved by
 * hand such as ManualClock, whose waits the worker's timers then use: ./timers.js) (`heartbeatSource` null: renew on the
 * event loop; else the source that renews elsewhere).
 */
/** The most handlers one JobWorker runs at once: the largest batch the store takes (MAX_BATCH). */
const MAX_CONCURRENCY = 1024;

function workerOptions(options) {
  if (options === null || typeof options !== 'object') throw invalidArgument('JobWorker: `options` must be an object');
  const {
    owner = `job-worker-${Math.random().toString(36).slice(2, 10)}`,
    ttl,
    heartbeatEvery,
    maxAttempts = 5,
    backoff = exponentialBackoff(),
    clock = () => Date.now() / 1000,
    idle = 1,
    abandonAfter,
    onError = () => {},
    heartbeat = 'loop',
    concurrency = 1,
    queues = null,
    wake = true,
    register = true,
    host = globalThis.process?.versions?.node ? undefined : 'browser',
    pid = globalThis.process?.pid ?? 0,
    retention = null,
  } = options;
  if (typeof owner !== 'string' || owner === '') throw invalidArgument('JobWorker: `owner` must be a non-empty string');
  const checked = { owner };
  checked.ttl = positive('ttl', ttl);
  checked.heartbeatEvery = positive('heartbeatEvery', heartbeatEvery ?? ttl / 3);
  if (checked.heartbeatEvery >= checked.ttl) {
    throw invalidArgument('JobWorker: `heartbeatEvery` must be shorter than `ttl`, or the lease ends between renewals');
  }
  if (!(maxAttempts === Infinity || (Number.isInteger(maxAttempts) && maxAttempts >= 1))) {
    throw invalidArgument('JobWorker: `maxAttempts` must be an integer >= 1 (or Infinity)');
  }
  checked.maxAttempts = maxAttempts;
  if (typeof backoff === 'number') checked.backoff = fixedBackoff(backoff);
  else if (typeof backoff === 'function' || backoff instanceof ExponentialBackoff) checked.backoff = backoff;
  else throw invalidArgument('JobWorker: `backoff` must be seconds (a number), exponentialBackoff({...}) or a function (attempt, error) => seconds');
  const handMoved = clock !== null && typeof clock === 'object' && typeof clock.now === 'function' && typeof clock.at === 'function';
  if (!((typeof clock === 'function' && Number.isFinite(clock())) || (handMoved && Number.isFinite(clock.now())))) {
    throw invalidArgument('JobWorker: `clock` must be a function answering the time in seconds, or a ManualClock');
  }
  checked.clock = clock;
  checked.idle = positive('idle', idle);
  checked.abandonAfter = positive('abandonAfter', abandonAfter ?? ttl);
  if (typeof onError !== 'function') throw invalidArgument('JobWorker: `onError` must be a function');
  checked.onError = onError;
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= MAX_CONCURRENCY)) {
    throw invalidArgument(`JobWorker: \`concurrency\` must be an integer from 1 to ${MAX_CONCURRENCY} (handlers running at once)`);
  }
  checked.concurrency = concurrency;
  if (!(queues === null || queues === undefined || (Array.isArray(queues) && queues.length >= 1 && queues.every((q) => typeof q === 'string' && q !== '')))) {
    throw invalidArgument('JobWorker: `queues` must be a non-empty array of queue names (or null: every queue)');
  }
  checked.queues = queues ?? null;
  if (typeof wake !== 'boolean') throw invalidArgument('JobWorker: `wake` must be true or false');
  checked.wake = wake;
  if (typeof register !== 'boolean') throw invalidArgument('JobWorker: `register` must be true or false');
  checked.register = register;
  // Node's wrapper (node/job-worker.cjs) gives the machine's name; the browser's is 'browser'.
  const hostName = host ?? 'unknown';
  if (typeof hostName !== 'string' || hostName === '') throw invalidArgument('JobWorker: `host` must be a non-empty string (the machine, as the worker registry shows it)');
  checked.host = hostName;
  if (!(Number.isInteger(pid) && pid >= 0 && pid <= 0xffffffff)) throw invalidArgument('JobWorker: `pid` must be a process id (an integer from 0)');
  checked.pid = pid;
  // Retention (docs/contract.md section 13): `{done: SECONDS, dead: SECONDS | null}`, null: off.
  if (retention === null || retention === undefined) checked.retention = null;
  else if (typeof retention === 'object') {
    const { done, dead = null, ...rest } = retention;
    if (Object.keys(rest).length > 0) throw invalidArgument(`JobWorker: \`retention\` has no option ${Object.keys(rest).join(', ')}; it takes {done, dead}`);
    checked.retention = { done: positive('retention.done', done), dead: dead === null ? null : positive('retention.dead', dead) };
  } else throw invalidArgument('JobWorker: `retention` must be {done: seconds, dead: seconds or null} (or null: keep every finished job)');
  if (heartbeat === 'loop') checked.heartbeatSource = null;
  else if (heartbeat !== null && typeof heartbeat === 'object' && typeof heartbeat.start === 'function') checked.heartbeatSource = heartbeat;
  else if (heartbeat === 'thread') throw invalidArgument("JobWorker: `heartbeat: 'thread'` is offered by the Node package only");
  else throw invalidArgument("JobWorker: `heartbeat` must be 'loop' or (in Node) 'thread'");
  return checked;
}

export { workerOptions };

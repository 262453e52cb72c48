// Runs one shared contract vector (tests/vectors/*.json) through the JavaScript API on a store
// the caller opened: a file store (vectors.test.mjs) or a PostgreSQL one (postgres.test.mjs), whose
// calls answer promises (every read here is awaited, so both work). Values and reasons are
// compared exactly, errors by `.code`, and after every error the state of every job id the vector
// names is unchanged. Not a test file itself.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { ROOT } from './helpers.mjs';

const { OPERATIONS, protocolName } = await import(path.join(ROOT, 'web/store/core.js'));

const VECTORS = path.join(ROOT, 'tests', 'vectors');

/** The vectors, `[file, vector]`, in file order. */
export function vectors() {
  return fs
    .readdirSync(VECTORS)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => [file, JSON.parse(fs.readFileSync(path.join(VECTORS, file), 'utf8'))]);
}

/** The JavaScript operations a vector calls (`claimNext`, ...). */
export function operationsOf(vector) {
  return [...new Set(vector.steps.map((step) => argsOf(step)[0]))];
}

const NONFINITE = { NaN: NaN, Infinity: Infinity, '-Infinity': -Infinity };

/** Each protocol op's JavaScript method and parameters, from the one operation table. */
const METHODS = Object.fromEntries(OPERATIONS.map((op) => [protocolName(op.name), op]));

/** `complete` and `result` of a fenced step as the options object (absent members stay absent). */
function fencedOptions(step) {
  const options = {};
  if ('complete' in step) options.complete = step.complete;
  if ('result' in step) options.result = step.result;
  return options;
}

/** A schedule step's tz, queue, priority, payload and missed as the options object (absent stay absent). */
function scheduleOptions(step) {
  const options = {};
  for (const name of ['tz', 'queue', 'priority', 'payload', 'missed']) if (name in step) options[name] = step[name];
  return options;
}

/** A heartbeat step's worker members (the protocol's flat fields) as the report object, by their JavaScript names. */
function workerReport(step) {
  const report = {};
  for (const name of ['host', 'pid', 'started', 'stopping', 'claimed', 'completed', 'failed', 'dead', 'leases_lost', 'stale_writes_refused', 'renewals']) if (name in step) report[jsName(name)] = step[name];
  return report;
}

/** A protocol member name as JavaScript spells it: `run_at` is `runAt`. */
const jsName = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/** enqueue_many's jobs as enqueueMany takes them: each object's members by their JavaScript names. */
function jsItems(items) {
  if (!Array.isArray(items)) return items;
  return items.map((item) =>
    item !== null && typeof item === 'object' && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).map(([key, value]) => [jsName(key), value]))
      : item);
}

/**
 * The expectation as JavaScript answers it: renew_many's and complete_many's items are `{value,
 * reason}` with reason null when granted (withReason's shape), and a shape error, `bad_request` in
 * the protocol, is `invalid_argument` (the JavaScript API has no request lines to misshape).
 */
function jsExpect(step) {
  const expect = { ...step.expect };
  if (expect.error === 'bad_request') expect.error = 'invalid_argument';
  if (['renew_many', 'complete_many', 'heartbeat'].includes(step.op) && Array.isArray(expect.value)) {
    expect.value = expect.value.map((item) => ({ value: item.value, reason: item.reason ?? null }));
  }
  // A claimed job is the lease its owner holds: the call's owner and the attempt beside the wire's.
  const lease = (claimed) => ({ ...claimed, owner: step.owner, attempt: claimed.fence - (claimed.base ?? 0) });
  if (step.op === 'claim_next' && expect.value !== null && typeof expect.value === 'object') expect.value = lease(expect.value);
  if (step.op === 'claim_next_many' && Array.isArray(expect.value)) expect.value = expect.value.map(lease);
  // A worker row in JavaScript's one casing (`lastSeen`, `counters.leasesLost`).
  if (step.op === 'list_workers' && Array.isArray(expect.value)) {
    const jsKeys = (o) => Object.fromEntries(Object.entries(o).map(([key, value]) => [jsName(key), value]));
    expect.value = expect.value.map((worker) => ({ ...jsKeys(worker), counters: jsKeys(worker.counters) }));
  }
  return expect;
}

/** The positional arguments of SPEC sections 5, 7, 8 and 10 for one protocol step. */
function argsOf(step) {
  const v = { ...step };
  if (step.op === 'enqueue_many') v.jobs = jsItems(step.jobs);
  for (const [name, spelled] of Object.entries(step.nonfinite ?? {})) {
    assert.ok(spelled in NONFINITE, `unknown nonfinite spelling ${spelled}`);
    v[name] = NONFINITE[spelled];
  }
  // `sized`: texts given by their length in bytes, of `x` (tests/vectors/README.md).
  for (const [name, bytes] of Object.entries(step.sized ?? {})) v[name] = 'x'.repeat(bytes);
  if (step.op === 'fenced') return ['fenced', [v.job, v.owner, v.fence, v.now, v.statements, fencedOptions(v)]];
  if (step.op === 'schedule') return ['schedule', [v.name, v.cron, scheduleOptions(v)]];
  if (step.op === 'heartbeat') return ['heartbeat', [v.owner, v.leases, v.now, v.ttl, workerReport(v)]];
  const op = METHODS[step.op];
  if (!op) throw new Error(`vector uses an op the operation table does not have: ${step.op}`);
  // A missing optional argument stays undefined, as a caller who leaves it out passes it.
  return [op.name, op.params.map((p) => v[protocolName(p)])];
}

/** Deep equality where numbers compare by value (10 equals 10.0, and -0 equals 0). */
function same(actual, expected) {
  if (typeof expected === 'number') return typeof actual === 'number' && actual === expected;
  if (expected === null || typeof expected !== 'object') return actual === expected;
  if (Array.isArray(expected)) {
    return (
      Array.isArray(actual) &&
      actual.length === expected.length &&
      expected.every((e, i) => same(actual[i], e))
    );
  }
  if (actual === null || typeof actual !== 'object' || Array.isArray(actual)) return false;
  const keys = Object.keys(expected).sort();
  const got = Object.keys(actual).sort();
  return same(got, keys) && keys.every((k) => same(actual[k], expected[k]));
}

function assertSame(actual, expected, where) {
  assert.ok(
    same(actual, expected),
    `${where}\n  expected: ${JSON.stringify(expected)}\n  actual:   ${JSON.stringify(actual)}`,
  );
}

/** Every job id a vector names (steps, batch items, claim_next answers). */
function jobIdsOf(vector) {
  const ids = new Set();
  for (const step of vector.steps) {
    if (typeof step.job === 'string') ids.add(step.job);
    for (const item of [step.jobs, step.leases].filter(Array.isArray).flat()) {
      if (typeof item?.job === 'string') ids.add(item.job);
    }
    const value = step.expect?.value;
    if (value && typeof value === 'object' && typeof value.job === 'string') ids.add(value.job);
    if (value && typeof value === 'object' && typeof value.id === 'string') ids.add(value.id);
  }
  return [...ids];
}

async function snapshot(store, ids) {
  const states = [];
  for (const id of ids) states.push([id, await store.state(id)]);
  return Object.fromEntries(states);
}

/** Runs every step of `vector` (from `file`, for messages) on `store`. */
export async function runVector(store, vector, file) {
  const ids = jobIdsOf(vector);
  for (const [index, step] of vector.steps.entries()) {
    const where = `${file} step ${index + 1}: ${JSON.stringify(step)}`;
    const [method, args] = argsOf(step);
    const expect = jsExpect(step);
    if ('error' in expect) {
      const before = await snapshot(store, ids);
      let thrown;
      try {
        await store.withReason[method](...args);
      } catch (error) {
        thrown = error;
      }
      assert.ok(thrown instanceof Error, `${where}: expected an Error with code ${expect.error}`);
      assert.equal(thrown.code, expect.error, `${where}: error code (message: ${thrown.message})`);
      assert.deepEqual(await snapshot(store, ids), before, `${where}: the error changed the database`);
    } else if ('winners' in expect) {
      assert.equal(method, 'claimMany', `${where}: winners only for claim_many`);
      const { value, reasons } = await store.withReason.claimMany(...args);
      assert.equal(value.length, args[1].length, `${where}: one answer per owner`);
      const won = value.filter((v) => v !== null);
      assert.equal(won.length, expect.winners, `${where}: winners in ${JSON.stringify(value)}`);
      assert.ok(won.every((f) => f === expect.fence), `${where}: fence in ${JSON.stringify(value)}`);
      // Losers lost to a live lease; the winner (reason null) holds the job now.
      const winner = value.findIndex((v) => v !== null);
      assert.equal(reasons[winner], null, `${where}: the winner has no reason`);
      const state = await store.state(args[0]);
      assert.equal(state.owner, args[1][winner], `${where}: the winner in input order holds the job`);
      assert.equal(state.fence, expect.fence, `${where}: stored fence`);
    } else {
      assert.ok('value' in expect, `${where}: unknown expectation`);
      const answer = await store.withReason[method](...args);
      if (method === 'claimMany') {
        assertSame(answer.value, expect.value, `${where}: value`);
        assert.ok(!('reason' in expect), `${where}: claim_many has per-owner reasons`);
        continue;
      }
      assertSame(answer.value, expect.value, `${where}: value`);
      // The plain method answers the same value (on a read, so it may be called twice).
      if (method === 'state') assertSame(await store.state(...args), expect.value, `${where}: plain`);
      if ('reason' in expect) {
        assertSame(answer.reason, expect.reason, `${where}: reason`);
      } else if (answer.value !== null && answer.value !== false) {
        assert.equal(answer.reason, null, `${where}: a yes carries no reason`);
      } else if (['claim', 'renew', 'complete', 'release', 'fenced'].includes(method)) {
        assert.ok(
          answer.reason && typeof answer.reason.code === 'string',
          `${where}: a no always carries a reason, got ${JSON.stringify(answer.reason)}`,
        );
      }
    }
  }
}

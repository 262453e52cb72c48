// The typings as a TypeScript user gets them: the packed tarball (dist/leasefence-*.tgz) installed
// next to typescript, and user programs that call every exported class, function and method,
// compiled with `tsc --strict --noEmit` (skipLibCheck off, so index.d.ts itself is checked) under
// `module: nodenext` from a CommonJS file (.cts) and from an ES module (.mts), under
// `moduleResolution: bundler`, and under the older `module: commonjs` with `node10` resolution.
// Every result is checked for its exact type (`exact<T>()(value)` does not compile for another
// type, `any` included), so a wrong declaration fails here, not in a user's build. A program with
// deliberate type errors must fail with exactly those errors (the types are checked, not `any`),
// and the names the package exports at runtime, required and imported, are the ones the typings
// declare as values, classes with their static and prototype methods.
//
// The first run downloads typescript and @types/node from the npm registry (into npm's cache);
// later runs install from the cache.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';

import { ROOT, packedTarball, tempDir } from './helpers.mjs';

const TYPESCRIPT = 'typescript@5.9.3';
const TYPES_NODE = '@types/node@20.19.43';
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

let project; // the user's project: the tarball, typescript and @types/node installed

before(() => {
  const tgz = packedTarball();
  project = tempDir('leasefence-ts-');
  const name = path.basename(tgz);
  fs.copyFileSync(tgz, path.join(project, name));
  writeJson(path.join(project, 'package.json'), { name: 'a-typescript-user', version: '1.0.0', private: true });
  const install = spawnSync(
    npm,
    ['install', '--prefer-offline', '--no-audit', '--no-fund', '--no-save', `./${name}`, TYPESCRIPT, TYPES_NODE],
    { cwd: project, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' }, timeout: 280_000 },
  );
  assert.equal(install.status, 0, `npm install failed:\n${shown(`${install.error ?? ''}\n${install.stdout}\n${install.stderr}`)}`);
  // The typings compiled below are the ones in the working tree (a stale tarball would test old ones).
  const packed = fs.readFileSync(path.join(project, 'node_modules/leasefence/index.d.ts'), 'utf8');
  assert.ok(packed === fs.readFileSync(path.join(ROOT, 'node/index.d.ts'), 'utf8'), 'the packed index.d.ts is not node/index.d.ts: run npm run package');
});

/**
 * The first `lines` lines of tsc's output, for a failure message. Messages stay short and
 * assertions compare no long values: the test runner takes minutes to report large ones.
 */
function shown(output, lines = 60) {
  const all = output.split('\n');
  return all.length <= lines ? output : `${all.slice(0, lines).join('\n')}\n... and ${all.length - lines} more lines`;
}

function writeJson(file, value) {
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Options every configuration shares: strict, and the library's own .d.ts checked too. */
const STRICT = { strict: true, noEmit: true, skipLibCheck: false, target: 'es2022', forceConsistentCasingInFileNames: true };
/** A Node project: Node's types, no DOM. */
const NODE = { ...STRICT, lib: ['es2022'], types: ['node'] };

/**
 * Writes `files` ({name: text}) and a tsconfig.json with `options` into project/dir, runs
 * `tsc --strict --noEmit -p dir` there and answers {status, output, errors: ['file:line TScode']}.
 */
function compile(dir, options, files) {
  const at = path.join(project, dir);
  fs.mkdirSync(at, { recursive: true });
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(at, name), text);
  writeJson(path.join(at, 'tsconfig.json'), { compilerOptions: options, files: Object.keys(files) });
  const tsc = path.join(project, 'node_modules/typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '--strict', '--noEmit', '--pretty', 'false', '-p', 'tsconfig.json'], {
    cwd: at,
    encoding: 'utf8',
    timeout: 120_000,
  });
  const output = `${run.stdout}${run.stderr}`.trim();
  const errors = [...output.matchAll(/^(\S[^(\n]*)\((\d+),\d+\): error (TS\d+):/gm)].map(
    ([, file, line, code]) => `${path.basename(file)}:${line} ${code}`,
  );
  return { status: run.status, output, errors };
}

function assertCompiles(result, what) {
  assert.ok(
    result.status === 0 && result.output === '',
    `tsc --strict --noEmit (${what}) exited ${result.status}:\n${shown(result.output)}`,
  );
}

// Compiles only when the value's type is exactly T: not `any`, not wider, not narrower.
const EXACT = `
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function exact<T>() {
  return function <U>(value: U, ..._mismatch: Equal<T, U> extends true ? [] : [error: 'the type is not the expected one']): U {
    return value;
  };
}
`;

/** The package's runtime exports, each checked to be the named import's own type on a module object. */
const VALUES = ['LeaseStore', 'FenceGuard', 'JobWorker', 'LeaseError', 'LeaseLostError', 'fixedBackoff', 'exponentialBackoff', 'fencedResult'];
const sameAsNamed = (module) => VALUES.map((name) => `exact<typeof ${name}>()(${module}.${name});`).join('\n');

/** The imports every program has, as named imports (types too). */
const NAMED = `import {
  LeaseStore,
  FenceGuard,
  JobWorker,
  LeaseError,
  LeaseLostError,
  fixedBackoff,
  exponentialBackoff,
  fencedResult,
  ManualClock,
} from 'leasefence';
import type {
  Fence,
  JobState,
  Reason,
  ClaimedJob,
  Lease,
  Failure,
  Inspection,
  JobCounts,
  Answer,
  SqlParam,
  FencedStatement,
  FencedOptions,
  FencedTx,
  FencedWork,
  NewJob,
  LeaseRef,
  LeaseCompletion,
  OpenOptions,
  LeaseStoreOpenOptions,
  PgOpenOptions,
  PgLeaseStore,
  PgFenceGuard,
  Backoff,
  ExponentialBackoff,
  WorkerRules,
  FencedResult,
  WorkerStats,
  JobContext,
  JobHandler,
  JobWorkerOptions,
  GuardAnswer,
} from 'leasefence';
`;

/** Every class, function and method of the package, each result checked for its exact type. */
const USE_ALL = `${EXACT}
/** Every reason, by its code (exhaustive: a code more or less in Reason fails to compile). */
export function describe(reason: Reason): string {
  switch (reason.code) {
    case 'not_found':
    case 'done':
    case 'not_owner':
    case 'not_dead':
      return reason.code;
    case 'held':
      return \`\${reason.owner ?? 'nobody'} until \${reason.until}\`;
    case 'scheduled':
    case 'expired':
      return String(exact<number>()(reason.until));
    case 'stale_fence':
      return String(exact<Fence>()(reason.fence));
    default: {
      const unknown: never = reason;
      return unknown;
    }
  }
}

export async function postgres(url: string): Promise<void> {
  const options: PgOpenOptions = { busyTimeout: 0.5, maxConnections: 4 };
  const p = exact<PgLeaseStore>()(await LeaseStore.connect(url, options));
  exact<PgLeaseStore>()(await LeaseStore.connect('postgresql://db.internal/queue'));
  exact<string>()(p.url);
  exact<Fence | null>()(await p.claim('job', 'me', 0, 30));
  exact<boolean>()(await p.complete('job', 'me', 1, 1, 'r'));
  exact<Answer<boolean>>()(await p.withReason.renew('job', 'me', 1, 1, 30));
  exact<boolean>()(await p.fenced('job', 'me', 1, 1, async (tx) => {
    exact<{ changes: number }>()(await tx.run('UPDATE t SET a = $1', [1]));
    exact<Record<string, unknown> | undefined>()(await tx.get('SELECT a FROM t'));
  }));
  exact<Answer<boolean>>()(await p.withReason.fenced('job', 'me', 1, 1, [{ sql: 'SELECT 1' }], { complete: true }));
  exact<boolean[]>()(await p.enqueueMany([{ job: 'k' }], [{ sql: 'INSERT INTO t VALUES ($1)', params: ['k'] }]));
  const g = exact<PgFenceGuard>()(await FenceGuard.connect(url, options));
  exact<PgFenceGuard>()(await FenceGuard.connect(url));
  const written = await g.write('k', 1, [{ sql: 'SELECT 1' }]);
  if (written.accepted) exact<Record<string, unknown>[]>()(written.rows);
  else exact<Fence>()(written.current);
  exact<PgFenceGuard>()(g.grouped);
  exact<void>()(await g.close());
  const w = new JobWorker(p, { ttl: 30, concurrency: 4 });
  exact<WorkerStats>()(await w.run(async () => 'done', { untilEmpty: true }));
  exact<void>()(await p.close());
}

/**
 * A target held in a \`string\` (an environment variable, a config file): \`open\` types it as the
 * synchronous file store, and that is what it answers (a URL is refused at run time, naming
 * \`connect\`); \`connect\` types it as the store whose operations answer Promises. No string
 * gets the synchronous type for a PostgreSQL store.
 */
export async function fromString(target: string): Promise<void> {
  const s = exact<LeaseStore>()(await LeaseStore.open(target));
  const fence = exact<Fence | null>()(s.claim('job', 'me', 0, 30));
  if (fence !== null) exact<boolean>()(s.complete('job', 'me', fence, 1, 'r'));
  const p = exact<PgLeaseStore>()(await LeaseStore.connect(target));
  exact<Promise<Fence | null>>()(p.claim('job', 'me', 0, 30));
  exact<FenceGuard>()(await FenceGuard.open(target));
  exact<PgFenceGuard>()(await FenceGuard.connect(target));
}

export async function store(file: string): Promise<void> {
  const options: OpenOptions = { busyTimeout: 0.5 };
  const exclusiveOptions: LeaseStoreOpenOptions = { ...options, exclusive: true };
  exact<boolean | undefined>()(exclusiveOptions.exclusive);
  const s = exact<LeaseStore>()(await LeaseStore.open(file, options));
  exact<LeaseStore>()(await LeaseStore.open(file));
  exact<boolean>()(await LeaseStore.releaseTerminatedWorkerLock(file, 2));
  exact<string>()(s.path);
  // @ts-expect-error: no lastReason; withReason answers the reason with its call
  void s.lastReason;

  exact<boolean>()(s.enqueue('a'));
  exact<boolean>()(s.enqueue('b', 10));
  exact<boolean>()(s.enqueue('c', null, '{"n": 1}'));
  exact<boolean>()(s.enqueue('d', undefined, null));
  const state = exact<JobState | null>()(s.state('a'));
  if (state !== null) {
    const row: [string, string | null, number, Fence, string | null, boolean] = [state.id, state.owner, state.until, state.fence, state.result, state.done];
    void row;
  }
  const fence = exact<Fence | null>()(s.claim('a', 'me', 0, 30));
  if (fence === null) return;
  exact<boolean>()(s.renew('a', 'me', fence, 1, 30));
  exact<boolean>()(s.complete('a', 'me', fence, 2, 'done'));
  exact<boolean>()(s.complete('a', 'me', fence, 2, null));
  exact<boolean>()(s.release('a', 'me', fence));
  exact<boolean>()(s.fail('a', 'me', fence, 3, 10));
  exact<boolean>()(s.fail('a', 'me', fence, 3, null, 'boom'));
  exact<boolean>()(s.fail('a', 'me', fence, 3, null, null));

  const params: SqlParam[] = [null, true, 1, 2n, 'x'];
  const statements: FencedStatement[] = [{ sql: 'INSERT INTO t(a, b, c, d, e) VALUES ($1, $2, $3, $4, $5)', params }, { sql: 'DELETE FROM u' }];
  const complete: FencedOptions = { complete: true, result: 'ok' };
  exact<boolean>()(s.fenced('a', 'me', fence, 4, statements));
  exact<boolean>()(s.fenced('a', 'me', fence, 4, statements, complete));
  exact<boolean>()(s.fenced('a', 'me', fence, 4, statements, { complete: true, result: null }));
  const work: FencedWork = (tx: FencedTx) => {
    exact<{ changes: number }>()(tx.run('INSERT INTO t(a) VALUES ($1)', ['x']));
    exact<{ changes: number }>()(tx.run('DELETE FROM t'));
    exact<Record<string, SqlParam>[]>()(tx.all('SELECT a FROM t'));
    exact<Record<string, SqlParam> | undefined>()(tx.get('SELECT a FROM t WHERE a = $1', [1]));
  };
  exact<boolean>()(s.fenced('a', 'me', fence, 4, work));
  exact<boolean>()(s.fenced('a', 'me', fence, 4, (tx) => void tx.run('DELETE FROM t'), { complete: false }));

  const next = exact<ClaimedJob | null>()(s.claimNext('me', 5, 30));
  if (next !== null) {
    const claimed: [string, string, Fence, string | null, number] = [next.job, next.owner, next.fence, next.payload, next.attempt];
    void claimed;
    // A claim's lease in place of (job, owner, fence), and in a list of the owner's leases.
    exact<boolean>()(s.renew(next, 5, 30));
    exact<boolean>()(s.fenced(next, 5, [{ sql: 'DELETE FROM t' }], { complete: true, result: 'r' }));
    exact<boolean>()(s.fail(next, 5, null, 'boom'));
    exact<boolean>()(s.release(next));
    exact<Answer<boolean>>()(s.withReason.complete(next, 5, 'r'));
    exact<Promise<boolean>>()(s.grouped.complete(next, 5, 'r'));
    exact<Answer<boolean>[]>()(s.renewMany('me', [next], 5, 30));
    exact<Answer<boolean>[]>()(s.completeMany('me', [{ ...next, result: 'r' }], 5));
  }
  const lease = exact<Lease | null>()(s.claimLease('b', 'me', 5, 30));
  if (lease !== null) exact<boolean>()(s.complete(lease, 5, null));
  exact<(Fence | null)[]>()(await s.claimMany('a', ['x', 'y'], 6, 30));
  exact<boolean>()(s.revive('a', 7));
  const inspection = exact<Inspection | null>()(s.inspect('a'));
  if (inspection !== null) {
    exact<JobState>()(inspection.state);
    exact<number>()(inspection.attempts);
    exact<boolean>()(inspection.dead);
    exact<string | null>()(inspection.payload);
    for (const failure of exact<Failure[]>()(inspection.failures)) {
      const recorded: [Fence, number, string | null] = [failure.fence, failure.at, failure.error];
      void recorded;
    }
  }
  const counts = exact<JobCounts>()(s.stats(8));
  exact<number>()(counts.queued + counts.scheduled + counts.leased + counts.done + counts.dead);

  const w = s.withReason;
  exact<Answer<boolean>>()(w.enqueue('e'));
  exact<Answer<boolean>>()(w.enqueue('e', 1, 'payload'));
  exact<Answer<JobState | null>>()(w.state('e'));
  const claim = exact<Answer<Fence | null>>()(w.claim('e', 'me', 9, 30));
  exact<Fence | null>()(claim.value);
  if (claim.reason !== null) describe(claim.reason);
  exact<Answer<boolean>>()(w.renew('e', 'me', 1, 9, 30));
  exact<Answer<boolean>>()(w.complete('e', 'me', 1, 9, null));
  exact<Answer<boolean>>()(w.release('e', 'me', 1));
  exact<Answer<ClaimedJob | null>>()(w.claimNext('me', 9, 30));
  const many = exact<{ value: (Fence | null)[]; reasons: (Reason | null)[] }>()(await w.claimMany('e', ['x'], 9, 30));
  many.reasons.forEach((reason) => reason && describe(reason));
  exact<Answer<boolean>>()(w.fail('e', 'me', 1, 9, null));
  exact<Answer<boolean>>()(w.fail('e', 'me', 1, 9, 20, 'again'));
  exact<Answer<boolean>>()(w.revive('e', 9));
  exact<Answer<Inspection | null>>()(w.inspect('e'));
  exact<Answer<JobCounts>>()(w.stats(9));
  const g = s.grouped;
  exact<Promise<boolean>>()(g.enqueue('e', null, 'p'));
  exact<Promise<ClaimedJob | null>>()(g.claimNext('me', 9, 30));
  exact<Promise<boolean>>()(g.complete('e', 'me', 1, 9, 'done'));
  exact<Promise<Answer<boolean>>>()(g.withReason.renew('e', 'me', 1, 9, 30));
  exact<Promise<(Fence | null)[]>>()(g.claimMany('e', ['x'], 9, 30));
  exact<Answer<boolean>>()(w.fenced('e', 'me', 1, 9, statements));
  exact<Answer<boolean>>()(w.fenced('e', 'me', 1, 9, work, complete));

  const jobs: NewJob[] = [{ job: 'm1' }, { job: 'm2', runAt: 5 }, { job: 'm3', runAt: null, payload: 'p' }];
  exact<boolean[]>()(s.enqueueMany(jobs));
  const batch = exact<ClaimedJob[]>()(s.claimNextMany('me', 3, 9, 30));
  const refs: LeaseRef[] = batch.map(({ job, fence }) => ({ job, fence }));
  const renewed = exact<Answer<boolean>[]>()(s.renewMany('me', refs, 10, 30));
  renewed.forEach((item) => item.reason && describe(item.reason));
  const done: LeaseCompletion[] = batch.map(({ job, fence }) => ({ job, fence, result: 'ok' }));
  exact<Answer<boolean>[]>()(s.completeMany('me', [...done, { job: 'm1', fence: 1 }], 11));
  exact<Answer<boolean[]>>()(w.enqueueMany([{ job: 'm4' }]));
  exact<Answer<ClaimedJob[]>>()(w.claimNextMany('me', 1, 12, 30));
  exact<Answer<Answer<boolean>[]>>()(w.renewMany('me', refs, 12, 30));
  exact<Answer<Answer<boolean>[]>>()(w.completeMany('me', done, 12));

  try {
    s.claim('', 'me', 0, 30);
  } catch (caught) {
    const error = caught as LeaseError;
    exact<'invalid_argument' | 'storage'>()(error.code);
    exact<boolean>()(error.retryable);
    exact<string>()(error.message);
    if (caught instanceof LeaseError) exact<boolean>()(caught.retryable);
  }
  const made = exact<LeaseError<'storage'>>()(new LeaseError('busy', { code: 'storage', retryable: true, statement: 1 }));
  exact<Error>()(made as Error);
  exact<'LeaseError' | 'LeaseLostError'>()(made.name);
  exact<void>()(s.close());
}

export async function guard(file: string): Promise<void> {
  const g = exact<FenceGuard>()(await FenceGuard.open(file, { busyTimeout: 0.1 }));
  exact<FenceGuard>()(await FenceGuard.open(file));
  const answer = exact<GuardAnswer>()(g.write('key', 3, [{ sql: 'UPDATE t SET a = $1', params: [1] }]));
  if (answer.accepted) {
    exact<Record<string, SqlParam>[]>()(answer.rows);
  } else {
    exact<Fence>()(answer.current);
    exact<[]>()(answer.rows);
  }
  exact<GuardAnswer>()(await g.grouped.write('key', 4, [{ sql: 'UPDATE t SET a = $1', params: [2] }]));
  exact<void>()(g.close());
}

export async function worker(s: LeaseStore): Promise<void> {
  const fixed: Backoff = fixedBackoff(5);
  exact<number>()(fixed(1, new Error('failed')));
  const exponentials: ExponentialBackoff[] = [
    exponentialBackoff(),
    exponentialBackoff({}),
    exponentialBackoff({ base: 1, factor: 2, max: 60, jitter: 0.5, random: Math.random }),
  ];
  exact<number>()(exponentials[2].base);
  const rules: WorkerRules = s.workerRules;
  exact<number | null>()(rules.retryAt(1000, 1, 3, 5));
  const clock = new ManualClock(1000);
  clock.advance(1);
  new JobWorker(s, { ttl: 30, clock, backoff: exponentials[0] });
  const options: JobWorkerOptions = {
    owner: 'worker-1',
    ttl: 30,
    heartbeatEvery: 10,
    maxAttempts: Infinity,
    backoff: 3,
    clock: () => Date.now() / 1000,
    idle: 1,
    abandonAfter: 30,
    onError: (error: LeaseError, context: { op: string; job?: string }) => {
      console.log(error.code, error.retryable, context.op, context.job ?? '');
    },
    heartbeat: 'loop',
  };
  const wk = new JobWorker(s, options);
  new JobWorker(s, { ttl: 30, heartbeat: 'thread', backoff: exponentialBackoff({ max: 10 }) });
  new JobWorker(s, { ttl: 30, concurrency: 64 });
  new JobWorker(s, { ttl: 30, backoff: (attempt: number, error: unknown) => (error instanceof Error ? attempt : 1) });
  exact<string>()(wk.owner);
  const stats = exact<WorkerStats>()(wk.stats);
  exact<number>()(stats.claimed + stats.completed + stats.failed + stats.dead + stats.leasesLost + stats.staleWritesRefused + stats.renewals);
  // Events: each listener gets its event's detail; on and off chain.
  exact<typeof wk>()(wk.on('completed', (d) => exact<string | null>()(d.result)).on('failed', (d) => exact<number>()(d.retryAt + d.attempt)));
  wk.on('dead', (d) => exact<string | null>()(d.error)).on('released', (d) => exact<string>()(d.job)).on('lost', (d) => exact<Reason>()(d.reason));
  wk.off('completed', () => undefined);
  // @ts-expect-error: there is no event 'complete'
  wk.on('complete', () => undefined);

  const lost = new LeaseLostError('lease_lost', 'the lease ended', { code: 'expired', until: 3 });
  exact<Error>()(lost as Error);
  const base: LeaseError<'lease_lost' | 'stopped'> = lost;
  void base;
  exact<boolean>()(lost.retryable);
  exact<LeaseLostError>()(new LeaseLostError('stopped', 'stopped'));
  exact<'LeaseLostError'>()(lost.name);
  exact<'lease_lost' | 'stopped'>()(lost.code);
  exact<Reason | null>()(lost.reason);

  const result = exact<FencedResult>()(fencedResult([{ sql: 'INSERT INTO t(a) VALUES ($1)', params: ['x'] }], { total: 1 }));
  exact<FencedResult>()(fencedResult([]));
  exact<readonly FencedStatement[]>()(result.statements);
  exact<unknown>()(result.result);

  const handler: JobHandler = async (job: string, context: JobContext) => {
    const { signal, payload, fence, attempt, lease } = context;
    exact<Lease>()(lease);
    exact<boolean>()(await s.grouped.renew(lease, 1, 30));
    exact<AbortSignal>()(signal);
    exact<string | null>()(payload);
    exact<Fence>()(fence);
    exact<number>()(attempt);
    signal.addEventListener('abort', () => {
      const why: unknown = signal.reason;
      if (why instanceof LeaseLostError && why.reason !== null) console.log(why.code, describe(why.reason));
    });
    if (payload === null) return fencedResult([{ sql: 'INSERT INTO done(job) VALUES ($1)', params: [job] }], 'ok');
    return { job, payload };
  };
  exact<WorkerStats>()(await wk.run(handler));
  exact<WorkerStats>()(await wk.run((job) => \`ran \${job}\`, { untilEmpty: true }));
  exact<WorkerStats>()(await wk.run(async (_job, { signal }) => signal.aborted, { untilDrained: true }));
  exact<void>()(await wk.stop());
  exact<void>()(await wk.stop({ grace: 5 }));
}
`;

test('tsc --strict, module nodenext, from a CommonJS file (.cts): require and import', { timeout: 300_000 }, () => {
  const program = `${NAMED}import leasefence = require('leasefence');
${USE_ALL}
// The module object require() gives.
${sameAsNamed('leasefence')}
const fence: leasefence.Fence = 1;
void fence;
`;
  assertCompiles(compile('nodenext-cjs', { ...NODE, module: 'nodenext' }, { 'use.cts': program }), 'nodenext, .cts');
});

test('tsc --strict, module nodenext, from an ES module (.mts): named, default and namespace imports', { timeout: 300_000 }, () => {
  const program = `${NAMED}import leasefence from 'leasefence';
import * as namespace from 'leasefence';
${USE_ALL}
${sameAsNamed('leasefence')}
exact<typeof LeaseStore>()(namespace.LeaseStore);
exact<typeof fencedResult>()(namespace.fencedResult);
await store('top-level-await.db');
`;
  assertCompiles(compile('nodenext-esm', { ...NODE, module: 'nodenext' }, { 'use.mts': program }), 'nodenext, .mts');
});

test('tsc --strict, module esnext with moduleResolution bundler', { timeout: 300_000 }, () => {
  const program = `${NAMED}import leasefence from 'leasefence';
${USE_ALL}
exact<typeof LeaseStore>()(leasefence.LeaseStore);
exact<typeof fencedResult>()(leasefence.fencedResult);
`;
  // A bundled app: the DOM's types, not Node's.
  const options = { ...STRICT, module: 'esnext', moduleResolution: 'bundler', lib: ['es2022', 'dom'], types: [] };
  assertCompiles(compile('bundler', options, { 'use.ts': program }), 'module esnext, moduleResolution bundler');
});

test('tsc --strict, module commonjs with moduleResolution node10 (the typings found by `types`, not `exports`)', { timeout: 300_000 }, () => {
  const program = `${NAMED}import leasefence = require('leasefence');
import interop from 'leasefence';
${USE_ALL}
exact<typeof LeaseStore>()(leasefence.LeaseStore);
exact<typeof fencedResult>()(interop.fencedResult);
`;
  const options = { ...NODE, module: 'commonjs', moduleResolution: 'node10', esModuleInterop: true };
  assertCompiles(compile('node10', options, { 'use.ts': program }), 'module commonjs, moduleResolution node10');
});

test('tsc fails on type errors in a user program, with exactly the expected errors', { timeout: 300_000 }, () => {
  // Each line marked `// expect TSnnnn` must fail with that error, and nothing else may fail.
  const program = `import { LeaseStore, FenceGuard, JobWorker, FencedResult, fencedResult } from 'leasefence';
import type { Reason } from 'leasefence';
import leasefence = require('leasefence');
${EXACT}
export async function wrong(s: LeaseStore, reason: Reason): Promise<void> {
  s.claim('job', 'me', 0, '30'); // expect TS2345
  const fence: string | null = s.claim('job', 'me', 0, 30); // expect TS2322
  exact<string>()(s.claim('job', 'me', 0, 30)); // expect TS2554
  const untyped: any = s;
  exact<LeaseStore>()(untyped); // expect TS2554
  s.enqueue('job', 'soon'); // expect TS2345
  s.fenced('job', 'me', 1, 0, [{ sql: 'UPDATE t SET a = $1', params: [{}] }]); // expect TS2345
  s.renew({ job: 'job', fence: 1 }, 0, 30); // expect TS2345
  s.complete(s.claimLease('job', 'me', 0, 30), 0, null); // expect TS2345
  s.withReason.stats(0).value.running; // expect TS2339
  s.grouped.complete('job', 'me', 1, 0, 'r').value; // expect TS2339
  s.enqueueMany([{ job: 'j', run_at: 5 }]); // expect TS2561
  s.renewMany('me', [{ job: 'j', fence: 1, result: 'r' }], 0, 30); // expect TS2353
  s.claimNextMany('me', 0, 30); // expect TS2554
  new LeaseStore(); // expect TS2673
  await LeaseStore.open(); // expect TS2554
  (await LeaseStore.connect('postgres://db/queue')).claim('job', 'me', 0, 30).value; // expect TS2339
  (await LeaseStore.connect('postgres://db/queue')).fenced('job', 'me', 1, 0, (tx) => { tx.run('SELECT 1').changes; }); // expect TS2339
  // A URL in a \`string\`: only connect() gives the store that answers Promises, and a Promise
  // tested for truth (the bug: always true) does not compile; open() and connect() take only
  // their own options.
  const url: string = reason.code;
  const pg = await LeaseStore.connect(url);
  if (pg.claim('job', 'me', 0, 30)) void pg; // expect TS2801
  if ((await FenceGuard.connect(url)).write('k', 1, [])) void pg; // expect TS2801
  await LeaseStore.open(url, { maxConnections: 4 }); // expect TS2353
  await LeaseStore.connect(url, { exclusive: true }); // expect TS2353
  pg.path; // expect TS2339
  new JobWorker(s, { owner: 'w' }); // expect TS2345
  new JobWorker(s, { ttl: 30, heartbeat: 'threads' }); // expect TS2820
  if (reason.code === 'held') reason.fence; // expect TS2339
  // require('leasefence') has no \`default\`; FencedResult is a type only (the package exports no such value).
  leasefence.default; // expect TS2339
  fencedResult([]) instanceof FencedResult; // expect TS1362
  void fence;
}
`;
  const result = compile('negative', { ...NODE, module: 'nodenext' }, { 'wrong.cts': program });
  const expected = program
    .split('\n')
    .flatMap((line, i) => [...line.matchAll(/\/\/ expect (TS\d+)/g)].map(([, code]) => `wrong.cts:${i + 1} ${code}`));
  assert.ok(result.status !== 0, `tsc accepted a program with type errors:\n${shown(result.output)}`);
  const missing = expected.filter((e) => !result.errors.includes(e));
  const unexpected = result.errors.filter((e) => !expected.includes(e));
  assert.ok(
    missing.length === 0 && unexpected.length === 0,
    `tsc's errors are not the expected ones: missing ${JSON.stringify(missing)}, ${unexpected.length} unexpected:\n${shown(result.output)}`,
  );
});

// Run in the user's project: the value exports the typings declare (what `typeof` a require and a
// namespace import has, as tsc sees them) and the classes' static and prototype methods, next to
// what require() and import() give at runtime.
const EXPORTS_PROBE = String.raw`
const ts = require('typescript');
const path = require('node:path');

function declaredOf(dir, file) {
  const config = ts.getParsedCommandLineOfConfigFile(path.join(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
  const program = ts.createProgram(config.fileNames, config.options);
  const diagnostics = ts.getPreEmitDiagnostics(program);
  if (diagnostics.length) throw new Error(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (f) => f, getCurrentDirectory: () => dir, getNewLine: () => '\n' }));
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(path.join(dir, file));
  let binding;
  source.forEachChild((node) => {
    if (ts.isImportEqualsDeclaration(node)) binding = node.name;
    if (ts.isImportDeclaration(node) && node.importClause?.namedBindings && ts.isNamespaceImport(node.importClause.namedBindings)) binding = node.importClause.namedBindings.name;
  });
  const ours = (symbol) => (symbol.declarations ?? []).some((d) => d.getSourceFile().fileName.includes('/node_modules/leasefence/'));
  const members = {};
  const exports = checker.getTypeAtLocation(binding).getProperties().map((symbol) => {
    const type = checker.getTypeOfSymbolAtLocation(symbol, binding);
    const prototype = type.getProperty('prototype');
    if (prototype && symbol.name !== 'default') {
      const instance = checker.getTypeOfSymbolAtLocation(prototype, binding);
      members[symbol.name] = {
        static: type.getProperties().filter((p) => p.name !== 'prototype' && ours(p)).map((p) => p.name).sort(),
        methods: instance.getProperties().filter((p) => ours(p) && p.declarations.every((d) => ts.isMethodDeclaration(d) || ts.isMethodSignature(d))).map((p) => p.name).sort(),
        properties: instance.getProperties().filter((p) => ours(p) && p.declarations.every((d) => ts.isPropertyDeclaration(d) || ts.isPropertySignature(d) || ts.isGetAccessor(d))).map((p) => p.name).sort(),
      };
    }
    return symbol.name;
  });
  return { exports: exports.sort(), members };
}

function runtimeOf(module) {
  const members = {};
  for (const [name, value] of Object.entries(module)) {
    if (typeof value !== 'function' || !value.prototype || name === 'default') continue;
    const methods = new Set();
    const getters = new Set();
    for (let p = value.prototype; p && p !== Object.prototype && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
      for (const [key, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
        if (key === 'constructor') continue;
        if (typeof d.value === 'function') methods.add(key);
        else if (d.get) getters.add(key);
      }
    }
    const statics = Object.getOwnPropertyNames(value).filter((k) => !['length', 'name', 'prototype'].includes(k));
    members[name] = { static: statics.sort(), methods: [...methods].sort(), getters: [...getters].sort() };
  }
  return { exports: Object.keys(module).sort(), members };
}

(async () => {
  console.log(JSON.stringify({
    declared: { require: declaredOf(path.resolve('probe-cjs'), 'use.cts'), import: declaredOf(path.resolve('probe-esm'), 'use.mts') },
    runtime: { require: runtimeOf(require('leasefence')), import: runtimeOf(await import('leasefence')) },
  }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

test('the values the typings declare are the ones the package exports, required and imported', { timeout: 300_000 }, () => {
  const probe = (dir, file, imports) => {
    fs.mkdirSync(path.join(project, dir), { recursive: true });
    fs.writeFileSync(path.join(project, dir, file), imports);
    writeJson(path.join(project, dir, 'tsconfig.json'), { compilerOptions: { ...NODE, module: 'nodenext' }, files: [file] });
  };
  probe('probe-cjs', 'use.cts', "import leasefence = require('leasefence');\nvoid leasefence;\n");
  probe('probe-esm', 'use.mts', "import * as leasefence from 'leasefence';\nvoid leasefence;\n");
  fs.writeFileSync(path.join(project, 'exports-probe.cjs'), EXPORTS_PROBE);
  const run = spawnSync(process.execPath, ['exports-probe.cjs'], { cwd: project, encoding: 'utf8', timeout: 120_000 });
  assert.ok(run.status === 0, `the exports probe failed:\n${shown(`${run.stdout}\n${run.stderr}`)}`);
  const { declared, runtime } = JSON.parse(run.stdout);
  for (const how of ['require', 'import']) {
    assert.deepEqual(declared[how].exports, runtime[how].exports, `${how}('leasefence'): the values declared (actual) are not the values exported (expected)`);
    for (const [name, members] of Object.entries(runtime[how].members)) {
      const types = declared[how].members[name];
      assert.ok(types, `${name} is a class at runtime but not declared as one`);
      assert.deepEqual(types.static, members.static, `${name}: static members declared (actual) vs at runtime (expected)`);
      assert.deepEqual(types.methods, members.methods, `${name}: methods declared (actual) vs on the prototype (expected)`);
      for (const getter of members.getters) assert.ok(types.properties.includes(getter), `${name}.${getter} (a getter) is not declared`);
    }
  }
});

/** A fencing token: grows by one with every claim of a job, never reused. */
export type Fence = number;

/** A job row as stored. */
export interface JobState {
  id: string;
  owner: string | null;
  /** When the latest lease ends, in the caller's seconds; 0 when never claimed or released. */
  until: number;
  fence: Fence;
  result: string | null;
  done: boolean;
}

/** Why the store said no. When several apply, the first in this order is reported. */
export type Reason =
  | { code: 'not_found' }
  | { code: 'done' }
  | { code: 'held'; owner: string | null; until: number }
  /** Nobody holds the job, but it may not be claimed before `until` (run_at, or a retry time). */
  | { code: 'scheduled'; until: number }
  | { code: 'stale_fence'; fence: Fence }
  | { code: 'not_owner' }
  | { code: 'expired'; until: number }
  /** `revive` only: the job is not dead. */
  | { code: 'not_dead' };

/**
 * A lease: who holds which generation of a job. `claimLease` and `claimNext` answer one, and
 * `renew`, `complete`, `fail`, `release` and `fenced` take it in place of `(job, owner, fence)`;
 * a list of `renewMany`, `completeMany` or `heartbeat` may hold leases of the call's owner.
 * @example
 * const lease = store.claimNext('worker-a', Date.now() / 1000, 30);
 * if (lease) store.complete(lease, Date.now() / 1000, 'done');
 */
export interface Lease {
  job: string;
  /** Who claimed it. */
  owner: string;
  /** The generation this lease holds: the store refuses every write made with an older one. */
  fence: Fence;
}

/** The job `claimNext` claimed: its lease, with the payload given at enqueue (or null). */
export interface ClaimedJob extends Lease {
  /** The new lease's fence. */
  fence: Fence;
  payload: string | null;
  /** Which attempt this is: 1 for the first claim (`fence - (base ?? 0)`). */
  attempt: number;
  /**
   * The fence the job started at, present when not 0: the store's fence floor when the job was
   * enqueued (after a `prune`). The attempt is `fence - (base ?? 0)`.
   */
  base?: Fence;
}

/** One recorded `fail`: the attempt (fence), the caller's `now`, the error text. */
export interface Failure {
  fence: Fence;
  at: number;
  error: string | null;
}

/** Everything stored about one job. */
export interface Inspection {
  state: JobState;
  /** How often the job was claimed: its fence. */
  attempts: number;
  /** Failed for good (`fail` with retryAt null); `revive` brings it back. */
  dead: boolean;
  payload: string | null;
  /** Every failure, oldest first. */
  failures: Failure[];
  /** The job's queue: "default" unless enqueued with one. */
  queue: string;
  /** The job's priority: higher is claimed first; 0 unless enqueued with one. */
  priority: number;
}

/** How many jobs are in each state at a time. */
export interface JobCounts {
  /** Claimable now. */
  queued: number;
  /** Held by nobody but not claimable yet (run_at, or backing off after a failure). */
  scheduled: number;
  /** Held by a live lease. */
  leased: number;
  done: number;
  dead: number;
}

/** A value with the reason the store refused, or reason null when it agreed. */
export interface Answer<T> {
  value: T;
  reason: Reason | null;
}

/**
 * The one error class of the package: everything it throws is a LeaseError (`instanceof` works),
 * in Node and in the browser build. Thrown for bad arguments (`invalid_argument`) and storage
 * failures (`storage`), and then nothing changed; the worker runtime's LeaseLostError extends it.
 */
export declare class LeaseError<Code extends string = 'invalid_argument' | 'storage'> extends Error {
  /** `fields` may carry more than `code` and `retryable` (e.g. a `reason`); they are kept on the error. */
  constructor(message: string, fields: { code: Code; retryable?: boolean; [field: string]: unknown });
  readonly name: 'LeaseError' | 'LeaseLostError';
  /** The store's errors: `invalid_argument` or `storage`; a LeaseLostError's: `lease_lost` or `stopped`. */
  readonly code: Code;
  /** Whether the same call may succeed if made again (a busy database); false for a broken constraint or a closed store. */
  readonly retryable: boolean;
}

/** A parameter of a fenced statement: what it binds to in SQL (a safe integer binds as an integer). */
export type SqlParam = null | boolean | number | bigint | string;

/** One of your statements: `$1`, `$2`, ... take `params` in order. */
export interface FencedStatement {
  sql: string;
  params?: SqlParam[];
}

/** What `fenced` does besides your statements: `complete: true` completes the job (with `result`) in the same commit. */
export interface FencedOptions {
  complete?: boolean;
  result?: string | null;
}

/** The handle a fenced callback gets: statements on your own tables, inside the fenced transaction. */
export interface FencedTx {
  /** Runs one statement; how many rows it changed. */
  run(sql: string, params?: SqlParam[]): { changes: number };
  /** The rows of one query, as objects keyed by column name. */
  all(sql: string, params?: SqlParam[]): Record<string, SqlParam>[];
  /** The first row of one query, or undefined. */
  get(sql: string, params?: SqlParam[]): Record<string, SqlParam> | undefined;
}

/** A synchronous callback running your statements (Node only); a throw rolls everything back. */
export type FencedWork = (tx: FencedTx) => void;

/** One job of `enqueueMany`: `enqueue`'s arguments as an object. */
export interface NewJob {
  job: string;
  /** Not claimable before this time (default: at once). */
  runAt?: number | null;
  payload?: string | null;
  /** The queue it joins (default "default"). */
  queue?: string | null;
  /** Higher is claimed first (default 0); an integer. */
  priority?: number | null;
}

/** One lease of `renewMany`: the job and the fence you hold (the owner is the call's). */
export interface LeaseRef {
  job: string;
  fence: Fence;
}

/** One lease of `completeMany`, with the result to store (left out: null). */
export interface LeaseCompletion extends LeaseRef {
  result?: string | null;
}

/** The options of `schedule` (recurring jobs, docs/contract.md section 11); each may be left out. */
export interface ScheduleOptions {
  /** The IANA time zone the cron pattern is read in, e.g. "America/New_York" (default UTC). */
  tz?: string | null;
  /** The queue of its jobs (default "default"). */
  queue?: string | null;
  /** The priority of its jobs (default 0); an integer. */
  priority?: number | null;
  /** The payload of its jobs. */
  payload?: string | null;
  /** After a downtime: "latest" (default) enqueues only the latest slot, "all" every missed one (at most 1024). */
  missed?: 'latest' | 'all' | null;
}

/** The state a job is in at a time: the five that `stats` counts. */
export type JobStatus = 'queued' | 'scheduled' | 'leased' | 'done' | 'dead';

/** One job of a `listJobs` page: its row, its state at `now`, its queue, priority and failure count. */
export interface JobSummary extends JobState {
  status: JobStatus;
  queue: string;
  priority: number;
  failures: number;
}

/** A `listJobs` page; pass `next` (an opaque cursor, null on the last page) as the next call's `after`. */
export interface JobPage {
  jobs: JobSummary[];
  next: string | null;
}

/** One queue's counts, as `queueStats` lists them. */
export interface QueueCounts {
  queue: string;
  counts: JobCounts;
}

/**
 * What a worker says of itself in `heartbeat` (the worker registry): its machine, process id and
 * start (Unix seconds), whether this is its last beat, and its counters so far (totals; absent is 0).
 * A JobWorker sends it with its renewals.
 */
export interface WorkerReport {
  host: string;
  pid: number;
  started: number;
  stopping?: boolean | null;
  claimed?: number | null;
  completed?: number | null;
  failed?: number | null;
  dead?: number | null;
  leasesLost?: number | null;
  staleWritesRefused?: number | null;
  renewals?: number | null;
}

/** What a worker's runtime counted since it was made: its `stats`, and the registry's row of it. */
export interface WorkerCounters {
  /** Jobs claimed (each claim is one attempt). */
  claimed: number;
  /** Jobs completed with the handler's result. */
  completed: number;
  /** Handler failures recorded with a retry time (`fail` with retryAt). */
  failed: number;
  /** Jobs made dead: the handler failed at maxAttempts, or a claim came past maxAttempts. */
  dead: number;
  /** Leases lost while handling: a refused renew or write, or a lease end with no renew through. */
  leasesLost: number;
  /** complete / fail / release calls the store refused (the lease was gone). */
  staleWritesRefused: number;
  /** Renews the store accepted. */
  renewals: number;
}

/** A lease a worker holds, as `listWorkers` lists it. */
export interface HeldLease {
  job: string;
  fence: Fence;
  until: number;
}

/**
 * A worker's row at `now`, as `listWorkers` answers it: alive while its last beat's ttl lasts and
 * it did not stop; `held` counts its live leases, `holding` lists up to 100, soonest to end first.
 */
export interface WorkerInfo {
  owner: string;
  host: string;
  pid: number;
  started: number;
  lastSeen: number;
  until: number;
  stopped: number | null;
  alive: boolean;
  counters: WorkerCounters;
  held: number;
  holding: HeldLease[];
}

/** One queue of `oldestWaiting`: since when (Unix seconds) its longest-waiting claimable job has waited. */
export interface QueueWaiting {
  queue: string;
  since: number;
}

/** `nextDue`'s answer: when a job of the queues asked falls due, and the next schedule slot (Unix seconds, or null). */
export interface NextDue {
  job: number | null;
  slot: number | null;
}

/** A stored schedule, as `schedules()` lists it; `last` is its latest slot enqueued (Unix seconds) or null. */
export interface StoredSchedule {
  name: string;
  cron: string;
  tz: string | null;
  queue: string;
  priority: number;
  payload: string | null;
  missed: 'latest' | 'all';
  last: number | null;
}

export interface OpenOptions {
  /**
   * How long to wait for another process's lock before failing with `storage`, in seconds like
   * every time here (default 10; `0.25` is a quarter second). Before 0.1.0 this was
   * `busyTimeoutMs`, in milliseconds: that name is now refused with `invalid_argument`.
   */
  busyTimeout?: number;
}

/** How `LeaseStore.open` opens its file: {@link OpenOptions} and `exclusive`. */
export interface LeaseStoreOpenOptions extends OpenOptions {
  /**
   * The wasm engine only (the native engine, the default, shares WAL files between processes with
   * one sync per commit and refuses this option). Own the file alone until `close()` (default
   * false): WAL mode with one sync per commit instead of four, every commit still durable before
   * its call returns. While the store is open, every
   * other opener (another process, Node or the native CLI, exclusive or not) is refused with a
   * `storage` error that says so, and `claimMany` and `heartbeat: 'thread'` (which open
   * connections of their own) throw `invalid_argument`. `close()` puts the file back in its
   * usual mode; a file whose owner died is recovered by the next opener, losing no commit.
   * @example const store = await LeaseStore.open('queue.db', { exclusive: true });
   */
  exclusive?: boolean;
  /**
   * The largest payload, result and failure error text the store accepts, in bytes (defaults
   * 1 MiB, 1 MiB and 64 KiB; 0: no limit). Bigger is `invalid_argument` naming the size and the
   * limit, and nothing changes.
   * @example const store = await LeaseStore.open('queue.db', { limits: { result: 4 << 20 } });
   */
  limits?: { payload?: number; result?: number; error?: number };
  /**
   * The native engine: whether this store's writers (and those of the connections it opens for
   * `claimMany` and `heartbeat: 'thread'`) queue first-come, first-served on
   * `<file>-leasefence-gate` before taking SQLite's write lock, as the Rust library's do (default
   * true). `false` leaves every wait to SQLite's busy handler. The wasm engine has no gate (its
   * writers queue on its dot-file lock) and ignores it.
   * @example const store = await LeaseStore.open('queue.db', { writeGate: false });
   */
  writeGate?: boolean;
}

/**
 * How `LeaseStore.connect` and `FenceGuard.connect` open a PostgreSQL server: {@link OpenOptions}
 * (the busy timeout is each connection's `lock_timeout`, and the connect timeout, at least a
 * second) and the pool's size.
 */
export interface PgOpenOptions extends OpenOptions {
  /** At most this many connections at once (default 10). */
  maxConnections?: number;
}

/**
 * A lease store on one SQLite file, its operations synchronous: `await LeaseStore.open(path)`.
 * A PostgreSQL server is `await LeaseStore.connect(url)`, a {@link PgLeaseStore} whose operations
 * answer Promises. The two entry points never cross: `open` refuses a URL at run time, so a
 * `string` that holds one can never be typed as this synchronous store.
 */
export declare class LeaseStore {
  private constructor();
  /**
   * Opens (creating if missing) the SQLite file at `path`. A URL (`postgres://...`, any
   * `scheme://...`) is refused with `invalid_argument`: a PostgreSQL server is `LeaseStore.connect`.
   * @example const store = await LeaseStore.open('queue.db');
   */
  static open(path: string, options?: LeaseStoreOpenOptions): Promise<LeaseStore>;
  /**
   * Opens a store on the PostgreSQL server at `url`, postgres:// or postgresql:// (needs the `pg`
   * package, an optional peer dependency): the schema is checked (and made where missing) on a
   * first connection, so a wrong password or an unreachable server rejects here. Its operations
   * answer Promises. Anything but such a URL is refused with `invalid_argument`.
   * @example const store = await LeaseStore.connect('postgres://app@db.internal/queue');
   */
  static connect(url: string, options?: PgOpenOptions): Promise<PgLeaseStore>;
  /**
   * Frees the file lock of a worker thread stopped with `worker.terminate()` while it had a store
   * open on `file`. Call it from the worker's `exit` handler; resolves to whether a lock was freed.
   */
  static releaseTerminatedWorkerLock(file: string, threadId: number): Promise<boolean>;
  /** The absolute path of the database file. */
  readonly path: string;
  /**
   * Which engine runs this store (one per process): `'native'`, the Node-API addon (the library's
   * own SQLite, WAL, POSIX locks: shares the file with native processes), or `'wasm'` (its own
   * file format: rollback journal and dot-file locks), the fallback where the addon does not load
   * (a process warning, code `LEASEFENCE_WASM_FALLBACK`, says so). `LEASEFENCE_ENGINE=native|wasm`
   * chooses.
   */
  readonly engine: 'native' | 'wasm';
  /**
   * Calls `onChange` when the database file (or its `-wal`, `-journal`) changes, by any process;
   * false alarms included. `null` where the directory cannot be watched. JobWorker uses it to wake.
   */
  watch(onChange: () => void): { close(): void } | null;
  /** The worker runtime's rules, computed by the crate's core; JobWorker uses them. */
  readonly workerRules: WorkerRules;
  // <generated operations: scripts/generate-operations.mjs>
  /**
   * Adds a job; false when the id exists (nothing changes, its payload included). Nobody can claim
   * it before `runAt` (default: at once); `payload` is handed to whoever claims it.
   */
  enqueue(job: string, runAt?: number | null, payload?: string | null, queue?: string | null, priority?: number | null): boolean;
  /** The stored row, or null. */
  state(job: string): JobState | null;
  /** The new fence, or null when missing, done or held. */
  claim(job: string, owner: string, now: number, ttl: number): Fence | null;
  /** Extends your live lease to `now + ttl`. */
  renew(...args: [job: string, owner: string, fence: Fence, now: number, ttl: number] | [lease: Lease, now: number, ttl: number]): boolean;
  /** Stores the result and marks the job done, for the current live lease only. */
  complete(...args: [job: string, owner: string, fence: Fence, now: number, result: string | null] | [lease: Lease, now: number, result: string | null]): boolean;
  /** Gives your lease up early; the fence is kept. */
  release(...args: [job: string, owner: string, fence: Fence] | [lease: Lease]): boolean;
  /**
   * Claims one job for every owner at once; on a claimable job exactly one gets a fence. In Node
   * each owner claims on its own worker thread and connection.
   */
  claimMany(job: string, owners: string[], now: number, ttl: number): Promise<(Fence | null)[]>;
  /**
   * Claims the next claimable job of `queues` (null: every queue): higher priority first, then the
   * earliest due.
   */
  claimNext(owner: string, now: number, ttl: number, queues?: string[] | null): ClaimedJob | null;
  /**
   * Records a failure of your live lease (the checks of complete). With a `retryAt` the job waits,
   * unowned, until then (fence kept); with null it is dead: done with no result, until `revive`.
   */
  fail(...args: [job: string, owner: string, fence: Fence, now: number, retryAt: number | null, error?: string | null] | [lease: Lease, now: number, retryAt: number | null, error?: string | null]): boolean;
  /**
   * Brings a dead job back, claimable from `now`, its fence kept; reason `not_found` or `not_dead`.
   */
  revive(job: string, now: number): boolean;
  /** Row, attempts, dead mark, payload and failures of a job, or null. */
  inspect(job: string): Inspection | null;
  /** How many jobs are queued, scheduled, leased, done and dead at `now`. */
  stats(now: number, queue?: string | null): JobCounts;
  /**
   * Fenced write: runs your statements inside the transaction that checks your lease with renew's
   * checks, and commits them only if the lease is current; with `{complete: true, result}` the job
   * completes in the same commit. All or nothing: false (with the reason) when the lease is not
   * current. Writes to `jobs` or `leasefence_*` tables, transaction control and PRAGMA are refused
   * with `invalid_argument`; a failing statement with `storage`. In Node `statements` may also be a
   * synchronous callback `(tx) => void` running them.
   */
  fenced(...args: [job: string, owner: string, fence: Fence, now: number, statements: FencedStatement[] | FencedWork, options?: FencedOptions] | [lease: Lease, now: number, statements: FencedStatement[] | FencedWork, options?: FencedOptions]): boolean;
  /**
   * Many jobs in one transaction (one sync): `enqueue` of every job, answered in order (false for
   * an id that exists or appeared earlier in the list). At most 1024 jobs; a longer list or a bad
   * item is refused with `invalid_argument` and nothing changes. With `statements` (a list of
   * `{sql, params}`, as `fenced` takes) they run first in the same transaction, without a lease:
   * the jobs commit with your rows or not at all. A statement writing `jobs` or a `leasefence_*`
   * table, or controlling the transaction, is refused with `invalid_argument`; a failing one fails
   * with `storage` naming its index (`statement`); either way nothing changes.
   */
  enqueueMany(jobs: NewJob[], statements?: FencedStatement[] | null): boolean[];
  /**
   * Up to `n` (1 to 1024) successive `claimNext` calls in one transaction; fewer (or none) when
   * fewer jobs are claimable.
   */
  claimNextMany(owner: string, n: number, now: number, ttl: number, queues?: string[] | null): ClaimedJob[];
  /**
   * `renew` of each of your leases in one transaction: one `{value, reason}` per lease, in order.
   */
  renewMany(owner: string, leases: LeaseRef[], now: number, ttl: number): Answer<boolean>[];
  /**
   * `complete` of each of your leases with its result in one transaction: one `{value, reason}` per
   * lease, in order.
   */
  completeMany(owner: string, leases: LeaseCompletion[], now: number): Answer<boolean>[];
  /**
   * Stores a recurring job (replacing one of the same name; its latest slot enqueued is kept): a
   * 5-field cron pattern (minute hour day-of-month month day-of-week) read in the time zone `tz`.
   * Each slot becomes the job `name@YYYY-MM-DDTHH:MM:SSZ` (the slot in UTC, `runAt` the slot). A
   * bad pattern, time zone or option is refused with `invalid_argument` and nothing changes.
   */
  schedule(name: string, cron: string, options?: ScheduleOptions): boolean;
  /** Removes a schedule: true, or false when there was none. Its jobs stay. */
  unschedule(name: string): boolean;
  /** Every stored schedule, by name. */
  schedules(): StoredSchedule[];
  /**
   * Enqueues every schedule's due slot at `now` in one transaction (the latest slot at or before
   * `now`; with `missed: "all"` every missed one) and answers the ids it added: none when they
   * exist already. A worker calls it as it ticks.
   */
  enqueueDue(now: number): string[];
  /**
   * When an idle worker serving `queues` (every queue when null) has something to look at again
   * without being woken: `job`, the earliest time an open job of those queues falls due (at or
   * before `now` when one is claimable already), and `slot`, the next slot of any schedule after
   * `now`; each null when there is none.
   */
  nextDue(now: number, queues?: string[] | null): NextDue;
  /**
   * One page of jobs at `now` (of `status` and `queue` when given), read through an index: newest
   * enqueued first; `queued` longest due first, `scheduled` next due first, `leased` next to expire
   * first. `limit` 1 to 1000 (default 50); pass the page's `next` as `after` for more.
   */
  listJobs(now: number, status?: JobStatus | null, queue?: string | null, after?: string | null, limit?: number | null): JobPage;
  /** Every queue that has a job, by name, with its jobs in each state at `now`. */
  queueStats(now: number): QueueCounts[];
  /**
   * The worker registry: records `owner`'s beat (alive until `now + ttl`, gone at once when the
   * worker is stopping) and renews `leases` to `now + ttl`, in one transaction: one `{value,
   * reason}` per lease, as `renewMany` answers. Rows of workers gone for an hour are deleted by the
   * next beat.
   */
  heartbeat(owner: string, leases: LeaseRef[], now: number, ttl: number, worker: WorkerReport): Answer<boolean>[];
  /**
   * Every worker of the registry (alive first, then the latest seen; at most 1000) with the live
   * leases it holds.
   */
  listWorkers(now: number): WorkerInfo[];
  /**
   * Each queue with a job claimable at `now`, with since when its longest-waiting claimable job has
   * waited: the later of the job's `until` and its enqueue time, stamped by the store's clock. The
   * age is `now - since`.
   */
  oldestWaiting(now: number): QueueWaiting[];
  /**
   * Deletes jobs that finished (completed, or dead unless `keepDead`) before `before`, Unix
   * seconds, with their payloads and failures, at most `limit` of them (null: all), 1,000 per
   * transaction so workers go on meanwhile. Open and unfinished jobs are never touched. Answers how
   * many it deleted. The store's fence floor rises to the highest fence deleted, so an id enqueued
   * again starts above every fence it had. `onlyDead`: dead jobs only.
   */
  prune(before: number, keepDead?: boolean | null, limit?: number | null, onlyDead?: boolean | null): number;
  /**
   * The store's fence floor: the highest fence `prune` ever deleted (0 before any). Every job
   * enqueued since starts above it, so no fence is ever handed out twice.
   */
  fenceFloor(): Fence;
  /**
   * `claim`, answering the lease (`{job, owner, fence}`, what `renew`, `complete`, `fail`,
   * `release` and `fenced` take) or null.
   */
  claimLease(job: string, owner: string, now: number, ttl: number): Lease | null;
  /**
   * The same operations, answering `{value, reason}` (`reason` null when the store agreed), and
   * `claimMany` `{value, reasons}`: one reason (or null) per owner, in the order of `owners`. The
   * browser build answers the same shapes (as Promises).
   */
  readonly withReason: {
    enqueue(job: string, runAt?: number | null, payload?: string | null, queue?: string | null, priority?: number | null): Answer<boolean>;
    state(job: string): Answer<JobState | null>;
    claim(job: string, owner: string, now: number, ttl: number): Answer<Fence | null>;
    renew(...args: [job: string, owner: string, fence: Fence, now: number, ttl: number] | [lease: Lease, now: number, ttl: number]): Answer<boolean>;
    complete(...args: [job: string, owner: string, fence: Fence, now: number, result: string | null] | [lease: Lease, now: number, result: string | null]): Answer<boolean>;
    release(...args: [job: string, owner: string, fence: Fence] | [lease: Lease]): Answer<boolean>;
    claimMany(job: string, owners: string[], now: number, ttl: number): Promise<{ value: (Fence | null)[]; reasons: (Reason | null)[] }>;
    claimNext(owner: string, now: number, ttl: number, queues?: string[] | null): Answer<ClaimedJob | null>;
    fail(...args: [job: string, owner: string, fence: Fence, now: number, retryAt: number | null, error?: string | null] | [lease: Lease, now: number, retryAt: number | null, error?: string | null]): Answer<boolean>;
    revive(job: string, now: number): Answer<boolean>;
    inspect(job: string): Answer<Inspection | null>;
    stats(now: number, queue?: string | null): Answer<JobCounts>;
    fenced(...args: [job: string, owner: string, fence: Fence, now: number, statements: FencedStatement[] | FencedWork, options?: FencedOptions] | [lease: Lease, now: number, statements: FencedStatement[] | FencedWork, options?: FencedOptions]): Answer<boolean>;
    enqueueMany(jobs: NewJob[], statements?: FencedStatement[] | null): Answer<boolean[]>;
    claimNextMany(owner: string, n: number, now: number, ttl: number, queues?: string[] | null): Answer<ClaimedJob[]>;
    renewMany(owner: string, leases: LeaseRef[], now: number, ttl: number): Answer<Answer<boolean>[]>;
    completeMany(owner: string, leases: LeaseCompletion[], now: number): Answer<Answer<boolean>[]>;
    schedule(name: string, cron: string, options?: ScheduleOptions): Answer<boolean>;
    unschedule(name: string): Answer<boolean>;
    schedules(): Answer<StoredSchedule[]>;
    enqueueDue(now: number): Answer<string[]>;
    nextDue(now: number, queues?: string[] | null): Answer<NextDue>;
    listJobs(now: number, status?: JobStatus | null, queue?: string | null, after?: string | null, limit?: number | null): Answer<JobPage>;
    queueStats(now: number): Answer<QueueCounts[]>;
    heartbeat(owner: string, leases: LeaseRef[], now: number, ttl: number, worker: WorkerReport): Answer<Answer<boolean>[]>;
    listWorkers(now: number): Answer<WorkerInfo[]>;
    oldestWaiting(now: number): Answer<QueueWaiting[]>;
    prune(before: number, keepDead?: boolean | null, limit?: number | null, onlyDead?: boolean | null): Answer<number>;
    fenceFloor(): Answer<Fence>;
    claimLease(job: string, owner: string, now: number, ttl: number): Answer<Lease | null>;
  };
  // </generated operations>
  /** Closes the connection; later calls throw with code `storage`. */
  close(): void;
  /**
   * The same operations, group-committed: each answers a Promise, and the calls made together
   * (concurrent handlers, `Promise.all`) share one transaction and one sync, each checked and
   * answered exactly as if it ran alone; one failing call fails alone. A lone call waits for
   * nothing. On the native engine they run on libuv's thread pool, so the event loop never waits
   * for a lock or a sync. `claimMany` runs alone, on worker threads. A `fenced` callback runs
   * alone and on the event loop (it is JavaScript, inside the transaction), so it waits for the
   * lock there: where the loop must keep running (a JobWorker's handler), pass the statements as
   * a list, or return them with `fencedResult`.
   */
  readonly grouped: GroupedStore;
}

/** A function of the store, answering a Promise of what it answers. */
type Promised<F> = F extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;

/** The operations of a LeaseStore (and their `withReason` forms), each answering a Promise. */
export type GroupedStore = {
  readonly [K in keyof LeaseStore['withReason']]: Promised<LeaseStore[K]>;
} & {
  readonly withReason: { readonly [K in keyof LeaseStore['withReason']]: Promised<LeaseStore['withReason'][K]> };
};

/**
 * The handle a fenced callback gets on PostgreSQL: each call answers a Promise (the statements
 * cross the network); `$1`, `$2`, ... take `params` in order. Await every call before the
 * callback returns.
 */
export interface PgFencedTx {
  /** Runs one statement; how many rows it changed. */
  run(sql: string, params?: SqlParam[]): Promise<{ changes: number }>;
  /** The rows of one query as `pg` reads them (objects keyed by column name; `bigint` as strings). */
  all(sql: string, params?: SqlParam[]): Promise<Record<string, unknown>[]>;
  /** The first row of one query, or undefined. */
  get(sql: string, params?: SqlParam[]): Promise<Record<string, unknown> | undefined>;
}

/** A callback running your statements on PostgreSQL, async or not; a throw or rejection rolls everything back. */
export type PgFencedWork = (tx: PgFencedTx) => Promise<unknown> | void;

/** `fenced` on PostgreSQL: a statement list, or a callback that may await. */
type PgFenced<R> = (
  ...args:
    | [job: string, owner: string, fence: Fence, now: number, statements: FencedStatement[] | PgFencedWork, options?: FencedOptions]
    | [lease: Lease, now: number, statements: FencedStatement[] | PgFencedWork, options?: FencedOptions]
) => Promise<R>;

/**
 * A lease store on a PostgreSQL server (`await LeaseStore.connect('postgres://...')`): the
 * operations of a {@link LeaseStore}, each answering a Promise, with the same checks, answers and
 * reasons (they are the Rust crate's, compiled to wasm; `pg` only carries statements and rows).
 * `JobWorker` takes it. TLS follows libpq's `sslmode`, `sslrootcert`, `sslcert` and `sslkey` in the URL.
 * `fenced` takes a statement list or a callback that may await ({@link PgFencedTx}); statements
 * use PostgreSQL's `$1`, `$2`, ... placeholders.
 * @example
 * const store = await LeaseStore.connect('postgres://app@db.internal/queue');
 * const fence = await store.claim('job', 'worker-a', Date.now() / 1000, 30);
 * await store.fenced('job', 'worker-a', fence, Date.now() / 1000, async (tx) => {
 *   await tx.run('UPDATE totals SET n = n + $1 WHERE id = $2', [5, 'north']);
 * });
 */
export type PgLeaseStore = Omit<GroupedStore, 'fenced' | 'withReason'> & {
  readonly fenced: PgFenced<boolean>;
  readonly withReason: Omit<GroupedStore['withReason'], 'fenced'> & { readonly fenced: PgFenced<Answer<boolean>> };
  /** The same store: its calls already answer Promises, each on a pooled connection. */
  readonly grouped: PgLeaseStore;
  /** The worker runtime's rules, computed by the crate's core; JobWorker uses them. */
  readonly workerRules: WorkerRules;
  /** The server's URL, any password shown as `***`. */
  readonly url: string;
  /** Closes the pool's connections; later calls reject. */
  close(): Promise<void>;
};

/**
 * Why a handler's `signal` aborted: `code` `lease_lost` (the store refused a renew, or the lease
 * ended before a renew got through; `reason` is the store's reason, e.g. `{code: 'stale_fence'}`
 * or `{code: 'expired', until}`) or `stopped` (`worker.stop()`; `reason` null).
 */
export declare class LeaseLostError extends LeaseError<'lease_lost' | 'stopped'> {
  constructor(code: 'lease_lost' | 'stopped', message: string, reason?: Reason | null);
  readonly name: 'LeaseLostError';
  readonly code: 'lease_lost' | 'stopped';
  readonly reason: Reason | null;
}

/** Seconds to wait before retry `attempt` (1 for the first failure), given what the handler threw. */
export type Backoff = (attempt: number, error: unknown) => number;

/** The same `seconds` before every retry. */
export declare function fixedBackoff(seconds: number): Backoff;

/** An exponential backoff, as `exponentialBackoff()` describes it; the crate's core computes its waits. */
export interface ExponentialBackoff {
  readonly base: number;
  readonly factor: number;
  readonly max: number;
  readonly jitter: number;
  readonly random: () => number;
}

/**
 * `base * factor^(attempt - 1)` seconds capped at `max`, shortened by a random share of up to
 * `jitter` (0: none; 0.5: between half and all of it). Defaults: 1, 2, 300, 0.5, Math.random.
 */
export declare function exponentialBackoff(options?: {
  base?: number;
  factor?: number;
  max?: number;
  jitter?: number;
  random?: () => number;
}): ExponentialBackoff;

/** The worker runtime's rules (crate/src/rules/worker.rs), as the store offers them. */
export interface WorkerRules {
  exponentialBackoff(base: number, factor: number, max: number, jitter: number, attempt: number, draw: number): number;
  mustCheckPreviousAttempt(attempt: number, maxAttempts: number): boolean;
  attemptVerdict(attempt: number, maxAttempts: number, previousAttemptFailed: boolean): { run: boolean; error?: string };
  retryAt(now: number, attempt: number, maxAttempts: number, delay: number): number | null;
  nextRenewAt(grantedAt: number, every: number): number;
  renewRetryDelay(failedRenews: number, every: number): number;
  writeRetryDelay(failedTries: number): number;
  /** How many jobs a worker with `concurrency` slots claims at once when `free` are free. */
  claimBatch(free: number, concurrency: number): number;
}

/**
 * A clock moved by hand: a JobWorker given one reads its time from it, and its waits (renews,
 * the lease's end, retries, the idle poll, a stop's grace) run when it is moved past their end.
 */
export declare class ManualClock {
  constructor(start?: number);
  /** The time it shows, in seconds. */
  now(): number;
  /** Moves it to `seconds`; the waits then due run, earliest first. */
  set(seconds: number): void;
  /** Moves it on by `seconds`. */
  advance(seconds: number): void;
  /** Runs `f` once the clock shows `time`; answers a function that cancels it. */
  at(time: number, f: () => void): () => void;
}

/**
 * A handler's answer that commits its statements and the completion in one transaction (see
 * `fencedResult`, the only way to make one). A type only: the package exports no such value.
 */
declare class FencedResult {
  private constructor();
  readonly statements: readonly FencedStatement[];
  readonly result: unknown;
}
export type { FencedResult };

/**
 * Returned by a handler: the runtime calls `fenced(..., {complete: true, result})` instead of
 * `complete`, so `statements` (on your own tables) commit with the completion or not at all. A
 * stale worker's statements are refused with its completion; a statement that fails (a broken
 * constraint, a write to the library's tables) fails the job, with nothing of it applied.
 *
 * @example
 * await worker.run((job, { payload }) =>
 *   fencedResult([{ sql: 'INSERT INTO totals(job, total) VALUES (?, ?)', params: [job, sum(payload)] }], 'ok'));
 */
export declare function fencedResult(statements: FencedStatement[], result?: unknown): FencedResult;

/** What the runtime counted since the worker was made: the counters it reports in its beats. */
export type WorkerStats = WorkerCounters;

/** What the handler gets beside the job id. */
export interface JobContext {
  /**
   * Aborts the moment the lease is lost or the worker stops (`signal.reason` is a
   * LeaseLostError); whatever the handler returns or throws after that is discarded.
   */
  signal: AbortSignal;
  /** The payload given at enqueue, or null. */
  payload: string | null;
  /** This lease's fencing token; pass it to any other store that checks fences. */
  fence: Fence;
  /** 1 for the first attempt: the fence (every claim is one attempt). */
  attempt: number;
  /**
   * The lease this attempt holds, for the store's lease calls made by the handler itself.
   * @example await store.grouped.fenced(lease, Date.now() / 1000, [{ sql: 'INSERT INTO log(job) VALUES ($1)', params: [job] }]);
   */
  lease: Lease;
}

/**
 * Returns the result: a string is stored as is, undefined or null as no result, anything else as
 * its JSON; `fencedResult(statements, result)` also commits statements with the completion.
 * Throwing fails the job: retried after `backoff(attempt)`, dead at `maxAttempts`.
 */
export type JobHandler = (job: string, context: JobContext) => unknown | Promise<unknown>;

export interface JobWorkerOptions {
  /** The owner name to claim as (default: `job-worker-` and a random suffix). Unique per worker. */
  owner?: string;
  /** Lease length in seconds. */
  ttl: number;
  /** Seconds between renews (default ttl / 3); must be below ttl. */
  heartbeatEvery?: number;
  /** Attempts before a job is dead (default 5; Infinity for never). */
  maxAttempts?: number;
  /** Seconds before a retry: a number (fixed) or a function (default exponentialBackoff()). */
  backoff?: number | Backoff | ExponentialBackoff;
  /**
   * The time in seconds, as the store's `now` (default Date.now() / 1000). Shared by all workers.
   * A ManualClock also carries the worker's waits.
   */
  clock?: (() => number) | ManualClock;
  /**
   * Seconds between claim attempts while nothing is claimable (default 1). With `wake` (the
   * default) only a fallback: a change to the database file wakes the worker at once.
   */
  idle?: number;
  /**
   * Whether an idle worker is woken by the store's `watch` (default true): in Node a commit to the
   * file by any process (`fs.watch`), in the browser an enqueue from the same origin. false: poll
   * every `idle` only.
   */
  wake?: boolean;
  /**
   * Whether the worker records itself in the store's worker registry (default true): its owner,
   * `host`, `pid`, start and counters, sent with its renewals in their transaction (alone once a
   * renew interval while it renews nothing) and a last beat when `run()` ends; `listWorkers` and
   * `leasefence ui` read them.
   */
  register?: boolean;
  /** The machine the registry shows (default: `os.hostname()` in Node, `'browser'` in the browser). */
  host?: string;
  /** The process id the registry shows (default: `process.pid` in Node, 0 in the browser). */
  pid?: number;
  /** After signalling a lost lease, how long (real seconds) to wait for the handler (default ttl). */
  abandonAfter?: number;
  /**
   * How long finished jobs are kept before the worker prunes them (default null: for ever):
   * completed jobs `done` seconds after they finished, dead ones `dead` seconds (null: for ever).
   * The worker prunes as it ticks, at most once a minute, 1,000 jobs per transaction; its errors
   * go to `onError` with `op: 'prune'`.
   */
  retention?: { done: number; dead?: number | null } | null;
  /**
   * Told about every storage error the runtime retries (a busy database). `retryIn`: for a renew,
   * the seconds until it is tried again (the same rule wherever the heartbeat runs). `op` names the
   * call (`claimNext`, `renew`, ..., `enqueueDue` for the schedules' due slots the worker enqueues
   * as it ticks, at most once a second); `event` (with `event` named) for what a listener of `on`
   * threw, which is then whatever it threw. Default: nothing.
   */
  onError?: (error: LeaseError, context: { op: string; job?: string; retryIn?: number; event?: keyof WorkerEvents }) => void;
  /**
   * Where the lease is renewed. `'loop'` (the default): on the event loop, so a handler that
   * blocks it past the lease loses the lease (safe: a hung handler cannot keep a job). `'thread'`
   * (Node only): from a worker thread with its own connection to the file, so a CPU-bound handler
   * keeps its lease, and so does a hung one, for as long as the process lives. With `'thread'`
   * the clock is the system's (`clock` may not be given).
   */
  heartbeat?: 'loop' | 'thread';
  /**
   * Handlers running at once (1 to 1024, default 1), each with its own lease and signal under the
   * worker's one owner. Above 1 the store calls go through `store.grouped`: the claims that fill
   * free slots, the renews due together and the completions of one turn share one transaction.
   */
  concurrency?: number;
  /**
   * The queues this worker serves (default: every queue): it claims only their jobs, the highest
   * priority first. A non-empty array of queue names.
   */
  queues?: string[] | null;
}

/**
 * What `JobWorker.on` tells, each once the write behind it has committed (a `lost` lease wrote
 * nothing): the job and the fence of the attempt, and what happened.
 */
export interface WorkerEvents {
  /** The job is done; `result` is the text stored. */
  completed: { job: string; fence: Fence; attempt: number; result: string | null };
  /** The attempt failed; the job runs again from `retryAt` (seconds). */
  failed: { job: string; fence: Fence; attempt: number; error: string; retryAt: number };
  /** The job failed for good (its last attempt, or a crash loop): `revive` brings it back. */
  dead: { job: string; fence: Fence; attempt: number; error: string | null };
  /** `stop()` gave the lease back, fence kept. */
  released: { job: string; fence: Fence };
  /** The lease ended or was taken over before the attempt could write; its result was discarded. */
  lost: { job: string; fence: Fence; reason: Reason; message: string };
}

/**
 * The worker runtime: claims jobs one at a time with `claimNext`, renews the lease while the
 * handler runs, signals the handler when the lease is lost, completes or fails the job.
 *
 * The heartbeat runs on the event loop, the handler's own thread: a handler that blocks the loop
 * (CPU-bound or hung) for longer than the lease loses it, and when the loop runs again it is
 * signalled at once and its result discarded. That is the safe side of the trade-off: with fences
 * a lost lease costs duplicate work, never a wrong result, while a heartbeat on another thread
 * would keep a hung handler's job for ever. Split long CPU work with `await` (or move it to a
 * worker thread of your own) so the loop can renew, or choose `heartbeat: 'thread'`.
 *
 * Open the store with a `busyTimeout` well below `heartbeatEvery` (a Node store call waits for
 * the file's lock on the event loop); renews and writes that still fail with `storage` are retried
 * while the lease lasts.
 *
 * @example
 * const worker = new JobWorker(store, { owner: `worker-${process.pid}`, ttl: 30 });
 * process.on('SIGTERM', () => worker.stop());
 * await worker.run(async (job, { signal, payload }) => render(payload, { signal }));
 */
export declare class JobWorker {
  constructor(store: LeaseStore | PgLeaseStore, options: JobWorkerOptions);
  /**
   * Calls `listener` each time `event` happens to a job, once it is durable (unlike the handler's
   * promise, which settles before its completion is written). A listener that throws or rejects
   * goes to `onError` (op `event`). Returns the worker.
   *
   * ```ts
   * worker.on('completed', ({ job, result }) => console.log(`${job}: ${result}`));
   * ```
   */
  on<E extends keyof WorkerEvents>(event: E, listener: (detail: WorkerEvents[E]) => unknown): this;
  /** Removes a listener `on` added. Returns the worker. */
  off<E extends keyof WorkerEvents>(event: E, listener: (detail: WorkerEvents[E]) => unknown): this;
  readonly owner: string;
  /** A copy of the counters. */
  readonly stats: WorkerStats;
  /**
   * Handles jobs until `stop()`; with `untilEmpty`, until nothing is claimable; with
   * `untilDrained`, until no job is queued, scheduled or leased by anyone. Resolves to the counters.
   */
  run(handler: JobHandler, options?: { untilEmpty?: boolean; untilDrained?: boolean }): Promise<WorkerStats>;
  /**
   * Claims nothing more; the job in hand gets `grace` seconds (default 0) to finish, then its
   * handler is signalled (code `stopped`) and its lease released, fence kept. Resolves when run()
   * has returned.
   */
  stop(options?: { grace?: number }): Promise<void>;
}

/** What a fence guard decided: the write ran (rows of its last statement), or a higher fence was accepted already. */
export type GuardAnswer =
  | { accepted: true; rows: Record<string, SqlParam>[] }
  | { accepted: false; current: Fence; rows: [] };

/**
 * A fence guard on an SQLite file another store keeps: a write for `key` runs only with a fence at
 * least the highest accepted for it, checked and recorded in the write's own transaction. For a
 * read-modify-write, read through the guard too (`write(key, fence, [{sql: 'SELECT ...'}])`).
 */
export declare class FenceGuard {
  private constructor();
  /**
   * Opens (creating if missing) the SQLite file at `path`; the guard's table is `leasefence_guard`.
   * A URL is refused with `invalid_argument`: a PostgreSQL database is `FenceGuard.connect`.
   */
  static open(path: string, options?: OpenOptions): Promise<FenceGuard>;
  /**
   * Opens a guard on a PostgreSQL database of yours at `url`, postgres:// or postgresql://
   * (`npm install pg`); makes `leasefence_guard` where missing. Its `write` answers a Promise.
   */
  static connect(url: string, options?: PgOpenOptions): Promise<PgFenceGuard>;
  /**
   * The guard's check inside your own transaction on a `pg` client (after your `BEGIN`); roll
   * back on a refusal. The key's row stays locked until your transaction ends.
   * @example
   * await client.query('BEGIN');
   * const { accepted } = await FenceGuard.accept(client, 'invoice-42', fence);
   * if (accepted) { await client.query('UPDATE invoices SET sent = true WHERE id = $1', [42]); await client.query('COMMIT'); }
   * else await client.query('ROLLBACK');
   */
  static accept(client: unknown, key: string, fence: Fence): Promise<{ accepted: true } | { accepted: false; current: Fence }>;
  /** Runs `statements` in one transaction if the guard accepts `fence` for `key`. */
  write(key: string, fence: Fence, statements: FencedStatement[]): GuardAnswer;
  /**
   * The same `write`, answering a Promise. On the native engine it runs on libuv's thread pool, so
   * the event loop never waits for the file's lock or its sync, and the writes made in one turn
   * share one transaction (one sync), each checked and answered as if it ran alone. On the wasm
   * engine each write runs alone, synchronously.
   * @example
   * const { accepted } = await guard.grouped.write('invoice-42', fence, [{ sql: 'UPDATE invoices SET sent = 1 WHERE id = $1', params: [42] }]);
   */
  readonly grouped: { write(key: string, fence: Fence, statements: FencedStatement[]): Promise<GuardAnswer> };
  /** Closes the connection. */
  close(): void;
}

/**
 * A fence guard on a PostgreSQL database (`await FenceGuard.connect('postgres://...')`): the same
 * check, each write answering a Promise; statements use `$1`, `$2`, ... and may write anything
 * but the guard's table.
 */
export interface PgFenceGuard {
  /** Runs `statements` in one transaction if the guard accepts `fence` for `key`; rows as `pg` reads them. */
  write(key: string, fence: Fence, statements: FencedStatement[]): Promise<{ accepted: true; rows: Record<string, unknown>[] } | { accepted: false; current: Fence; rows: [] }>;
  /** The guard itself (its writes already answer Promises), as a file guard's `grouped`. */
  readonly grouped: PgFenceGuard;
  /** Closes the pool's connections. */
  close(): Promise<void>;
}

'use strict';
// LeaseStore on PostgreSQL for Node (`LeaseStore.connect('postgres://...')`): the shared core
// (web/store/core.js) over the wasm's WasmPgStore, which runs the crate's own statements, checks
// and reason rules (crate/src/postgres/) and leaves only the network to `pg`, through a pool. Every
// operation answers a Promise. `pg` is an optional peer dependency: loaded only here, only when a
// PostgreSQL URL is opened.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const wasm = require('./wasm/leasefence.js');
const { LeaseStoreCore, leaseErrors, toLeaseError, wasmRuleName, workerRulesOver } = require('../web/store/core.js');
const { invalidArgument } = require('./errors.cjs');
const { busyTimeoutMsOf } = require('./busy-timeout.cjs');

const CONSTRUCT = Symbol('PgLeaseStore');

// The worker rules on this thread's wasm, as a file store has them (JobWorker asks for them).
const WORKER_RULES = workerRulesOver((rule, args) => wasm[wasmRuleName(rule)](...args));

/** Whether `target` names a PostgreSQL server rather than a file. */
const isPostgresUrl = (target) => /^postgres(ql)?:\/\//i.test(target);

/**
 * Whether `target` is written as a URL (`scheme://`). The scheme has two characters at least, so
 * a Windows drive (`C://data/queue.db`) is still a path.
 */
const looksLikeUrl = (target) => /^[a-z][a-z0-9+.-]+:\/\//i.test(target);

/**
 * What `<what>.open(path)` does with a URL: refuses it. `open` answers the synchronous file store
 * (its type says so), so a PostgreSQL URL opened there would be a store of the other kind under
 * the wrong type (`if (store.claim(...))`, always true on a Promise); it names `connect` instead.
 * The URL is not echoed: it may hold a password.
 * @param {string} target
 * @param {'LeaseStore' | 'FenceGuard'} what
 */
function refuseUrlAsPath(target, what) {
  if (isPostgresUrl(target)) {
    throw invalidArgument(
      `${what}.open(): \`path\` is a PostgreSQL URL, not a database file path; open a PostgreSQL server with ` +
        `\`await ${what}.connect(url)\` (its operations answer Promises)`,
    );
  }
  if (looksLikeUrl(target)) {
    throw invalidArgument(
      `${what}.open(): \`path\` is a URL, not a database file path; give ${what}.open the path of an SQLite file, ` +
        `or ${what}.connect a postgres:// URL`,
    );
  }
}

/**
 * The checks of `<what>.connect(url, options)`, made before `pg` is loaded: a postgres:// URL, and
 * the options a server takes. Answers the options with the busy timeout in milliseconds
 * (`busyTimeoutMs`, what the engine takes) for the `busyTimeout` in seconds given.
 * @param {unknown} url
 * @param {unknown} options
 * @param {'LeaseStore' | 'FenceGuard'} what
 */
function connectArguments(url, options, what) {
  if (typeof url !== 'string' || !isPostgresUrl(url)) {
    throw invalidArgument(
      `${what}.connect(): \`url\` must be a postgres:// or postgresql:// URL (a PostgreSQL server); ` +
        `open an SQLite file with \`await ${what}.open(path)\``,
    );
  }
  if (options === null || typeof options !== 'object') {
    throw invalidArgument(`${what}.connect(): \`options\` must be an object`);
  }
  if (options.exclusive !== undefined) {
    throw invalidArgument(`${what}.connect(): \`exclusive\` is for SQLite files (${what}.open), not a PostgreSQL server`);
  }
  const { busyTimeout: _seconds, ...rest } = options;
  return { ...rest, busyTimeoutMs: busyTimeoutMsOf(options, `${what}.connect()`) };
}

/** Awaits `f()`, turning what it rejects with into a LeaseError. */
async function leaseErrorsAsync(f) {
  try {
    return await f();
  } catch (error) {
    throw toLeaseError(error);
  }
}

/** `pg`, or an error naming the call (`what`) and what to install. */
function loadPg(what) {
  try {
    return require('pg');
  } catch (error) {
    if (error && error.code === 'MODULE_NOT_FOUND') {
      throw invalidArgument(
        `${what}: a postgres:// URL needs the \`pg\` package, an optional peer dependency ` +
          'of leasefence: npm install pg');
    }
    throw error;
  }
}

/**
 * claimMany as the file store answers it (`{value, reasons}`, one reason per owner): the
 * arguments checked by the crate, then every owner's claim at once, each on a connection of its
 * own from the pool (owners past its size wait for one), so that they race at the server.
 */
async function claimMany(inner, args) {
  leaseErrors(() => wasm.checkArguments('claimMany', args));
  const [job, owners, now, ttl] = args;
  const answers = await Promise.all(owners.map((owner) => inner.call('claim', [job, owner, now, ttl])));
  return { value: answers.map((a) => a.value), reasons: answers.map((a) => a.reason ?? null) };
}

/**
 * The callback form of `fenced` on PostgreSQL: `work(tx)` may be async (its promise is awaited);
 * `tx.run(sql, params)` answers a Promise of `{changes}`, `tx.all` of the rows as `pg` returns
 * them (objects; `bigint` columns as strings, as `pg` reads them), `tx.get` of the first row or
 * undefined. `$1`, `$2`, ... are bound from `params`. The transaction, the checks that your
 * statements left the library's tables alone, the lease check and the commit are the crate's
 * (WasmPgStore.fencedWith); a throw or rejection rolls back and is rethrown.
 */
function fencedWith(inner, job, owner, fence, now, work, options) {
  return inner.fencedWith(job, owner, fence, now, options, async (handle) => {
    const query = (sql, params = []) => leaseErrorsAsync(() => handle.query(sql, params));
    const tx = Object.freeze({
      async run(sql, params) {
        return { changes: (await query(sql, params)).rowCount ?? 0 };
      },
      async all(sql, params) {
        return (await query(sql, params)).rows;
      },
      async get(sql, params) {
        return (await query(sql, params)).rows[0];
      },
    });
    try {
      return await work(tx);
    } finally {
      handle.free();
    }
  });
}

/**
 * A lease store on a PostgreSQL server. Open it with `await LeaseStore.connect('postgres://...')`.
 * The same operations as a file store, each answering a Promise; the statements, checks and
 * reasons are the Rust crate's, so both answer alike.
 */
class PgLeaseStore extends LeaseStoreCore {
  #pool;
  #inner;

  constructor(key, pool, inner) {
    if (key !== CONSTRUCT) throw invalidArgument('use `await LeaseStore.connect(url)` to open a store on PostgreSQL');
    super({
      call: (op, args) => {
        if (op === 'claimMany') return claimMany(inner, args);
        if (op === 'fenced' && typeof args[4] === 'function') return fencedWith(inner, ...args.slice(0, 5), args[5]);
        return inner.call(op, args);
      },
      promised: true,
    });
    this.#pool = pool;
    this.#inner = inner;
    /**
     * The operations for concurrent callers (JobWorker with `concurrency`): the store itself.
     * Every call already answers a Promise on a connection of its own from the pool, and the
     * server groups the commits that arrive together.
     */
    this.grouped = this;
  }

  /** The worker runtime's rules (backoff, attempts, renew times), computed by the crate's core. */
  get workerRules() {
    return WORKER_RULES;
  }

  /** The server's URL with any password replaced by `***`. */
  get url() {
    return this.#inner.url();
  }

  /** Closes the pool's connections; the store cannot be used afterwards. */
  async close() {
    await this.#pool.end();
  }
}

const GUARDED = Symbol('leasefence.errorListener');

/**
 * What the wasm borrows connections from: the pool, with one more thing done for each connection
 * it hands out. A connection that breaks while lent out (a server restart) emits `error`, and an
 * `error` event nobody listens to ends the process; the statement in flight rejects with the same
 * error, which the store reports (retryable) and answers by closing that connection.
 */
function lender(pool) {
  return {
    async connect() {
      const client = await pool.connect();
      if (!client[GUARDED]) {
        client.on('error', () => {});
        client[GUARDED] = true;
      }
      return client;
    },
  };
}

/**
 * Opens a store on the server at `url`: checks the schema (creating what is missing) on a first
 * connection, so a wrong password or an unreachable server fails here.
 * @param {string} url
 * @param {{busyTimeoutMs: number, maxConnections?: number}} options
 */
function openPostgres(url, options) {
  return openPool(url, options, 'LeaseStore.connect()', async (pool) => {
    const inner = leaseErrors(() => wasm.WasmPgStore.onPool(lender(pool), url, options.busyTimeoutMs));
    // An idle connection lost (a server restart): the next new one checks the schema again.
    pool.on('error', () => inner.connectionLost());
    const store = new PgLeaseStore(CONSTRUCT, pool, inner);
    await leaseErrorsAsync(() => inner.connect());
    return store;
  });
}

/**
 * A fence guard on a PostgreSQL database of yours (`await FenceGuard.connect('postgres://...')`):
 * a write for a key runs only with a fence at least the highest accepted for that key, checked
 * and recorded in the write's own transaction (table `leasefence_guard`, made where missing).
 * The statements and the check are the Rust crate's (WasmPgGuard).
 */
class PgFenceGuard {
  #pool;
  #inner;

  constructor(key, pool, inner) {
    if (key !== CONSTRUCT) throw invalidArgument('use `await FenceGuard.connect(url)` to open a guard on PostgreSQL');
    this.#pool = pool;
    this.#inner = inner;
    /**
     * The file guard's `grouped` form, here the guard itself: every write already answers a
     * Promise on a connection of its own, so code written for `guard.grouped.write` runs on both.
     */
    this.grouped = this;
  }

  /**
   * Runs `statements` ([{sql, params}], `$1`, `$2`, ...) in one transaction if `fence` is at
   * least the highest accepted for `key`: a Promise of `{accepted: true, rows}` (`pg`'s rows of
   * the last statement), else `{accepted: false, current, rows: []}` and nothing is written.
   */
  write(key, fence, statements) {
    return leaseErrorsAsync(() => this.#inner.write(key, fence, statements));
  }

  /** Closes the pool's connections; the guard cannot be used afterwards. */
  async close() {
    await this.#pool.end();
  }
}

/**
 * The guard's check inside your own transaction on a `pg` client (`BEGIN` sent): a Promise of
 * `{accepted: true}` or `{accepted: false, current}`; roll back on a refusal. The key's row stays
 * locked until your transaction ends. The table must exist (FenceGuard.connect makes it).
 */
function acceptOnPg(client, key, fence) {
  return leaseErrorsAsync(() => wasm.WasmPgGuard.accept(client, key, fence));
}

/** Opens a PgFenceGuard on `url` (see FenceGuard.connect). */
function openPgGuard(url, options) {
  return openPool(url, options, 'FenceGuard.connect()', async (pool) => {
    const inner = wasm.WasmPgGuard.onPool(lender(pool));
    const guard = new PgFenceGuard(CONSTRUCT, pool, inner);
    await leaseErrorsAsync(() => inner.connect());
    return guard;
  });
}

/**
 * A `pg` pool on `url`, TLS as libpq's `sslmode`, `sslrootcert`, `sslcert` and `sslkey` mean it
 * (read by the crate: pg gives some of them meanings of its own, so they never reach it), handed
 * to `open(pool)`, which connects once; with libpq's `prefer` and a server without TLS, again in
 * the clear. `what` names the call in errors.
 * @param {string} url
 * @param {{busyTimeoutMs: number, maxConnections?: number}} options
 */
async function openPool(url, options, what, open) {
  const parsed = (() => {
    try {
      return new URL(url);
    } catch {
      throw invalidArgument(`${what}: not a usable PostgreSQL URL; write it as postgres://user:password@host:port/database`);
    }
  })();
  const plan = leaseErrors(() => wasm.pgConnectPlan(url, ...libpqDefaults(), what.replace(/\(\)$/, '')));
  const maxConnections = options.maxConnections ?? 10;
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    throw invalidArgument(`${what}: \`maxConnections\` must be a whole number >= 1`);
  }
  const { Pool } = loadPg(what);
  const attempt = async (ssl) => {
    const pool = new Pool({
      connectionString: plan.url,
      ssl,
      max: maxConnections,
      application_name: parsed.searchParams.get('application_name') ?? 'leasefence',
      connectionTimeoutMillis: Math.max(options.busyTimeoutMs, 1000),
    });
    // A pooled connection that breaks while idle (a server restart) is dropped by the pool; the
    // error must not crash the process. The next operation gets a fresh connection.
    pool.on('error', () => {});
    try {
      return await open(pool);
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
  };
  const ssl = tlsOptions(plan, what);
  try {
    return await attempt(ssl);
  } catch (error) {
    // libpq's `prefer`: TLS when the server offers it, else in the clear.
    if (plan.encrypt === 'prefer' && /does not support SSL/.test(String(error?.message))) return attempt(false);
    throw error;
  }
}

/** libpq's default files that exist: `[root.crt, postgresql.crt, postgresql.key]` (null when not). */
function libpqDefaults() {
  const dir = path.join(os.homedir(), '.postgresql');
  const file = (name) => {
    const at = path.join(dir, name);
    try {
      return fs.statSync(at).isFile() ? at : null;
    } catch {
      return null;
    }
  };
  return [file('root.crt'), file('postgresql.crt'), file('postgresql.key')];
}

/** `pg`'s `ssl` option for the crate's plan (pgConnectPlan): the files read now, so a missing one fails at open. */
function tlsOptions(plan, what) {
  if (plan.encrypt === 'never') return false;
  const read = (file, parameter) => {
    try {
      return fs.readFileSync(file);
    } catch (error) {
      throw invalidArgument(`${what}: cannot read ${parameter} ${JSON.stringify(file)}: ${error.message}`);
    }
  };
  const ssl = {};
  if (plan.check === 'none') {
    // Encrypted, to whoever answers (libpq's prefer and require without a root certificate).
    ssl.rejectUnauthorized = false;
  } else {
    // `system`: the roots Node trusts; else the authority in the file.
    if (plan.rootCert !== 'system') ssl.ca = read(plan.rootCert, 'sslrootcert');
    // verify-ca: the chain only; the name in the certificate is not compared with the host.
    if (plan.check === 'chain') ssl.checkServerIdentity = () => undefined;
  }
  if (plan.clientCert) {
    ssl.cert = read(plan.clientCert, 'sslcert');
    ssl.key = read(plan.clientKey, 'sslkey');
  }
  return ssl;
}

module.exports = { PgLeaseStore, PgFenceGuard, openPostgres, openPgGuard, acceptOnPg, refuseUrlAsPath, connectArguments };

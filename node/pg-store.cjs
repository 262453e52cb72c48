'use strict';
// LeaseStore on PostgreSQL for Node (`LeaseStore.open('postgres://...')`): the shared core
// (web/store/core.js) over the wasm's WasmPgStore, which runs the crate's own statements, checks
// and reason rules (crate/src/postgres/) and leaves only the network to `pg`, through a pool. Every
// operation answers a Promise. `pg` is an optional peer dependency: loaded only here, only when a
// PostgreSQL URL is opened.
const wasm = require('./wasm/leasefence.js');
const { LeaseStoreCore, leaseErrors, toLeaseError, wasmRuleName, workerRulesOver } = require('../web/store/core.js');
const { invalidArgument } = require('./errors.cjs');

const CONSTRUCT = Symbol('PgLeaseStore');

// The worker rules on this thread's wasm, as a file store has them (JobWorker asks for them).
const WORKER_RULES = workerRulesOver((rule, args) => wasm[wasmRuleName(rule)](...args));

/** Whether `target` names a PostgreSQL server rather than a file. */
const isPostgresUrl = (target) => /^postgres(ql)?:\/\//i.test(target);

// libpq's TLS parameters: refused until their libpq meanings are carried over (pg reads some of
// them with meanings of its own).
const TLS_PARAMS = ['sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'ssl'];

/** Awaits `f()`, turning what it rejects with into a LeaseError. */
async function leaseErrorsAsync(f) {
  try {
    return await f();
  } catch (error) {
    throw toLeaseError(error);
  }
}

function loadPg() {
  try {
    return require('pg');
  } catch (error) {
    if (error && error.code === 'MODULE_NOT_FOUND') {
      throw invalidArgument(
        'LeaseStore.open(): a postgres:// URL needs the `pg` package, an optional peer dependency ' +
          'of leasefence: npm install pg');
    }
    throw error;
  }
}

/**
 * A lease store on a PostgreSQL server. Open it with `await LeaseStore.open('postgres://...')`.
 * The same operations as a file store, each answering a Promise; the statements, checks and
 * reasons are the Rust crate's, so both answer alike.
 */
class PgLeaseStore extends LeaseStoreCore {
  #pool;
  #inner;

  constructor(key, pool, inner) {
    if (key !== CONSTRUCT) throw invalidArgument('use `await LeaseStore.open(url)` to open a store');
    super({ call: (op, args) => inner.call(op, args) });
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
async function openPostgres(url, options) {
  const parsed = (() => {
    try {
      return new URL(url);
    } catch {
      throw invalidArgument('LeaseStore.open(): not a usable PostgreSQL URL; write it as postgres://user:password@host:port/database');
    }
  })();
  const tls = TLS_PARAMS.filter((name) => parsed.searchParams.has(name));
  if (tls.length > 0) {
    throw invalidArgument(
      `LeaseStore.open(): ${tls.join(', ')} in the URL: TLS to PostgreSQL from Node is not available ` +
        'in this version (the Rust crate has it); connect without TLS parameters, over a trusted network');
  }
  const maxConnections = options.maxConnections ?? 10;
  if (!Number.isInteger(maxConnections) || maxConnections < 1) {
    throw invalidArgument('LeaseStore.open(): `maxConnections` must be a whole number >= 1');
  }
  const { Pool } = loadPg();
  const pool = new Pool({
    connectionString: url,
    max: maxConnections,
    application_name: parsed.searchParams.get('application_name') ?? 'leasefence',
    connectionTimeoutMillis: Math.max(options.busyTimeoutMs, 1000),
  });
  // A pooled connection that breaks while idle (a server restart) is dropped by the pool; the
  // error must not crash the process. The next operation gets a fresh connection.
  pool.on('error', () => {});
  const inner = leaseErrors(() => wasm.WasmPgStore.onPool(lender(pool), url, options.busyTimeoutMs));
  const store = new PgLeaseStore(CONSTRUCT, pool, inner);
  try {
    await leaseErrorsAsync(() => inner.connect());
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
  return store;
}

module.exports = { PgLeaseStore, openPostgres, isPostgresUrl };

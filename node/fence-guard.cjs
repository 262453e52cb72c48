'use strict';
// FenceGuard for Node: guarded writes on an SQLite file that a store other than the lease store
// keeps (crate/src/wasm/guard.rs).
const path = require('node:path');
const { engine } = require('./engine.cjs');
const { GroupCommit, leaseErrors } = require('../web/store/core.js');
const { invalidArgument, storageError } = require('./errors.cjs');
const { busyTimeoutMsOf } = require('./busy-timeout.cjs');
const { acceptOnPg, connectArguments, openPgGuard, refuseUrlAsPath } = require('./pg-store.cjs');

const CONSTRUCT = Symbol('FenceGuard.open');

/**
 * A fence guard on an SQLite file that a store other than the lease store keeps: a write for a
 * key runs only with a fence at least the highest accepted for that key, checked and recorded in
 * the write's own transaction (table `leasefence_guard`). Open it with `await FenceGuard.open(path)`,
 * or `await FenceGuard.connect('postgres://...')` for a PostgreSQL database (its `write` answers a
 * Promise).
 */
class FenceGuard {
  #inner;

  /**
   * Opens (creating if missing) the SQLite file at `path` for guarded writes. A URL is refused
   * (`invalid_argument`): this answers the synchronous guard, so a PostgreSQL URL goes to
   * `FenceGuard.connect`.
   * @param {string} file
   * @param {{busyTimeout?: number}} [options]
   */
  static async open(file, options = {}) {
    if (typeof file !== 'string' || file === '') {
      throw invalidArgument('FenceGuard.open(): `path` must be a non-empty string (a database file path)');
    }
    refuseUrlAsPath(file, 'FenceGuard');
    if (options === null || typeof options !== 'object') {
      throw invalidArgument('FenceGuard.open(): `options` must be an object');
    }
    const busyTimeoutMs = busyTimeoutMsOf(options, 'FenceGuard.open()');
    const guard = new FenceGuard(CONSTRUCT);
    guard.#inner = leaseErrors(() => engine().openGuard(path.resolve(file), busyTimeoutMs));
    return guard;
  }

  /**
   * Opens a guard on a PostgreSQL database of yours at `url` (needs the `pg` package), making
   * `leasefence_guard` where missing; its `write` answers a Promise. A file path is refused: that
   * is `FenceGuard.open`.
   * @param {string} url
   * @param {{busyTimeout?: number, maxConnections?: number}} [options]
   */
  static async connect(url, options = {}) {
    return openPgGuard(url, connectArguments(url, options, 'FenceGuard'));
  }

  /**
   * The guard's check inside your own transaction on a `pg` client (after your `BEGIN`): a
   * Promise of `{accepted: true}` or `{accepted: false, current}`; roll back on a refusal.
   */
  static accept(client, key, fence) {
    return acceptOnPg(client, key, fence);
  }

  /**
   * The same `write`, answering a Promise: on the native engine it runs on libuv's thread pool, so
   * the event loop never waits for the file's lock or its sync, and the writes made in one turn of
   * the event loop share one transaction (one sync), each checked and answered as if it ran alone
   * (a refused write or a failing statement leaves its neighbours as they are). On the wasm engine
   * each runs alone, synchronously, as `write` does.
   *
   *   const { accepted } = await guard.grouped.write('invoice-42', fence, [{ sql: 'UPDATE ...', params: [42] }]);
   * @type {{write(key: string, fence: number, statements: object[]): Promise<object>}}
   */
  grouped;

  constructor(token) {
    if (token !== CONSTRUCT) throw new TypeError('use `await FenceGuard.open(path)` to open a guard');
    const commit = new GroupCommit(
      (writes) => {
        if (!this.#inner) throw storageError('FenceGuard.grouped.write(): the guard is closed; open it again');
        return this.#inner.writeGroup(writes.map(([, args]) => args));
      },
      () => {
        throw new TypeError('FenceGuard.grouped: every write joins a group');
      },
    );
    this.grouped = Object.freeze({ write: (key, fence, statements) => commit.call('write', [key, fence, statements]) });
  }

  /**
   * Runs `statements` ([{sql, params}], `$1`, `$2`, ...) in one transaction if `fence` is at
   * least the highest accepted for `key`: `{accepted: true, rows}` (the rows of the last
   * statement), else `{accepted: false, current, rows: []}` and nothing is written.
   */
  write(key, fence, statements) {
    if (!this.#inner) throw storageError('FenceGuard.write(): the guard is closed; open it again');
    return leaseErrors(() => this.#inner.write(key, fence, statements));
  }

  /** Closes the connection. */
  close() {
    if (this.#inner) {
      this.#inner.close();
      this.#inner.free();
      this.#inner = undefined;
    }
  }
}

module.exports = { FenceGuard };

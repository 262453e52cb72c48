// The anchor: the official @sqlite.org/sqlite-wasm on its opfs-sahpool VFS in a dedicated worker,
// running the contract's SQL with journal_mode=DELETE and synchronous=EXTRA (what leasefence's
// browser build uses), one BEGIN IMMEDIATE transaction per operation.
import sqlite3InitModule from '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs';
import { SQL, serve, loop, instrumentOpfs } from './sql.mjs';

const opfsStats = instrumentOpfs();

let sqlite3 = null;
let pool = null;
let store = null;
let name = null;

class OfficialStore {
  constructor(db) {
    this.db = db;
    db.exec('PRAGMA journal_mode = DELETE');
    db.exec('PRAGMA synchronous = EXTRA');
    db.exec(SQL.table);
    db.exec(SQL.index);
    this.claimStmt = db.prepare(SQL.claim);
    this.completeStmt = db.prepare(SQL.complete);
    this.leaseStmt = db.prepare(SQL.lease);
  }

  #inTransaction(fn) {
    this.db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn();
      this.db.exec(result.commit ? 'COMMIT' : 'ROLLBACK');
      return result.value;
    } catch (error) {
      try { this.db.exec('ROLLBACK'); } catch { /* no transaction left to roll back */ }
      throw error;
    }
  }

  #reason(job) {
    // As the crate does: on a refusal, read the lease in the same transaction.
    this.leaseStmt.bind([job]);
    this.leaseStmt.step();
    this.leaseStmt.reset(true);
  }

  claim(job, owner, now, ttl) {
    return this.#inTransaction(() => {
      const stmt = this.claimStmt.bind([job, owner, now + ttl, now]);
      const fence = stmt.step() ? stmt.get(0) : null;
      stmt.reset(true);
      if (fence == null) this.#reason(job);
      return { value: fence, commit: fence != null };
    });
  }

  complete(job, owner, fence, now, result) {
    return this.#inTransaction(() => {
      this.completeStmt.bind([job, owner, fence, now, result]).step();
      this.completeStmt.reset(true);
      const ok = this.db.changes() === 1;
      if (!ok) this.#reason(job);
      return { value: ok, commit: ok };
    });
  }

  enqueueMany(n) {
    const insert = this.db.prepare(SQL.enqueue);
    this.db.exec('BEGIN IMMEDIATE');
    for (let i = 0; i < n; i++) insert.bind([`job-${i}`]).stepReset();
    this.db.exec('COMMIT');
    insert.finalize();
  }

  close() {
    for (const stmt of [this.claimStmt, this.completeStmt, this.leaseStmt]) stmt.finalize();
    this.db.close();
  }
}

async function open(dbName) {
  sqlite3 ??= await sqlite3InitModule();
  pool ??= await sqlite3.installOpfsSAHPoolVfs({
    name: 'bench-official-sahpool', directory: '.bench-official', initialCapacity: 6,
  });
  name = `/${dbName}`;
  store = new OfficialStore(new pool.OpfsSAHPoolDb(name));
}

serve(async (method, args) => {
  switch (method) {
    case 'open':
      await open(args[0]);
      return null;
    case 'reset': {
      // A brand-new database with `n` jobs, enqueued in one transaction (not timed).
      store.close();
      pool.unlink(name);
      store = new OfficialStore(new pool.OpfsSAHPoolDb(name));
      store.enqueueMany(args[0]);
      return null;
    }
    case 'call': {
      const [op, a] = args;
      if (op === 'claim') return { value: store.claim(...a) };
      if (op === 'complete') return { value: store.complete(...a) };
      throw new Error(`unknown op ${op}`);
    }
    case 'loop':
      return loop(store, args[0], args[1]);
    case 'doneCount':
      return store.db.selectValue('SELECT count(*) FROM jobs WHERE done = 1');
    case 'settings':
      return {
        journal_mode: store.db.selectValue('PRAGMA journal_mode'),
        synchronous: store.db.selectValue('PRAGMA synchronous'),
        sqlite: store.db.selectValue('SELECT sqlite_version()'),
        vfs: 'opfs-sahpool',
      };
    case 'opfsStats':
      return opfsStats();
    case 'close':
      store?.close();
      store = null;
      return null;
    default:
      throw new Error(`unknown method ${method}`);
  }
});

// The Node section of `npm run bench`: the npm package (target/npm/leasefence, staged by
// `npm run package`) against the same contract written on better-sqlite3 with the same SQL
// (crate/src/sqlite/sql/*.sql), both on real files with journal_mode=DELETE and synchronous=EXTRA (what the crate sets for a rollback journal).
// One JSON line per measurement on stdout, one human line on stderr.
//
//   node bench/node/bench.mjs --dir DIR [--repeats 5] [--cycles 300] [--blocks 30] [--only NAME]
import { createRequire } from 'node:module';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

// The contract's SQL, verbatim from crate/src/sqlite/sql/*.sql: the browser bench's own.
import { SQL, NOW, TTL } from '../browser/sql.mjs';

const require = createRequire(import.meta.url);
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const pkgDir = path.join(repo, 'target/npm/leasefence');

// Where leasefence's time goes: its Node VFS calls these `fs` functions (bound when the package
// loads, so wrapped before). They record only during the profile pass after the measured
// repeats; otherwise the wrapper is one branch.
const fs = require('node:fs');
const fsProfile = { on: false, calls: {} };
for (const name of ['openSync', 'closeSync', 'readSync', 'writeSync', 'fstatSync', 'statSync', 'ftruncateSync',
  'fsyncSync', 'fdatasyncSync', 'unlinkSync', 'linkSync', 'accessSync', 'realpathSync', 'readdirSync', 'readFileSync']) {
  const original = fs[name];
  fs[name] = function (...args) {
    if (!fsProfile.on) return original.apply(this, args);
    const start = process.hrtime.bigint();
    try {
      return original.apply(this, args);
    } finally {
      const entry = (fsProfile.calls[name] ??= { calls: 0, ms: 0 });
      entry.calls++;
      entry.ms += Number(process.hrtime.bigint() - start) / 1e6;
    }
  };
}
const { LeaseStore } = require(pkgDir);
const lfWasm = require(path.join(pkgDir, 'wasm/leasefence.js'));
const Database = require('better-sqlite3');

const { values: opt } = parseArgs({
  options: {
    dir: { type: 'string' },
    repeats: { type: 'string', default: '5' },
    cycles: { type: 'string', default: '300' },
    blocks: { type: 'string', default: '30' },
    only: { type: 'string' }, // one side alone, for strace/perf
  },
});
if (!opt.dir) throw new Error('--dir is required');
const repeats = Number(opt.repeats);
const blocks = Number(opt.blocks);
const cycles = Math.ceil(Number(opt.cycles) / blocks) * blocks;
mkdirSync(opt.dir, { recursive: true });

function fresh(name) {
  const file = path.join(opt.dir, name);
  for (const suffix of ['', '-journal', '-wal', '-shm', '.lock']) rmSync(file + suffix, { force: true, recursive: true });
  return file;
}

/** A database file with the contract's schema and `n` jobs, written in one transaction. */
function prepare(file, n) {
  const db = new Database(file);
  db.pragma('journal_mode = DELETE');
  db.exec(SQL.table);
  db.exec(SQL.index);
  const insert = db.prepare(SQL.enqueue);
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run({ 1: `job-${i}` });
  })();
  db.close();
}

/** The contract on better-sqlite3: each operation one BEGIN IMMEDIATE transaction, like the crate. */
class BetterStore {
  constructor(file) {
    this.db = new Database(file, { timeout: 10_000 });
    this.db.pragma('journal_mode = DELETE');
    this.db.pragma('synchronous = EXTRA');
    this.claimStmt = this.db.prepare(SQL.claim);
    this.completeStmt = this.db.prepare(SQL.complete);
    this.leaseStmt = this.db.prepare(SQL.lease);
    this.begin = this.db.prepare('BEGIN IMMEDIATE');
    this.commit = this.db.prepare('COMMIT');
    this.rollback = this.db.prepare('ROLLBACK');
  }

  claim(job, owner, now, ttl) {
    this.begin.run();
    try {
      const row = this.claimStmt.get({ 1: job, 2: owner, 3: now + ttl, 4: now });
      if (row) {
        this.commit.run();
        return row.fence;
      }
      this.leaseStmt.get({ 1: job }); // the reason is read in the same transaction
      this.rollback.run();
      return null;
    } catch (error) {
      if (this.db.inTransaction) this.rollback.run();
      throw error;
    }
  }

  complete(job, owner, fence, now, result) {
    this.begin.run();
    try {
      const { changes } = this.completeStmt.run({ 1: job, 2: owner, 3: fence, 4: now, 5: result });
      if (changes === 1) {
        this.commit.run();
        return true;
      }
      this.leaseStmt.get({ 1: job });
      this.rollback.run();
      return false;
    } catch (error) {
      if (this.db.inTransaction) this.rollback.run();
      throw error;
    }
  }

  settings() {
    return {
      journal_mode: this.db.pragma('journal_mode', { simple: true }),
      synchronous: this.db.pragma('synchronous', { simple: true }),
      sqlite: this.db.prepare('SELECT sqlite_version() AS v').get().v,
    };
  }

  close() {
    this.db.close();
  }
}

function block(store, from, to) {
  const start = process.hrtime.bigint();
  for (let i = from; i < to; i++) {
    const job = `job-${i}`;
    const fence = store.claim(job, 'worker', NOW, TTL);
    if (fence == null) throw new Error(`claim of ${job} refused`);
    if (!store.complete(job, 'worker', fence, NOW + 1, 'ok')) throw new Error(`complete of ${job} refused`);
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

function doneCount(file) {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare('SELECT count(*) AS n FROM jobs WHERE done = 1').get().n;
  } finally {
    db.close();
  }
}

async function main() {
  const emit = (record) => process.stdout.write(JSON.stringify(record) + '\n');
  const syncs = () => JSON.parse(lfWasm.vfsStats()).syncs;
  for (let r = 0; r < repeats; r++) {
    const files = { leasefence: fresh('node-leasefence.db'), 'better-sqlite3': fresh('node-better.db') };
    prepare(files.leasefence, cycles);
    prepare(files['better-sqlite3'], cycles);
    const stores = {
      leasefence: await LeaseStore.open(files.leasefence),
      'better-sqlite3': new BetterStore(files['better-sqlite3']),
    };
    if (r === 0) {
      // leasefence sets its own (crate/src/wasm/node_vfs: rollback journal, synchronous=EXTRA,
      // dot-file locks); its VFS counts real fsyncs, reported per cycle below.
      const lf = { journal_mode: 'delete', synchronous: 3, locking: 'dotfile' };
      emit({ section: 'settings', case: 'node', better: { ...stores['better-sqlite3'].settings(), locking: 'posix' },
        leasefence: lf, node: process.version });
    }
    const took = { leasefence: 0, 'better-sqlite3': 0 };
    const names = Object.keys(stores).filter((name) => !opt.only || name === opt.only);
    const per = cycles / blocks;
    const syncsBefore = syncs();
    for (let b = 0; b < blocks; b++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + b + r) % names.length];
        took[name] += block(stores[name], b * per, (b + 1) * per);
      }
    }
    const lfSyncs = (syncs() - syncsBefore) / cycles;
    stores.leasefence.close();
    stores['better-sqlite3'].close();
    for (const name of names) {
      const done = doneCount(files[name]);
      if (done !== cycles) throw new Error(`${name}: ${done} jobs done, expected ${cycles}`);
      const rate = cycles / took[name];
      emit({ section: 'node', case: name, repeat: r, cycles, seconds: took[name], rate,
        ...(name === 'leasefence' ? { fsyncs_per_cycle: lfSyncs } : {}) });
      process.stderr.write(`  [node ${r + 1}/${repeats}] ${name.padEnd(14)} ${rate.toFixed(0).padStart(6)} cycles/s` +
        `  (${(1e3 / rate).toFixed(3)} ms/cycle${name === 'leasefence' ? `, ${lfSyncs.toFixed(1)} fsyncs/cycle` : ''})\n`);
      fresh(path.basename(files[name]));
    }
  }
}

/** One more leasefence-only pass with the fs wrappers recording: per-cycle calls and time. */
async function profileFs(emit) {
  const file = fresh('node-profile.db');
  const n = Math.min(cycles, 60);
  prepare(file, n);
  const store = await LeaseStore.open(file);
  fsProfile.on = true;
  const seconds = block(store, 0, n);
  fsProfile.on = false;
  store.close();
  fresh(path.basename(file));
  const perCycle = Object.fromEntries(Object.entries(fsProfile.calls).map(([k, v]) => [k, { calls: v.calls / n, ms: v.ms / n }]));
  const fsMs = Object.values(perCycle).reduce((a, v) => a + v.ms, 0);
  emit({ section: 'node_fs_profile', case: 'leasefence', cycles: n, ms_per_cycle: (seconds * 1e3) / n, fs_ms_per_cycle: fsMs, fs: perCycle });
  const top = Object.entries(perCycle).sort((a, b) => b[1].ms - a[1].ms).slice(0, 6)
    .map(([k, v]) => `${k} ${v.calls.toFixed(1)}x ${v.ms.toFixed(2)} ms`).join(', ');
  process.stderr.write(`  [node profile] leasefence ${((seconds * 1e3) / n).toFixed(2)} ms/cycle, of which fs ${fsMs.toFixed(2)} ms: ${top}\n`);
}

main().then(() => profileFs((record) => process.stdout.write(JSON.stringify(record) + '\n'))).catch((error) => {
  console.error(`bench/node: ${error.stack ?? error}`);
  process.exit(1);
});

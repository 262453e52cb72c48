// Shared by the Node test files (not a test file itself: `node --test` only runs *.test.mjs).
import assert from 'node:assert/strict';
import { spawnSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, '../..');
/** The staged package (`npm run package` leaves it here). */
export const PKG = process.env.LEASEFENCE_PKG || path.resolve(HERE, '../../target/npm/leasefence');

const require = createRequire(import.meta.url);

/** The package as `require('leasefence')` gives it. */
export function loadPackage() {
  return require(PKG);
}

/** The package's wasm module (the same instance LeaseStore uses in this thread): vfsStats() etc. */
export function loadWasm() {
  return require(path.join(PKG, 'wasm', 'leasefence.js'));
}

/** The one dist/leasefence-*.tgz that `npm run package` leaves (asserts there is exactly one). */
export function packedTarball() {
  const dist = path.join(ROOT, 'dist');
  const found = fs.existsSync(dist) ? fs.readdirSync(dist).filter((f) => /^leasefence-.*\.tgz$/.test(f)) : [];
  assert.equal(found.length, 1, `exactly one dist/leasefence-*.tgz, found ${JSON.stringify(found)} (run npm run package)`);
  return path.join(dist, found[0]);
}

/** A fresh temp directory, removed when the process exits. */
export function tempDir(prefix = 'leasefence-node-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** sha256 of a file's bytes, or null when it is missing. */
export function fileHash(file) {
  try {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
  } catch (error) {
    if (error.code === 'ENOENT') return null;
    throw error;
  }
}

/**
 * Whether `db` has a hot journal: one a next opener would roll back. A kept journal (PERSIST, what
 * the npm package uses) stays with its 28-byte header zeroed at each commit, and SQLite ignores it.
 */
export function hotJournal(db) {
  const journal = `${db}-journal`;
  if (!fs.existsSync(journal)) return false;
  const header = fs.readFileSync(journal).subarray(0, 28);
  return header.some((byte) => byte !== 0);
}

/** Size of a file, or -1 when missing. */
export function fileSize(file) {
  try {
    return fs.statSync(file).size;
  } catch {
    return -1;
  }
}

const PY_CHECK = String.raw`
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
out = {
  "integrity": [r[0] for r in con.execute("PRAGMA integrity_check")],
  "journal_mode": con.execute("PRAGMA journal_mode").fetchone()[0],
  "application_id": con.execute("PRAGMA application_id").fetchone()[0],
  "rows": [dict(zip(("id", "owner", "until", "fence", "result", "done"), r))
           for r in con.execute("SELECT id, owner, until, fence, result, done FROM jobs ORDER BY rowid")],
}
con.close()
print(json.dumps(out))
`;

/**
 * Opens the file with Python's sqlite3 (only while no Node process uses it: Python locks with
 * POSIX locks, not dot files) and returns {integrity, journal_mode, application_id, rows}.
 */
export function pythonInspect(file) {
  const run = spawnSync('python3', ['-c', PY_CHECK, file], { encoding: 'utf8' });
  assert.equal(run.status, 0, `python3 failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** Asserts `PRAGMA integrity_check` is ok (through Python's sqlite3) and returns the rows. */
export function assertIntegrity(file) {
  const info = pythonInspect(file);
  assert.deepEqual(info.integrity, ['ok'], `integrity_check of ${file}`);
  return info;
}

/** Rejects when the promise does not settle within ms. */
export function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}

/** Children started by `spawnTracked` that have not exited yet. */
const liveChildren = new Set();

/**
 * `spawn`, remembering the child until it exits, so that `killLiveChildren` (run by each test
 * file's `after` hook) can end the ones a failed assertion left behind. A leftover child keeps
 * its pipes open, and with them the test file's event loop: the whole run would hang.
 */
export function spawnTracked(command, args, options) {
  const child = spawn(command, args, options);
  liveChildren.add(child);
  child.on('exit', () => liveChildren.delete(child));
  return child;
}

/** SIGKILLs every tracked child still running (a stopped one too: SIGKILL needs no SIGCONT). */
export function killLiveChildren() {
  for (const child of liveChildren) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  liveChildren.clear();
}

/**
 * Runs `node script args...` and resolves {code, signal, stdout, stderr, ms}.
 */
export function runNode(script, args = [], options = {}) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawnTracked(process.execPath, [script, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LEASEFENCE_PKG: PKG, ...(options.env ?? {}) },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) =>
      resolve({ code, signal, stdout, stderr, ms: performance.now() - started }),
    );
  });
}

/** The JSON lines of a child's output (lines that are not JSON are ignored). */
export function jsonLines(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line));
    } catch {
      // a line cut short by a kill
    }
  }
  return out;
}

/** The native CLI, built when missing. */
export function nativeCli() {
  const bin = path.join(ROOT, 'target', 'debug', 'leasefence');
  if (!fs.existsSync(bin)) {
    const build = spawnSync('cargo', ['build', '-p', 'leasefence-cli'], { cwd: ROOT, stdio: 'inherit' });
    assert.equal(build.status, 0, 'cargo build -p leasefence-cli failed');
  }
  return bin;
}

/**
 * Watches this process's event loop with a 10 ms timer: `stop()` ends the watch and answers the
 * longest time (ms) the loop went without running it, up to now. A loop that waits for a lock
 * or a sync shows a gap as long as the wait.
 */
export function eventLoopLag() {
  let longest = 0;
  let last = performance.now();
  const ticker = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 10);
  return {
    stop() {
      clearInterval(ticker);
      return Math.max(longest, performance.now() - last);
    },
  };
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One `leasefence batch` process on `db` (a file or a postgres:// URL), driven one request at a time. */
export class NativeBatch {
  constructor(db, busyTimeoutMs = 60_000) {
    this.child = spawnTracked(nativeCli(), ['--db', db, '--busy-timeout', String(busyTimeoutMs / 1000), 'batch'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.stderr = '';
    this.child.stderr.setEncoding('utf8').on('data', (d) => (this.stderr += d));
    this.waiting = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      const resolve = this.waiting.shift();
      assert.ok(resolve, `unexpected output from leasefence batch: ${line}`);
      resolve(JSON.parse(line));
    });
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)));
  }

  request(obj) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(`${JSON.stringify(obj)}\n`);
    });
  }

  async end() {
    this.child.stdin.end();
    return this.exited;
  }
}

let engineName;
/**
 * The engine the package runs in this process: `native` (the Node-API addon) or `wasm`, as
 * `store.engine` reports it (LEASEFENCE_ENGINE, or the package's default where it is unset).
 */
export function engine() {
  if (engineName === undefined) {
    // Asked of a child with this process's environment: open() answers a Promise, and a test
    // file's skip options are decided before any test runs.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'leasefence-engine-'));
    try {
      const script = 'require(process.argv[1]).LeaseStore.open(process.argv[2]).then((s) => { console.log(s.engine); s.close(); })';
      const run = spawnSync(process.execPath, ['-e', script, PKG, path.join(dir, 'probe.db')], { encoding: 'utf8' });
      assert.equal(run.status, 0, `the package did not open a store: ${run.stderr}`);
      engineName = run.stdout.trim();
      assert.ok(['native', 'wasm'].includes(engineName), `store.engine said ${JSON.stringify(run.stdout)}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return engineName;
}

/**
 * A test's `skip` option for what only one engine does: false on `only`, else the reason, which
 * the report shows (e.g. the wasm engine's dot-file locks, the native engine's WAL sharing).
 */
export function onlyOn(only, why) {
  return engine() === only ? false : `the ${only} engine only (this run: ${engine()}): ${why}`;
}

/**
 * Holds `db`'s write lock from another process until `release()` is awaited, the way each engine's
 * rivals hold it: on the native engine a Python sqlite3 connection in BEGIN IMMEDIATE (POSIX
 * locks, as every native process takes them); on the wasm engine an empty `<db>.lock` directory
 * (how a unix-dotfile holder holds a file the wasm engine shares).
 */
export async function holdWriteLock(db) {
  if (engine() === 'wasm') {
    const lock = `${db}.lock`;
    fs.mkdirSync(lock);
    return { release: async () => fs.rmdirSync(lock) };
  }
  return holdSqliteWriteLock(db);
}

/**
 * A Python sqlite3 connection's BEGIN IMMEDIATE on `db` (the seed's kind of writer: POSIX locks,
 * no write gate). argv: the file, how long to wait for the lock (seconds), and `hold` (keep it
 * until a line on stdin) or `probe` (let go at once; exit 1 if the lock was taken).
 */
const PY_WRITE_LOCK = [
  'import sqlite3, sys',
  'c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=float(sys.argv[2]))',
  'c.execute("BEGIN IMMEDIATE")',
  'print("held", flush=True)',
  'if sys.argv[3] == "hold": sys.stdin.readline()',
  'c.execute("ROLLBACK")',
].join('\n');

/** Whether another process could take `db`'s SQLite write lock right now (a native file). */
export function sqliteWriteLockIsFree(db) {
  return spawnSync('python3', ['-c', PY_WRITE_LOCK, db, '0', 'probe']).status === 0;
}

/** Holds `db`'s SQLite write lock from a Python process until `release()` is awaited. */
export async function holdSqliteWriteLock(db) {
  const holder = spawnTracked('python3', ['-c', PY_WRITE_LOCK, db, '30', 'hold'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((resolve) => holder.on('exit', resolve));
  await new Promise((resolve, reject) => {
    holder.stdout.once('data', resolve);
    holder.once('exit', (code) => reject(new Error(`the lock holder for ${db} exited (${code}) before it held the lock`)));
  });
  return {
    async release() {
      holder.stdin.end('\n');
      const code = await exited;
      assert.equal(code, 0, `the lock holder for ${db} failed`);
    },
  };
}

/** Whether strace runs here (the native engine's syncs are counted with it). */
export const hasStrace = !spawnSync('strace', ['-V']).error;

/**
 * Counts this process's syncs on either engine: `syncs()` answers the count so far. The wasm
 * engine counts its own VFS syncs; on the native engine SQLite's syncs are system calls in C, so
 * strace is attached to this process (every thread, libuv's pool included) and the fsync and
 * fdatasync calls it logs are counted (its log is line-buffered: a sync is in it before the call
 * that made it returns). `stop()` detaches it. Needs strace on the native engine.
 */
export async function syncCounter() {
  if (engine() === 'wasm') {
    const wasm = loadWasm();
    return { syncs: () => JSON.parse(wasm.vfsStats()).syncs, stop: async () => {} };
  }
  assert.ok(hasStrace, 'strace is needed to count the native engine\'s syncs (apt-get install strace)');
  const log = path.join(tempDir('leasefence-syncs-'), 'syncs.log');
  const tracer = spawn('strace', ['-f', '-qq', '-e', 'trace=fsync,fdatasync', '-o', log, '-p', String(process.pid)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  tracer.stderr.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise((resolve) => tracer.on('exit', resolve));
  const traced = () => fs.readdirSync('/proc/self/task').every((task) => {
    try {
      return /TracerPid:\s+[1-9]/.test(fs.readFileSync(`/proc/self/task/${task}/status`, 'utf8'));
    } catch {
      return true; // the thread ended meanwhile
    }
  });
  const started = Date.now();
  while (!traced()) {
    assert.ok(tracer.exitCode === null && Date.now() - started < 10_000, `strace could not attach to this process: ${stderr}`);
    await sleep(5);
  }
  const syncs = () => {
    if (!fs.existsSync(log)) return 0;
    // A call interrupted by another thread's is logged as "fsync(5 <unfinished ...>" and later
    // "<... fsync resumed>": count each call once, by its first line.
    return fs.readFileSync(log, 'utf8').split('\n').filter((line) => /\b(fsync|fdatasync)\(/.test(line)).length;
  };
  return {
    syncs,
    async stop() {
      if (tracer.exitCode === null) tracer.kill('SIGINT');
      await exited;
    },
  };
}

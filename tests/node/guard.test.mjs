// FenceGuard opens the application's own SQLite file as the application's: it adds only its table
// `leasefence_guard`, accepts any other tables (a `jobs` table of the application's included),
// marks nothing, and refuses statements that would write the guard's own table. The file is made
// and read back by Python's sqlite3, a program that knows nothing of leasefence.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';

import { eventLoopLag, holdSqliteWriteLock, loadPackage, onlyOn, sleep, tempDir } from './helpers.mjs';

const { FenceGuard } = loadPackage();

const PY = String.raw`
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()
tables = [r[0] for r in con.execute("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")]
out = {"tables": tables, "application_id": con.execute("PRAGMA application_id").fetchone()[0],
       "journal_mode": con.execute("PRAGMA journal_mode").fetchone()[0]}
if "jobs" in tables:
    out["jobs_columns"] = [r[1] for r in con.execute("PRAGMA table_info(jobs)")]
    out["jobs"] = [list(r) for r in con.execute("SELECT * FROM jobs ORDER BY 1")]
if "leasefence_guard" in tables:
    out["guard"] = [list(r) for r in con.execute("SELECT key, fence FROM leasefence_guard ORDER BY key")]
print(json.dumps(out))
`;

/** Runs `script` on `file` with Python's sqlite3, then reads the tables back. */
function python(file, script = '') {
  const run = spawnSync('python3', ['-c', PY, file, script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout);
}

test('FenceGuard opens an application file that has its own jobs table, and writes it', async () => {
  const file = path.join(tempDir('leasefence-guard-'), 'app.db');
  python(file, "CREATE TABLE jobs(job_id INTEGER PRIMARY KEY, title TEXT); INSERT INTO jobs VALUES (1, 'draft');");
  const guard = await FenceGuard.open(file);
  const update = (fence, title) =>
    guard.write('invoice-1', fence, [{ sql: 'UPDATE jobs SET title = $1 WHERE job_id = 1', params: [title] }]);
  assert.equal(update(3, 'sent by fence 3').accepted, true);
  assert.deepEqual(update(2, 'stale'), { accepted: false, current: 3, rows: [] });
  guard.close();
  const seen = python(file);
  assert.deepEqual(seen.tables, ['jobs', 'leasefence_guard']);
  assert.deepEqual(seen.jobs_columns, ['job_id', 'title'], 'the application\'s jobs table keeps its shape');
  assert.deepEqual(seen.jobs, [[1, 'sent by fence 3']]);
  assert.deepEqual(seen.guard, [['invoice-1', 3]]);
});

test('FenceGuard adds only its own table to a new file and marks nothing', async () => {
  const file = path.join(tempDir('leasefence-guard-'), 'fresh.db');
  const guard = await FenceGuard.open(file);
  assert.equal(guard.write('k', 1, [{ sql: 'CREATE TABLE ledger(entry TEXT)' }]).accepted, true);
  guard.close();
  const seen = python(file);
  assert.deepEqual(seen.tables, ['leasefence_guard', 'ledger']);
  assert.equal(seen.application_id, 0, 'the file is the application\'s: no leasefence mark in its header');
  assert.equal(seen.journal_mode, 'delete');
});

test('a guarded statement that writes the guard\'s own table is refused and nothing is written', async () => {
  const file = path.join(tempDir('leasefence-guard-'), 'app.db');
  python(file, 'CREATE TABLE ledger(entry TEXT);');
  const guard = await FenceGuard.open(file);
  assert.equal(guard.write('k', 4, [{ sql: "INSERT INTO ledger VALUES ('first')" }]).accepted, true);
  for (const sql of ["UPDATE leasefence_guard SET fence = 0 WHERE key = 'k'", 'DELETE FROM leasefence_guard', 'DROP TABLE leasefence_guard']) {
    assert.throws(
      () => guard.write('k', 5, [{ sql: "INSERT INTO ledger VALUES ('second')" }, { sql }]),
      (error) => error.code === 'invalid_argument' && /leasefence_guard/.test(error.message),
      sql,
    );
  }
  // Still refused below the fence it kept, and nothing of the refused writes landed.
  assert.deepEqual(guard.write('k', 3, [{ sql: "INSERT INTO ledger VALUES ('stale')" }]), { accepted: false, current: 4, rows: [] });
  guard.close();
  const seen = python(file, '');
  assert.deepEqual(seen.guard, [['k', 4]]);
  const entries = spawnSync('python3', ['-c', 'import sqlite3,sys;print([r[0] for r in sqlite3.connect(sys.argv[1]).execute("SELECT entry FROM ledger")])', file], { encoding: 'utf8' });
  assert.equal(entries.stdout.trim(), "['first']");
});

test('guard.grouped.write answers each write of a group as write would, alone: a refusal or a failing statement leaves its neighbours', async () => {
  const file = path.join(tempDir('leasefence-guard-'), 'app.db');
  python(file, 'CREATE TABLE ledger(entry TEXT PRIMARY KEY, n INTEGER);');
  const guard = await FenceGuard.open(file);
  const insert = (entry, n) => [{ sql: 'INSERT INTO ledger VALUES ($1, $2) RETURNING entry', params: [entry, n] }];
  const settled = await Promise.allSettled([
    guard.grouped.write('a', 2, insert('a', 1)),
    guard.grouped.write('a', 1, insert('stale', 1)), // below the fence just accepted for `a`
    guard.grouped.write('b', 1, insert('a', 2)), // a duplicate entry: its statement fails
    guard.grouped.write('c', 5, insert('c', 3)),
    guard.grouped.write('d', 'five', insert('d', 4)), // not a fence
  ]);
  const [first, stale, failing, last, bad] = settled;
  assert.deepEqual(first, { status: 'fulfilled', value: { accepted: true, rows: [{ entry: 'a' }] } });
  assert.deepEqual(stale, { status: 'fulfilled', value: { accepted: false, current: 2, rows: [] } });
  assert.equal(failing.status, 'rejected');
  assert.match(failing.reason.message, /UNIQUE constraint failed/);
  assert.deepEqual(last, { status: 'fulfilled', value: { accepted: true, rows: [{ entry: 'c' }] } });
  assert.equal(bad.status, 'rejected');
  assert.equal(bad.reason.code, 'invalid_argument');
  guard.close();
  await assert.rejects(guard.grouped.write('a', 9, []), (error) => error.code === 'storage' && /closed/.test(error.message));
  const seen = python(file);
  // Only the accepted writes' keys and rows: `b`'s acceptance went with its failed statement.
  assert.deepEqual(seen.guard, [['a', 2], ['c', 5]]);
  const entries = spawnSync('python3', ['-c', 'import sqlite3,sys;print([list(r) for r in sqlite3.connect(sys.argv[1]).execute("SELECT entry, n FROM ledger ORDER BY entry")])', file], { encoding: 'utf8' });
  assert.equal(entries.stdout.trim(), "[['a', 1], ['c', 3]]");
});

test('guard.grouped.write waits for another process\'s lock on the file off the event loop: timers fire within 50 ms', { skip: onlyOn('native', 'the wasm engine writes on the event loop') }, async () => {
  const file = path.join(tempDir('leasefence-guard-'), 'held.db');
  python(file, 'CREATE TABLE ledger(entry TEXT);');
  const guard = await FenceGuard.open(file);
  guard.write('k', 1, []); // the guard's table exists before the lock is taken
  const lock = await holdSqliteWriteLock(file);
  const watch = eventLoopLag();
  const started = performance.now();
  let answeredAt = null;
  const written = guard.grouped.write('k', 2, [{ sql: "INSERT INTO ledger VALUES ('after the lock')" }]);
  written.then(() => (answeredAt = performance.now()));
  await sleep(2000);
  const freedAt = performance.now();
  await lock.release();
  const answer = await written;
  const lag = watch.stop();
  assert.deepEqual(answer, { accepted: true, rows: [] });
  assert.ok(answeredAt >= freedAt, `answered ${freedAt - answeredAt} ms before the lock was freed`);
  assert.ok(lag < 50, `the event loop stood still for ${lag} ms while the write waited for the lock`);
  guard.close();
  console.log(`the guard's write waited ${Math.round(freedAt - started)} ms for the lock; the longest event-loop gap meanwhile: ${lag.toFixed(1)} ms`);
});

// FenceGuard opens the application's own SQLite file as the application's: it adds only its table
// `leasefence_guard`, accepts any other tables (a `jobs` table of the application's included),
// marks nothing, and refuses statements that would write the guard's own table. The file is made
// and read back by Python's sqlite3, a program that knows nothing of leasefence.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import test from 'node:test';

import { loadPackage, tempDir } from './helpers.mjs';

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

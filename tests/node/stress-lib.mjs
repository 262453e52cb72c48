// Shared by stress.test.mjs and native-mix.test.mjs (not a test file itself): seeding the job
// pool and checking the reports of many workers against each other and against the file.
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { assertIntegrity, engine, hotJournal, loadPackage } from './helpers.mjs';

const { LeaseStore } = loadPackage();
export const POOL = 300;

/** Enqueues the pool s0..s{POOL-1} from this process, then closes. */
export async function seedPool(db, pool = POOL) {
  const store = await LeaseStore.open(db);
  for (let i = 0; i < pool; i++) store.enqueue(`s${i}`);
  store.close();
}

/**
 * Checks the reports of every worker against each other and against the file; returns totals.
 * `extraGrants` / `extraCompletes` come from other kinds of workers (the native mix).
 */
export function checkRun(db, reports, { extraGrants = [], extraCompletes = [], extraEnqueued = [] } = {}) {
  const grants = [...extraGrants];
  const completes = [...extraCompletes];
  const enqueued = [...extraEnqueued];
  for (const r of reports) {
    assert.deepEqual(r.errors, [], `${r.id}: operations failed`);
    assert.deepEqual(r.violations, [], `${r.id}: contract violations seen by the worker`);
    assert.deepEqual(r.staleCompleteOk, [], `${r.id}: a stale complete succeeded`);
    assert.equal(r.vfs.lost, 0, `${r.id}: a lock this worker held was taken from it`);
    for (const [job, fence] of r.grants) grants.push([job, fence, r.id]);
    for (const [job, fence, result] of r.completes) completes.push([job, fence, result, r.id]);
    enqueued.push(...r.enqueued);
  }

  // No (job, fence) handed out twice.
  const granted = new Map();
  for (const [job, fence, who] of grants) {
    const key = JSON.stringify([job, fence]);
    assert.ok(!granted.has(key), `(${job}, ${fence}) granted twice: to ${granted.get(key)} and ${who}`);
    granted.set(key, who);
  }

  // No job completed twice.
  const completedBy = new Map();
  for (const [job, fence, result, who] of completes) {
    assert.ok(!completedBy.has(job), `${job} completed twice: ${JSON.stringify(completedBy.get(job))} and ${who}`);
    assert.ok(granted.has(JSON.stringify([job, fence])), `${job} completed with fence ${fence} nobody was granted`);
    assert.equal(granted.get(JSON.stringify([job, fence])), who, `${job} completed by ${who}, not the grantee`);
    completedBy.set(job, { fence, result, who });
  }

  // Every extra id enqueued with true exactly once.
  assert.equal(new Set(enqueued).size, enqueued.length, 'an id was enqueued (true) twice');

  const info = assertIntegrity(db);
  // The native engine shares the library's WAL file; the wasm engine keeps its rollback journal.
  assert.equal(info.journal_mode, engine() === 'native' ? 'wal' : 'delete');
  // The wasm engine marks the files it shares ("shared with Node"); a native file carries no mark.
  assert.equal(info.application_id, engine() === 'native' ? 0 : 0x4c464e44);
  const rows = new Map(info.rows.map((row) => [row.id, row]));
  assert.equal(rows.size, POOL + enqueued.length, 'rows: the pool plus every successful enqueue');
  for (const id of enqueued) assert.ok(rows.has(id), `${id} enqueued but missing`);

  const fencesOf = new Map();
  for (const [job, fence] of grants) {
    if (!fencesOf.has(job)) fencesOf.set(job, []);
    fencesOf.get(job).push(fence);
  }
  for (const [id, row] of rows) {
    const fences = (fencesOf.get(id) ?? []).sort((a, b) => a - b);
    // Every fence 1..row.fence was granted to a worker that reported it, each once.
    assert.deepEqual(fences, Array.from({ length: row.fence }, (_, i) => i + 1), `${id}: fences granted vs stored ${row.fence}`);
    const done = completedBy.get(id);
    if (done) {
      assert.equal(row.done, 1, `${id}: completed by ${done.who} but not done`);
      assert.equal(row.result, done.result, `${id}: result`);
      assert.equal(row.fence, done.fence, `${id}: claimed again after done`);
      assert.equal(row.owner, done.who, `${id}: owner`);
    } else {
      assert.equal(row.done, 0, `${id}: done without a successful complete`);
      assert.equal(row.result, null, `${id}: a result without a successful complete`);
    }
  }
  assert.equal(fs.existsSync(`${db}.lock`), false, 'the lock was left behind');
  assert.equal(hotJournal(db), false, 'a hot journal was left');
  const stolen = grants.filter(([, fence]) => fence > 1).length;
  return { grants: grants.length, completes: completes.length, stolen, rows: rows.size, enqueued: enqueued.length };
}


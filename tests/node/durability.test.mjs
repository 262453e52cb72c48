// Every commit reaches the disk before its answer: claim() returns its fence only after the
// syncs that make it durable, so a fence handed out survives a crash or power loss (SPEC
// section 2). The wasm engine syncs its rollback journal and the file (two or more per commit);
// the native engine appends to the WAL and syncs it once (synchronous = FULL), checkpoints aside.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PKG, engine, hasStrace, loadPackage, syncCounter, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
/** The fewest syncs a commit may make on this run's engine. */
const SYNCS_PER_COMMIT = engine() === 'native' ? 1 : 2;

test('every committed claim and complete syncs; a refusal syncs nothing', { skip: engine() === 'native' && !hasStrace ? 'strace counts the native engine\'s syncs' : false }, async () => {
  const counter = await syncCounter();
  const { syncs } = counter;
  const db = path.join(tempDir(), 'sync.db');
  const store = await LeaseStore.open(db);
  try {
    store.enqueue('j');
    const before = syncs();
    const fence = store.claim('j', 'A', 0, 10);
    const afterClaim = syncs();
    assert.ok(afterClaim - before >= SYNCS_PER_COMMIT, `claim synced ${afterClaim - before} times`);
    assert.equal(store.complete('j', 'A', fence, 1, 'done'), true);
    assert.ok(syncs() - afterClaim >= SYNCS_PER_COMMIT);
    // A refused claim writes nothing, so it syncs nothing.
    const beforeRefusal = syncs();
    assert.equal(store.claim('j', 'B', 2, 10), null);
    assert.equal(syncs(), beforeRefusal);
  } finally {
    store.close();
    await counter.stop();
  }
});

test('the syncs are real fsync system calls (strace)', { skip: hasStrace ? false : 'strace is not installed' }, () => {
  const db = path.join(tempDir(), 'strace.db');
  const script = `
    const { LeaseStore } = require(${JSON.stringify(PKG)});
    LeaseStore.open(${JSON.stringify(db)}).then((s) => {
      for (let i = 0; i < 5; i++) s.enqueue('j' + i);
      process.stdout.write('MARK\\n');
      for (let i = 0; i < 5; i++) {
        if (!s.complete('j' + i, 'A', s.claim('j' + i, 'A', 0, 10), 1, null)) process.exit(3);
      }
      s.close();
    });`;
  const trace = path.join(path.dirname(db), 'strace.log');
  const run = spawnSync('strace', ['-f', '-e', 'trace=fsync,fdatasync,write', '-o', trace, process.execPath, '-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr.slice(-2000));
  const log = readFileSync(trace, 'utf8');
  const afterMark = log.slice(log.indexOf('MARK'));
  const syncs = (afterMark.match(/\b(fsync|fdatasync)\(/g) ?? []).length;
  // One claim + complete per round commits twice; each commit syncs at least SYNCS_PER_COMMIT times.
  assert.ok(syncs >= 5 * 2 * SYNCS_PER_COMMIT, `only ${syncs} fsync calls for 5 claim+complete rounds`);
});

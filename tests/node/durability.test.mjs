// xSync really syncs: every commit reaches the disk through fsync before claim() returns its
// fence, so a fence handed out survives a crash or power loss (SPEC section 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PKG, loadPackage, loadWasm, tempDir } from './helpers.mjs';

const { LeaseStore } = loadPackage();
const wasm = loadWasm();

test('every committed claim and complete calls the VFS sync', async () => {
  const db = path.join(tempDir(), 'sync.db');
  const store = await LeaseStore.open(db);
  store.enqueue('j');
  const before = JSON.parse(wasm.vfsStats()).syncs;
  const fence = store.claim('j', 'A', 0, 10);
  const afterClaim = JSON.parse(wasm.vfsStats()).syncs;
  assert.ok(afterClaim - before >= 2, `claim synced ${afterClaim - before} times (journal and database)`);
  assert.equal(store.complete('j', 'A', fence, 1, 'done'), true);
  assert.ok(JSON.parse(wasm.vfsStats()).syncs - afterClaim >= 2);
  // A refused claim writes nothing, so it syncs nothing.
  const beforeRefusal = JSON.parse(wasm.vfsStats()).syncs;
  assert.equal(store.claim('j', 'B', 2, 10), null);
  assert.equal(JSON.parse(wasm.vfsStats()).syncs, beforeRefusal);
  store.close();
});

test('the syncs are real fsync system calls (strace)', { skip: spawnSync('strace', ['-V']).error ? 'strace is not installed' : false }, () => {
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
  // One claim + complete per round commits twice; each commit syncs the journal and the file.
  assert.ok(syncs >= 5 * 2 * 2, `only ${syncs} fsync calls for 5 claim+complete rounds`);
});

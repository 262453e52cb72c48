// A database path that exists and is not a regular file (a FIFO, a directory, a device) is
// refused before SQLite opens it, with a `storage` error naming the path and what it is: a FIFO
// used to block the process for ever, and /dev/zero failed later with advice meant for a failed
// commit. Each open runs in a child process with a time limit, so a regression fails, not hangs.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { PKG, tempDir } from './helpers.mjs';

const CHILD = String.raw`
const { LeaseStore, FenceGuard } = require(process.env.LEASEFENCE_PKG);
const [kind, file] = process.argv.slice(1);
(kind === 'guard' ? FenceGuard.open(file) : LeaseStore.open(file)).then(
  () => console.log(JSON.stringify({ opened: true })),
  (e) => console.log(JSON.stringify({ code: e.code, retryable: e.retryable, message: e.message })),
);
`;

function openInChild(kind, file) {
  const run = spawnSync(process.execPath, ['-e', CHILD, kind, file], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, LEASEFENCE_PKG: PKG },
  });
  assert.notEqual(run.error?.code, 'ETIMEDOUT', `${kind} open of ${file} did not return within 30 s (blocked)`);
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

const dir = tempDir('leasefence-not-a-file-');
const fifo = path.join(dir, 'queue.fifo');
assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
const folder = path.join(dir, 'a-directory');
fs.mkdirSync(folder);

for (const [file, words] of [[fifo, /named pipe/], [folder, /a directory/], ['/dev/zero', /character device/]]) {
  for (const kind of ['store', 'guard']) {
    test(`${kind === 'store' ? 'LeaseStore' : 'FenceGuard'}.open refuses ${file} naming what it is`, () => {
      const answer = openInChild(kind, file);
      assert.equal(answer.opened, undefined, `opened ${file}`);
      assert.equal(answer.code, 'storage', answer.message);
      assert.equal(answer.retryable, false);
      assert.ok(answer.message.includes(file), answer.message);
      assert.match(answer.message, words);
      assert.match(answer.message, /not a regular file/);
      assert.doesNotMatch(answer.message, /did not confirm/, 'not the advice for a failed commit');
    });
  }
}

// Power losses and I/O errors on the native engine's file, from Node, with the library's own
// harness. The addon's I/O is SQLite's C, which Node's fs never sees, so the wasm engine's way
// (faults injected through fs: faults.test.mjs, power-loss.test.mjs) cannot reach it. Instead the
// addon is built once more with the tests' fault-injecting VFS inside (feature `addon-faults`,
// crate/src/addon/faults.rs), put into a copy of the package, and crate/tests/faults.rs runs its
// power-loss and I/O-error trials with Node children on it (crate/tests/support/node_fault_child.cjs):
// the same cuts, the same checks (integrity, every acknowledged answer kept, no fence handed out
// twice, a failed call a `storage` error that changed nothing) as for the Rust library's threads,
// and its failed-sync-then-crash case (all or nothing after a crash, WAL keeping the frames).
// FAULT_TRIALS sets the trials per test (default 8 per power-loss test, 10 I/O-error trials).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import test from 'node:test';

import { PKG, ROOT, onlyOn, tempDir } from './helpers.mjs';

const NATIVE_ONLY = onlyOn('native', "the native engine's SQLite (the wasm engine's I/O goes through Node's fs: faults.test.mjs, power-loss.test.mjs)");

/** Builds the addon with the fault VFS and answers a copy of the package that loads it. */
function faultPackage() {
  const build = spawnSync('cargo', ['build', '--quiet', '-p', 'leasefence', '--no-default-features', '--features', 'addon-faults', '--message-format=json'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 });
  assert.equal(build.status, 0, build.stderr.slice(-4000));
  // The cdylib of this build, by the path cargo reports (not a fixed name another build may own).
  const artifact = build.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line))
    .filter((message) => message.reason === 'compiler-artifact' && message.target?.name === 'leasefence')
    .flatMap((message) => message.filenames).find((file) => file.endsWith('.so'));
  assert.ok(artifact, 'cargo reported no leasefence cdylib');
  const copy = path.join(tempDir('leasefence-fault-package-'), 'leasefence');
  fs.cpSync(PKG, copy, { recursive: true });
  const prebuilds = path.join(copy, 'prebuilds');
  const [platform] = fs.readdirSync(prebuilds);
  fs.copyFileSync(artifact, path.join(prebuilds, platform, 'leasefence.node'));
  return copy;
}

test("the library's power-loss, I/O-error and failed-sync tests, run by Node processes on the addon", { skip: NATIVE_ONLY }, () => {
  const pkg = faultPackage();
  // --workspace: the features of the workspace's own `cargo test`, so nothing is built again.
  const run = spawnSync('cargo', ['test', '--quiet', '--workspace', '--test', 'faults', 'node_', '--', '--nocapture', '--test-threads=1'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, LEASEFENCE_FAULT_PACKAGE: pkg },
  });
  const output = run.stdout + run.stderr;
  assert.equal(run.status, 0, output.slice(-6000));
  assert.doesNotMatch(output, /skipped: no LEASEFENCE_FAULT_PACKAGE/);
  assert.match(output, /4 passed/);
  // Each summary: cuts happened and answers were checked; none lost.
  for (const loss of ['forget', 'torn']) {
    const line = new RegExp(`power loss \\(Node, native engine, Wal, ${loss}\\): \\d+ trials x \\d+ rounds, ([1-9]\\d*) cuts .*?, ([1-9]\\d*) acknowledged answers checked, 0 lost`);
    assert.match(output, line, output.slice(-3000));
  }
  const io = /I\/O errors \(Node, native engine, Wal\): (\{.*?\}), ([1-9]\d*) acknowledged answers checked, 0 lost/.exec(output);
  assert.ok(io, output.slice(-3000));
  assert.ok(JSON.parse(io[1]).errors > 0, io[0]);
  // A complete whose first commit sync failed: the WAL kept its frames, so after a crash it is done.
  assert.match(output, /Node, native engine: a complete whose sync failed, found done after a crash: \{1: true/);
  process.stdout.write(`${output.split('\n').filter((line) => /power loss|I\/O errors|sync failed/.test(line)).join('\n')}\n`);
});

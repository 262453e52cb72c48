// The tarball as a new user installs it: exactly one dist/leasefence-*.tgz, no install scripts,
// `npm install --offline` into an empty project, then require() and import from that project,
// each doing enqueue/claim/complete on a temp database; the typings ship with it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import test from 'node:test';

import { assertIntegrity, packedTarball as tarball, tempDir } from './helpers.mjs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function tarList(tgz) {
  const run = spawnSync('tar', ['-tzf', tgz], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.split('\n').filter(Boolean);
}

function tarRead(tgz, member) {
  const run = spawnSync('tar', ['-xzOf', tgz, member], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

test('the tarball: one file, no install scripts, the entry points, the wasm and the typings', () => {
  const tgz = tarball();
  const files = tarList(tgz);
  const manifest = JSON.parse(tarRead(tgz, 'package/package.json'));
  assert.equal(manifest.name, 'leasefence');
  assert.equal(path.basename(tgz), `leasefence-${manifest.version}.tgz`);
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare']) {
    assert.equal(manifest.scripts?.[hook], undefined, `the package runs a ${hook} script`);
  }
  assert.equal(manifest.gypfile, undefined);
  assert.deepEqual(manifest.dependencies ?? {}, {}, 'the package needs no dependencies');
  // `pg`, for PostgreSQL URLs only, is an optional peer: a file-only user installs nothing more
  // (the next test requires the package with no pg installed).
  const optionalPeers = Object.keys(manifest.peerDependencies ?? {}).filter((name) => manifest.peerDependenciesMeta?.[name]?.optional);
  assert.deepEqual(optionalPeers, ['pg'], 'the optional peer dependencies');
  assert.deepEqual(Object.keys(manifest.peerDependencies), optionalPeers, 'a peer dependency that is not optional');
  for (const member of ['package/index.cjs', 'package/index.mjs', 'package/index.d.ts', 'package/claim-worker.cjs', 'package/heartbeat-thread.cjs', 'package/wasm/leasefence.js', 'package/wasm/leasefence_bg.wasm', 'package/README.md', 'package/LICENSE-MIT', 'package/LICENSE-APACHE']) {
    assert.ok(files.includes(member), `${member} missing from the tarball: ${files.join(', ')}`);
  }
  // The native engine ships built, in the one tarball, for the platform the package was built on:
  // nothing is compiled or downloaded at install (no binding.gyp, no install script above).
  assert.ok(!files.some((f) => f.includes('binding.gyp')), 'a node-gyp build in the tarball');
  const addons = files.filter((f) => f.endsWith('.node'));
  assert.deepEqual(addons, ['package/prebuilds/linux-x64-gnu/leasefence.node'], 'the native addons shipped');
  // Every path the manifest points at is in the tarball.
  const targets = [manifest.main, manifest.types, ...Object.values(manifest.exports['.']), manifest.exports['./package.json']];
  for (const t of targets) assert.ok(files.includes(path.posix.join('package', t)), `${t} is referenced but not shipped`);
  assert.match(tarRead(tgz, 'package/index.d.ts'), /export declare class LeaseStore/);
  // The build bundled everything the scripts load (web/store/ included): each requires only
  // Node's own modules and files shipped beside it.
  for (const script of files.filter((f) => /\.c?js$/.test(f))) {
    const text = tarRead(tgz, script);
    for (const [, wanted] of text.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)) {
      if (wanted.startsWith('node:') || builtinModules.includes(wanted) || optionalPeers.includes(wanted)) continue;
      const shipped = path.posix.join(path.posix.dirname(script), wanted);
      assert.ok(files.includes(shipped), `${script} requires ${wanted}, which the tarball does not ship`);
    }
    assert.doesNotMatch(text, /^\s*(import|export)\s/m, `${script} is CommonJS but has an ES import or export`);
  }
});

test('npm install --offline of the tarball into an empty project, then require and import it', { timeout: 120_000 }, () => {
  const tgz = tarball();
  const project = tempDir('leasefence-user-');
  const name = path.basename(tgz);
  fs.copyFileSync(tgz, path.join(project, name));
  fs.writeFileSync(path.join(project, 'package.json'), `${JSON.stringify({ name: 'a-new-user', version: '1.0.0', private: true }, null, 2)}\n`);
  const install = spawnSync(npm, ['install', '--offline', '--ignore-scripts=false', '--no-audit', '--no-fund', `./${name}`], {
    cwd: project,
    encoding: 'utf8',
    // A private, empty cache: nothing can come from an earlier download.
    env: { ...process.env, npm_config_cache: path.join(project, '.npm-cache'), npm_config_update_notifier: 'false' },
    timeout: 100_000,
  });
  assert.equal(install.status, 0, `npm install failed:\n${install.stdout}\n${install.stderr}`);
  const installed = path.join(project, 'node_modules', 'leasefence');
  assert.ok(fs.existsSync(path.join(installed, 'index.d.ts')), 'index.d.ts not installed');
  assert.ok(fs.existsSync(path.join(installed, 'wasm', 'leasefence_bg.wasm')));
  const lock = JSON.parse(fs.readFileSync(path.join(project, 'package-lock.json'), 'utf8'));
  assert.equal(Object.keys(lock.packages).filter((p) => p.startsWith('node_modules/')).length, 1, 'it installed more than itself');

  // CommonJS, as `node -e` in the user's project.
  const cjsDb = path.join(project, 'cjs.db');
  const cjs = spawnSync(
    process.execPath,
    [
      '-e',
      `const { LeaseStore } = require('leasefence');
       (async () => {
         const s = await LeaseStore.open(${JSON.stringify(cjsDb)});
         const out = [s.enqueue('job'), s.claim('job', 'me', 0, 30)];
         out.push(s.complete('job', 'me', out[1], 1, 'from cjs'), s.state('job'));
         s.close();
         console.log(JSON.stringify(out));
       })().catch((e) => { console.error(e); process.exit(1); });`,
    ],
    { cwd: project, encoding: 'utf8', env: { ...process.env, LEASEFENCE_PKG: '' } },
  );
  assert.equal(cjs.status, 0, cjs.stderr);
  assert.deepEqual(JSON.parse(cjs.stdout), [true, 1, true, { id: 'job', owner: 'me', until: 30, fence: 1, result: 'from cjs', done: true }]);

  // The installed package's native engine loads from its own prebuilds/ folder.
  const native = spawnSync(
    process.execPath,
    ['-e', `require('leasefence').LeaseStore.open(${JSON.stringify(path.join(project, 'native.db'))}).then((s) => {
       console.log(JSON.stringify([s.engine, s.enqueue('job')])); s.close(); })`],
    { cwd: project, encoding: 'utf8', env: { ...process.env, LEASEFENCE_PKG: '', LEASEFENCE_ENGINE: 'native' } },
  );
  assert.equal(native.status, 0, native.stderr);
  assert.deepEqual(JSON.parse(native.stdout), ['native', true]);

  // Without `pg` installed, a PostgreSQL URL is refused with what to install.
  const noPg = spawnSync(
    process.execPath,
    ['-e', `require('leasefence').LeaseStore.connect('postgres://nobody@127.0.0.1/none').then(
       () => process.exit(1), (e) => { console.log(JSON.stringify({ code: e.code, message: e.message })); })`],
    { cwd: project, encoding: 'utf8', env: { ...process.env, LEASEFENCE_PKG: '' } },
  );
  assert.equal(noPg.status, 0, noPg.stderr);
  const refused = JSON.parse(noPg.stdout);
  assert.equal(refused.code, 'invalid_argument');
  assert.match(refused.message, /^LeaseStore\.connect\(\): .*npm install pg/);

  // ES module, importing the package by name (the `import` condition, index.mjs).
  const esmDb = path.join(project, 'esm.db');
  fs.writeFileSync(
    path.join(project, 'use.mjs'),
    `import { LeaseStore, JobWorker } from 'leasefence';
import leasefence from 'leasefence';
if (leasefence.LeaseStore !== LeaseStore) throw new Error('default and named exports differ');
if (leasefence.JobWorker !== JobWorker) throw new Error('default and named JobWorker differ');
const s = await LeaseStore.open(${JSON.stringify(esmDb)});
const out = [s.enqueue('job'), s.claim('job', 'me', 0, 30)];
out.push(s.complete('job', 'me', out[1], 1, 'from esm'), s.state('job'));
out.push(await s.claimMany('job', ['a', 'b'], 100, 10));
// The worker runtime, with its heartbeat on the event loop and on its own thread.
s.enqueue('w1');
s.enqueue('w2');
out.push((await new JobWorker(s, { ttl: 5 }).run((job) => 'ran ' + job, { untilEmpty: true })).completed);
s.enqueue('w3');
out.push((await new JobWorker(s, { ttl: 5, heartbeat: 'thread' }).run((job) => 'ran ' + job, { untilEmpty: true })).completed);
out.push(s.state('w3').result);
s.close();
console.log(JSON.stringify(out));
`,
  );
  const esm = spawnSync(process.execPath, ['use.mjs'], { cwd: project, encoding: 'utf8' });
  assert.equal(esm.status, 0, esm.stderr);
  assert.deepEqual(JSON.parse(esm.stdout), [true, 1, true, { id: 'job', owner: 'me', until: 30, fence: 1, result: 'from esm', done: true }, [null, null], 2, 1, 'ran w3']);
  for (const db of [cjsDb, esmDb]) assertIntegrity(db);

  // The resolved entry points are the installed ones, not the workspace's.
  const where = spawnSync(process.execPath, ['-e', "console.log(require.resolve('leasefence'))"], { cwd: project, encoding: 'utf8' });
  assert.equal(where.stdout.trim(), path.join(fs.realpathSync(installed), 'index.cjs'));
});

// The operations of node/index.d.ts and the table of web/store/operations.js (bundled into the
// package's index.cjs) are generated from the crate's one definition of the operations by
// scripts/generate-operations.mjs: a stale file fails here, and the declarations are checked
// against the table (names, parameter names and types, returns).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import test from 'node:test';
import { PKG, ROOT, tempDir } from './helpers.mjs';

const require = createRequire(import.meta.url);

/** The declaration text with comments dropped and whitespace collapsed. */
function declarations() {
  const text = fs.readFileSync(path.join(ROOT, 'node/index.d.ts'), 'utf8');
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '').replace(/\s+/g, ' ').replace(/,\s*\)/g, ')').replace(/\(\s+/g, '(').replace(/\s+\)/g, ')');
}

function signature({ params, lease, types }) {
  const list = (names) => names.map((p) => `${p}: ${types[p.replace(/\?$/, '')]}`).join(', ');
  // An operation starting with (job, owner, fence) takes a Lease in their place.
  if (!lease) return list(params);
  assert.deepEqual(params.slice(0, 3), ['job', 'owner', 'fence']);
  return `...args: [${list(params)}] | [${['lease: Lease', list(params.slice(3))].filter(Boolean).join(', ')}]`;
}

test('web/store/operations.js and the operations of index.d.ts are what the crate generates', () => {
  // Runs the generator in --check mode: it asks the CLI (cargo run) for the catalogue.
  const run = spawnSync(process.execPath, [path.join(ROOT, 'scripts/generate-operations.mjs'), '--check'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
});

test('the package bundles web/store/core.js: its store has the operations of the table, in order', async () => {
  const { LeaseStore } = require(path.join(PKG, 'index.cjs'));
  const { OPERATIONS } = await import(path.join(ROOT, 'web/store/core.js'));
  const store = await LeaseStore.open(path.join(tempDir('leasefence-types-'), 'ops.db'));
  try {
    assert.deepEqual(Object.keys(store.withReason), [...OPERATIONS.map((op) => op.name), 'claimLease']);
    for (const { name } of OPERATIONS) assert.equal(typeof store[name], 'function', name);
  } finally {
    store.close();
  }
});

test('protocolName gives the protocol spelling of the table names', async () => {
  const { OPERATIONS, protocolName } = await import(path.join(ROOT, 'web/store/core.js'));
  assert.deepEqual(['claimNext', 'runAt?', 'job', 'retryAt'].map(protocolName), ['claim_next', 'run_at', 'job', 'retry_at']);
  const ops = OPERATIONS.map((op) => protocolName(op.name));
  assert.deepEqual(ops.filter((name) => /[A-Z?]/.test(name)), [], 'a protocol name kept a capital or a mark');
  assert.ok(ops.includes('claim_many') && ops.includes('claim_next'), ops.join(' '));
});

test('index.d.ts declares exactly the operations of the table, with its parameters and returns', async () => {
  const { OPERATIONS } = await import(path.join(ROOT, 'web/store/core.js'));
  const d = declarations();
  const klass = d.slice(d.indexOf('export declare class LeaseStore'), d.indexOf('readonly withReason'));
  const from = d.indexOf('readonly withReason');
  // The class's own close(), after the table (other interfaces may declare a close() earlier).
  const withReason = d.slice(from, d.indexOf('close(): void', from));
  for (const op of OPERATIONS) {
    const args = signature(op);
    const returns = op.name === 'claimMany' ? `Promise<${op.returns}>` : op.returns;
    assert.ok(klass.includes(` ${op.name}(${args}): ${returns};`), `LeaseStore.${op.name}(${args}): ${returns} not declared`);
    const answer = op.name === 'claimMany'
      ? `Promise<{ value: ${op.returns}; reasons: (Reason | null)[] }>`
      : `Answer<${op.returns}>`;
    assert.ok(withReason.includes(` ${op.name}(${args}): ${answer};`), `withReason.${op.name}(${args}): ${answer} not declared`);
  }
  const declared = [...withReason.matchAll(/ (\w+)\(/g)].map((m) => m[1]);
  assert.deepEqual(declared, [...OPERATIONS.map((op) => op.name), 'claimLease'], 'withReason declares other operations than the table');
});

test('open() answers only the file store and connect() only the PostgreSQL one: a URL given to open, or a path to connect, is refused naming the other', async () => {
  // index.d.ts types open() as the synchronous file store for any string, connect() as the store
  // whose operations answer Promises: the run-time checks keep those types true.
  const { LeaseStore, FenceGuard } = require(path.join(PKG, 'index.cjs'));
  const dir = tempDir('leasefence-entry-');
  for (const [klass, name] of [[LeaseStore, 'LeaseStore'], [FenceGuard, 'FenceGuard']]) {
    for (const url of ['postgres://app:s3cret@127.0.0.1:1/queue', 'postgresql://db.internal/queue', 'POSTGRES://db/queue']) {
      await assert.rejects(klass.open(url, { busyTimeout: 0.1 }), (error) => {
        assert.equal(error.code, 'invalid_argument', `${name}.open(${url}): ${error.message}`);
        assert.match(error.message, new RegExp(`^${name}\\.open\\(\\): \`path\` is a PostgreSQL URL.*\`await ${name}\\.connect\\(url\\)\``));
        assert.ok(!error.message.includes('s3cret'), error.message);
        return true;
      });
    }
    for (const url of ['sqlite:///tmp/queue.db', 'file:///tmp/queue.db', 'mysql://db/queue']) {
      await assert.rejects(klass.open(url), (error) => {
        assert.equal(error.code, 'invalid_argument', `${name}.open(${url}): ${error.message}`);
        assert.match(error.message, new RegExp(`^${name}\\.open\\(\\): \`path\` is a URL.*${name}\\.connect a postgres:// URL`));
        return true;
      });
    }
    for (const notUrl of ['queue.db', path.join(dir, 'queue.db'), 'mysql://db/queue', '']) {
      await assert.rejects(klass.connect(notUrl), (error) => {
        assert.equal(error.code, 'invalid_argument', `${name}.connect(${notUrl}): ${error.message}`);
        assert.match(error.message, new RegExp(`^${name}\\.connect\\(\\): \`url\` must be a postgres:// or postgresql:// URL.*\`await ${name}\\.open\\(path\\)\``));
        return true;
      });
    }
    await assert.rejects(klass.connect(42), (error) => error.code === 'invalid_argument' && /`url`/.test(error.message));
    // A file path still opens its file.
    (await klass.open(path.join(dir, `${name}.db`))).close();
  }
  await assert.rejects(LeaseStore.connect('postgres://db/queue', { exclusive: true }),
    (error) => error.code === 'invalid_argument' && /^LeaseStore\.connect\(\): `exclusive` is for SQLite files/.test(error.message));
  await assert.rejects(LeaseStore.connect('postgres://db/queue', { busyTimeout: -1 }),
    (error) => error.code === 'invalid_argument' && /^LeaseStore\.connect\(\): `busyTimeout` must be a finite number of seconds/.test(error.message));
  await assert.rejects(LeaseStore.connect('postgres://db/queue', { busyTimeoutMs: 5000 }),
    (error) => error.code === 'invalid_argument' && /`busyTimeoutMs` is now `busyTimeout`, in seconds/.test(error.message));
});

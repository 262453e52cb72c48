// The npm package on PostgreSQL (`LeaseStore.connect('postgres://...')`), against the real server
// `bash scripts/postgres.sh` starts (LEASEFENCE_PG_URL; without it every test here is skipped, as
// the Rust suite's PostgreSQL tests are ignored). Each test works in a schema of its own.
//
// - every shared vector, each on a fresh schema;
// - Node processes and native `leasefence batch` processes draining one database at once: each
//   job claimed and completed once, no fence handed out twice, stale writes refused;
// - a crash restart of the server mid-run: every error retryable, nothing acknowledged lost, the
//   store carries on by itself;
// - errors: an unknown database is refused for good, an unreachable server is retryable, and
//   neither message shows the password;
// - TLS with libpq's sslmode meanings: encrypted where asked, the wrong server refused for good,
//   a client certificate where the server wants one;
// - JobWorkers draining a queue, with fencedResult too;
// - fenced writes (an async callback, a statement list) and enqueueMany with statements: the stale
//   worker refused, a throw or a failed statement committing nothing, writes to the library's
//   tables refused, the session given back; FenceGuard on a PostgreSQL database;
// - the contract's SQL is written once, in the crate: none of it in the package's JavaScript.
import assert from 'node:assert/strict';
import { execSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import test, { after } from 'node:test';

import { HERE, NativeBatch, PKG, jsonLines, killLiveChildren, loadPackage, runNode } from './helpers.mjs';
import { operationsOf, runVector, vectors } from './vector-runner.mjs';

const { OPERATIONS } = await import(path.join(HERE, '../../web/store/operations.js'));

after(killLiveChildren);

const URL_ = process.env.LEASEFENCE_PG_URL;
const skip = URL_ ? false : 'needs LEASEFENCE_PG_URL: run `bash scripts/postgres.sh`';
const { LeaseStore, JobWorker, FenceGuard, fencedResult } = loadPackage();
const { Client } = createRequire(import.meta.url)('pg');

/**
 * The operations PostgreSQL from Node has: every one of the table (web/store/operations.js). Its
 * store (crate/src/wasm/postgres/store.rs) implements the crate's async trait of every operation,
 * so one it lacked would not compile; each vector below then shows the operation works there.
 */
const ON_POSTGRES = new Set(OPERATIONS.map((op) => op.name));

/** What a vector needs that PostgreSQL from Node does not have. */
function missingOn(vector) {
  return operationsOf(vector).filter((op) => !ON_POSTGRES.has(op));
}

let schemas = 0;
const made = [];

/** A fresh schema; the URL that works in it. Dropped when the file's tests end. */
async function freshSchema(label) {
  const name = `node_${label}_${process.pid}_${schemas++}`.replace(/[^a-z0-9_]/gi, '_').toLowerCase();
  const admin = new Client({ connectionString: URL_ });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${name}`);
  await admin.end();
  made.push(name);
  const separator = URL_.includes('?') ? '&' : '?';
  return `${URL_}${separator}options=-csearch_path%3D${name}`;
}

after(async () => {
  if (!URL_ || made.length === 0) return;
  const admin = new Client({ connectionString: URL_ });
  await admin.connect();
  for (const name of made) await admin.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`);
  await admin.end();
});

const runnable = vectors().filter(([, vector]) => missingOn(vector).length === 0);

test('every shared vector runs on PostgreSQL from Node', { skip }, () => {
  assert.deepEqual(vectors().filter(([, vector]) => missingOn(vector).length > 0).map(([file]) => file), []);
  assert.ok(runnable.length >= 49, `only ${runnable.length} vectors`);
});

for (const [file, vector] of vectors()) {
  const missing = missingOn(vector);
  const reason = missing.length > 0 ? `uses ${missing.join(', ')}, not on PostgreSQL from Node yet` : skip;
  test(`vector ${file} on PostgreSQL: ${vector.name}`, { skip: reason }, async () => {
    const store = await LeaseStore.connect(await freshSchema(file.replace(/\.json$/, '')));
    try {
      await runVector(store, vector, file);
    } finally {
      await store.close();
    }
  });
}

test('Node processes and native processes drain one database together, each job once', { skip }, async () => {
  const url = await freshSchema('mix');
  const JOBS = 240;
  const seed = await LeaseStore.connect(url);
  for (let i = 0; i < JOBS; i++) assert.equal(await seed.enqueue(`job-${String(i).padStart(3, '0')}`), true);

  // Two native `leasefence batch` processes on the same server, claiming and completing.
  const nativeDrain = async (owner) => {
    const batch = new NativeBatch(url);
    const done = [];
    for (;;) {
      const claimed = await batch.request({ op: 'claim_next', owner, now: 1000, ttl: 600 });
      assert.ok(!('error' in claimed), `${owner}: ${JSON.stringify(claimed)} ${batch.stderr}`);
      if (claimed.value === null) break;
      const { job, fence } = claimed.value;
      const completed = await batch.request({ op: 'complete', job, owner, fence, now: 1001, result: `by ${owner}` });
      done.push({ job, fence, completed: completed.value });
    }
    assert.equal(await batch.end(), 0, batch.stderr);
    return done;
  };
  const child = path.join(HERE, 'pg-drain-child.mjs');
  const [n1, n2, ...nodes] = await Promise.all([
    nativeDrain('native-1'),
    nativeDrain('native-2'),
    ...['node-1', 'node-2', 'node-3'].map((owner) => runNode(child, [url, owner])),
  ]);
  const byOwner = { 'native-1': n1, 'native-2': n2 };
  nodes.forEach((run, i) => {
    assert.equal(run.code, 0, `node-${i + 1}: ${run.stderr}`);
    const lines = jsonLines(run.stdout);
    assert.deepEqual(lines.at(-1), { end: true }, `node-${i + 1} did not finish: ${run.stdout}`);
    byOwner[`node-${i + 1}`] = lines.slice(0, -1);
  });
  const completedBy = new Map();
  for (const [owner, done] of Object.entries(byOwner)) {
    for (const { job, fence, completed } of done) {
      assert.equal(completed, true, `${owner}'s complete of ${job} was refused`);
      assert.equal(fence, 1, `${job} was claimed again (fence ${fence}) while its lease was live`);
      assert.ok(!completedBy.has(job), `${job} completed by ${completedBy.get(job)} and ${owner}`);
      completedBy.set(job, owner);
    }
  }
  assert.equal(completedBy.size, JOBS, 'every job completed');
  // Both kinds took part, and the rows say who completed each job.
  const owners = new Set(completedBy.values());
  assert.ok([...owners].some((o) => o.startsWith('native')) && [...owners].some((o) => o.startsWith('node')), [...owners].join());
  for (const [job, owner] of completedBy) {
    const row = await seed.state(job);
    assert.equal(row.done, true);
    assert.equal(row.result, `by ${owner}`);
  }
  // A stale write is refused with its reason, whichever side holds the job.
  assert.equal(await seed.enqueue('late'), true);
  const fence = await seed.claim('late', 'node-a', 2000, 1);
  const newer = await seed.claim('late', 'node-b', 2002, 60);
  assert.equal(newer, fence + 1);
  const stale = await seed.withReason.complete('late', 'node-a', fence, 2003, 'stale');
  assert.deepEqual(stale, { value: false, reason: { code: 'stale_fence', fence: newer } });
  await seed.close();
});

test('JobWorkers on PostgreSQL: two of them, concurrency 6 each, drain one queue, each job once; a taken lease aborts its handler', { skip }, async () => {
  const url = await freshSchema('worker');
  const JOBS = 120;
  const seed = await LeaseStore.connect(url);
  assert.deepEqual(new Set(await seed.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ job: `j${i}` })))), new Set([true]));
  const handled = new Map();
  const workers = [];
  for (const owner of ['wa', 'wb']) {
    const store = await LeaseStore.connect(url);
    const worker = new JobWorker(store, { owner, ttl: 30, idle: 0.05, concurrency: 6 });
    workers.push({ store, run: worker.run(async (job) => {
      assert.ok(!handled.has(job), `${job} handled by ${handled.get(job)} and ${owner}`);
      handled.set(job, owner);
      await new Promise((resolve) => setTimeout(resolve, 2));
      return `done by ${owner}`;
    }, { untilEmpty: true }) });
  }
  const stats = await Promise.all(workers.map((w) => w.run));
  assert.equal(handled.size, JOBS);
  assert.equal(stats[0].completed + stats[1].completed, JOBS, JSON.stringify(stats));
  assert.ok(stats.every((s) => s.completed > 0), `one worker got nothing: ${JSON.stringify(stats)}`);
  const counts = await seed.stats(Date.now() / 1000);
  assert.equal(counts.done, JOBS, JSON.stringify(counts));
  for (const [job, owner] of handled) assert.equal((await seed.state(job)).result, `done by ${owner}`);
  // The registry saw both (their beats go with their renewals, and a last one when they stop).
  const registered = (await seed.listWorkers(Date.now() / 1000)).map((w) => w.owner).sort();
  assert.deepEqual(registered, ['wa', 'wb']);

  // A lease taken away mid-handler: the next renew is refused and the handler's signal aborts.
  assert.equal(await seed.enqueue('victim'), true);
  const store = await LeaseStore.connect(url);
  const worker = new JobWorker(store, { owner: 'slow', ttl: 0.6, heartbeatEvery: 0.1, idle: 0.05, maxAttempts: 1 });
  let lost = null;
  const run = await worker.run(async (job, { signal, fence }) => {
    assert.equal(await seed.release(job, 'slow', fence), true);
    await seed.claim(job, 'thief', Date.now() / 1000, 60);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    lost = signal.reason;
    return 'too late';
  }, { untilEmpty: true });
  assert.equal(lost?.code, 'lease_lost', String(lost));
  assert.equal(run.leasesLost, 1, JSON.stringify(run));
  assert.equal((await seed.state('victim')).owner, 'thief');
  assert.equal((await seed.state('victim')).done, false, 'the late result was written');
  for (const w of workers) await w.store.close();
  await store.close();
  await seed.close();
});

test('a server restart mid-run: errors are retryable, nothing acknowledged is lost, the store carries on', { skip: skip || (!process.env.LEASEFENCE_PG_RESTART && 'needs LEASEFENCE_PG_RESTART') }, async () => {
  const url = await freshSchema('restart');
  const store = await LeaseStore.connect(url, { busyTimeout: 2 });
  const acknowledged = [];
  const errors = [];
  let restarted = false;
  for (let i = 0; i < 60; i++) {
    if (i === 20) {
      execSync(process.env.LEASEFENCE_PG_RESTART, { stdio: 'inherit', shell: '/bin/bash' });
      restarted = true;
    }
    const job = `job-${i}`;
    for (let attempt = 0; ; attempt++) {
      try {
        // A retried enqueue may find its job already there (the lost answer was a commit).
        await store.enqueue(job);
        const fence = await store.claim(job, 'A', 10, 600);
        if (fence === null) {
          // A claim (or the complete) committed before the connection broke and its answer was
          // lost: the job is ours already, or done.
          const row = await store.state(job);
          assert.equal(row.owner, 'A');
          if (!row.done) assert.equal(await store.complete(job, 'A', row.fence, 11, 'r'), true);
        } else {
          assert.equal(await store.complete(job, 'A', fence, 11, 'r'), true);
        }
        acknowledged.push(job);
        break;
      } catch (error) {
        errors.push(error);
        assert.equal(error.retryable, true, `not retryable: ${error.code} ${error.message}`);
        assert.ok(attempt < 100, `still failing after 100 tries: ${error.message}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }
  assert.ok(restarted);
  assert.ok(errors.length > 0, 'the restart did not reach the store (no error seen)');
  assert.equal(acknowledged.length, 60);
  const stats = await store.stats(12);
  assert.equal(stats.done, 60, JSON.stringify(stats));
  await store.close();
});

test('an unknown database is refused for good, an unreachable server is retryable; no password shown', { skip }, async () => {
  const server = new URL(URL_);
  const unknown = new URL(URL_);
  unknown.pathname = '/no_such_database_here';
  await assert.rejects(LeaseStore.connect(unknown.href), (error) => {
    assert.equal(error.code, 'storage');
    assert.equal(error.retryable, false, error.message);
    assert.match(error.message, /3D000|does not exist/);
    return true;
  });
  // A port nobody listens on (the server's, plus one; chosen free by scripts/postgres.sh's range).
  const closed = `postgres://someone:s3cret-pass@127.0.0.1:${Number(server.port) + 1}/db`;
  await assert.rejects(LeaseStore.connect(closed, { busyTimeout: 1 }), (error) => {
    assert.equal(error.code, 'storage');
    assert.equal(error.retryable, true, error.message);
    assert.ok(!error.message.includes('s3cret-pass'), error.message);
    return true;
  });
  // And the store's URL hides it (the test server trusts loopback, so any password opens).
  const withPassword = new URL(URL_);
  withPassword.username = 'postgres';
  withPassword.password = 's3cret-pass';
  const store = await LeaseStore.connect(withPassword.href);
  assert.ok(!store.url.includes('s3cret-pass') && !store.url.includes(':@'), store.url);
  await store.close();
});

/** scripts/postgres.sh's TLS material: the path of `file` in it. */
const tlsFile = (file) => path.join(process.env.LEASEFENCE_PG_TLS_DIR, file);

/** A URL as `role` (a login role pg_hba.conf lets in over TLS only) on `host`, in `schema`'s search path, with TLS parameters. */
function tlsUrl(role, schemaUrl, host, params) {
  const base = new URL(URL_);
  const options = new URL(schemaUrl).searchParams.get('options');
  const url = `postgres://${role}@${host}:${base.port}/postgres?options=${encodeURIComponent(options)}&application_name=${role}`;
  return params ? `${url}&${params}` : url;
}

async function admin(query, params = []) {
  const client = new Client({ connectionString: URL_ });
  await client.connect();
  try {
    return (await client.query(query, params)).rows;
  } finally {
    await client.end();
  }
}

const tlsSkip = skip || (!process.env.LEASEFENCE_PG_TLS_DIR && 'needs LEASEFENCE_PG_TLS_DIR (scripts/postgres.sh)');

test('TLS with libpq\'s sslmode meanings: encrypted where asked, the wrong server refused for good, a client certificate where the server wants one', { skip: tlsSkip }, async () => {
  const schemaUrl = await freshSchema('tls');
  // Roles only pg_hba.conf's TLS rules let in (scripts/postgres.sh).
  for (const role of ['lf_tls', 'lf_cert']) {
    await admin(`DO $$ BEGIN CREATE ROLE ${role} LOGIN SUPERUSER; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
  }
  const ca = `sslrootcert=${encodeURIComponent(tlsFile('ca.pem'))}`;
  const otherCa = `sslrootcert=${encodeURIComponent(tlsFile('other-ca.pem'))}`;

  // The server refuses lf_tls in the clear, for good.
  await assert.rejects(LeaseStore.connect(tlsUrl('lf_tls', schemaUrl, 'localhost', 'sslmode=disable')), (error) => {
    assert.equal(error.retryable, false, error.message);
    assert.match(error.message, /no encryption|pg_hba/);
    return true;
  });

  // Encrypted sessions: the default (prefer), require, verify-ca by address, verify-full by name.
  const accepted = [
    ['localhost', ''],
    ['127.0.0.1', 'sslmode=require'],
    ['127.0.0.1', `sslmode=verify-ca&${ca}`],
    ['localhost', `sslmode=verify-full&${ca}`],
    ['localhost', `sslmode=require&${ca}`],
  ];
  for (const [i, [host, params]] of accepted.entries()) {
    const url = tlsUrl('lf_tls', schemaUrl, host, params);
    const store = await LeaseStore.connect(url);
    assert.equal(await store.enqueue(`tls-${i}`), true, url);
    assert.equal(await store.claim(`tls-${i}`, 'w', 0, 10), 1, url);
    const [{ count }] = await admin("SELECT count(*)::int AS count FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'lf_tls' AND s.ssl");
    assert.ok(count >= 1, `${url}: no encrypted session`);
    await store.close();
  }

  // The wrong server, or no way to know: refused at open, naming the reason, not retryable.
  const refused = [
    ['127.0.0.1', `sslmode=verify-full&${ca}`, /certificate was refused/],
    ['localhost', `sslmode=verify-full&${otherCa}`, /certificate was refused/],
    ['localhost', `sslmode=verify-ca&${otherCa}`, /certificate was refused/],
    ['localhost', `sslmode=require&${otherCa}`, /certificate was refused/],
    ['localhost', `sslmode=verify-full&sslrootcert=${encodeURIComponent(tlsFile('no-such-ca.pem'))}`, /cannot read sslrootcert/],
    ['localhost', 'sslmode=verify-full', /needs the certificate of the authority/],
    ['localhost', 'sslmode=allow', /sslmode=allow is not supported/],
  ];
  for (const [host, params, expected] of refused) {
    const url = tlsUrl('lf_tls', schemaUrl, host, params);
    await assert.rejects(LeaseStore.connect(url), (error) => {
      assert.match(error.message, expected, url);
      assert.equal(error.retryable, false, `${url}: ${error.message}`);
      return true;
    });
  }

  // lf_cert gets in with the client certificate the server trusts, and not without one.
  const identity = (name) => `sslcert=${encodeURIComponent(tlsFile(`${name}.crt`))}&sslkey=${encodeURIComponent(tlsFile(`${name}.key`))}`;
  const store = await LeaseStore.connect(tlsUrl('lf_cert', schemaUrl, 'localhost', `sslmode=verify-full&${ca}&${identity('client')}`));
  assert.equal(await store.enqueue('signed'), true);
  const [{ dn }] = await admin("SELECT s.client_dn AS dn FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'lf_cert'");
  assert.equal(dn, '/CN=lf_cert');
  await store.close();
  for (const params of [`sslmode=verify-full&${ca}`, `sslmode=verify-full&${ca}&${identity('other-client')}`, `sslmode=verify-full&${ca}&sslcert=${encodeURIComponent(tlsFile('client.crt'))}`]) {
    await assert.rejects(LeaseStore.connect(tlsUrl('lf_cert', schemaUrl, 'localhost', params)), (error) => {
      assert.equal(error.retryable, false, `${params}: ${error.message}`);
      return true;
    });
  }
  // Nothing was written by the refused attempts.
  const schema = decodeURIComponent(new URL(schemaUrl).searchParams.get('options')).split('=')[1];
  const [{ rows }] = await admin(`SELECT count(*)::int AS rows FROM ${schema}.jobs`);
  assert.equal(rows, accepted.length + 1);
});

/** Runs `text` on a connection of its own to `url`'s schema (the test's own tables and reads). */
async function onSchema(url, text, params = []) {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, params)).rows;
  } finally {
    await client.end();
  }
}

test('fenced writes from Node on PostgreSQL: an async callback or a statement list, committed with the lease check; the stale worker\'s write is refused and leaves nothing', { skip }, async () => {
  const url = await freshSchema('fenced');
  const store = await LeaseStore.connect(url);
  await onSchema(url, 'CREATE TABLE totals(id text PRIMARY KEY, n bigint NOT NULL)');
  await onSchema(url, "INSERT INTO totals VALUES ('north', 0)");
  assert.equal(await store.enqueue('j'), true);
  const a = await store.claim('j', 'A', 0, 10);
  // A stalls past its lease; B claims and writes through the callback, reading then writing.
  const b = await store.claim('j', 'B', 11, 10);
  assert.equal(await store.fenced('j', 'B', b, 12, async (tx) => {
    assert.deepEqual(await tx.get('SELECT n FROM totals WHERE id = $1', ['north']), { n: '0' });
    assert.deepEqual(await tx.run('UPDATE totals SET n = n + $1 WHERE id = $2', [5, 'north']), { changes: 1 });
    assert.deepEqual(await tx.all('SELECT id, n::int AS n FROM totals'), [{ id: 'north', n: 5 }]);
    assert.equal(await tx.get('SELECT n FROM totals WHERE id = $1', ['south']), undefined);
  }), true);
  // A wakes up: refused with the reason; its statement is rolled back with it.
  const late = [{ sql: 'UPDATE totals SET n = n + $1 WHERE id = $2', params: [100, 'north'] }];
  const refused = await store.withReason.fenced('j', 'A', a, 13, late, { complete: true, result: 'A' });
  assert.equal(refused.value, false);
  assert.equal(refused.reason.code, 'stale_fence');
  assert.equal(await store.fenced('j', 'A', a, 13, async (tx) => { await tx.run(late[0].sql, late[0].params); }), false);
  // B completes with a statement list, in the same commit.
  const last = [{ sql: 'UPDATE totals SET n = n + $1 WHERE id = $2', params: [1, 'north'] }];
  assert.equal(await store.fenced('j', 'B', b, 14, last, { complete: true, result: 'B' }), true);
  assert.deepEqual(await onSchema(url, 'SELECT n::int AS n FROM totals'), [{ n: 6 }]);
  const state = await store.state('j');
  assert.deepEqual([state.done, state.result, state.fence], [true, 'B', b]);
  // Completed: a second completion is refused and its statement undone.
  assert.equal(await store.fenced('j', 'B', b, 15, last, { complete: true, result: 'again' }), false);
  assert.deepEqual(await onSchema(url, 'SELECT n::int AS n FROM totals'), [{ n: 6 }]);
  await store.close();
});

test('fenced from Node on PostgreSQL: a throw rolls back and is rethrown, a failed statement commits nothing, the library\'s tables and the session stay the store\'s', { skip }, async () => {
  const url = await freshSchema('fenced_refusals');
  // One connection: whatever a call left on its session, the next call would meet.
  const store = await LeaseStore.connect(url, { maxConnections: 1 });
  await onSchema(url, 'CREATE TABLE notes(t text)');
  await onSchema(url, 'CREATE TABLE app(x int)');
  assert.equal(await store.enqueue('j'), true);
  const fence = await store.claim('j', 'w', 0, 1000);
  const write = (work) => store.fenced('j', 'w', fence, 1, work);
  const notes = async () => (await onSchema(url, 'SELECT t FROM notes ORDER BY t')).map((r) => r.t);
  const settings = "SELECT current_setting('lock_timeout') AS lock, current_setting('search_path') AS path";
  let before;
  assert.equal(await write(async (tx) => { before = await tx.get(settings); }), true);

  class Mine extends Error {}
  await assert.rejects(write(async (tx) => {
    await tx.run('INSERT INTO notes VALUES ($1)', ['thrown']);
    throw new Mine('the handler gave up');
  }), Mine);
  await assert.rejects(write(async (tx) => {
    await tx.run('INSERT INTO notes VALUES ($1)', ['swallowed']);
    await tx.run('INSERT INTO nowhere VALUES (1)').catch(() => {});
  }), (error) => error.code === 'invalid_argument' && /callback went on/.test(error.message));
  await assert.rejects(write(async (tx) => {
    await tx.run('INSERT INTO notes VALUES ($1)', ['failed']);
    await tx.run('INSERT INTO nowhere VALUES (1)');
  }), (error) => {
    assert.deepEqual([error.code, error.retryable, error.statement], ['storage', false, 1]);
    assert.match(error.message, /"nowhere" does not exist.*42P01/);
    return true;
  });
  let unawaited;
  await assert.rejects(write(async (tx) => {
    unawaited = tx.run('INSERT INTO notes VALUES ($1)', ['unawaited']);
  }), (error) => error.code === 'invalid_argument' && /await every/.test(error.message));
  await unawaited;
  // Statements that would write the library's tables, or change what outlives the call.
  const attempts = [
    "UPDATE jobs SET owner = 'x'",
    "DO $$ BEGIN UPDATE jobs SET owner = 'x'; END $$",
    "INSERT INTO leasefence_payloads(job, payload) VALUES ('k', 'p')",
    "UPDATE jobs SET queue = 'elsewhere'",
    'CREATE INDEX evil ON jobs(owner)',
    "DO $$ BEGIN EXECUTE 'CREATE INDEX evil ON jobs(owner)'; END $$",
    'CREATE RULE r AS ON INSERT TO app DO ALSO DELETE FROM jobs',
    'SET search_path TO public',
    'COMMIT',
    'DEALLOCATE ALL',
    "DO $$ BEGIN EXECUTE 'DEALLOCATE ALL'; END $$",
    "DO $$ BEGIN EXECUTE 'PREPARE s1 AS SELECT 1'; END $$",
  ];
  for (const sql of attempts) {
    await assert.rejects(write(async (tx) => {
      await tx.run('INSERT INTO notes VALUES ($1)', [sql]);
      await tx.run(sql);
    }), (error) => ['invalid_argument', 'storage'].includes(error.code), sql);
    // The store works on after each, on its one connection.
    assert.equal((await store.state('j')).fence, fence, `after ${sql}`);
    assert.equal(await store.renew('j', 'w', fence, 2, 1000), true, `after ${sql}`);
  }
  // Settings changed by a function call are given back after the statements.
  assert.equal(await write(async (tx) => {
    await tx.get("SELECT set_config('lock_timeout', '1ms', false), set_config('search_path', 'pg_catalog', false)");
  }), true);
  let after_;
  assert.equal(await write(async (tx) => { after_ = await tx.get(settings); }), true);
  assert.deepEqual(after_, before);
  assert.deepEqual(await notes(), []);
  // No index planted: the primary key and the library's five (crate/src/postgres/sql/schema.sql).
  assert.deepEqual(await onSchema(url, "SELECT count(*)::int AS n FROM pg_index WHERE indrelid = 'jobs'::regclass"), [{ n: 6 }]);
  assert.deepEqual(await onSchema(url, "SELECT owner, fence::int AS fence, done FROM jobs"), [{ owner: 'w', fence, done: 0 }]);
  await store.close();
});

test('enqueueMany with statements from Node on PostgreSQL: the statements and the jobs in one commit, or neither', { skip }, async () => {
  const url = await freshSchema('enqueue_statements');
  const store = await LeaseStore.connect(url);
  await onSchema(url, 'CREATE TABLE orders(id text PRIMARY KEY)');
  const order = (id) => ({ sql: 'INSERT INTO orders(id) VALUES ($1)', params: [id] });
  assert.deepEqual(await store.enqueueMany([{ job: 'ship-1' }, { job: 'mail-1', queue: 'mail' }], [order('o1')]), [true, true]);
  await assert.rejects(store.enqueueMany([{ job: 'ship-2' }], [order('o2'), order('o1')]),
    (error) => error.code === 'storage' && error.statement === 1 && /duplicate key/.test(error.message));
  await assert.rejects(store.enqueueMany([{ job: 'ship-3' }], [{ sql: "DELETE FROM jobs WHERE id = 'ship-1'" }]),
    (error) => error.code === 'invalid_argument');
  assert.deepEqual((await onSchema(url, 'SELECT id FROM orders')).map((r) => r.id), ['o1']);
  assert.deepEqual((await onSchema(url, 'SELECT id FROM jobs ORDER BY id')).map((r) => r.id), ['mail-1', 'ship-1']);
  assert.deepEqual(await store.stats(0, 'mail'), { queued: 1, scheduled: 0, leased: 0, done: 0, dead: 0 });
  await store.close();
});

test('JobWorker with fencedResult on PostgreSQL from Node: each job\'s write lands once, with its completion', { skip }, async () => {
  const url = await freshSchema('fenced_result');
  const store = await LeaseStore.connect(url);
  await onSchema(url, 'CREATE TABLE totals(job text PRIMARY KEY, total int NOT NULL)');
  const jobs = Array.from({ length: 40 }, (_, i) => ({ job: `sum-${i}`, payload: JSON.stringify([i, i + 1]) }));
  await store.enqueueMany(jobs);
  const runs = ['w1', 'w2'].map((owner) => new JobWorker(store, { owner, ttl: 30, idle: 0.05, concurrency: 4 })
    .run(async (job, { payload }) => {
      const total = JSON.parse(payload).reduce((sum, x) => sum + x, 0);
      return fencedResult([{ sql: 'INSERT INTO totals(job, total) VALUES ($1, $2)', params: [job, total] }], String(total));
    }, { untilEmpty: true }));
  const stats = await Promise.all(runs);
  assert.equal(stats[0].completed + stats[1].completed, 40, JSON.stringify(stats));
  const totals = await onSchema(url, 'SELECT job, total FROM totals ORDER BY job');
  assert.equal(totals.length, 40);
  for (const { job, total } of totals) {
    const i = Number(job.split('-')[1]);
    assert.equal(total, 2 * i + 1);
    assert.deepEqual([(await store.state(job)).done, (await store.state(job)).result], [true, String(total)]);
  }
  await store.close();
});

test('FenceGuard on a PostgreSQL database from Node: a stale fence is refused and writes nothing; the check joins your own transaction; the guard\'s table is not yours to write', { skip }, async () => {
  const url = await freshSchema('guard');
  await onSchema(url, 'CREATE TABLE ledger(entry text, fence int)');
  const guard = await FenceGuard.connect(url);
  const entry = (text, fence) => ({ sql: 'INSERT INTO ledger VALUES ($1, $2)', params: [text, fence] });
  assert.deepEqual(await guard.write('acct', 3, [entry('three', 3), { sql: 'SELECT count(*)::int AS n FROM ledger' }]), { accepted: true, rows: [{ n: 1 }] });
  assert.deepEqual(await guard.write('acct', 2, [entry('two', 2)]), { accepted: false, current: 3, rows: [] });
  assert.equal((await guard.write('acct', 3, [entry('three again', 3)])).accepted, true);
  // `grouped.write`, as on a file guard, is the same write.
  assert.equal(guard.grouped, guard);
  assert.equal((await guard.grouped.write('other', 1, [entry('other', 1)])).accepted, true);
  // A failing statement rolls back the fence it recorded with it.
  await assert.rejects(guard.write('acct', 9, [entry('nine', 9), { sql: 'INSERT INTO nowhere VALUES (1)' }]),
    (error) => error.code === 'storage' && error.statement === 1);
  // Statements may not move the fences, nor end the transaction.
  await assert.rejects(guard.write('acct', 4, [{ sql: "UPDATE leasefence_guard SET fence = 0 WHERE key = 'acct'" }]),
    (error) => error.code === 'invalid_argument' && /guard's table/.test(error.message));
  await assert.rejects(guard.write('acct', 4, [{ sql: 'COMMIT' }]), (error) => error.code === 'invalid_argument');
  assert.deepEqual(await onSchema(url, "SELECT key, fence::int AS fence FROM leasefence_guard ORDER BY key"), [{ key: 'acct', fence: 3 }, { key: 'other', fence: 1 }]);
  // Inside your own transaction on a pg client.
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('BEGIN');
    assert.deepEqual(await FenceGuard.accept(client, 'acct', 1), { accepted: false, current: 3 });
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    assert.deepEqual(await FenceGuard.accept(client, 'acct', 5), { accepted: true });
    await client.query('INSERT INTO ledger VALUES ($1, $2)', ['five', 5]);
    await client.query('COMMIT');
  } finally {
    // An open transaction would hold the schema the file's end drops.
    await client.end();
  }
  assert.deepEqual((await onSchema(url, 'SELECT entry FROM ledger ORDER BY fence, entry')).map((r) => r.entry), ['other', 'three', 'three again', 'five']);
  await assert.rejects(guard.write('acct', 4.5, []), (error) => error.code === 'invalid_argument' && /fence/.test(error.message));
  await guard.close();
  // A URL libpq would refuse is refused at open, naming the call.
  await assert.rejects(FenceGuard.connect(`${URL_}${URL_.includes('?') ? '&' : '?'}sslmode=sometimes`),
    (error) => error.code === 'invalid_argument' && /^FenceGuard\.connect\(.*sslmode/.test(error.message));
});

test('new pooled connections skip the schema check; after a lost connection the store checks the schema again and remakes what is missing', { skip }, async () => {
  const url = await freshSchema('recheck');
  const schema = decodeURIComponent(new URL(url).searchParams.get('options')).split('=')[1];
  // One connection, so that the test can name the store's backend.
  const store = await LeaseStore.connect(url, { maxConnections: 1 });
  assert.equal(await store.enqueue('a'), true);
  const fence = await store.claim('a', 'w', 0, 1000);
  let pid;
  assert.equal(await store.fenced('a', 'w', fence, 1, async (tx) => { pid = (await tx.get('SELECT pg_backend_pid() AS pid')).pid; }), true);
  // The database loses the store's tables (restored from an older dump, say) and the server
  // drops the store's connection.
  await admin(`DROP SCHEMA ${schema} CASCADE`);
  await admin(`CREATE SCHEMA ${schema}`);
  await admin('SELECT pg_terminate_backend($1)', [pid]);
  // The call meets the dead connection (a retryable error) or, when the pool saw it die while
  // idle, a new one; either way the next connection checks the schema again: the tables are
  // made anew, empty.
  const state = await store.state('a').catch((error) => {
    assert.deepEqual([error.code, error.retryable], ['storage', true], error.message);
    return store.state('a');
  });
  assert.equal(state, null);
  assert.equal(await store.enqueue('b'), true);
  assert.deepEqual((await admin(`SELECT id FROM ${schema}.jobs`)).map((r) => r.id), ['b']);
  await store.close();
});

test('none of the contract\'s SQL is in the package\'s JavaScript: it comes from the crate', () => {
  const files = fs.readdirSync(PKG, { recursive: true }).filter((f) => /\.(c|m)?js$/.test(f));
  assert.ok(files.includes('index.cjs'), `no index.cjs in ${PKG}`);
  const sql = /\b(UPDATE\s+jobs|INSERT\s+INTO\s+jobs|FROM\s+jobs|leasefence_order|pg_advisory_xact_lock|FOR\s+NO\s+KEY\s+UPDATE)\b/i;
  for (const file of files) {
    const text = fs.readFileSync(path.join(PKG, file), 'utf8');
    const found = text.match(sql);
    assert.equal(found, null, `${file} carries SQL of the contract (${found?.[0]}): it belongs in crate/src/postgres/`);
  }
});

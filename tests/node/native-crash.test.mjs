// The native engine's crash tests: Node processes on the addon, killed where it hurts, on the
// library's own WAL file with default options. The wasm engine's versions (crash, power-loss and
// faults tests) inject through Node's fs, which the native engine never calls: its I/O is SQLite's
// C, so here the process is killed (SIGKILL at random moments, and under strace at the Nth sync
// before the sync runs). A crash at a sync keeps what the page cache holds, so it is not a power
// loss; the library's own harness (crate/tests/faults.rs) cuts the power under Node processes on
// the addon through a VFS that forgets unsynced writes (native-faults.test.mjs).
//
// After each kill: integrity ok; every answer a worker had in hand is in the store (a claimed
// job's fence at least the one handed out, a completed job done with that fence and result); no
// fence handed out twice; and the next opener, Node or the native CLI, opens at once with nothing
// to clean (WAL recovery; POSIX locks die with their process; no <db>.lock).
// LEASEFENCE_CRASH_ROUNDS sets the SIGKILL rounds (default 12).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import test, { after } from 'node:test';

import { HERE, PKG, assertIntegrity, hasStrace, killLiveChildren, nativeCli, onlyOn, sleep, spawnTracked, tempDir } from './helpers.mjs';

after(killLiveChildren);
const NATIVE_ONLY = onlyOn('native', 'the native engine\'s WAL file and POSIX locks (the wasm engine\'s crash tests are crash.test.mjs and power-loss.test.mjs)');
const CHILD = path.join(HERE, 'native-crash-child.mjs');
const dir = tempDir('leasefence-native-crash-');
const ROUNDS = Number(process.env.LEASEFENCE_CRASH_ROUNDS ?? 12);

/** Starts a worker process; `acks` fills with what it printed. */
function worker(db, owner, grouped) {
  const child = spawnTracked(process.execPath, [CHILD, db, owner, ...(grouped ? ['grouped'] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEFENCE_PKG: PKG, LEASEFENCE_ENGINE: 'native' },
  });
  const acks = [];
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
  const ready = new Promise((resolve) => {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      const parsed = JSON.parse(line);
      if (parsed.ready) resolve(parsed.ready);
      else acks.push(parsed);
    });
  });
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stderr })));
  return { child, acks, ready, exited };
}

/** The store's rows as Python's sqlite3 reads them (another SQLite, another process). */
function rows(db) {
  const script = 'import json, sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nprint(json.dumps([list(r) for r in c.execute("SELECT id, fence, result, done FROM jobs")]))';
  const run = spawnSync('python3', ['-c', script, db], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return new Map(JSON.parse(run.stdout).map(([id, fence, result, done]) => [id, { fence, result, done }]));
}

/** Every acknowledged answer is in the store, and no fence was handed out twice. */
function checkAcks(db, acks) {
  assert.deepEqual(assertIntegrity(db).integrity, ['ok']);
  const stored = rows(db);
  const granted = new Set();
  for (const ack of acks) {
    if (ack.claim) {
      const [job, fence] = ack.claim;
      const key = `${job}@${fence}`;
      assert.ok(!granted.has(key), `${job} handed out at fence ${fence} twice`);
      granted.add(key);
      assert.ok(stored.get(job).fence >= fence, `${job}: acknowledged fence ${fence}, stored ${stored.get(job).fence}`);
    }
    if (ack.done) {
      const [job, fence, result] = ack.done;
      assert.deepEqual(stored.get(job), { fence, result, done: 1 }, `${job}: an acknowledged completion was lost`);
    }
  }
  assert.equal(fs.existsSync(`${db}.lock`), false, 'a lock file was left');
}

/** The next opener opens at once and works: a Node process, then the native CLI. */
function nextOpenersWork(db) {
  const started = Date.now();
  const script = `require(process.argv[1]).LeaseStore.open(process.argv[2]).then((s) => { console.log(JSON.stringify(s.stats(Date.now() / 1000))); s.close(); })`;
  const node = spawnSync(process.execPath, ['-e', script, PKG, db], { encoding: 'utf8', env: { ...process.env, LEASEFENCE_ENGINE: 'native' } });
  assert.equal(node.status, 0, node.stderr);
  const cli = spawnSync(nativeCli(), ['--db', db, 'stats'], { encoding: 'utf8' });
  assert.equal(cli.status, 0, cli.stderr);
  const waited = Date.now() - started;
  assert.ok(waited < 5000, `the next openers took ${waited} ms: they waited for something the dead process left`);
}

function seed(db, jobs) {
  // In batches of at most 1024, the most one call takes.
  const script = `require(process.argv[1]).LeaseStore.open(process.argv[2]).then((s) => {
    for (let i = 0; i < ${jobs}; i += 1024) s.enqueueMany(Array.from({ length: Math.min(1024, ${jobs} - i) }, (_, k) => ({ job: 'j' + (i + k) })));
    s.close(); })`;
  const run = spawnSync(process.execPath, ['-e', script, PKG, db], { encoding: 'utf8', env: { ...process.env, LEASEFENCE_ENGINE: 'native' } });
  assert.equal(run.status, 0, run.stderr);
}

test(`SIGKILL of Node workers mid-drain, ${ROUNDS} rounds: every acknowledged answer kept, no fence twice, the next opener waits for nothing`, { skip: NATIVE_ONLY, timeout: 60_000 + ROUNDS * 10_000 }, async () => {
  const db = path.join(dir, 'sigkill.db');
  seed(db, 400 * ROUNDS);
  const acks = [];
  let killedMidWork = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Three workers, one of them on the grouped Promise path; one is killed at a random moment.
    const workers = [worker(db, `a${round}`, false), worker(db, `b${round}`, true), worker(db, `c${round}`, round % 2 === 0)];
    await Promise.all(workers.map((w) => w.ready));
    await sleep(20 + Math.floor(Math.random() * 200));
    const victim = workers[round % 3];
    victim.child.kill('SIGKILL');
    const { signal } = await victim.exited;
    assert.equal(signal, 'SIGKILL');
    if (victim.acks.length > 0) killedMidWork++;
    for (const w of workers) if (w !== victim) w.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => w.exited));
    for (const w of workers) acks.push(...w.acks);
    checkAcks(db, acks);
    nextOpenersWork(db);
  }
  const done = acks.filter((a) => a.done).length;
  console.log(`native SIGKILL: ${ROUNDS} rounds, ${acks.length} acknowledged answers (${done} completions) all kept; ${killedMidWork} victims killed mid-drain`);
  assert.ok(done > 0, 'the workers completed nothing before they were killed: the test saw no work');
});

test('a Node worker killed at each of its first syncs (strace, before the sync runs): the next opener recovers every acknowledged answer', { skip: NATIVE_ONLY || (hasStrace ? false : 'strace is not installed'), timeout: 180_000 }, async () => {
  let killedAt = 0;
  for (let n = 1; n <= 12; n++) {
    const db = path.join(dir, `sync-${n}.db`);
    seed(db, 40);
    const run = spawnSync('strace', ['-f', '-qq', '-o', '/dev/null', '-e', 'trace=fsync,fdatasync', '-e', `inject=fsync,fdatasync:signal=SIGKILL:when=${n}`,
      process.execPath, CHILD, db, `w${n}`, n % 2 ? 'grouped' : ''], { encoding: 'utf8', env: { ...process.env, LEASEFENCE_PKG: PKG, LEASEFENCE_ENGINE: 'native' } });
    const acks = run.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)).filter((line) => !line.ready);
    // strace exits with the status the child died of: killed means the sync was reached.
    if (run.status !== 0) killedAt++;
    checkAcks(db, acks);
    nextOpenersWork(db);
  }
  console.log(`native crash at a sync: killed before sync N for ${killedAt} of 12 values of N, every acknowledged answer kept`);
  assert.ok(killedAt >= 10, `only ${killedAt} runs reached the sync they were to die at: the injection did not work`);
});

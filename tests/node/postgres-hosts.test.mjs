// Node workers on several hosts sharing one PostgreSQL server over TCP with TLS: two network
// namespaces made here stand for two machines, each joined to this one by a veth pair with
// loopback-range addresses (127.42.N.1 here, 127.42.N.2 there), all removed at the end. The
// server (`bash scripts/postgres.sh`: LEASEFENCE_PG_URL, LEASEFENCE_PG_TLS_DIR) listens on
// 127.0.0.1 only, so a relay in this process listens on each host's address here and forwards
// the bytes: the TLS session runs end to end between the worker and the server (verify-ca).
// Two worker processes on each host drain one queue: every job completed once, by a worker of
// either host. Skipped without the server, without root or without `ip`.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { createRequire } from 'node:module';
import test, { after } from 'node:test';

import { HERE, PKG, jsonLines, loadPackage } from './helpers.mjs';

const URL_ = process.env.LEASEFENCE_PG_URL;
const TLS = process.env.LEASEFENCE_PG_TLS_DIR;
const hasIp = (() => {
  try {
    execFileSync('ip', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
const skip = !URL_ || !TLS
  ? 'needs LEASEFENCE_PG_URL and LEASEFENCE_PG_TLS_DIR: run `bash scripts/postgres.sh`'
  : process.getuid?.() !== 0 || !hasIp
    ? 'needs root and `ip` to make network namespaces'
    : false;

const { LeaseStore } = loadPackage();
const { Client } = createRequire(import.meta.url)('pg');
const CHILD = path.join(HERE, 'pg-drain-child.mjs');
const tag = String(process.pid % 100000);
const hosts = [1, 2].map((n) => ({
  ns: `lf${tag}h${n}`,
  here: `lf${tag}r${n}`, // this side's end of the veth pair
  there: `lf${tag}n${n}`, // the host's end
  hereAddress: `127.42.${n}.1`,
  thereAddress: `127.42.${n}.2`,
}));
const relays = [];
const relayed = new Map(); // address -> connections relayed

const run = (...args) => execFileSync(args[0], args.slice(1), { stdio: ['ignore', 'ignore', 'pipe'] });
const inNs = (ns, ...args) => run('ip', 'netns', 'exec', ns, ...args);

/**
 * A namespace joined to this one by a veth pair with loopback-range addresses: route_localnet on
 * both ends lets 127.x addresses be routed over the veth (without it the kernel refuses them off
 * `lo`: `ip route get` answers "Invalid argument").
 */
function makeHost(host) {
  run('ip', 'netns', 'add', host.ns);
  run('ip', 'link', 'add', host.here, 'type', 'veth', 'peer', 'name', host.there);
  run('ip', 'link', 'set', host.there, 'netns', host.ns);
  run('sysctl', '-qw', `net.ipv4.conf.${host.here}.route_localnet=1`);
  run('ip', 'addr', 'add', `${host.hereAddress}/24`, 'dev', host.here);
  run('ip', 'link', 'set', host.here, 'up');
  inNs(host.ns, 'ip', 'link', 'set', 'lo', 'up');
  inNs(host.ns, 'sysctl', '-qw', 'net.ipv4.conf.all.route_localnet=1');
  inNs(host.ns, 'sysctl', '-qw', `net.ipv4.conf.${host.there}.route_localnet=1`);
  inNs(host.ns, 'ip', 'addr', 'add', `${host.thereAddress}/24`, 'dev', host.there);
  inNs(host.ns, 'ip', 'link', 'set', host.there, 'up');
}

function removeHost(host) {
  for (const args of [['ip', 'netns', 'del', host.ns], ['ip', 'link', 'del', host.here]]) {
    try {
      run(...args);
    } catch {
      // already gone (deleting the namespace takes its veth pair with it)
    }
  }
}

/** A relay on `address` here to the server's port: bytes only, so TLS stays end to end. */
function relay(address, serverPort) {
  return new Promise((resolve, reject) => {
    const server = net.createServer((inbound) => {
      relayed.set(address, (relayed.get(address) ?? 0) + 1);
      const outbound = net.connect(serverPort, '127.0.0.1');
      inbound.pipe(outbound).pipe(inbound);
      const close = () => {
        inbound.destroy();
        outbound.destroy();
      };
      inbound.on('error', close);
      outbound.on('error', close);
    });
    server.on('error', reject);
    server.listen(0, address, () => {
      relays.push(server);
      resolve(server.address().port);
    });
  });
}

after(() => {
  for (const server of relays) server.close();
  if (!skip) hosts.forEach(removeHost);
});

/** `node pg-drain-child.mjs url owner` inside `ns`; resolves to its exit and output. */
function drainIn(ns, url, owner) {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', ns, process.execPath, CHILD, url, owner], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LEASEFENCE_PKG: PKG },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('Node workers on two hosts (network namespaces) drain one PostgreSQL queue over TLS, each job once', { skip, timeout: 180_000 }, async (t) => {
  const server = new URL(URL_);
  const schema = `node_hosts_${process.pid}`;
  const admin = new Client({ connectionString: URL_ });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query('DO $$ BEGIN CREATE ROLE lf_tls LOGIN SUPERUSER; EXCEPTION WHEN duplicate_object THEN NULL; END $$');
  try {
    const options = `options=-csearch_path%3D${schema}`;
    const seed = await LeaseStore.connect(`${URL_}${URL_.includes('?') ? '&' : '?'}${options}`);
    const JOBS = 160;
    await seed.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ job: `job-${i}` })));

    hosts.forEach(makeHost);
    const ports = [];
    for (const host of hosts) ports.push(await relay(host.hereAddress, Number(server.port)));
    const ca = encodeURIComponent(path.join(TLS, 'ca.pem'));
    const urlFrom = (host, port) =>
      `postgres://lf_tls@${host.hereAddress}:${port}/postgres?${options}&application_name=lf_tls&sslmode=verify-ca&sslrootcert=${ca}`;

    // Inside a host, the server's own address is not the server: only the veth leads to it.
    assert.throws(() => inNs(hosts[0].ns, process.execPath, '-e', `
      const s = require('net').connect(${server.port}, '127.0.0.1');
      s.on('connect', () => process.exit(0)); s.on('error', () => process.exit(1));`), 'a host reached 127.0.0.1 of this machine');

    const started = performance.now();
    const runs = await Promise.all(hosts.flatMap((host, i) =>
      ['a', 'b'].map((worker) => drainIn(host.ns, urlFrom(host, ports[i]), `${host.ns}-${worker}`))));
    const seconds = (performance.now() - started) / 1000;
    const completedBy = new Map();
    for (const [i, result] of runs.entries()) {
      assert.equal(result.code, 0, `worker ${i}: ${result.stderr}`);
      const lines = jsonLines(result.stdout);
      assert.deepEqual(lines.at(-1), { end: true }, `worker ${i} did not finish: ${result.stdout}`);
      for (const { job, fence, completed } of lines.slice(0, -1)) {
        assert.equal(completed, true, job);
        assert.equal(fence, 1, job);
        assert.ok(!completedBy.has(job), `${job} completed twice`);
        completedBy.set(job, i);
      }
    }
    assert.equal(completedBy.size, JOBS);
    const perHost = [0, 0];
    for (const worker of completedBy.values()) perHost[Math.floor(worker / 2)] += 1;
    assert.ok(perHost.every((n) => n > 0), `a host completed nothing: ${perHost}`);
    // What the run looked like (reported, not asserted: timing belongs to benchmarks).
    t.diagnostic(`${JOBS} jobs by 2 workers on each of 2 hosts over TLS: ${perHost.join(' + ')}; ` +
      `${seconds.toFixed(2)} s from the workers' start (Node start-up, TLS handshakes and the drain)`);
    assert.equal((await seed.stats(2000)).done, JOBS);
    // Each host's workers came over its veth, through its relay.
    for (const host of hosts) assert.ok((relayed.get(host.hereAddress) ?? 0) >= 2, `${host.ns}: ${relayed.get(host.hereAddress)} connections`);
    await seed.close();
  } finally {
    await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await admin.end();
  }
});

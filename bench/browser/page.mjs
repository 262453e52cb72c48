// The bench page. Two comparisons, each leasefence against the official sqlite-wasm on its
// opfs-sahpool VFS running the same SQL in a dedicated worker:
//  - "api": from the page, one awaited call per operation, leasefence through its own page-side
//    LeaseStore (web/store/lease-store.js, as the playground extends it with a reset) and the
//    official worker through the same kind of
//    message round trip;
//  - "worker": a timed loop inside each dedicated worker, no page round trips.
// Blocks of cycles take turns so both sample the same moments. Results go out as console lines:
// JSON for the report, text for progress.
import { PlaygroundStore as LeaseStore } from '/web/app/playground-store.js';

const log = (text) => console.log(text);
const emit = (record) => console.log(JSON.stringify(record));

/** A worker of ours, called like web/store/lease-store.js calls its worker. */
class Remote {
  #pending = new Map();
  #next = 1;
  constructor(url) {
    this.worker = new Worker(new URL(url, import.meta.url), { type: 'module' });
    this.worker.onmessage = ({ data }) => {
      const pending = this.#pending.get(data.id);
      this.#pending.delete(data.id);
      if (data.ok) pending.resolve(data.value);
      else pending.reject(Object.assign(new Error(data.error.message), { code: data.error.code }));
    };
    this.worker.onerror = (event) => {
      for (const pending of this.#pending.values()) pending.reject(new Error(`worker failed: ${event.message}`));
    };
  }
  send(method, ...args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.worker.postMessage({ id, method, args });
    });
  }
  terminate() {
    this.worker.terminate();
  }
}

/** The official worker behind the page-side API shape of LeaseStore. */
class OfficialPageStore {
  constructor(remote) {
    this.remote = remote;
  }
  async claim(job, owner, now, ttl) {
    return (await this.remote.send('call', 'claim', [job, owner, now, ttl])).value;
  }
  async complete(job, owner, fence, now, result) {
    return (await this.remote.send('call', 'complete', [job, owner, fence, now, result])).value;
  }
}

const NOW = 1000;
const TTL = 30;

async function pageBlock(store, from, to) {
  const start = performance.now();
  for (let i = from; i < to; i++) {
    const job = `job-${i}`;
    const fence = await store.claim(job, 'worker', NOW, TTL);
    if (fence == null) throw new Error(`claim of ${job} refused`);
    if (!(await store.complete(job, 'worker', fence, NOW + 1, 'ok'))) throw new Error(`complete of ${job} refused`);
  }
  return (performance.now() - start) / 1e3;
}

async function resetLeasefence(store, n) {
  await store.eraseEverything();
  for (let i = 0; i < n; i++) await store.enqueue(`job-${i}`);
}

async function countDone(store, n) {
  let done = 0;
  for (let i = 0; i < n; i++) done += (await store.state(`job-${i}`))?.done ? 1 : 0;
  return done;
}

function report(mode, r, repeats, cycles, took, opfs = {}) {
  for (const [name, seconds] of Object.entries(took)) {
    const rate = cycles / seconds;
    emit({ section: 'browser', mode, case: name, repeat: r, cycles, seconds, rate, ...(opfs[name] ? { opfs: opfs[name] } : {}) });
    log(`  [browser ${mode} ${r + 1}/${repeats}] ${name.padEnd(10)} ${rate.toFixed(0).padStart(6)} cycles/s  (${(1e3 / rate).toFixed(3)} ms/cycle)`);
  }
}

window.runBench = async ({ repeats = 5, cycles = 200, blocks = 20 } = {}) => {
  cycles = Math.ceil(cycles / blocks) * blocks;
  const per = cycles / blocks;
  const official = new Remote('./official-worker.mjs');
  await official.send('open', 'bench-official.db');
  emit({ section: 'settings', case: 'browser', official: await official.send('settings'),
    leasefence: { journal_mode: 'delete', synchronous: 3, vfs: 'sahpool (sqlite-wasm-vfs)' },
    userAgent: navigator.userAgent });

  // 1. The page-side API.
  const leasefence = await LeaseStore.open('bench-leasefence.db');
  const officialPage = new OfficialPageStore(official);
  for (let r = 0; r < repeats; r++) {
    await resetLeasefence(leasefence, cycles);
    await official.send('reset', cycles);
    const stores = { leasefence, official: officialPage };
    const took = { leasefence: 0, official: 0 };
    const names = Object.keys(stores);
    for (let b = 0; b < blocks; b++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + b + r) % names.length];
        took[name] += await pageBlock(stores[name], b * per, (b + 1) * per);
      }
    }
    const done = [await countDone(leasefence, cycles), await official.send('doneCount')];
    if (done[0] !== cycles || done[1] !== cycles) throw new Error(`api: jobs done ${done}, expected ${cycles}`);
    report('api', r, repeats, cycles, took);
  }
  await leasefence.close(); // frees its OPFS pool for the in-worker run

  // 2. Inside the workers.
  const lfWorker = new Remote('./leasefence-worker.mjs');
  await lfWorker.send('open', 'bench-leasefence.db');
  for (let r = 0; r < repeats; r++) {
    await lfWorker.send('reset', cycles);
    await official.send('reset', cycles);
    const workers = { leasefence: lfWorker, official };
    const took = { leasefence: 0, official: 0 };
    for (const worker of Object.values(workers)) await worker.send('opfsStats'); // reset the counters
    const names = Object.keys(workers);
    for (let b = 0; b < blocks; b++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + b + r) % names.length];
        took[name] += await workers[name].send('loop', b * per, (b + 1) * per);
      }
    }
    const opfs = { leasefence: await lfWorker.send('opfsStats'), official: await official.send('opfsStats') };
    const done = [await lfWorker.send('doneCount', cycles), await official.send('doneCount')];
    if (done[0] !== cycles || done[1] !== cycles) throw new Error(`worker: jobs done ${done}, expected ${cycles}`);
    report('worker', r, repeats, cycles, took, opfs);
    for (const [name, s] of Object.entries(opfs)) {
      log(`      ${name}: per cycle ${(s.flush.calls / cycles).toFixed(1)} flush (${(s.flush.ms / cycles).toFixed(2)} ms), ` +
        `${(s.write.calls / cycles).toFixed(1)} write (${(s.write.ms / cycles).toFixed(2)} ms), ` +
        `${(s.read.calls / cycles).toFixed(1)} read, ${(s.truncate.calls / cycles).toFixed(1)} truncate, ` +
        `${(s.getSize.calls / cycles).toFixed(1)} getSize`);
    }
  }
  await lfWorker.send('close');
  await official.send('close');
  lfWorker.terminate();
  official.terminate();
  return 'done';
};

// The contract's SQL, verbatim from crate/src/sqlite/sql/*.sql, for the official sqlite-wasm worker.
export const SQL = {
  table: 'CREATE TABLE IF NOT EXISTS jobs(id TEXT PRIMARY KEY, owner TEXT, until REAL NOT NULL DEFAULT 0, ' +
    'fence INTEGER NOT NULL DEFAULT 0, result TEXT, done INTEGER NOT NULL DEFAULT 0)',
  index: 'CREATE INDEX IF NOT EXISTS leasefence_claimable ON jobs(until) WHERE done = 0',
  enqueue: 'INSERT OR IGNORE INTO jobs(id) VALUES (?1)',
  claim: 'UPDATE jobs SET owner = ?2, until = ?3, fence = fence + 1 ' +
    'WHERE id = ?1 AND done = 0 AND until <= ?4 AND fence < 9223372036854775807 RETURNING fence',
  complete: 'UPDATE jobs SET result = ?5, done = 1 ' +
    'WHERE id = ?1 AND owner = ?2 AND fence = ?3 AND done = 0 AND until > ?4',
  lease: 'SELECT owner, until, fence, done FROM jobs WHERE id = ?1',
};

export const NOW = 1000;
export const TTL = 30;

/** Answers `{id, method, args}` messages with `{id, ok, value | error}`, one at a time, in order. */
export function serve(handle) {
  let queue = Promise.resolve();
  self.onmessage = (event) => {
    const { id, method, args } = event.data;
    queue = queue.then(async () => {
      try {
        self.postMessage({ id, ok: true, value: await handle(method, args) });
      } catch (error) {
        self.postMessage({ id, ok: false, error: { code: error?.code ?? 'storage', message: String(error?.message ?? error) } });
      }
    });
  };
}

/** claim + complete of job-`from` .. job-`to - 1` through `store` (sync methods), timed here. */
export function loop(store, from, to) {
  const start = performance.now();
  for (let i = from; i < to; i++) {
    const job = `job-${i}`;
    const fence = store.claim(job, 'worker', NOW, TTL);
    if (fence == null) throw new Error(`claim of ${job} refused`);
    if (!store.complete(job, 'worker', fence, NOW + 1, 'ok')) throw new Error(`complete of ${job} refused`);
  }
  return (performance.now() - start) / 1e3;
}

/**
 * Counts the OPFS sync-access-handle calls this worker makes (and the time spent in them), so the
 * report can say where a cycle's time goes. Wraps the prototype before any VFS opens a file.
 */
export function instrumentOpfs() {
  const stats = {};
  const proto = globalThis.FileSystemSyncAccessHandle?.prototype;
  if (!proto) return () => ({});
  for (const method of ['flush', 'write', 'read', 'truncate', 'getSize']) {
    const original = proto[method];
    stats[method] = { calls: 0, ms: 0 };
    proto[method] = function (...args) {
      const start = performance.now();
      try {
        return original.apply(this, args);
      } finally {
        stats[method].calls++;
        stats[method].ms += performance.now() - start;
      }
    };
  }
  return () => {
    const copy = JSON.parse(JSON.stringify(stats));
    for (const s of Object.values(stats)) {
      s.calls = 0;
      s.ms = 0;
    }
    return copy;
  };
}

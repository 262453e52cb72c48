// Measures what the playground costs to load: the bytes of wasm and JavaScript the page fetches
// (raw and gzipped, as a server compressing them would send them) and the time from navigation to
// the first enabled control (median of RUNS fresh profiles).
//   node tests/browser/load-cost.mjs                      this tree (after bash scripts/build-web.sh)
//   node tests/browser/load-cost.mjs OTHER/web/server.mjs  and another build, runs interleaved, so
//                                                          both see the same machine load
import { gzipSync } from 'node:zlib';
import { startServer, launchBrowser } from './harness.mjs';

const runs = Number(process.env.RUNS ?? 5);
const servers = [['this tree', await startServer()]];
if (process.argv[2]) servers.unshift(['other', await startServer(process.argv[2])]);

async function once(url) {
  const browser = await launchBrowser();
  try {
    const page = browser.context.pages()[0] ?? (await browser.context.newPage());
    const seen = new Map();
    page.on('response', async (response) => {
      const { pathname } = new URL(response.url());
      if (!/\.(js|mjs|wasm)$/.test(pathname)) return;
      try {
        seen.set(pathname, await response.body());
      } catch {
        // a response without a body: nothing to count
      }
    });
    const started = Date.now();
    await page.goto(url);
    await page.waitForSelector('main button:enabled', { timeout: 60_000 });
    const ms = Date.now() - started;
    await page.waitForSelector('html[data-ready="true"]');
    const bytes = { wasm: 0, wasmGzip: 0, js: 0, jsGzip: 0, files: 0 };
    for (const [name, body] of seen) {
      const kind = name.endsWith('.wasm') ? 'wasm' : 'js';
      bytes[kind] += body.length;
      bytes[`${kind}Gzip`] += gzipSync(body, { level: 9 }).length;
      bytes.files += 1;
    }
    return { ms, bytes };
  } finally {
    await browser.close();
  }
}

const results = new Map(servers.map(([name]) => [name, { times: [], bytes: null }]));
try {
  for (let i = 0; i < runs; i++) {
    for (const [name, server] of servers) {
      const { ms, bytes } = await once(server.url);
      const r = results.get(name);
      r.times.push(ms);
      r.bytes ??= bytes;
    }
  }
} finally {
  for (const [, server] of servers) server.stop();
}
for (const [name, { times, bytes }] of results) {
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ build: name, ...bytes, firstInteractionMs: times[Math.floor(times.length / 2)], runs: times }));
}

// Measures what the playground costs to load: the bytes of wasm and JavaScript the page fetches
// (raw and gzipped, as a server compressing them would send them) and the time from navigation to
// the first enabled control, median of RUNS fresh profiles.
// Run: node tests/browser/load-cost.mjs   (after bash scripts/build-web.sh; RUNS=5 by default)
import { gzipSync } from 'node:zlib';
import { startServer, launchBrowser } from './harness.mjs';

const runs = Number(process.env.RUNS ?? 5);
const server = await startServer();
const times = [];
let bytes = null;
try {
  for (let i = 0; i < runs; i++) {
    const browser = await launchBrowser();
    try {
      const page = browser.context.pages()[0] ?? (await browser.context.newPage());
      const seen = new Map();
      page.on('response', async (response) => {
        const url = new URL(response.url());
        if (!/\.(js|mjs|wasm)$/.test(url.pathname)) return;
        try {
          seen.set(url.pathname, await response.body());
        } catch {
          // a response without a body (redirect): nothing to count
        }
      });
      const started = Date.now();
      await page.goto(server.url);
      await page.waitForSelector('main button:enabled', { timeout: 30_000 });
      times.push(Date.now() - started);
      await page.waitForSelector('html[data-ready="true"]');
      if (!bytes) {
        bytes = { wasm: 0, wasmGzip: 0, js: 0, jsGzip: 0, files: 0 };
        for (const [name, body] of seen) {
          const kind = name.endsWith('.wasm') ? 'wasm' : 'js';
          bytes[kind] += body.length;
          bytes[`${kind}Gzip`] += gzipSync(body, { level: 9 }).length;
          bytes.files += 1;
        }
      }
    } finally {
      await browser.close();
    }
  }
} finally {
  server.stop();
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ ...bytes, firstInteractionMs: times[Math.floor(times.length / 2)], runs: times }));

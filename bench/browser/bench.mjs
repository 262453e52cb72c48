// The browser section of `npm run bench`: serves the bench page (bench/browser), leasefence's
// browser store (web/store, on the playground's wasm in web/app/pkg for its reset) and the official @sqlite.org/sqlite-wasm from node_modules
// on localhost (a secure context, which OPFS needs), then runs the page in headless Chromium
// through the browser tests' harness. JSON lines on stdout, progress on stderr.
//
//   node bench/browser/bench.mjs [--repeats 5] [--cycles 200] [--blocks 20]
import { createServer } from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { launchBrowser, repo } from '../../tests/browser/harness.mjs';

const { values: opt } = parseArgs({
  options: {
    repeats: { type: 'string', default: '5' },
    cycles: { type: 'string', default: '200' },
    blocks: { type: 'string', default: '20' },
  },
});

// Only these folders are served, read-only.
const ROOTS = ['bench/browser/', 'web/pkg/', 'web/store/', 'web/app/pkg/', 'web/app/playground-store.js',
  'web/app/playground-worker.js', 'node_modules/@sqlite.org/sqlite-wasm/dist/'];
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.wasm': 'application/wasm' };

function serve() {
  const server = createServer(async (request, response) => {
    const rel = path.posix.normalize(decodeURIComponent(new URL(request.url, 'http://localhost').pathname)).slice(1);
    if (!ROOTS.some((root) => rel.startsWith(root)) || rel.includes('..')) {
      response.writeHead(404).end('not found');
      return;
    }
    try {
      const body = await readFile(path.join(repo, rel));
      response.writeHead(200, { 'content-type': TYPES[path.extname(rel)] ?? 'application/octet-stream',
        'cache-control': 'no-cache' });
      response.end(body);
    } catch {
      response.writeHead(404).end('not found');
    }
  });
  return new Promise((resolve) => server.listen(0, 'localhost', () => resolve(server)));
}

const server = await serve();
const browser = await launchBrowser();
let failed = false;
try {
  const page = await browser.context.newPage();
  page.on('console', (message) => {
    const text = message.text();
    if (text.startsWith('{')) process.stdout.write(text + '\n');
    else process.stderr.write(text + '\n');
  });
  page.on('pageerror', (error) => process.stderr.write(`  page error: ${error.message}\n`));
  const url = `http://localhost:${server.address().port}/bench/browser/index.html`;
  await page.goto(url);
  await page.waitForFunction(() => typeof window.runBench === 'function');
  await page.evaluate((config) => window.runBench(config), {
    repeats: Number(opt.repeats), cycles: Number(opt.cycles), blocks: Number(opt.blocks),
  });
} catch (error) {
  failed = true;
  process.stderr.write(`bench/browser: ${error.stack ?? error}\n`);
} finally {
  await browser.close();
  server.close();
}
process.exit(failed ? 1 : 0);

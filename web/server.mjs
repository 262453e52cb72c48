// Serves the playground (this folder) on http://localhost:PORT (default 8080). No dependencies.
// localhost is a secure context, which OPFS needs; the sahpool VFS needs no COOP/COEP headers.
import { createServer } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const port = Number(process.env.PORT ?? 8080);
const types = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`PORT must be a whole number from 1 to 65535, got ${process.env.PORT}`);
  process.exit(2);
}

const server = createServer(async (request, response) => {
  try {
    const url = new URL(request.url, 'http://localhost');
    let file = path.normalize(path.join(root, decodeURIComponent(url.pathname)));
    if (!file.startsWith(root + path.sep) && file !== root) {
      response.writeHead(403).end('forbidden');
      return;
    }
    let info = await stat(file).catch(() => null);
    if (info?.isDirectory()) {
      file = path.join(file, 'index.html');
      info = await stat(file);
    }
    // Every file is revalidated (no-cache: an edit shows on the next load) against a validator, so
    // a file the browser already has, such as the 1 MB wasm the page and the store's worker both
    // fetch, comes back as 304 without its body.
    const etag = `"${info.size.toString(36)}-${Math.floor(info.mtimeMs).toString(36)}"`;
    const headers = {
      'content-type': types[path.extname(file)] ?? 'application/octet-stream',
      'cache-control': 'no-cache',
      etag,
      'last-modified': new Date(info.mtimeMs).toUTCString(),
      'x-content-type-options': 'nosniff',
    };
    const seen = request.headers['if-none-match'];
    if (seen && seen.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag)) {
      response.writeHead(304, headers).end();
      return;
    }
    const body = await readFile(file);
    response.writeHead(200, headers);
    response.end(body);
  } catch {
    response.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
  }
});

server.on('error', (error) => {
  console.error(`cannot serve the playground on port ${port}: ${error.message}` +
    (error.code === 'EADDRINUSE' ? ' (set PORT to use another port)' : ''));
  process.exit(1);
});
server.listen(port, 'localhost', () => {
  console.log(`leasefence playground: http://localhost:${port}/`);
});

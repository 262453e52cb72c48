// The size section of `npm run bench`: the shipped .wasm files, raw and `gzip -9`, beside the
// official sqlite3.wasm of @sqlite.org/sqlite-wasm. Sizes are deterministic: measured once.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const files = [
  ['browser', 'web/pkg/leasefence_bg.wasm'],
  ['node', 'target/npm/leasefence/wasm/leasefence_bg.wasm'],
  ['official', 'node_modules/@sqlite.org/sqlite-wasm/dist/sqlite3.wasm'],
];
for (const [name, rel] of files) {
  const file = path.join(repo, rel);
  const raw = statSync(file).size;
  const gzip = execFileSync('gzip', ['-9', '-n', '-c', file], { maxBuffer: 64 << 20 }).length;
  const record = { section: 'size', case: name, path: rel, raw, gzip };
  if (name === 'official') {
    record.version = JSON.parse(readFileSync(path.join(repo, 'node_modules/@sqlite.org/sqlite-wasm/package.json'))).version;
  }
  process.stdout.write(JSON.stringify(record) + '\n');
  process.stderr.write(`  [size] ${name.padEnd(8)} ${rel}: ${(raw / 1024).toFixed(0)} KiB raw, ${(gzip / 1024).toFixed(0)} KiB gzip -9\n`);
}

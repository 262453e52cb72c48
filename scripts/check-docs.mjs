#!/usr/bin/env node
// Checks that every relative link and image in README.md, docs/**/*.md and the guide's pages
// (docs/guide/src/) points at a file that exists, and, when the link has a #fragment into a
// Markdown file, at a heading (or an HTML id) there, by GitHub's and mdBook's slug rules.
// http(s) and mailto links are not checked. Exits 1 naming each broken link as file:line.
// Node 20, no dependencies: node scripts/check-docs.mjs [ROOT]
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(process.argv[2] ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));

// docs/bench/README-section.md is written by bench/report.mjs to be pasted into the README: its
// links are relative to the repository root, not to its own folder.
const SKIP = new Set(['docs/bench/README-section.md']);

function markdownFiles() {
  const files = [];
  if (existsSync(path.join(root, 'README.md'))) files.push(path.join(root, 'README.md'));
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (full === path.join(root, 'docs/guide/book') || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
        walk(full);
      } else if (entry.name.endsWith('.md')) {
        files.push(full);
      }
    }
  };
  if (existsSync(path.join(root, 'docs'))) walk(path.join(root, 'docs'));
  return files.filter((f) => !SKIP.has(path.relative(root, f).split(path.sep).join('/')));
}

// The lines of a Markdown file outside fenced code blocks, each with its 1-based line number.
function outsideFences(text) {
  const out = [];
  let fence = null;
  text.split('\n').forEach((line, i) => {
    const m = /^\s{0,3}(`{3,}|~{3,})/.exec(line);
    if (m) {
      if (fence === null) fence = m[1];
      else if (m[1][0] === fence[0] && m[1].length >= fence.length) fence = null;
      return;
    }
    if (fence === null) out.push({ n: i + 1, text: line });
  });
  return out;
}

// The same, with inline code spans blanked (a link written in code is not a link).
function proseLines(text) {
  return outsideFences(text).map(({ n, text: line }) => ({ n, text: line.replace(/(`+)[^`]*?\1/g, (s) => ' '.repeat(s.length)) }));
}

// GitHub's slug (which mdBook's normalize_id matches): the heading's text without Markdown,
// lower-cased, every character but letters, digits, '-', '_' and spaces dropped, spaces to '-';
// a repeated slug gets -1, -2, ...
function slug(heading) {
  const plain = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return plain.replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '').replace(/\s/g, '-');
}

const anchorCache = new Map();
function anchorsOf(file) {
  if (anchorCache.has(file)) return anchorCache.get(file);
  const anchors = new Set();
  const seen = new Map();
  for (const { text: line } of outsideFences(readFileSync(file, 'utf8'))) {
    const h = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<[a-z]+[^>]*\s(?:id|name)="([^"]+)"/gi)) anchors.add(m[1]);
  }
  anchorCache.set(file, anchors);
  return anchors;
}

function targetsOf(line) {
  const targets = [];
  // Inline links and images: [text](target "title") and ![alt](<target>).
  for (const m of line.matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+"[^"]*")?\s*\)/g)) {
    targets.push(m[1].replace(/^<|>$/g, ''));
  }
  // Reference definitions: [label]: target
  const def = /^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)/.exec(line);
  if (def) targets.push(def[1].replace(/^<|>$/g, ''));
  // HTML images and links.
  for (const m of line.matchAll(/<(?:img|a)\s[^>]*(?:src|href)="([^"]+)"/gi)) targets.push(m[1]);
  return targets;
}

const broken = [];
const files = markdownFiles();
let checked = 0;
for (const file of files) {
  const rel = path.relative(root, file);
  for (const { n, text } of proseLines(readFileSync(file, 'utf8'))) {
    for (const target of targetsOf(text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      checked += 1;
      const hash = target.indexOf('#');
      const pathPart = decodeURIComponent(hash === -1 ? target : target.slice(0, hash));
      const fragment = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
      const resolved = pathPart === '' ? file : path.resolve(path.dirname(file), pathPart);
      if (!existsSync(resolved)) {
        broken.push(`${rel}:${n}: ${target}: no such file (${path.relative(root, resolved)})`);
        continue;
      }
      if (fragment && resolved.endsWith('.md') && statSync(resolved).isFile()) {
        if (!anchorsOf(resolved).has(fragment)) {
          broken.push(`${rel}:${n}: ${target}: no heading #${fragment} in ${path.relative(root, resolved)}`);
        }
      }
    }
  }
}

// Every decision record is listed in both indexes: docs/decisions/README.md and the guide's page.
const decisionsDir = path.join(root, 'docs/decisions');
if (existsSync(decisionsDir)) {
  const indexes = ['docs/decisions/README.md', 'docs/guide/src/decisions.md'].filter((f) => existsSync(path.join(root, f)));
  for (const name of readdirSync(decisionsDir).filter((f) => f.endsWith('.md') && f !== 'README.md')) {
    for (const index of indexes) {
      if (!readFileSync(path.join(root, index), 'utf8').includes(`${name})`)) {
        broken.push(`${index}: does not list docs/decisions/${name}`);
      }
    }
  }
}

if (broken.length > 0) {
  console.error(`check-docs: ${broken.length} broken link(s):`);
  for (const b of broken) console.error(`  ${b}`);
  process.exit(1);
}
console.log(`check-docs: ${checked} relative links in ${files.length} Markdown files, all resolve`);

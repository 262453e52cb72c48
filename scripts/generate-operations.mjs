#!/usr/bin/env node
// Writes the npm package's view of the operations from their one definition in the crate
// (`leasefence::protocol::operations()`, printed by `leasefence operations`):
//
// - web/store/operations.js: the table LeaseStoreCore builds its methods from (Node and browser);
// - the operations of `LeaseStore` and of its `withReason` in node/index.d.ts, between the
//   `generated operations` markers (the rest of that file is written by hand).
//
// `--check` writes nothing and fails when either file differs from what it would write: the tests
// run it (tests/node/types.test.mjs), so a stale generated file fails them. Run it without
// arguments after adding or changing an operation.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TABLE = path.join(ROOT, 'web/store/operations.js');
const TYPINGS = path.join(ROOT, 'node/index.d.ts');
const BEGIN = '// <generated operations: scripts/generate-operations.mjs>';
const END = '// </generated operations>';

/**
 * The crate's catalogue, from the CLI (built by cargo if needed). In a target directory of its
 * own: built alone, the CLI resolves its dependencies' features differently from the workspace's
 * tests, and a second copy of a crate in target/debug would make rustdoc's doctests see two.
 */
function catalogue() {
  const args = ['run', '--quiet', '-p', 'leasefence-cli', '--target-dir', path.join(ROOT, 'target/operations'), '--', 'operations'];
  const json = execFileSync('cargo', args, {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return JSON.parse(json);
}

// What only JavaScript has, by operation. The store creates its tables when it opens, so `init`
// is the protocol's alone; claimMany runs every owner on a thread of its own, so it answers a
// Promise; a fenced write's statements may also be a synchronous callback (Node).
const NOT_IN_JAVASCRIPT = new Set(['init']);
const PROMISED = new Set(['claimMany']);
// The parameters that make a lease (web/store/core.js spreads a lease object into them).
const LEASE_PARAMS = ['job', 'owner', 'fence'];
const JS_NOTES = {
  claimMany: 'In Node each owner claims on its own worker thread and connection.',
  fenced: 'In Node `statements` may also be a synchronous callback `(tx) => void` running them.',
};

/** `run_at` is `runAt`. */
const camel = (name) => name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());

/**
 * A description in JavaScript's names: the names of operations and parameters in backticks
 * respelled (`run_at` is `runAt`), the wire's codes and reasons (`invalid_argument`) kept.
 */
function camelDoc(doc, names) {
  const respell = (code) => code.replace(/\b[a-z]+(?:_[a-z]+)+\b/g, (word) => (names.has(word) ? camel(word) : word));
  return doc.replace(/`([^`]*)`/g, (_, code) => `\`${respell(code)}\``);
}

/** A record of the catalogue (`job-state`) as TypeScript names it (`JobState`). */
const recordName = (name) => name.split('-').map((part) => part[0].toUpperCase() + part.slice(1)).join('');

/** An answer in the catalogue's notation (`list<option<fence>>`) as a TypeScript type. */
function answerType(answer) {
  const generic = /^(\w+)<(.*)>$/.exec(answer);
  if (generic) {
    const [, outer, inner] = generic;
    const type = answerType(inner);
    if (outer === 'option') return `${type} | null`;
    if (outer === 'list') return type.includes('|') ? `(${type})[]` : `${type}[]`;
    if (outer === 'answer') return `Answer<${type}>`;
    throw new Error(`generate-operations: unknown answer notation ${answer}`);
  }
  const scalars = { bool: 'boolean', u64: 'number', string: 'string', unit: 'void', fence: 'Fence' };
  return scalars[answer] ?? recordName(answer);
}

/** A parameter's TypeScript type: the package's own types for its objects, else by kind. */
function parameterType(op, p) {
  const nullable = (type) => (p.nullable ? `${type} | null` : type);
  switch (p.kind) {
    case 'objects': {
      const members = p.members.map((m) => m.name);
      if (p.name === 'jobs') return 'NewJob[]';
      if (p.name === 'leases') return members.includes('result') ? 'LeaseCompletion[]' : 'LeaseRef[]';
      break;
    }
    case 'object':
      if (p.name === 'options' && op.name === 'schedule') return 'ScheduleOptions';
      if (p.name === 'worker') return 'WorkerReport';
      break;
    case 'statements':
      return p.optional ? 'FencedStatement[] | null' : 'FencedStatement[] | FencedWork';
    case 'fenced_options':
      return 'FencedOptions';
    case 'string':
      return nullable(p.name === 'status' ? 'JobStatus' : 'string');
    case 'number':
    case 'integer':
    case 'count':
      return nullable('number');
    case 'fence':
      return nullable('Fence');
    case 'bool':
      return nullable('boolean');
    case 'strings':
      return nullable('string[]');
    default:
  }
  throw new Error(`generate-operations: no TypeScript type for ${op.name}'s ${p.name} (${p.kind}): add one here`);
}

/** The operations as the JavaScript table has them. */
function javascriptOperations(ops) {
  const names = new Set(ops.flatMap((op) => [op.name, ...op.parameters.flatMap((p) => [p.name, ...(p.members ?? []).map((m) => m.name)])]));
  return ops
    .filter((op) => !NOT_IN_JAVASCRIPT.has(op.name))
    .map((op) => ({
      name: op.jsName,
      params: op.parameters.map((p) => `${camel(p.name)}${p.optional ? '?' : ''}`),
      lease: LEASE_PARAMS.every((name, i) => op.parameters[i]?.name === name),
      types: Object.fromEntries(op.parameters.map((p) => [camel(p.name), parameterType(op, p)])),
      returns: answerType(op.answer),
      doc: [camelDoc(op.doc, names), JS_NOTES[op.jsName]].filter(Boolean).join(' '),
    }));
}

function tableModule(ops) {
  const rows = ops.map(({ name, params, lease, types, returns }) => `  ${JSON.stringify({ name, params, lease, types, returns })},`);
  return `// Generated by scripts/generate-operations.mjs from the crate's one definition of the operations
// (leasefence::protocol::operations, printed by \`leasefence operations\`): do not edit; run the
// script. The operations in the contract's order: name, positional parameters (a name ending in
// \`?\` may be left out: undefined means the same as null), whether they start with a lease
// (job, owner, fence: a lease object may stand in their place), each parameter's TypeScript type,
// and what the operation answers.

/** Every operation of the store, as the JavaScript surfaces call it. */
const OPERATIONS = Object.freeze([
${rows.join('\n')}
].map((op) => Object.freeze({ ...op, params: Object.freeze(op.params), types: Object.freeze(op.types) })));

export { OPERATIONS };
`;
}

/** `text` as a doc comment at `indent`, wrapped at 100 columns. */
function docComment(text, indent) {
  const width = 100 - indent.length - 3;
  const lines = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  if (lines.length === 1 && lines[0].length + indent.length + 7 <= 100) return `${indent}/** ${lines[0]} */`;
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`].join('\n');
}

const parameters = (op, params) => params.map((p) => `${p}: ${op.types[p.replace(/\?$/, '')]}`).join(', ');

/**
 * An operation's parameters as TypeScript declares them; one starting with `(job, owner, fence)`
 * takes a Lease in their place, as a union of two argument lists (one signature, which mapped
 * types such as GroupedStore keep whole, where they would drop an overload).
 */
function signature(op) {
  if (!op.lease) return parameters(op, op.params);
  const rest = op.params.slice(LEASE_PARAMS.length);
  return `...args: [${parameters(op, op.params)}] | [${['lease: Lease', parameters(op, rest)].filter(Boolean).join(', ')}]`;
}

/** JavaScript's own operations, beside the table's (web/store/core.js makes them). */
const JS_ONLY = [{
  name: 'claimLease',
  params: ['job', 'owner', 'now', 'ttl'],
  lease: false,
  types: { job: 'string', owner: 'string', now: 'number', ttl: 'number' },
  returns: 'Lease | null',
  doc: '`claim`, answering the lease (`{job, owner, fence}`, what `renew`, `complete`, `fail`, `release` and `fenced` take) or null.',
}];

function typingsSection(tableOps) {
  const ops = [...tableOps, ...JS_ONLY];
  const methods = ops.map((op) => {
    const returns = PROMISED.has(op.name) ? `Promise<${op.returns}>` : op.returns;
    return `${docComment(op.doc, '  ')}\n  ${op.name}(${signature(op)}): ${returns};`;
  });
  const answers = ops.map((op) => {
    const answer = PROMISED.has(op.name) ? `Promise<{ value: ${op.returns}; reasons: (Reason | null)[] }>` : `Answer<${op.returns}>`;
    return `    ${op.name}(${signature(op)}): ${answer};`;
  });
  return `  ${BEGIN}
${methods.join('\n')}
  /**
   * The same operations, answering \`{value, reason}\` (\`reason\` null when the store agreed), and
   * \`claimMany\` \`{value, reasons}\`: one reason (or null) per owner, in the order of \`owners\`. The
   * browser build answers the same shapes (as Promises).
   */
  readonly withReason: {
${answers.join('\n')}
  };
  ${END}`;
}

function typings(ops) {
  const text = fs.readFileSync(TYPINGS, 'utf8');
  const from = text.indexOf(`  ${BEGIN}`);
  const to = text.indexOf(END);
  if (from < 0 || to < 0) throw new Error(`generate-operations: ${TYPINGS} lost its markers (${BEGIN} ... ${END})`);
  return text.slice(0, from) + typingsSection(ops) + text.slice(to + END.length);
}

const ops = javascriptOperations(catalogue());
const wanted = [[TABLE, tableModule(ops)], [TYPINGS, typings(ops)]];
if (process.argv.includes('--check')) {
  const stale = wanted.filter(([file, text]) => !fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text);
  if (stale.length > 0) {
    console.error(`generate-operations: stale: ${stale.map(([file]) => path.relative(ROOT, file)).join(', ')}; run node scripts/generate-operations.mjs`);
    process.exit(1);
  }
} else {
  for (const [file, text] of wanted) fs.writeFileSync(file, text);
}

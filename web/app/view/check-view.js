// "The check": the statements the stores ran for one operation, as SQLite's statement trace
// recorded them (crate/src/wasm/trace.rs), for leasefence's `jobs` and the lease-only table side
// by side, with one sentence on what the check decided. It draws what it is given; nothing here
// writes SQL.
import { h, replace, rich } from '../../common/dom.js';
import { outcomeText, reasonText, statusLine } from '../model/describe.js';
import { granted } from '../model/derive.js';
import { t } from '../../common/i18n.js';

function statementItem(statement, lang) {
  const withValues = statement.expanded && statement.expanded !== statement.sql;
  const facts = [];
  if (statement.changed !== null && statement.changed !== undefined) facts.push(t(lang, 'check.changed', statement.changed));
  if (statement.rows > 0) facts.push(t(lang, 'check.rows', statement.rows));
  return h('li', { class: 'stmt' },
    h('pre', { class: 'sql' }, h('code', { text: statement.sql })),
    withValues ? h('div', { class: 'bound' },
      h('span', { class: 'muted small', text: t(lang, 'check.bound') }),
      h('pre', { class: 'sql expanded' }, h('code', { text: statement.expanded }))) : null,
    facts.length ? h('p', { class: 'stmt-facts', text: facts.join(' · ') }) : null);
}

function summary(entry, outcome, statements, lang) {
  if (!outcome || outcome.error || entry.op === 'enqueue') return null;
  // Nothing claimable: the store's answer is null, no reason to read.
  if (entry.op === 'claim_next' && !granted(entry, outcome)) return outcomeText(entry, outcome, lang).text;
  if (granted(entry, outcome)) {
    // The rows the write changed, as SQLite counted them.
    return t(lang, 'check.summary.granted', statements.find((s) => s.changed !== null && s.changed !== undefined)?.changed ?? 0);
  }
  return t(lang, 'check.summary.refused', reasonText(outcome.reason, entry, lang));
}

function column(title, statements, sentence, lang, kind) {
  return h('div', { class: `check-col check-${kind}` },
    h('h3', {}, rich(title)),
    sentence ? h('p', { class: 'check-summary' }, rich(sentence)) : null,
    h('ol', { class: 'stmts' }, statements.map((s) => statementItem(s, lang))));
}

/**
 * entry/outcome: the operation at the playhead and leasefence's answer; trace: `{fenced,
 * leaseOnly: {value, statements}}` as the store returned them, or undefined when not recorded.
 */
export function renderCheck(container, { entry, outcome, trace, lang }) {
  if (!entry) {
    replace(container, h('p', { class: 'muted', text: t(lang, 'check.pick') }));
    return;
  }
  const head = h('p', { class: 'check-op', text: t(lang, 'check.of', statusLine(entry, outcome, lang)) });
  if (!trace) {
    replace(container, head, h('p', { class: 'muted', text: t(lang, 'check.missing') }));
    return;
  }
  // A claim_next that claimed nothing asks the lease-only table nothing (replay.js).
  const leaseOnlySentence = entry.op === 'enqueue' || (entry.op === 'claim_next' && outcome?.job == null) ? null
    : t(lang, trace.leaseOnly.value ? 'check.summary.leaseOnly.yes' : 'check.summary.leaseOnly.no');
  replace(container, head, h('div', { class: 'check-pair' },
    column(t(lang, 'check.fenced'), trace.fenced, summary(entry, outcome, trace.fenced, lang), lang, 'fenced'),
    column(t(lang, 'check.leaseOnly'), trace.leaseOnly.statements, leaseOnlySentence, lang, 'lease-only')));
}

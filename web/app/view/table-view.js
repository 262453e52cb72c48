// The two jobs tables, as read from the stores after each step: leasefence's `jobs` and the
// lease-only counterfactual's `lease_only_jobs`, whose cells that differ from leasefence's are
// marked. A dead job says so in `done` (its last error in the cell's title); a job backing off
// after a failure has a "waits" pill by its `until`. Text only.
import { h, replace } from '../../common/dom.js';
import { fmt } from '../model/describe.js';
import { t } from '../../common/i18n.js';

export const JOBS_COLUMNS = Object.freeze(['id', 'owner', 'until', 'fence', 'result', 'done']);
/** With a queue or a priority in use (derive.js usesQueues): the two columns section 11 adds. */
export const QUEUE_COLUMNS = Object.freeze(['id', 'queue', 'priority', 'owner', 'until', 'fence', 'result', 'done']);
export const LEASE_ONLY_COLUMNS = Object.freeze(['id', 'owner', 'until', 'result', 'done']);

/** A cell's value as drawn (without the lease pill): what two tables are compared on. */
export function cellText(row, name, lang) {
  switch (name) {
    case 'owner': return row.owner === null ? '—' : row.owner;
    case 'until': return row.until === 0 && row.owner === null ? '—' : `t=${fmt(row.until)}`;
    case 'fence': return fmt(row.fence);
    case 'queue': return row.queue ?? '—';
    case 'priority': return row.priority === undefined ? '—' : fmt(row.priority);
    case 'result': return row.result === null ? '—' : row.result === '' ? '""' : row.result;
    case 'done': return row.dead ? t(lang, 'cell.dead') : row.done ? t(lang, 'cell.yes') : t(lang, 'cell.no');
    default: return row.id;
  }
}

function content(row, name, now, lang) {
  const text = cellText(row, name, lang);
  if (name === 'until') {
    const live = row.owner !== null && !row.done && row.until > now;
    // Nobody holds it, yet it may not be claimed before `until`: backing off after a failure.
    const waits = row.owner === null && !row.done && row.until > now;
    const lease = waits ? 'scheduled' : row.done || row.owner === null ? '' : live ? 'live' : 'expired';
    return [text, lease ? h('span', { class: `pill lease-${lease}`, text: t(lang, `cell.${lease}`) }) : null];
  }
  // Stored data (ids, owners, results) is drawn as data, whatever the page's language.
  if (name === 'id' || name === 'result' || name === 'owner' || name === 'queue') return [h('samp', { text })];
  return [text];
}

/**
 * rows: [{id, owner, until, ...}] from the store; previous: the rows drawn last time, to mark the
 * cells that changed; against: leasefence's rows, to mark the cells that differ (lease-only).
 */
export function renderJobs(tbody, emptyNote, rows, previous, now, lang, { columns = JOBS_COLUMNS, against = null } = {}) {
  const before = new Map(previous.map((r) => [r.id, r]));
  const other = against ? new Map(against.map((r) => [r.id, r])) : null;
  replace(tbody, rows.map((row) => {
    const old = before.get(row.id);
    const twin = other?.get(row.id);
    return h('tr', { attrs: { 'data-job': row.id } }, columns.map((name) => {
      const changed = old ? old[name] !== row[name] : true;
      const differs = twin && name !== 'id' && cellText(twin, name, lang) !== cellText(row, name, lang);
      const classes = [`col-${name}`];
      if (changed && previous.length) classes.push('changed');
      if (name === 'done' && row.done) classes.push(row.dead ? 'is-dead' : 'is-done');
      if (differs) classes.push('differs');
      return h(name === 'id' ? 'th' : 'td', {
        class: classes.join(' '),
        attrs: {
          'data-label': name, scope: name === 'id' ? 'row' : null,
          title: differs ? t(lang, 'leaseOnly.differs', name, `“${cellText(twin, name, lang)}”`)
            : name === 'result' || name === 'id' ? `“${row[name] ?? ''}”`
              : name === 'done' && row.error != null ? t(lang, 'cell.error', row.error) : null,
        },
      }, h('span', { class: 'v' }, content(row, name, now, lang)),
      differs ? h('span', { class: 'diff-mark', attrs: { 'aria-hidden': 'true' }, text: '≠' }) : null);
    }));
  }));
  emptyNote.hidden = rows.length > 0;
}

// The jobs table, as read from the store after each step. Text only.
import { h, replace } from './dom.js';
import { fmt } from '../model/describe.js';

const COLUMNS = ['id', 'owner', 'until', 'fence', 'result', 'done'];

function cells(row, now) {
  const live = row.owner !== null && !row.done && row.until > now;
  const lease = row.done ? '' : row.owner === null ? '' : live ? 'live' : 'expired';
  return {
    id: [row.id],
    owner: [row.owner === null ? '—' : row.owner],
    until: [row.until === 0 && row.owner === null ? '—' : `t=${fmt(row.until)}`,
      lease ? h('span', { class: `pill lease-${lease}`, text: lease }) : null],
    fence: [fmt(row.fence)],
    result: [row.result === null ? '—' : row.result === '' ? '""' : row.result],
    done: [row.done ? '✓ yes' : 'no'],
  };
}

/**
 * rows: [{id, owner, until, fence, result, done}] from store.state(); previous: the rows drawn
 * last time, to mark the cells that changed.
 */
export function renderJobs(tbody, emptyNote, rows, previous, now) {
  const before = new Map(previous.map((r) => [r.id, r]));
  replace(tbody, rows.map((row) => {
    const old = before.get(row.id);
    const content = cells(row, now);
    return h('tr', { attrs: { 'data-job': row.id } }, COLUMNS.map((name) => {
      const changed = old ? old[name] !== row[name] : true;
      return h(name === 'id' ? 'th' : 'td', {
        class: `col-${name}${changed && previous.length ? ' changed' : ''}${name === 'done' && row.done ? ' is-done' : ''}`,
        attrs: { 'data-label': name, scope: name === 'id' ? 'row' : null, title: name === 'result' || name === 'id' ? String(row[name] ?? '') : null },
      }, h('span', { class: 'v' }, content[name]));
    }));
  }));
  emptyNote.hidden = rows.length > 0;
}

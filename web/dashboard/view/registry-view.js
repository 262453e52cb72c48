// The worker registry (GET /api/workers): alive, stopped or gone; what each holds; its counters,
// the stale writes the store refused among them. And the recurring jobs (GET /api/schedules).
// Drawing only.
import { h, replace } from '../../app/view/dom.js';

export function renderWorkers(tbody, answer, { t }) {
  if (answer.workers.length === 0) {
    replace(tbody, h('tr', {}, h('td', { text: t('dash.workers.none'), attrs: { colspan: 11 } })));
    return;
  }
  replace(tbody, answer.workers.map((w) => {
    const status = w.alive ? 'alive' : w.stopped !== null ? 'stopped' : 'gone';
    // Owners, hosts and job ids are data: drawn as code, never translated.
    const holds = w.holding.flatMap((l, i) => [i > 0 ? ', ' : null, h('code', { text: l.job }),
      t('dash.worker.hold', l.fence, (l.until - answer.now).toFixed(1))]);
    const c = w.counters;
    const refused = c.stale_writes_refused > 0 ? ' refused' : '';
    return h('tr', { class: `${status}${refused}`, attrs: { 'data-owner': w.owner, 'data-status': status } },
      h('td', {}, h('code', { text: w.owner })), h('td', {}, h('code', { text: w.host })), h('td', { text: String(w.pid) }),
      h('td', { text: t(`dash.worker.${status}`) }),
      h('td', { text: t('dash.worker.ago', Math.max(0, answer.now - w.last_seen).toFixed(1)) }),
      h('td', {}, holds),
      [c.claimed, c.completed, c.failed, c.leases_lost].map((n) => h('td', { text: String(n) })),
      h('td', { class: 'refused', text: String(c.stale_writes_refused) }));
  }));
}

/** The recurring jobs (GET /api/schedules): name, pattern, zone, queue, priority, last slot. */
export function renderSchedules(tbody, answer, { t, time }) {
  if (answer.schedules.length === 0) {
    replace(tbody, h('tr', {}, h('td', { text: t('dash.schedules.none'), attrs: { colspan: 6 } })));
    return;
  }
  replace(tbody, answer.schedules.map((s) =>
    h('tr', { attrs: { 'data-schedule': s.name } }, h('td', {}, h('code', { text: s.name })), h('td', {}, h('code', { text: s.cron })),
      h('td', {}, h('code', { text: s.tz ?? 'UTC' })), h('td', {}, h('code', { text: s.queue })), h('td', { text: String(s.priority) }),
      h('td', { text: s.last === null ? '' : time(s.last) }))));
}

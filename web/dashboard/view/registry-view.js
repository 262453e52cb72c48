// The worker registry (GET /api/workers): alive, stopped or gone; what each holds; its counters,
// the stale writes the store refused among them. And the recurring jobs (GET /api/schedules).
// Drawing only.
import { h, replace } from '../../common/dom.js';
import { codeText } from './text-view.js';

export function renderWorkers(tbody, answer, { t, span }) {
  if (answer.workers.length === 0) {
    replace(tbody, h('tr', {}, h('td', { text: t('dash.workers.none'), attrs: { colspan: 12 } })));
    return;
  }
  replace(tbody, answer.workers.map((w) => {
    const status = w.alive ? 'alive' : w.stopped !== null ? 'stopped' : 'gone';
    // Owners, hosts and job ids are data: drawn as code, never translated.
    const holds = w.holding.flatMap((l, i) => [i > 0 ? ', ' : null, codeText(l.job, { t }),
      t('dash.worker.hold', l.fence, span(l.until - answer.now))]);
    const c = w.counters;
    const refused = c.stale_writes_refused > 0 ? ' refused' : '';
    return h('tr', { class: `${status}${refused}`, attrs: { 'data-owner': w.owner, 'data-status': status } },
      h('td', {}, codeText(w.owner, { t })), h('td', {}, codeText(w.host, { t })), h('td', { text: String(w.pid) }),
      h('td', { text: t(`dash.worker.${status}`) }),
      h('td', { text: t('dash.worker.ago', span(answer.now - w.last_seen)) }),
      h('td', {}, holds),
      [c.claimed, c.completed, c.failed, c.dead, c.leases_lost].map((n) => h('td', { text: String(n) })),
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

// The jobs, a page at a time (GET /api/jobs), with a revive button on dead ones; and a job's own
// page (GET /api/job/ID): its row, payload, result, current lease and every failed attempt.
// Drawing only: what a click does is the controller's (`onOpen`, `onRevive`).
import { h, append, replace } from '../../app/view/dom.js';

/** Appends (or, when `fresh`, replaces with) the rows of `page`. */
export function renderJobs(tbody, page, fresh, { t, readOnly, onOpen, onRevive }) {
  const rows = page.jobs.map((j) => {
    const timed = j.state === 'leased' || j.state === 'scheduled';
    const left = timed ? t('dash.job.seconds', (j.until - page.now).toFixed(1)) : '';
    const open = h('a', { attrs: { href: '#' } }, h('code', { text: j.id }));
    open.addEventListener('click', (e) => {
      e.preventDefault();
      onOpen(j.id);
    });
    const action = h('td');
    if (j.state === 'dead' && !readOnly) {
      const revive = h('button', { text: t('dash.job.revive'), attrs: { 'data-job': j.id } });
      revive.addEventListener('click', () => onRevive(j.id));
      action.append(revive);
    }
    return h('tr', { attrs: { 'data-state': j.state } }, h('td', {}, open), h('td', { text: t(`dash.state.${j.state}`) }),
      h('td', {}, h('code', { text: j.queue })), h('td', { text: String(j.fence) }), h('td', { text: String(j.failures) }),
      h('td', {}, h('code', { text: j.owner ?? '' })), h('td', { text: left }), action);
  });
  if (fresh) replace(tbody, rows);
  else append(tbody, rows);
}

/** A job's page. */
export function renderJob(section, report, { t, time }) {
  const s = report.job.state;
  const lease = s.owner && s.until > report.now && !s.done
    ? t('dash.job.lease.held', s.owner, s.fence, (s.until - report.now).toFixed(1))
    : t('dash.job.lease.none');
  const fields = [
    ['dash.job.state', t(`dash.state.${report.state}`)],
    ['dash.queue', report.job.queue],
    ['dash.job.priority', String(report.job.priority)],
    ['dash.job.attempts', String(report.job.attempts)],
    ['dash.job.lease', lease],
    ['dash.job.payload', report.job.payload ?? t('dash.job.nothing')],
    ['dash.job.result', s.result ?? t('dash.job.nothing')],
  ];
  // The queue, the payload and the result are data (drawn as samples of output, never translated).
  const data = new Set(['dash.queue', 'dash.job.payload', 'dash.job.result']);
  replace(section.querySelector('#job-fields'), fields.map(([k, v]) =>
    [h('dt', { text: t(k) }), h('dd', {}, data.has(k) ? h('samp', { text: v }) : v)]));
  replace(section.querySelector('#job-failures tbody'), report.job.failures.map((f) =>
    h('tr', {}, h('td', { text: String(f.fence) }), h('td', { text: time(f.at) }), h('td', {}, h('samp', { text: f.error ?? '' })))));
  section.querySelector('#job-id').textContent = s.id;
  section.hidden = false;
  section.dataset.job = s.id;
}

// The jobs, a page at a time (GET /api/jobs), with a revive button on dead ones and, for those,
// the last error and when it failed; and a job's own page (GET /api/job/ID): its row, payload,
// result, current lease and every failed attempt. Drawing only: what a click does is the
// controller's (`onRevive`); a job's link is its own address (`#job=ID`).
import { h, append, replace } from '../../common/dom.js';
import { codeText, longText } from './text-view.js';

/** The address of a job's page: this page with `#job=ID`. */
export const jobHref = (id) => `#job=${encodeURIComponent(id)}`;

/** Appends (or, when `fresh`, replaces with) the rows of `page`. */
export function renderJobs(tbody, page, fresh, { t, span, date, readOnly, onRevive }) {
  const rows = page.jobs.map((j) => {
    const timed = j.state === 'leased' || j.state === 'scheduled';
    const left = timed ? span(j.until - page.now) : '';
    const open = h('a', { attrs: { href: jobHref(j.id) } }, codeText(j.id, { t }));
    const action = h('td');
    if (j.state === 'dead' && !readOnly) {
      const revive = h('button', { text: t('dash.job.revive'), attrs: { 'data-job': j.id } });
      revive.addEventListener('click', () => onRevive(j.id));
      action.append(revive);
    }
    // A dead job says why: its last error and when (a date, the job may have died days ago).
    const why = j.last_failure
      ? [longText(j.last_failure.error ?? '', { t }), ' ', h('time', { text: date(j.last_failure.at) })]
      : '';
    return h('tr', { attrs: { 'data-state': j.state } }, h('td', {}, open), h('td', { text: t(`dash.state.${j.state}`) }),
      h('td', {}, codeText(j.queue, { t })), h('td', { text: String(j.fence) }), h('td', { text: String(j.failures) }),
      h('td', {}, j.owner === null ? '' : codeText(j.owner, { t })), h('td', { text: left }),
      h('td', { class: 'why' }, why), action);
  });
  if (fresh) replace(tbody, rows);
  else append(tbody, rows);
}

/** A job's page. */
export function renderJob(section, report, { t, span, date }) {
  const s = report.job.state;
  const lease = s.owner && s.until > report.now && !s.done
    ? t('dash.job.lease.held', s.owner, s.fence, span(s.until - report.now))
    : t('dash.job.lease.none');
  // The queue, the payload and the result are data (drawn as samples of output, never translated).
  const fields = [
    ['dash.job.state', t(`dash.state.${report.state}`)],
    ['dash.queue', codeText(report.job.queue, { t })],
    ['dash.job.priority', String(report.job.priority)],
    ['dash.job.attempts', String(report.job.attempts)],
    ['dash.job.lease', lease],
    ['dash.job.payload', report.job.payload === null ? t('dash.job.nothing') : longText(report.job.payload, { t })],
    ['dash.job.result', s.result === null ? t('dash.job.nothing') : longText(s.result, { t })],
  ];
  replace(section.querySelector('#job-fields'), fields.map(([k, v]) => [h('dt', { text: t(k) }), h('dd', {}, v)]));
  replace(section.querySelector('#job-failures tbody'), report.job.failures.map((f) =>
    h('tr', {}, h('td', { text: String(f.fence) }), h('td', {}, h('time', { text: date(f.at) })),
      h('td', {}, longText(f.error ?? '', { t })))));
  replace(section.querySelector('#job-id'), codeText(s.id, { t }));
  section.hidden = false;
  section.dataset.job = s.id;
  section.dataset.state = report.state;
}

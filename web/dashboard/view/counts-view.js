// The counts by queue and state (GET /api/stats), and the chart of the last minutes
// (GET /api/history). Drawing only, from what they are given.
import { h, replace } from '../../common/dom.js';
import { codeText } from './text-view.js';

export const STATES = ['queued', 'scheduled', 'leased', 'done', 'dead'];

/** The counts table: a row per queue, then `all`. */
export function renderCounts(table, stats, { t, time, span }) {
  const head = h('tr', {}, h('th', { text: t('dash.queue') }), STATES.map((s) => h('th', { text: t(`dash.state.${s}`), attrs: { 'data-state': s } })),
    h('th', { text: t('dash.oldest') }));
  // The oldest waiting job's age per queue (absent: none waits); `all` shows the longest.
  const waiting = stats.oldest_waiting ?? {};
  const ages = Object.values(waiting);
  const age = (seconds) => (seconds === undefined ? '' : span(seconds));
  const rows = [...Object.entries(stats.queues).map(([queue, counts]) => [queue, counts, waiting[queue]]),
    [t('dash.all'), stats.all, ages.length ? Math.max(...ages) : undefined]].map(([queue, counts, oldest], i, all) =>
    h('tr', {}, h('td', {}, i === all.length - 1 ? queue : codeText(queue, { t })), STATES.map((s) => h('td', { text: String(counts[s]) })),
      h('td', { text: age(oldest), attrs: { 'data-oldest': oldest ?? '' } })));
  replace(table, head, rows);
  // What retention keeps in check (docs/contract.md section 13): the rows stored, and the fence
  // floor new jobs start at.
  const stored = stats.table ? ` · ${t('dash.stored', stats.table.jobs, stats.table.fence_floor)}` : '';
  return `${t('dash.asof', time(stats.now))}${stored}`;
}

const SERIES = [['queued', '#1565c0'], ['leased', '#2e7d32'], ['dead', '#b00020']];
const SVG = 'http://www.w3.org/2000/svg';

/** The chart: queued, leased and dead over the samples, and its legend. */
export function renderChart(svg, legend, samples, { t }) {
  svg.replaceChildren();
  legend.replaceChildren();
  if (samples.length < 2) return;
  const [w, hgt] = [640, 140];
  const t0 = samples[0].at;
  const t1 = samples.at(-1).at;
  const top = Math.max(1, ...samples.flatMap((s) => SERIES.map(([k]) => s[k])));
  for (const [key, color] of SERIES) {
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke', color);
    line.setAttribute('stroke-width', '2');
    const x = (s) => ((s.at - t0) / Math.max(1e-9, t1 - t0)) * (w - 4) + 2;
    const y = (s) => hgt - 2 - (s[key] / top) * (hgt - 4);
    line.setAttribute('points', samples.map((s) => `${x(s).toFixed(1)},${y(s).toFixed(1)}`).join(' '));
    svg.append(line);
    legend.append(h('span', { text: `${t(`dash.state.${key}`)} ${samples.at(-1)[key]}  `, style: { color } }));
  }
  legend.append(h('span', { text: t('dash.chart.span', Math.round(t1 - t0), top) }));
}

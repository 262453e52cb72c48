// "The worker's side": the lanes of one lab run (web/app/worker-lab.js), drawn from the calls the
// real JobWorker made and the store's answers: heartbeats as ticks, the stall as a band, the
// lost-lease signal where it fired, the report bucket's writes, then what the bucket and the job
// hold at the end; with the time slider before the end, what comes later is dimmed. Drawing only.
import { h, replace, rich } from '../../common/dom.js';
import { t } from '../../common/i18n.js';

const LANES = ['A', 'B', 'bucket'];

function mark(event) {
  switch (event.kind) {
    case 'claim': return { sym: '●', cls: 'ok' };
    case 'renew': return { sym: event.ok ? '|' : '✗', cls: event.ok ? 'tick' : 'refused' };
    case 'lost': return { sym: '⚡', cls: 'lost' };
    case 'complete': return { sym: event.ok ? '✓' : '✗', cls: event.ok ? 'ok' : 'refused' };
    case 'fail': return { sym: event.retryAt === null ? '☠' : '↻', cls: event.retryAt === null ? 'dead' : 'retry' };
    case 'put': return { sym: '⬆', cls: 'overwrite' };
    case 'guard':
    case 'fenced': return { sym: event.ok ? '⬆' : '✗', cls: event.ok ? 'ok' : 'refused' };
    default: return null;
  }
}

export function eventText(event, lang) {
  return t(lang, `lab.ev.${event.kind}`, event);
}

function lane(name, events, end, at, lang) {
  const track = h('div', { class: 'lab-track', attrs: { 'aria-hidden': 'true' } });
  const later = (event) => (event.t > at ? ' lab-later' : '');
  const stall = events.find((e) => e.kind === 'stall');
  if (stall) {
    track.append(h('span', { class: 'lab-stall', style: { left: `${(stall.t / end) * 100}%`, width: `${((stall.until - stall.t) / end) * 100}%` } }));
  }
  const atSameTime = new Map(); // marks at one time sit side by side, not on top of each other
  for (const event of events) {
    const m = mark(event);
    if (!m) continue;
    const n = atSameTime.get(event.t) ?? 0;
    atSameTime.set(event.t, n + 1);
    const left = n ? `calc(${(event.t / end) * 100}% + ${n * 0.9}em)` : `${(event.t / end) * 100}%`;
    track.append(h('span', { class: `lab-mark lab-${m.cls}${later(event)}`, style: { left }, attrs: { 'data-kind': event.kind }, text: m.sym }));
  }
  if (at < end) track.append(h('span', { class: 'lab-playhead', style: { left: `${(at / end) * 100}%` } }));
  return h('li', { class: `lab-lane lab-lane-${name}`, attrs: { 'data-lane': name } },
    h('span', { class: 'lab-lane-name', text: t(lang, name === 'bucket' ? 'lab.lane.bucket' : 'lab.lane.worker', name) }),
    track,
    h('ol', { class: 'lab-events' }, events.map((e) => h('li', { class: later(e).trim() || undefined, attrs: { 'data-kind': e.kind } }, h('span', { class: 'lab-t', text: `t=${e.t}` }), ' ', rich(eventText(e, lang))))));
}

// The legend: every mark a lane may show, as lane() draws it (mark() above), with its meaning.
const LEGEND = [
  ['●', 'ok', 'claim'], ['|', 'tick', 'renew'], ['✗', 'refused', 'refused'], ['⚡', 'lost', 'lost'],
  ['✓', 'ok', 'complete'], ['↻', 'retry', 'retry'], ['☠', 'dead', 'dead'], ['⬆', 'ok', 'upload'],
];

function legend(lang) {
  return h('ul', { class: 'lab-legend', attrs: { 'aria-label': t(lang, 'lab.legend') } },
    LEGEND.map(([sym, cls, key]) => h('li', {},
      h('span', { class: `lab-key lab-${cls}`, attrs: { 'aria-hidden': 'true' }, text: sym }), ' ', t(lang, `lab.legend.${key}`))),
    h('li', {}, h('span', { class: 'lab-key lab-key-stall', attrs: { 'aria-hidden': 'true' } }), ' ', t(lang, 'lab.legend.stall')));
}

/** Time ticks over the lanes' tracks, every 1, 2, 5, 10, 20, ... seconds: about six of them. */
function axis(end, lang) {
  const step = [1, 2, 5, 10, 20, 50, 100, 200, 500].find((s) => end / s <= 6) ?? Math.ceil(end / 6);
  const ticks = [];
  for (let s = 0; s <= end; s += step) ticks.push(s);
  return h('div', { class: 'lab-axis', attrs: { title: t(lang, 'lab.axis') } },
    ticks.map((s) => h('span', { class: 'lab-axis-tick', style: { left: `${(s / end) * 100}%` }, text: `t=${s}` })));
}

/** A report's body in words: the lab writes "A's report" (its data), drawn in the page's language. */
function reportText(body, lang) {
  const lane = ['A', 'B'].find((w) => body === t('en', 'lab.report', w));
  return lane ? t(lang, 'lab.report', lane) : body;
}

/** run: the answer of runLab, or null before the first run; at: the time slider (events after it dimmed). */
export function renderLab(container, run, lang, at = run?.end ?? 0) {
  if (!run) {
    replace(container, h('p', { class: 'muted', text: t(lang, 'lab.notRun') }));
    return;
  }
  const byLane = Object.fromEntries(LANES.map((l) => [l, run.events.filter((e) => e.lane === l)]));
  const lanes = LANES.filter((l) => byLane[l].length > 0 || l === 'A');
  const facts = [];
  if (run.bucket) facts.push(t(lang, 'lab.bucketHolds', reportText(run.bucket.body, lang), run.bucket.fence));
  else if (run.mode !== 'poison') facts.push(t(lang, 'lab.bucketEmpty'));
  if (run.inspect) facts.push(t(lang, 'lab.job', run.inspect));
  for (const [w, s] of Object.entries(run.stats)) facts.push(t(lang, 'lab.stats', w, s));
  replace(container,
    axis(run.end, lang),
    h('ul', { class: 'lab-lanes', attrs: { 'data-mode': run.mode, 'data-at': String(at) } }, lanes.map((l) => lane(l, byLane[l], run.end, at, lang))),
    legend(lang),
    h('ul', { class: 'lab-facts' }, facts.map((f) => h('li', {}, rich(f)))),
    h('p', { class: 'lab-moral' }, rich(t(lang, moralKey(run)))));
}

/** The closing sentence: the mode's, or the calm one without the pause, or the short pause's. */
function moralKey(run) {
  if (run.stalled === false) return `lab.moral.${run.mode}.calm`;
  if (run.stalled && run.stats.A && run.stats.A.leasesLost === 0) return 'lab.moral.short';
  if (run.mode === 'fenced' && run.events.some((e) => e.kind === 'fenced' && e.who === 'A' && e.reason?.code === 'done')) {
    return 'lab.moral.fenced.late'; // A woke after B had finished: the job's `done` refused it
  }
  return `lab.moral.${run.mode}`;
}

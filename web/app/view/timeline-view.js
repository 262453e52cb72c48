// Draws the timeline: one lane for the store and one per worker, every entry as a card in its
// lane at its time, with its outcome in words; leases as bars; the playhead as a line. It only
// renders what it is given (entries, outcomes, playhead, leases): no store, no state of its own.
import { h, replace } from '../../common/dom.js';
import { LANES } from '../model/timeline.js';
import { granted, jobOf } from '../model/derive.js';
import { argsText, fmt, opName, outcomeText, statusLine, storeChipText } from '../model/describe.js';
import { t } from '../../common/i18n.js';

const SIZES = {
  wide: { label: 60, card: 146, gap: 8, pxPerSec: 14, cardH: 72, shortH: 58, chipH: 24, bar: 16, pad: 12 },
  compact: { label: 34, card: 126, gap: 6, pxPerSec: 10, cardH: 72, shortH: 58, chipH: 24, bar: 16, pad: 6 },
};
const AXIS_H = 44;
const LANE_PAD = 6;
const EMPTY_LANE_H = 40;

/**
 * A piecewise-linear time axis: every time that has a card gets room for it; between those, time
 * is proportional. Returns {x(t), width, knots}.
 */
export function layoutAxis(cardTimes, otherTimes, size) {
  const cards = new Set(cardTimes);
  const knots = [...new Set([0, ...cardTimes, ...otherTimes])].sort((a, b) => a - b);
  const xs = [];
  let x = size.label + size.pad;
  for (let i = 0; i < knots.length; i++) {
    if (i > 0) {
      const room = cards.has(knots[i - 1]) ? size.card + size.gap : 0;
      x += Math.max(room, size.pxPerSec * (knots[i] - knots[i - 1]));
    }
    xs.push(x);
  }
  const at = (t) => {
    if (t <= knots[0]) return xs[0];
    for (let i = 1; i < knots.length; i++) {
      if (t <= knots[i]) return xs[i - 1] + ((xs[i] - xs[i - 1]) * (t - knots[i - 1])) / (knots[i] - knots[i - 1]);
    }
    return xs.at(-1) + size.pxPerSec * (t - knots.at(-1));
  };
  const last = knots.at(-1);
  const width = xs.at(-1) + (cards.has(last) ? size.card : 0) + size.pad;
  return { x: at, width, knots: knots.filter((t) => cards.has(t)) };
}

function laneItems(vm) {
  // What each lane shows: entries (cards) and, in the store lane, what the store did (chips).
  const items = new Map(LANES.map((lane) => [lane, []]));
  vm.entries.forEach((entry, index) => {
    items.get(entry.worker).push({ kind: 'card', entry, index });
    const outcome = vm.outcomes[index];
    if (entry.op !== 'enqueue' && entry.op !== 'renew' && granted(entry, outcome)) {
      items.get('store').push({ kind: 'chip', entry, index });
    }
  });
  return items;
}

function assignRows(bars) {
  // Greedy interval colouring, so two leases of one worker never overlap on screen.
  const rowEnds = [];
  for (const bar of bars) {
    let row = rowEnds.findIndex((end) => end <= bar.x0);
    if (row === -1) row = rowEnds.length;
    rowEnds[row] = bar.x1 + 4;
    bar.row = row;
  }
  return rowEnds.length;
}

/** Renders the whole timeline into `container` (a horizontally scrollable element). */
export function renderTimeline(container, vm) {
  const size = vm.compact ? SIZES.compact : SIZES.wide;
  const leaseEnds = vm.leases.flatMap((l) => [l.end, l.until]);
  const axis = layoutAxis(vm.entries.map((e) => e.t), [vm.now, ...leaseEnds], size);
  const items = laneItems(vm);

  const canvas = h('div', { class: 'tl-canvas', style: { width: `${Math.ceil(axis.width)}px` } });

  // Axis: a tick per time with cards, and the clock.
  const axisRow = h('div', { class: 'tl-row tl-axis', attrs: { 'aria-hidden': 'true' }, style: { height: `${AXIS_H}px` } },
    h('div', { class: 'lane-label', style: { width: `${size.label}px` } }, t(vm.lang, 'timeline.axis')));
  for (const t of axis.knots) {
    axisRow.append(h('span', { class: 'tick', style: { left: `${axis.x(t)}px` }, text: `t=${fmt(t)}` }));
  }
  axisRow.append(h('span', { class: 'now-tag', style: { left: `${axis.x(vm.now)}px` }, text: t(vm.lang, 'timeline.now', fmt(vm.now)) }));
  canvas.append(axisRow);

  const list = h('ol', { class: 'tl-lanes', attrs: { 'aria-label': t(vm.lang, 'timeline.lanes') } });
  for (const lane of LANES) {
    const laneEntries = items.get(lane);
    // Stack the items that share a time, top to bottom.
    const stackTop = new Map();
    const placed = laneEntries.map((item) => {
      const height = item.kind === 'chip' ? size.chipH : item.entry.op === 'enqueue' ? size.shortH : size.cardH;
      const top = stackTop.get(item.entry.t) ?? LANE_PAD;
      stackTop.set(item.entry.t, top + height + 6);
      return { ...item, top, height };
    });
    const itemsH = placed.length ? Math.max(...stackTop.values()) : EMPTY_LANE_H;
    const bars = vm.leases
      .filter((l) => lane === l.worker)
      .map((l) => ({ lease: l, x0: axis.x(l.from), x1: Math.max(axis.x(l.end), axis.x(l.from) + 6) }));
    const barRows = assignRows(bars);
    const laneH = itemsH + (barRows ? barRows * (size.bar + 4) + 2 : 0);

    const laneName = lane === 'store' ? t(vm.lang, 'lane.store') : t(vm.lang, 'lane.worker', lane);
    const row = h('li', { class: `tl-row tl-lane lane-${lane}`, style: { height: `${laneH}px` }, attrs: { 'aria-label': laneName } },
      h('div', { class: 'lane-label', style: { width: `${size.label}px` } },
        h('span', { class: `badge w-${lane}`, text: lane === 'store' ? (vm.compact ? t(vm.lang, 'lane.storeShort') : t(vm.lang, 'lane.store')) : lane, attrs: { title: laneName } })));

    const cards = h('ol', { class: 'tl-items' });
    for (const item of placed) cards.append(item.kind === 'card' ? card(item, vm, axis, size) : chip(item, vm, axis, size));
    row.append(cards);

    for (const bar of bars) row.append(leaseBar(bar, itemsH, size, vm));
    list.append(row);
  }
  canvas.append(list);
  canvas.append(h('div', { class: 'playhead', style: { left: `${axis.x(vm.now)}px` }, attrs: { 'aria-hidden': 'true' } }));

  const keepScroll = container.scrollLeft;
  replace(container, canvas);
  container.scrollLeft = keepScroll;
  // Keep the playhead and the card just played in view, with as much of the past as fits.
  const x = axis.x(vm.now);
  const left = container.scrollLeft + size.label;
  const right = container.scrollLeft + container.clientWidth;
  if (x < left || x + size.card > right) {
    container.scrollLeft = Math.max(0, x + size.card + size.pad - container.clientWidth);
  }
  return axis;
}

function card(item, vm, axis, size) {
  const { entry, index } = item;
  const outcome = vm.outcomes[index];
  const out = outcomeText(entry, outcome, vm.lang);
  const future = index >= vm.k;
  const classes = ['tl-card', `kind-${out.kind}`];
  if (future) classes.push('future');
  if (index === vm.k - 1) classes.push('latest');
  const args = argsText(entry, vm.lang);
  return h('li', {
    class: classes.join(' '),
    style: { left: `${axis.x(entry.t) + 4}px`, top: `${item.top}px`, width: `${size.card - 8}px`, height: `${item.height}px` },
    attrs: { title: statusLine(entry, outcome, vm.lang) + (future ? t(vm.lang, 'timeline.future') : ''), 'data-index': index, tabindex: 0 },
  },
  h('div', { class: 'c-head' },
    h(vm.lang === 'en' ? 'code' : 'span', { class: 'c-op', text: opName(entry.op, vm.lang), attrs: { 'data-op': entry.op } }), ' ',
    h('span', { class: 'c-job', text: jobOf(entry, outcome) ?? '' })),
  h('div', { class: 'c-args' },
    h('span', { class: 'c-t', text: `t=${fmt(entry.t)}` }), args ? ` · ${args}` : ''),
  h('div', { class: 'c-out' },
    h('span', { class: 'c-icon', attrs: { 'aria-hidden': 'true' }, text: out.icon }), ' ',
    h('span', { class: 'c-text', text: out.text }),
    future ? h('span', { class: 'sr-only', text: t(vm.lang, 'timeline.future') }) : null));
}

function chip(item, vm, axis, size) {
  const { entry, index } = item;
  const text = storeChipText(entry, vm.outcomes[index], vm.lang);
  const classes = ['tl-chip'];
  if (index >= vm.k) classes.push('future');
  return h('li', {
    class: classes.join(' '),
    style: { left: `${axis.x(entry.t) + 4}px`, top: `${item.top}px`, width: `${size.card - 8}px`, height: `${item.height}px` },
    attrs: { title: text },
  }, h('span', { class: 'chip-text', text }));
}

function leaseBar(bar, itemsH, size, vm) {
  const l = bar.lease;
  const endText = t(vm.lang, `lease.${l.endKind}`, fmt(l.endKind === 'live' || l.endKind === 'expired' ? l.until : l.end));
  const label = `${t(vm.lang, 'check.fenceWord', l.fence)} · ${endText} · ${l.job}`;
  const classes = ['lease', `w-${l.worker}`, `end-${l.endKind}`];
  if (l.index >= vm.k) classes.push('future');
  return h('div', {
    class: classes.join(' '),
    style: {
      left: `${bar.x0}px`, width: `${bar.x1 - bar.x0}px`,
      top: `${itemsH + bar.row * (size.bar + 4)}px`, height: `${size.bar}px`,
    },
    attrs: { title: t(vm.lang, 'lease.title', l.worker, l.job, l.fence, fmt(l.from), endText) },
  }, h('span', { class: 'lease-text', text: label }));
}

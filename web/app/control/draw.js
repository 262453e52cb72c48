// Drawing: the views, given the state. The top layer: the files below ask for it through
// state.js's redraw().
import * as TL from '../model/timeline.js';
import { fenceMemory, knownJobs, leases, usesQueues } from '../model/derive.js';
import { fmt, statusLine } from '../model/describe.js';
import { t } from '../../common/i18n.js';
import { h, replace } from '../../common/dom.js';
import { renderTimeline } from '../view/timeline-view.js';
import { JOBS_COLUMNS, LEASE_ONLY_COLUMNS, QUEUE_COLUMNS, renderJobs } from '../view/table-view.js';
import { renderCheck } from '../view/check-view.js';
import { renderWorkers } from '../view/workers-view.js';
import { renderStory } from '../view/story-view.js';
import { renderLab } from '../view/lab-view.js';
import { compact, scenario, state, ui } from './state.js';
import { hasAhead, playing } from './play.js';
import { positioned } from './open-store.js';

let rendering = false;

function render() {
  if (rendering) return;
  rendering = true;
  try {
    draw();
  } finally {
    rendering = false;
  }
}

function draw() {
  const { doc, outcomes, lang } = state;
  const focused = document.activeElement;
  const focusedCard = focused?.closest?.('#timeline .tl-card')?.dataset.index;
  const sc = scenario();
  // Until the store is open the page does not know yet whether a story is told (a save, a link):
  // the panel keeps its loading line instead of showing free play's text first.
  if (positioned) {
    renderStory({ panel: ui.storyPanel, title: ui.storyTitle, progress: ui.storyProgress, narration: ui.narration, source: ui.storySource, links: ui.storyLinks },
      sc, state.story?.step ?? 0, lang);
  }

  ui.clock.textContent = `t = ${fmt(doc.now)}`;
  const span = TL.timeSpan(doc);
  ui.scrub.max = String(span);
  ui.scrub.value = String(doc.now);
  ui.scrub.setAttribute('aria-valuetext', `t=${fmt(doc.now)}`);
  ui.scrubMax.textContent = `t=${span}`;
  replace(ui.scrubMarks, [...new Set(doc.entries.map((e) => e.t))].map((t) => h('option', { attrs: { value: t } })));

  renderTimeline(ui.timeline, {
    entries: doc.entries, outcomes, k: doc.k, now: doc.now,
    leases: leases(doc.entries, outcomes, doc.now), lang, compact: compact.matches,
  });
  if (focusedCard !== undefined) {
    ui.timeline.querySelector(`.tl-card[data-index="${CSS.escape(focusedCard)}"]`)?.focus({ preventScroll: true });
  }
  // The queue and priority columns, only for a timeline that puts them to use.
  const queues = usesQueues(doc.entries);
  ui.jobsQueueHead.hidden = ui.jobsPriorityHead.hidden = !queues;
  ui.jobsBody.closest('table').classList.toggle('with-queues', queues);
  ui.jobsBody.closest('.table-pair').classList.toggle('stacked', queues);
  renderJobs(ui.jobsBody, ui.jobsEmpty, state.rows, state.prevRows, doc.now, lang, { columns: queues ? QUEUE_COLUMNS : JOBS_COLUMNS });
  renderJobs(ui.leaseOnlyBody, ui.leaseOnlyEmpty, state.leaseRows, state.prevLeaseRows, doc.now, lang,
    { columns: LEASE_ONLY_COLUMNS, against: state.rows });
  state.prevRows = state.rows; // mark changes once
  state.prevLeaseRows = state.leaseRows;
  const at = doc.k - 1;
  renderCheck(ui.checkBody, { entry: doc.entries[at], outcome: outcomes[at], trace: state.traces[at], lang });

  const job = ui.job.value;
  renderWorkers(ui.memory, fenceMemory(doc.entries, outcomes, doc.k), job, state.rows.find((r) => r.id === job), lang);
  replace(ui.jobList, knownJobs(doc.entries, doc.entries.length).slice(0, 50).map((id) => h('option', { attrs: { value: id } })));

  const last = doc.k > 0 ? doc.entries[doc.k - 1] : null;
  replace(ui.status, last ? t(lang, 'status.last', statusLine(last, outcomes[doc.k - 1], lang)) : t(lang, 'status.nothing'));
  replace(ui.count, t(lang, 'timeline.count', doc.k, doc.entries.length));

  // Controls: disabled until the store is open; ends of the timeline disable their steps.
  const ready = state.ready;
  for (const control of ui.controls) control.disabled = !ready;
  ui.labOpen.disabled = !ready || !state.lab;
  const atStart = sc ? state.story.step === 0 : doc.k === 0 && doc.now === 0;
  const ahead = hasAhead();
  ui.back.disabled = ui.storyBack.disabled = ui.toStart.disabled = !ready || atStart;
  ui.next.disabled = ui.storyNext.disabled = ui.toEnd.disabled = !ready || !ahead;
  ui.play.disabled = !ready || (!ahead && !playing());
  replace(ui.play, t(lang, playing() ? 'timeline.pause' : 'timeline.play'));
  ui.play.setAttribute('aria-pressed', String(playing()));
  keepFocus(focused);
  ui.storyNext.classList.toggle('pulse', ready && !!sc && state.story.step === 0);
  // The lab's own time slider: events after it are drawn dimmed, as not yet happened.
  const labAt = state.lab ? Math.min(state.labAt ?? state.lab.end, state.lab.end) : 0;
  ui.labScrub.hidden = !state.lab;
  if (state.lab) {
    ui.labTime.max = String(state.lab.end);
    ui.labTime.value = String(labAt);
    ui.labTime.setAttribute('aria-valuetext', `t=${labAt}`);
    ui.labTimeOut.value = `t=${labAt}`;
  }
  renderLab(ui.labBody, state.lab, lang, labAt);
  ui.labPause.setAttribute('aria-pressed', String(state.labStall));
  // The toggle says its state with a box, ticked or not, besides its colour; the poison job has
  // no pause (nor a wake time), so there both do nothing and are disabled.
  replace(ui.labPause, h('span', { class: 'toggle-box', attrs: { 'aria-hidden': 'true' }, text: state.labStall ? '☑' : '☐' }), ' ', t(lang, 'lab.pause'));
  const poison = ui.labMode.value === 'poison';
  ui.labPause.disabled = !ready || poison;
  ui.labWake.disabled = !ready || poison;
}

/**
 * A control that was just disabled (Next at the story's end, Step at the timeline's) would drop
 * the focus to <body>, where Space scrolls the page: it moves to the next thing to do instead.
 */
function keepFocus(was) {
  if (!was?.disabled || !ui.controls.includes(was)) return;
  const instead = {
    'story-next': ui.scenario, 'story-back': ui.storyNext,
  }[was.id] ?? ui.scrub;
  const target = [instead, ui.scrub, ui.scenario].find((c) => !c.disabled);
  target?.focus({ preventScroll: true });
}

export { render };

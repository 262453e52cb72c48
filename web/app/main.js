// The playground's controller: owns the state, runs user intents one at a time against the real
// store (web/store/, with the playground's calls: ./playground-store.js), and asks the views to
// draw. The model (./model/) decides what a timeline means; the views (./view/) only draw what
// they are given.
import * as TL from './model/timeline.js';
import { LANGUAGES, isLanguage, languageTag, pickLanguage } from '../common/i18n.js';
import { byId, h, replace } from '../common/dom.js';
import { LANG_KEY, compact, setRedraw, state, ui } from './control/state.js';
import { clearInput, invalidField } from './control/input.js';
import { schedule } from './control/queue.js';
import { runWorkers } from './control/lab.js';
import { act, back, next, reset, seek, startScenario, togglePlay } from './control/intents.js';
import { exportJson, importFile, loadShared, openLabRun, readHash, share } from './control/sharing.js';
import { render } from './control/draw.js';
import { openStore } from './control/open-store.js';
import { languageIntoAddress, setLanguage } from './control/language.js';

// ------------------------------------------------------------------------------------------
// Keys and wiring, then the start.

const TYPING = new Set(['INPUT', 'TEXTAREA', 'SELECT']);

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target && (TYPING.has(target.tagName) || target.isContentEditable)) return;
  // On the timeline itself the arrow keys scroll it, as on any scrollable region.
  if (target === ui.timeline && (event.key === 'ArrowLeft' || event.key === 'ArrowRight')) return;
  if (!state.ready) return;
  const keys = {
    ArrowRight: next, ArrowLeft: back,
    Home: () => seek(TL.toStart), End: () => seek(TL.toEnd),
    1: () => seek((d) => TL.advance(d, 1)), 5: () => seek((d) => TL.advance(d, 5)), 0: () => seek((d) => TL.advance(d, 10)),
    p: togglePlay, P: togglePlay,
    '?': () => ui.help.scrollIntoView({ block: 'start' }) || ui.help.focus(),
  };
  const run = keys[event.key];
  if (!run) return;
  event.preventDefault();
  run();
}

function wire() {
  const $ = byId;
  Object.assign(ui, {
    banners: $('banners'), storyPanel: $('story'), storyTitle: $('story-title'), storyProgress: $('story-progress'),
    narration: $('narration'), storySource: $('story-source'), storyLinks: $('story-links'), storyBack: $('story-back'), storyNext: $('story-next'), scenario: $('scenario'),
    scenarioStart: $('scenario-start'), lang: $('lang'), clock: $('clock'), toStart: $('to-start'), back: $('back'),
    play: $('play'), next: $('next'), toEnd: $('to-end'), scrub: $('scrub'), scrubMarks: $('scrub-marks'),
    scrubMax: $('scrub-max'), timeline: $('timeline'), status: $('status'), storage: $('storage'), count: $('count'), job: $('job'),
    jobList: $('job-list'), ttl: $('ttl'), enqueue: $('enqueue'), revive: $('revive'), retry: $('retry'), failError: $('fail-error'), jobsBody: $('jobs-body'), jobsEmpty: $('jobs-empty'),
    jobsQueueHead: $('jobs-th-queue'), jobsPriorityHead: $('jobs-th-priority'), queue: $('queue'), priority: $('priority'),
    leaseOnlyBody: $('lease-only-body'), leaseOnlyEmpty: $('lease-only-empty'), checkBody: $('check-body'),
    share: $('share'), shareBox: $('share-box'), shareUrl: $('share-url'), shareNote: $('share-note'),
    exportButton: $('export'), importInput: $('import'), reset: $('reset'), help: $('help'),
    labMode: $('lab-mode'), labPause: $('lab-pause'), labRun: $('lab-run'), labBody: $('lab-body'),
    labScrub: $('lab-scrub'), labTime: $('lab-time'), labTimeOut: $('lab-time-out'), labOpen: $('lab-open'), labWake: $('lab-wake'),
    memory: Object.fromEntries(TL.WORKERS.map((w) => [w, $(`mem-${w}`)])),
    results: Object.fromEntries(TL.WORKERS.map((w) => [w, $(`${w}-result`)])),
  });
  ui.controls = [...document.querySelectorAll('[data-needs-store]')];

  ui.storyNext.addEventListener('click', next);
  ui.next.addEventListener('click', next);
  ui.storyBack.addEventListener('click', back);
  ui.back.addEventListener('click', back);
  ui.toStart.addEventListener('click', () => seek(TL.toStart));
  ui.toEnd.addEventListener('click', () => seek(TL.toEnd));
  ui.play.addEventListener('click', togglePlay);
  for (const [id, d] of [['plus1', 1], ['plus5', 5], ['plus10', 10]]) {
    $(id).addEventListener('click', () => seek((doc) => TL.advance(doc, d)));
  }
  ui.scrub.addEventListener('input', () => {
    const t = Number(ui.scrub.value);
    seek((doc) => TL.seekTime(doc, t));
  });
  ui.enqueue.addEventListener('click', () => act('store', 'enqueue'));
  ui.revive.addEventListener('click', () => act('store', 'revive'));
  for (const worker of TL.WORKERS) {
    for (const op of TL.WORKER_OPS) $(`${worker}-${op}`).addEventListener('click', () => act(worker, op));
  }
  ui.job.addEventListener('input', render);
  // Typing into the field an error was about ends that error.
  document.addEventListener('input', (event) => {
    if (invalidField && event.target === invalidField) clearInput();
  });
  ui.scenarioStart.addEventListener('click', () => startScenario(ui.scenario.value));
  ui.lang.addEventListener('change', () => {
    setLanguage(ui.lang.value);
    languageIntoAddress();
  });
  ui.share.addEventListener('click', share);
  ui.exportButton.addEventListener('click', exportJson);
  ui.importInput.addEventListener('change', () => importFile(ui.importInput.files?.[0]));
  ui.reset.addEventListener('click', reset);
  ui.labRun.addEventListener('click', runWorkers);
  ui.labMode.addEventListener('change', render);
  ui.labOpen.addEventListener('click', openLabRun);
  ui.labTime.addEventListener('input', () => {
    state.labAt = Number(ui.labTime.value);
    render();
  });
  ui.labPause.addEventListener('click', () => {
    state.labStall = !state.labStall;
    render();
  });
  // Clicking a card, or Enter or Space on it, puts the playhead just after that operation.
  const toCard = (event) => {
    const card = event.target.closest?.('.tl-card');
    if (!card || !state.ready) return false;
    const index = Number(card.dataset.index);
    if (!Number.isInteger(index)) return false;
    seek((doc) => (index < doc.entries.length ? { ...doc, k: index + 1, now: doc.entries[index].t } : doc));
    return true;
  };
  ui.timeline.addEventListener('click', toCard);
  ui.timeline.addEventListener('keydown', (event) => {
    if ((event.key === 'Enter' || event.key === ' ') && toCard(event)) event.preventDefault();
  });
  // The story's links to the tables and the check: scrolled into view and focused, and the
  // address keeps no #fragment (the page's hash is for shared timelines).
  ui.storyLinks.addEventListener('click', (event) => {
    const link = event.target.closest?.('a[href^="#"]');
    if (!link) return;
    event.preventDefault();
    const section = document.getElementById(link.getAttribute('href').slice(1));
    section?.scrollIntoView({ block: 'start' });
    section?.focus({ preventScroll: true });
  });
  document.addEventListener('keydown', onKey);
  window.addEventListener('hashchange', () => {
    if (!state.ready) return;
    const shared = readHash();
    if (shared) loadShared(shared, 'banner.fromLink');
  });
  compact.addEventListener('change', render);

  // Let go of the database as soon as the page goes away, for the next page or tab.
  window.addEventListener('pagehide', () => {
    if (!state.store) return;
    const store = state.store;
    state.store = null;
    state.ready = false;
    store.close().catch(() => {});
  });
  window.addEventListener('pageshow', (event) => {
    if (event.persisted) location.reload();
  });
}

// The language: ?lang= first (and remembered), then the remembered choice, then the browser's.
let savedLang = null;
try {
  savedLang = localStorage.getItem(LANG_KEY);
} catch {
  // no storage: the browser's language
}
const queryLang = new URLSearchParams(location.search).get('lang');
// The files below draw.js redraw through state.js (web/app/README.md, "The controller's layers").
setRedraw(render);
wire();
replace(ui.lang, LANGUAGES.map((l) => h('option', { attrs: { value: l.code, lang: languageTag(l.code) }, text: l.name })));
setLanguage(pickLanguage({ query: queryLang, saved: savedLang, browser: navigator.languages ?? [navigator.language] }),
  { remember: isLanguage(queryLang) || isLanguage(savedLang) });
schedule('load', openStore);

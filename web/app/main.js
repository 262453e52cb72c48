// The playground's controller: owns the state, runs user intents one at a time against the real
// store (web/store/, with the playground's calls: ./playground-store.js), and asks the views to
// draw. The model (./model/) decides what a timeline means; the views (./view/) only draw what
// they are given.
import { PlaygroundStore } from './playground-store.js';
import * as TL from './model/timeline.js';
import { docToHash, hashToDoc } from './model/encoding.js';
import { fenceFor, fenceMemory, jobOnShow, knownJobs, leases } from './model/derive.js';
import { fmt, statusLine } from './model/describe.js';
import { LANGUAGES, MESSAGES, isLanguage, languageTag, pickLanguage, t } from './model/i18n.js';
import { SCENARIOS, STORY_ID, findScenario, scenarioDoc, scenarioTitle, stepAt, stepPlayhead, storyOn } from './model/scenarios.js';
import { parseSaved, serializeSaved } from './model/saved.js';
import { storageLine } from './model/storage.js';
import initHost, { storagePersist } from './pkg/leasefence_playground.js';
import { applyEntry, readLeaseOnlyRows, readRows } from './replay.js';
import { byId, h, replace, translatePage } from './view/dom.js';
import { renderTimeline } from './view/timeline-view.js';
import { LEASE_ONLY_COLUMNS, renderJobs } from './view/table-view.js';
import { renderCheck } from './view/check-view.js';
import { renderWorkers } from './view/workers-view.js';
import { renderStory } from './view/story-view.js';
import { clearBanner, showBanner } from './view/banner-view.js';
import { renderLab } from './view/lab-view.js';

const DB_NAME = 'playground';
const SAVE_KEY = 'timeline';
// A lab run erases the store (and the saved timeline with it) until it ends; while it lasts, the
// timeline as it was is also kept here, so a reload in the middle of a run comes back to it.
const LAB_PENDING_KEY = 'leasefence-playground:lab-run';
/** Whether the page knows what the story panel shows (a save, a link or the story's start). */
let positioned = false;
const LANG_KEY = 'leasefence-playground-lang';
const LOCK = 'leasefence-playground-db';
const PLAY_MS = { story: 3200, free: 900 };

const state = {
  store: null,
  doc: TL.emptyDoc(),
  outcomes: [], // the store's answer for entries[i], kept for the future too once known
  traces: [], // what SQLite ran for entries[i], on both tables (this session only)
  storeAt: -1, // the store holds exactly entries[0..storeAt); -1: unknown, erase first
  rows: [],
  prevRows: [],
  leaseRows: [], // the lease-only table (the counterfactual without fencing)
  prevLeaseRows: [],
  story: null, // {id, step} while a scenario is being told
  lang: 'en',
  langChosen: false, // chosen by ?lang=, the picker or a remembered choice (a share link carries it)
  playing: null,
  ready: false,
  lab: null, // the last run of the worker lab (worker-lab.js); links, files and saves carry its settings
  labStall: true,
  labAt: null, // the lab's time slider; null: the run's end
};

const ui = {};
const compact = window.matchMedia('(max-width: 640px)');

// ------------------------------------------------------------------------------------------
// One intent at a time. Seeks coalesce (dragging the slider asks for many; only the last counts).

const queue = [];
let running = false;

function schedule(kind, run) {
  const last = queue.at(-1);
  if (kind === 'seek' && last && last.kind === 'seek') {
    last.run = run;
    return;
  }
  queue.push({ kind, run });
  if (!running) drain();
}

async function drain() {
  running = true;
  document.documentElement.dataset.busy = 'true';
  while (queue.length) {
    const { run } = queue.shift();
    try {
      await run();
    } catch (error) {
      failed(error);
    }
    render();
  }
  running = false;
  document.documentElement.dataset.busy = 'false';
}

function failed(error) {
  stopPlaying();
  if (error && error.code === 'storage') {
    state.ready = false;
    showBanner(ui.banners, {
      kind: 'error', key: 'storage', title: t(state.lang, 'banner.storeFailed'),
      message: String(error.message),
      actions: [{ label: t(state.lang, 'banner.reload'), run: () => location.reload() }],
    });
  } else {
    showBanner(ui.banners, { kind: 'error', key: 'bug', title: t(state.lang, 'banner.bug'), message: String(error?.message ?? error) });
  }
  console.error(error);
}

// ------------------------------------------------------------------------------------------
// Keeping the store in step with the playhead: forward by running the next entries, backward
// by erasing everything and replaying entries[0..k) (the store is deterministic given `now`).

async function save(clean) {
  await state.store.appSet(SAVE_KEY, serializeSaved({ ...state, doc: withLab(state.doc), clean }));
}

/**
 * The timeline with the settings of the lab run on show, so a link, a file or a reload runs the
 * same lab again (a run is deterministic: its settings are all it needs).
 */
function withLab(doc) {
  return state.lab ? { ...doc, lab: { mode: state.lab.mode, ...state.lab.settings } } : doc;
}

/** The timeline with the story's position, so a link opens at the step its sender was at. */
function withStory(doc) {
  return state.story ? { ...doc, story: { id: state.story.id, step: state.story.step } } : doc;
}

/** Puts the lab run's calls on the jobs table into the timeline (it replaces the timeline, with undo). */
function openLabRun() {
  const run = state.lab;
  if (!run) return;
  // Scheduled at once, so the page is busy from the click on (the module loads on first use,
  // like the lab's, and the load is queued behind it).
  schedule('load', async () => {
    const { labRunToDoc } = await import('./model/lab-run.js');
    const made = labRunToDoc(run);
    if (made.error) return inputError(made.error);
    loadShared(made.doc, 'banner.fromLab');
    // The click is in the lab, far below: bring the timeline it replaced into view.
    ui.timeline.closest('section')?.scrollIntoView({ block: 'start' });
  });
}

/** Runs the lab a loaded timeline carries, with its settings shown on the controls. */
function runCarriedLab(doc) {
  if (!doc.lab) return;
  ui.labMode.value = doc.lab.mode;
  state.labStall = doc.lab.stall;
  ui.labWake.value = String(doc.lab.wake);
  runWorkers();
}

async function sync() {
  const store = state.store;
  let dirty = false;
  const markDirty = async () => {
    if (!dirty) {
      dirty = true;
      await save(false); // if the page dies mid-way, the next load replays instead of trusting
    }
  };
  for (;;) {
    const { entries, k } = state.doc;
    if (state.storeAt < 0 || state.storeAt > k) {
      await store.eraseEverything(); // also erases the saved timeline: written back right away
      state.storeAt = 0;
      dirty = false;
      await markDirty();
      continue;
    }
    if (state.storeAt >= k) break;
    await markDirty();
    const ran = await applyEntry(store, entries[state.storeAt]);
    state.outcomes[state.storeAt] = ran.outcome;
    state.traces[state.storeAt] = ran.trace;
    state.storeAt += 1;
  }
  state.prevRows = state.rows;
  const ids = knownJobs(state.doc.entries, state.doc.k);
  state.rows = await readRows(store, ids);
  state.prevLeaseRows = state.leaseRows;
  state.leaseRows = await readLeaseOnlyRows(store, ids);
  await save(true);
}

function scenario() {
  return state.story ? findScenario(state.story.id) : null;
}

async function moveTo(doc) {
  state.doc = doc;
  const sc = scenario();
  if (sc) state.story = { id: sc.id, step: stepAt(sc, doc) };
  followJob();
  await sync();
}

/**
 * The job box (and so the worker cards and buttons) follows the job on show: always while a
 * story is told, and in free play when the box names a job this timeline does not have.
 */
function followJob() {
  const { entries, k } = state.doc;
  const job = jobOnShow(entries, k);
  if (job === null || ui.job.value === job) return;
  if (state.story || !knownJobs(entries, entries.length).includes(ui.job.value)) ui.job.value = job;
}

async function replaceTimeline(doc, story = null) {
  stopPlaying();
  state.doc = doc;
  state.outcomes = [];
  state.traces = [];
  state.storeAt = -1;
  state.story = story;
  state.prevRows = [];
  state.rows = [];
  state.prevLeaseRows = [];
  state.leaseRows = [];
  followJob();
  await sync();
}

// ------------------------------------------------------------------------------------------
// User intents.

function next() {
  schedule('step', async () => {
    const sc = scenario();
    if (sc) {
      const step = Math.min(state.story.step + 1, sc.steps.length - 1);
      state.story = { id: sc.id, step };
      state.doc = { ...state.doc, ...stepPlayhead(sc, step) };
      followJob();
      await sync();
    } else {
      await moveTo(TL.stepForward(state.doc));
    }
  });
}

function back() {
  schedule('step', async () => {
    const sc = scenario();
    if (sc) {
      const step = Math.max(state.story.step - 1, 0);
      state.story = { id: sc.id, step };
      state.doc = { ...state.doc, ...stepPlayhead(sc, step) };
      followJob();
      await sync();
    } else {
      await moveTo(TL.stepBack(state.doc));
    }
  });
}

function seek(makeDoc) {
  schedule('seek', () => moveTo(makeDoc(state.doc)));
}

function act(worker, op) {
  stopPlaying();
  schedule('act', async () => {
    const job = ui.job.value;
    const lang = state.lang;
    const jobProblem = TL.stringProblem(job);
    if (jobProblem) return inputError(t(lang, `input.${jobProblem}`, t(lang, 'input.field.job'), TL.LIMITS.string), ui.job);
    const typed = TL.typedJobProblem(job);
    if (typed) return inputError(t(lang, `input.${typed.problem}`, t(lang, 'input.field.job'), typed.char), ui.job);
    let ttl = null;
    if (op === 'claim' || op === 'renew') {
      ttl = Number(ui.ttl.value);
      if (ui.ttl.value.trim() === '' || TL.typedTtlProblem(ttl)) return inputError(t(lang, 'input.ttl', TL.LIMITS.time), ui.ttl);
    }
    let result = null;
    if (op === 'complete') {
      const typed = ui.results[worker].value;
      const resultProblem = TL.stringProblem(typed, { allowEmpty: true });
      if (resultProblem) return inputError(t(lang, `input.${resultProblem}`, t(lang, 'input.field.result', worker), TL.LIMITS.string), ui.results[worker]);
      result = typed === '' ? null : typed; // an empty box stores no result (null)
    }
    let retryAt = null;
    let error = null;
    if (op === 'fail') {
      // An empty retry box fails the job for good (dead); else it waits that many seconds.
      if (ui.retry.value.trim() !== '') {
        const after = Number(ui.retry.value);
        if (!Number.isInteger(after) || after < 0) return inputError(t(lang, 'input.retry'), ui.retry);
        retryAt = state.doc.now + after;
      }
      const typed = ui.failError.value;
      const errorProblem = TL.stringProblem(typed, { allowEmpty: true });
      if (errorProblem) return inputError(t(lang, `input.${errorProblem}`, t(lang, 'input.field.error'), TL.LIMITS.string), ui.failError);
      error = typed === '' ? null : typed;
    }
    // A worker presents the fence it last got for this job (0 if it never got one).
    const fence = fenceFor(fenceMemory(state.doc.entries, state.outcomes, state.doc.k), worker, job);
    const args = {
      enqueue: () => ({ job }),
      claim: () => ({ job, ttl }),
      renew: () => ({ job, fence, ttl }),
      complete: () => ({ job, fence, result }),
      release: () => ({ job, fence }),
      fail: () => ({ job, fence, retryAt, error }),
      revive: () => ({ job }),
    }[op]();
    const answer = TL.act(state.doc, { worker, op, args });
    if (answer.error) return inputError(answer.full ? t(lang, 'input.full', TL.LIMITS.entries) : answer.error);
    clearInput();
    const k = state.doc.k;
    if (state.storeAt > k) state.storeAt = -1;
    state.outcomes.length = Math.min(state.outcomes.length, k);
    state.traces.length = Math.min(state.traces.length, k);
    // Leaving the story and forking (the old future is cut off) can be undone: the timeline as it
    // was is replayed.
    const previous = { doc: state.doc, story: state.story };
    const undo = [{ label: t(state.lang, 'banner.undo'), run: () => schedule('load', () => replaceTimeline(previous.doc, previous.story)) }];
    if (state.story) {
      showBanner(ui.banners, {
        kind: 'notice', key: 'fork',
        message: t(state.lang, 'banner.leftStory'), actions: undo,
      });
      state.story = null;
    } else if (answer.forked) {
      showBanner(ui.banners, {
        kind: 'notice', key: 'fork',
        message: t(state.lang, 'banner.forked', fmt(state.doc.now)), actions: undo,
      });
    }
    state.doc = answer.doc;
    await sync();
  });
}

function inputError(message, field) {
  const banner = showBanner(ui.banners, { kind: 'error', key: 'input', title: t(state.lang, 'banner.notDone'), message });
  clearInvalid();
  if (!field) return;
  // The field says it is invalid, and why (the banner's message), to a screen reader too.
  const text = banner.querySelector('.banner-message');
  text.id = 'input-problem';
  field.setAttribute('aria-invalid', 'true');
  field.setAttribute('aria-describedby', text.id);
  invalidField = field;
  field.focus();
}

let invalidField = null;

/** The input error is over: the field is no longer marked, and its banner goes. */
function clearInput() {
  clearBanner(ui.banners, 'input');
  clearInvalid();
}

function clearInvalid() {
  if (!invalidField) return;
  invalidField.removeAttribute('aria-invalid');
  invalidField.removeAttribute('aria-describedby');
  invalidField = null;
}

function startScenario(id) {
  const sc = findScenario(id);
  if (!sc) return;
  clearBanner(ui.banners, 'fork');
  schedule('load', () => replaceTimeline(scenarioDoc(sc), { id: sc.id, step: 0 }));
}

function loadShared(carried, from) {
  schedule('load', async () => {
    const previous = { doc: state.doc, story: state.story };
    // A link made during a story opens at the same step of it, on the scenario's own timeline.
    const { story: position, ...doc } = carried;
    const story = storyOn(doc, position);
    if (story) Object.assign(doc, stepPlayhead(findScenario(story.id), story.step));
    await replaceTimeline(doc, story);
    runCarriedLab(doc);
    showBanner(ui.banners, {
      kind: 'notice', key: 'loaded',
      message: t(state.lang, 'banner.loaded', t(state.lang, from), doc.entries.length) +
        (previous.doc.entries.length ? t(state.lang, 'banner.replaced') : ''),
      actions: previous.doc.entries.length
        ? [{ label: t(state.lang, 'banner.undo'), run: () => schedule('load', () => replaceTimeline(previous.doc, previous.story)) }]
        : [],
    });
  });
}

/** Reset asks first (a banner with the confirming button focused), then can be undone. */
function reset() {
  const ask = showBanner(ui.banners, {
    kind: 'notice', key: 'confirm-reset', message: t(state.lang, 'banner.resetAsk'),
    actions: [
      { label: t(state.lang, 'banner.resetYes'), id: 'reset-confirm', run: () => resetNow() },
      { label: t(state.lang, 'banner.cancel'), run: () => ui.reset.focus() },
    ],
  });
  ask.querySelector('#reset-confirm').focus();
}

function resetNow() {
  schedule('load', async () => {
    const previous = { doc: withLab(state.doc), story: state.story };
    state.lab = null;
    await replaceTimeline(TL.emptyDoc(), null);
    clearBanner(ui.banners, 'fork');
    showBanner(ui.banners, {
      kind: 'notice', key: 'loaded', message: t(state.lang, 'banner.reset'),
      actions: previous.doc.entries.length || previous.doc.lab
        ? [{
          label: t(state.lang, 'banner.undo'),
          run: () => schedule('load', async () => {
            await replaceTimeline(previous.doc, previous.story);
            runCarriedLab(previous.doc);
          }),
        }]
        : [],
    });
  });
}

function share() {
  const url = new URL(location.href);
  // Whoever opens the link reads it in their own language, unless the sender chose one.
  if (state.langChosen) url.searchParams.set('lang', state.lang);
  else url.searchParams.delete('lang');
  url.hash = docToHash(withStory(withLab(state.doc)));
  ui.shareUrl.value = url.href;
  ui.shareBox.hidden = false;
  ui.shareUrl.focus();
  ui.shareUrl.select();
  const note = (text) => replace(ui.shareNote, text);
  if (navigator.clipboard?.writeText) {
    navigator.clipboard.writeText(url.href).then(
      () => note(t(state.lang, 'share.copied')),
      () => note(t(state.lang, 'share.copyByHand')),
    );
  } else {
    note(t(state.lang, 'share.copyByHand'));
  }
}

function exportJson() {
  const text = JSON.stringify(TL.docToJson(withLab(state.doc)), null, 2);
  const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
  const a = h('a', { attrs: { href: url, download: 'leasefence-timeline.json' } });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  replace(ui.shareNote, t(state.lang, 'share.exported', state.doc.entries.length));
}

async function importFile(file) {
  ui.importInput.value = '';
  if (!file) return;
  const refuse = (message) => showBanner(ui.banners, { kind: 'error', key: 'import', title: t(state.lang, 'banner.importRefused'), message });
  // UTF-8 needs at most 3 bytes per UTF-16 unit: anything larger cannot pass the size check.
  if (file.size > TL.LIMITS.text * 3) {
    return refuse(`Invalid timeline: the file is larger than ${TL.LIMITS.text} characters.`);
  }
  let text;
  try {
    text = await file.text();
  } catch {
    return refuse(t(state.lang, 'banner.unreadable'));
  }
  const parsed = TL.parseDocText(text);
  if (!parsed.ok) return refuse(parsed.error);
  clearBanner(ui.banners, 'import');
  loadShared(parsed.doc, 'banner.fromFile');
}

function readHash() {
  const parsed = hashToDoc(location.hash);
  if (!parsed) return null;
  // The link has been read: take it out of the address bar, so a reload shows the saved state.
  history.replaceState(null, '', location.pathname + location.search);
  if (!parsed.ok) {
    showBanner(ui.banners, { kind: 'error', key: 'import', title: t(state.lang, 'banner.linkRefused'), message: parsed.error });
    return null;
  }
  return parsed.doc;
}

// ------------------------------------------------------------------------------------------
// Play / pause.

function playing() {
  return state.playing !== null;
}

function hasAhead() {
  const sc = scenario();
  return sc ? state.story.step < sc.steps.length - 1 : state.doc.k < state.doc.entries.length;
}

function togglePlay() {
  if (playing()) return stopPlaying();
  if (!hasAhead()) return;
  const tick = () => {
    if (!hasAhead()) return stopPlaying();
    if (!running) next();
  };
  state.playing = setInterval(tick, scenario() ? PLAY_MS.story : PLAY_MS.free);
  tick();
  render();
}

function stopPlaying() {
  if (state.playing !== null) clearInterval(state.playing);
  state.playing = null;
  if (ui.play) render();
}

// ------------------------------------------------------------------------------------------
// Drawing.

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
  renderJobs(ui.jobsBody, ui.jobsEmpty, state.rows, state.prevRows, doc.now, lang);
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

/**
 * Runs the worker lab on the store (it erases it first), then replays the timeline: the store
 * holds exactly entries[0..k) again afterwards.
 */
function runWorkers() {
  stopPlaying();
  const mode = ui.labMode.value;
  const wake = Number(ui.labWake.value);
  if (!Number.isInteger(wake) || wake < TL.LAB_WAKE.min || wake > TL.LAB_WAKE.max) {
    return inputError(t(state.lang, 'input.wake', TL.LAB_WAKE.min, TL.LAB_WAKE.max), ui.labWake);
  }
  clearInput();
  schedule('lab', async () => {
    replace(ui.labBody, t(state.lang, 'lab.running'));
    keepDuringLab({ mode, stall: state.labStall, wake });
    try {
      // Loaded on the first run only: the runtime is not part of the page's load.
      const { runLab } = await import('./worker-lab.js');
      const settings = { stall: state.labStall, wake };
      state.lab = { ...(await runLab(state.store, mode, settings)), settings };
      state.labAt = null; // a new run is shown to its end
    } finally {
      state.storeAt = -1;
      await sync();
      forgetLabPending(); // the store holds the timeline again, and its save
    }
  });
}

/** Keeps the timeline (with the run's settings, so a reload runs it again) outside the store. */
function keepDuringLab(lab) {
  try {
    localStorage.setItem(LAB_PENDING_KEY, serializeSaved({ ...state, doc: { ...state.doc, lab }, clean: false }));
  } catch {
    // No localStorage (or full): a reload during the run starts afresh, as before.
  }
}

function forgetLabPending() {
  try {
    localStorage.removeItem(LAB_PENDING_KEY);
  } catch {
    // nothing kept
  }
}

/** The timeline kept by a lab run the page did not see to its end, or null. */
function labPending() {
  try {
    return parseSaved(localStorage.getItem(LAB_PENDING_KEY));
  } catch {
    return null;
  }
}

// ------------------------------------------------------------------------------------------
// Opening the store.

// One tab at a time holds the database (OPFS access handles are exclusive). The holder also
// holds a Web Lock for its lifetime; a tab that was turned away waits for that lock, which the
// browser frees when the holder closes or crashes, and then tries again by itself.
let waitingForHolder = false;

function holdLock() {
  navigator.locks?.request(LOCK, () => new Promise(() => {}));
}

function waitForHolder() {
  if (!navigator.locks || waitingForHolder) return;
  waitingForHolder = true;
  navigator.locks.request(LOCK, async () => {
    waitingForHolder = false;
    schedule('load', openStore);
  });
}

/**
 * Asks the browser to keep this origin's storage, so a learner's database is not evicted, then
 * shows its answer and the usage. persist() is offered to pages only, so the page runs the
 * crate's host call itself (the wasm is already cached by the worker); the estimate comes from
 * the store's worker. Never blocks the playground.
 */
async function showStorage(store) {
  let asked;
  try {
    await initHost();
    asked = await storagePersist();
  } catch (error) {
    asked = { error: String(error?.message ?? error) };
  }
  let estimate;
  try {
    estimate = await store.storageEstimate();
  } catch (error) {
    estimate = { error: String(error?.message ?? error) };
  }
  ui.storage.dataset.persist = String(asked === true || asked === false ? asked : 'error');
  state.storageFacts = { asked, estimate };
  replace(ui.storage, storageLine(state.storageFacts, state.lang));
}

async function openStore() {
  if (state.store) return;
  replace(ui.status, t(state.lang, 'status.opening'));
  let store;
  try {
    store = await PlaygroundStore.open(DB_NAME);
  } catch (error) {
    const another = /another tab/i.test(String(error?.message));
    showBanner(ui.banners, {
      kind: 'error', key: 'storage',
      title: t(state.lang, another ? 'banner.anotherTab' : 'banner.cannotStart'),
      // Another tab's hold on the database, in plain words; any other failure as the browser said it.
      message: another ? t(state.lang, 'banner.anotherTabHow') : String(error?.message ?? error),
      actions: [{ label: t(state.lang, 'banner.tryAgain'), run: () => schedule('load', openStore) }],
    });
    replace(ui.status, t(state.lang, another ? 'status.waiting' : 'status.needsOpfs'));
    if (another) setTimeout(waitForHolder, 1000);
    return;
  }
  clearBanner(ui.banners, 'storage');
  await store.setTracing(true); // "The check" shows the statements of every operation
  state.store = store;
  holdLock();
  showStorage(store);

  const shared = readHash();
  const interrupted = shared ? null : labPending();
  const saved = interrupted ?? parseSaved(await store.appGet(SAVE_KEY));
  if (saved) {
    state.doc = saved.doc;
    state.outcomes = saved.outcomes;
    state.story = saved.story;
    // A clean save means the store holds exactly entries[0..k): show it as it is stored.
    state.storeAt = saved.clean ? saved.doc.k : -1;
  } else if (!shared) {
    const sc = findScenario(STORY_ID);
    state.doc = scenarioDoc(sc);
    state.story = { id: sc.id, step: 0 };
    state.storeAt = -1;
  }
  positioned = true;
  followJob();
  document.documentElement.dataset.restored = saved ? (state.storeAt >= 0 ? 'from-store' : 'replayed') : 'new';
  await sync();
  state.ready = true;
  if (shared) {
    forgetLabPending();
    loadShared(shared, 'banner.fromLink');
  } else if (saved) {
    if (interrupted) showBanner(ui.banners, { kind: 'notice', key: 'lab-interrupted', message: t(state.lang, 'banner.labInterrupted') });
    runCarriedLab(saved.doc);
  }
  document.documentElement.dataset.ready = 'true';
  document.documentElement.dataset.readyMs = String(Math.round(performance.now()));
}

// ------------------------------------------------------------------------------------------
// Wiring.

function setLanguage(code, { remember = true } = {}) {
  state.lang = isLanguage(code) ? code : 'en';
  ui.lang.value = state.lang;
  translateDefaults(state.lang);
  if (remember) {
    state.langChosen = true;
    try {
      localStorage.setItem(LANG_KEY, state.lang);
    } catch {
      // private mode: the choice lasts for this page only
    }
  }
  document.documentElement.lang = languageTag(state.lang);
  translatePage(document, state.lang, t);
  document.title = t(state.lang, 'page.title');
  ui.banners.dataset.dismiss = t(state.lang, 'banner.dismiss');
  if (state.storageFacts) replace(ui.storage, storageLine(state.storageFacts, state.lang));
  replace(ui.scenario, SCENARIOS.map((sc) => h('option', { attrs: { value: sc.id }, text: scenarioTitle(sc, state.lang) })));
  if (state.story) ui.scenario.value = state.story.id;
  render();
}

/**
 * The boxes' default values (results, the error text) in the new language, unless the person
 * typed their own: a box still holding a default, in any language, gets the new one.
 */
function translateDefaults(to) {
  const defaults = (key, ...args) => Object.keys(MESSAGES).map((lang) => t(lang, key, ...args));
  const boxes = [
    ...TL.WORKERS.map((w) => [ui.results[w], 'default.result', w]),
    [ui.failError, 'default.error'],
  ];
  for (const [box, key, ...args] of boxes) {
    if (defaults(key, ...args).includes(box.value)) box.value = t(to, key, ...args);
  }
}

/** The address says the language the page speaks (?lang=), so a reload or a copied address keeps it. */
function languageIntoAddress() {
  const url = new URL(location.href);
  if (url.searchParams.get('lang') === state.lang) return;
  url.searchParams.set('lang', state.lang);
  history.replaceState(history.state, '', url.href);
}

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
wire();
replace(ui.lang, LANGUAGES.map((l) => h('option', { attrs: { value: l.code, lang: languageTag(l.code) }, text: l.name })));
setLanguage(pickLanguage({ query: queryLang, saved: savedLang, browser: navigator.languages ?? [navigator.language] }),
  { remember: isLanguage(queryLang) || isLanguage(savedLang) });
schedule('load', openStore);

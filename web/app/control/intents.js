// User intents: stepping, playing, seeking, acting as a worker, scenarios, reset.
import * as TL from '../model/timeline.js';
import { fenceFor, fenceMemory } from '../model/derive.js';
import { fmt } from '../model/describe.js';
import { t } from '../../common/i18n.js';
import { findScenario, scenarioDoc, stepPlayhead } from '../model/scenarios.js';
import { clearBanner, showBanner } from '../view/banner-view.js';
import { PLAY_MS, redraw, scenario, state, ui } from './state.js';
import { hasAhead, playing, stopPlaying } from './play.js';
import { inputError, clearInput } from './input.js';
import { running, schedule } from './queue.js';
import { followJob, moveTo, replaceTimeline, sync, withLab } from './sync.js';
import { runCarriedLab } from './lab.js';

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

/** Play steps the timeline on a timer, one step at a time (a step still running is not doubled). */
function togglePlay() {
  if (playing()) return stopPlaying();
  if (!hasAhead()) return;
  const tick = () => {
    if (!hasAhead()) return stopPlaying();
    if (!running) next();
  };
  state.playing = setInterval(tick, scenario() ? PLAY_MS.story : PLAY_MS.free);
  tick();
  redraw();
}

function seek(makeDoc) {
  schedule('seek', () => moveTo(makeDoc(state.doc)));
}

function act(worker, op) {
  stopPlaying();
  schedule('act', async () => {
    const job = ui.job.value;
    const lang = state.lang;
    // claim_next takes no job: the store picks it.
    if (op !== 'claim_next') {
      const jobProblem = TL.stringProblem(job);
      if (jobProblem) return inputError(t(lang, `input.${jobProblem}`, t(lang, 'input.field.job'), TL.LIMITS.string), ui.job);
      const typed = TL.typedJobProblem(job);
      if (typed) return inputError(t(lang, `input.${typed.problem}`, t(lang, 'input.field.job'), typed.char), ui.job);
    }
    // enqueue's queue and priority: left out of the entry when they are the store's defaults.
    const placed = {};
    if (op === 'enqueue') {
      const queue = ui.queue.value;
      const queueProblem = TL.stringProblem(queue);
      if (queueProblem) return inputError(t(lang, `input.${queueProblem}`, t(lang, 'input.field.queue'), TL.LIMITS.string), ui.queue);
      const typedQueue = TL.typedJobProblem(queue);
      if (typedQueue) return inputError(t(lang, `input.${typedQueue.problem}`, t(lang, 'input.field.queue'), typedQueue.char), ui.queue);
      const priority = Number(ui.priority.value);
      if (ui.priority.value.trim() === '' || TL.typedPriorityProblem(priority)) return inputError(t(lang, 'input.priority'), ui.priority);
      if (queue !== 'default') placed.queue = queue;
      if (priority !== 0) placed.priority = priority;
    }
    let ttl = null;
    if (op === 'claim' || op === 'claim_next' || op === 'renew') {
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
      enqueue: () => ({ job, ...placed }),
      claim: () => ({ job, ttl }),
      claim_next: () => ({ ttl }),
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
    // The store picked the job: the box (and so the worker cards) follows it.
    const picked = op === 'claim_next' ? state.outcomes[state.doc.k - 1]?.job : null;
    if (picked) ui.job.value = picked;
  });
}

function startScenario(id) {
  const sc = findScenario(id);
  if (!sc) return;
  clearBanner(ui.banners, 'fork');
  schedule('load', () => replaceTimeline(scenarioDoc(sc), { id: sc.id, step: 0 }));
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

export { next, back, togglePlay, seek, act, startScenario, reset };

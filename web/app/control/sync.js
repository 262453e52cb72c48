// Keeping the store in step with the playhead: forward by running the next entries, backward
// by erasing everything and replaying entries[0..k) (the store is deterministic given `now`).
import { jobOnShow, knownJobs } from '../model/derive.js';
import { stepAt } from '../model/scenarios.js';
import { serializeSaved } from '../model/saved.js';
import { applyEntry, readLeaseOnlyRows, readRows } from '../replay.js';
import { SAVE_KEY, scenario, state, ui } from './state.js';
import { stopPlaying } from './play.js';

/**
 * The timeline with the settings of the lab run on show, so a save, a link or a file runs the
 * same lab again (a run is deterministic: its settings are all it needs). Here, below lab.js,
 * since the save needs it too.
 */
function withLab(doc) {
  return state.lab ? { ...doc, lab: { mode: state.lab.mode, ...state.lab.settings } } : doc;
}

async function save(clean) {
  await state.store.appSet(SAVE_KEY, serializeSaved({ ...state, doc: withLab(state.doc), clean }));
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
  // A claim_next names its job only once the store has answered. In free play the box is the
  // person's: only the story moves it here (intents.js moves it after a claim_next of theirs).
  if (state.story) followJob();
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
  const job = jobOnShow(entries, k, state.outcomes);
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

export { withLab, sync, moveTo, followJob, replaceTimeline };

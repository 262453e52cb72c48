// Opening the store: one tab at a time, the saved or shared timeline, storage persistence.
import { PlaygroundStore } from '../playground-store.js';
import { t } from '../../common/i18n.js';
import { STORY_ID, findScenario, scenarioDoc } from '../model/scenarios.js';
import { parseSaved } from '../model/saved.js';
import { storageLine } from '../model/storage.js';
import initHost, { storagePersist } from '../pkg/leasefence_playground.js';
import { replace } from '../../common/dom.js';
import { clearBanner, showBanner } from '../view/banner-view.js';
import { DB_NAME, LOCK, SAVE_KEY, state, ui } from './state.js';
import { schedule } from './queue.js';
import { followJob, sync } from './sync.js';
import { forgetLabPending, labPending, runCarriedLab } from './lab.js';
import { loadShared, readHash } from './sharing.js';

/** Whether the page knows what the story panel shows (a save, a link or the story's start). */
let positioned = false;

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

export { positioned, openStore };

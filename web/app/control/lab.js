// The worker lab as the controller runs it: a run on the page's store (then the timeline replayed),
// and a run kept outside the store while it lasts. Its settings go into saves and links through
// sync.js's withLab; a run opened in the timeline is loaded by sharing.js's openLabRun.
import * as TL from '../model/timeline.js';
import { t } from '../../common/i18n.js';
import { parseSaved, serializeSaved } from '../model/saved.js';
import { replace } from '../../common/dom.js';
import { LAB_PENDING_KEY, state, ui } from './state.js';
import { stopPlaying } from './play.js';
import { clearInput, inputError } from './input.js';
import { schedule } from './queue.js';
import { sync } from './sync.js';

/** Runs the lab a loaded timeline carries, with its settings shown on the controls. */
function runCarriedLab(doc) {
  if (!doc.lab) return;
  ui.labMode.value = doc.lab.mode;
  state.labStall = doc.lab.stall;
  ui.labWake.value = String(doc.lab.wake);
  runWorkers();
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
      const { runLab } = await import('../worker-lab.js');
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

export { runCarriedLab, runWorkers, forgetLabPending, labPending };

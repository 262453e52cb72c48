// The playground's state and the page's elements, shared by the controller's modules: the
// bottom layer, which imports none of them (web/app/README.md, "The controller's layers").
import * as TL from '../model/timeline.js';
import { findScenario } from '../model/scenarios.js';

const DB_NAME = 'playground';
const SAVE_KEY = 'timeline';

// A lab run erases the store (and the saved timeline with it) until it ends; while it lasts, the
// timeline as it was is also kept here, so a reload in the middle of a run comes back to it.
const LAB_PENDING_KEY = 'leasefence-playground:lab-run';

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

/** The scenario being told, or null in free play. */
function scenario() {
  return state.story ? findScenario(state.story.id) : null;
}

// Drawing (draw.js) is the top layer: the files below it that must redraw (the queue after each
// intent, play when it stops, a new language) call redraw(), which main.js points at draw.js's
// render at start-up, before anything can ask for a drawing.
let draw = () => {};

function redraw() {
  draw();
}

function setRedraw(render) {
  draw = render;
}

export { DB_NAME, SAVE_KEY, LAB_PENDING_KEY, LANG_KEY, LOCK, PLAY_MS, state, ui, compact, scenario, redraw, setRedraw };

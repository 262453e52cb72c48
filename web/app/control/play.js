// Whether the timeline plays, and stopping it. Starting it (togglePlay) steps the timeline: an
// intent, in intents.js.
import { redraw, scenario, state, ui } from './state.js';

function playing() {
  return state.playing !== null;
}

function hasAhead() {
  const sc = scenario();
  return sc ? state.story.step < sc.steps.length - 1 : state.doc.k < state.doc.entries.length;
}

function stopPlaying() {
  if (state.playing !== null) clearInterval(state.playing);
  state.playing = null;
  if (ui.play) redraw();
}

export { playing, hasAhead, stopPlaying };

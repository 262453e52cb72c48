// Play / pause.
import { PLAY_MS, state, ui } from './state.js';
import { running } from './queue.js';
import { scenario } from './sync.js';
import { next } from './intents.js';
import { render } from './draw.js';

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

export { playing, hasAhead, togglePlay, stopPlaying };

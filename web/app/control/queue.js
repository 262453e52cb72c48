// One intent at a time. Seeks coalesce (dragging the slider asks for many; only the last counts).
import { t } from '../../common/i18n.js';
import { showBanner } from '../view/banner-view.js';
import { redraw, state, ui } from './state.js';
import { stopPlaying } from './play.js';

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
    redraw();
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

export { running, schedule };

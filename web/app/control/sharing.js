// Timelines in and out: share links, export and import, a lab run opened in the timeline, and
// loading one with undo.
import * as TL from '../model/timeline.js';
import { docToHash, hashToDoc } from '../model/encoding.js';
import { t } from '../../common/i18n.js';
import { findScenario, stepPlayhead, storyOn } from '../model/scenarios.js';
import { h, replace } from '../../common/dom.js';
import { clearBanner, showBanner } from '../view/banner-view.js';
import { state, ui } from './state.js';
import { inputError } from './input.js';
import { schedule } from './queue.js';
import { replaceTimeline, withLab } from './sync.js';
import { runCarriedLab } from './lab.js';

/** The timeline with the story's position, so a link opens at the step its sender was at. */
function withStory(doc) {
  return state.story ? { ...doc, story: { id: state.story.id, step: state.story.step } } : doc;
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

/** Puts the lab run's calls on the jobs table into the timeline (it replaces the timeline, with undo). */
function openLabRun() {
  const run = state.lab;
  if (!run) return;
  // Scheduled at once, so the page is busy from the click on (the module loads on first use,
  // like the lab's, and the load is queued behind it).
  schedule('load', async () => {
    const { labRunToDoc } = await import('../model/lab-run.js');
    const made = labRunToDoc(run);
    if (made.error) return inputError(made.error);
    loadShared(made.doc, 'banner.fromLab');
    // The click is in the lab, far below: bring the timeline it replaced into view.
    ui.timeline.closest('section')?.scrollIntoView({ block: 'start' });
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

export { loadShared, openLabRun, share, exportJson, importFile, readHash };

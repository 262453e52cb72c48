// The page's language.
import * as TL from '../model/timeline.js';
import { MESSAGES, isLanguage, languageTag, t } from '../../common/i18n.js';
import { SCENARIOS, scenarioTitle } from '../model/scenarios.js';
import { storageLine } from '../model/storage.js';
import { h, replace, translatePage } from '../../common/dom.js';
import { LANG_KEY, redraw, state, ui } from './state.js';

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
  redraw();
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

export { setLanguage, languageIntoAddress };

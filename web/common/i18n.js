// Every word the page shows, in English, Japanese and Chinese: the labels, buttons and headings of
// index.html (by their data-i18n keys) and the controller's and views' messages, one table per
// language in messages/; here the page's language and t(), which looks a key up. Text may mark code with `backticks`, emphasis with **stars**, a key with [[K]]
// and a cited title with *stars*; the views draw those as <code>, <strong>, <kbd> and <cite>,
// always as text nodes (dom.js rich()).
//
// Words left in English inside the Japanese and Chinese texts are code (operation and column
// names, in backticks), job ids, and names (leasefence, SQLite, OPFS, JSON); the browser test
// walks the page in both and fails on any other English word.

import { en } from './messages/en.js';
import { ja } from './messages/ja.js';
import { zh } from './messages/zh.js';

export const LANGUAGES = Object.freeze([
  { code: 'en', name: 'English' },
  { code: 'ja', name: '日本語' },
  { code: 'zh', name: '中文' },
]);

/** The BCP 47 tag of a language for lang attributes: the page's Chinese is simplified, zh-Hans. */
export function languageTag(code) {
  return code === 'zh' ? 'zh-Hans' : code;
}

export function isLanguage(code) {
  return LANGUAGES.some((l) => l.code === code);
}

/** The language of a BCP 47 tag (navigator.language): 'ja-JP' -> 'ja', 'zh-Hant-TW' -> 'zh'. */
export function languageOf(tag) {
  const base = String(tag ?? '').toLowerCase().split('-')[0];
  return isLanguage(base) ? base : null;
}

/** ?lang= first, then the remembered choice, then the browser's languages, then English. */
export function pickLanguage({ query, saved, browser = [] }) {
  for (const candidate of [query, saved, ...browser]) {
    const lang = languageOf(candidate);
    if (lang) return lang;
  }
  return 'en';
}

for (const messages of [en, ja, zh]) {
  for (const w of ['A', 'B', 'C']) messages[`workers.${w}`] = messages['workers.worker'](w);
  // Operation names in status lines, cards and the check: the words of the buttons that make them
  // (English keeps the API's lower-case names, which are the buttons' words too).
  const button = (key) => (messages === en ? messages[key].toLowerCase() : messages[key]);
  for (const op of ['claim', 'renew', 'complete', 'release', 'fail']) messages[`op.${op}`] = button(`workers.${op}`);
  for (const op of ['enqueue', 'revive']) messages[`op.${op}`] = button(`store.${op}`);
  // claim_next is two words on its button; English names it as the API does.
  messages['op.claim_next'] = messages === en ? 'claim_next' : messages['workers.claim_next'];
}

export const MESSAGES = Object.freeze({ en, ja, zh });

/** The text of `key` in `lang` (English when missing), with its arguments. */
export function t(lang, key, ...args) {
  const entry = MESSAGES[lang]?.[key] ?? en[key];
  if (entry === undefined) throw new Error(`no text for ${key}`);
  return typeof entry === 'function' ? entry(...args) : entry;
}
// Finds English words left in a page that speaks Japanese or Chinese: every text node (hidden
// ones too) and every title, aria-label, placeholder and alt attribute, outside code (code, kbd,
// samp, pre), cited titles (cite) and anything marked with another language (the language
// picker's "English"). Stored data is allowed where it is data: job ids, quoted results.
// Runs inside the page (page.evaluate(findUntranslated)); returns [{word, text, where}].
export function findUntranslated() {
  const ALLOWED = new Set([
    // the operations and their arguments: the API's names, code wherever they appear
    'enqueue', 'claim', 'renew', 'complete', 'release', 'fail', 'revive', 'state', 'ttl',
    // names
    'leasefence', 'SQLite', 'OPFS', 'WebAssembly', 'JSON', 'GC', 'Martin', 'Kleppmann',
    // keys and units
    'Home', 'End', 'Tab', 'Enter', 'Ctrl', 'kB', 'MB', 'GB', 'TB',
  ]);
  const EXEMPT = 'code, kbd, samp, pre, cite, script, style';
  const pageLang = document.documentElement.lang;
  const found = [];
  const check = (text, where) => {
    const stripped = text
      .replace(/“[^”]*”|"[^"]*"/g, ' ') // quoted data (results)
      .replace(/\bjob-[\w-]+/g, ' ') // job ids
      .replace(/leasefence-timeline\.json/g, ' ');
    for (const word of stripped.match(/[A-Za-z][A-Za-z']+/g) ?? []) {
      if (!ALLOWED.has(word)) found.push({ word, text: text.slice(0, 120), where });
    }
  };
  const describe = (node) => {
    const el = node.nodeType === 1 ? node : node.parentElement;
    return el ? `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.split(' ')[0]}` : ''}` : '?';
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest(EXEMPT)) continue;
    if (parent.closest('[lang]')?.getAttribute('lang') !== pageLang) continue;
    check(node.textContent, describe(node));
  }
  for (const el of document.body.querySelectorAll('[title], [aria-label], [placeholder], [alt]')) {
    if (el.closest('[lang]')?.getAttribute('lang') !== pageLang) continue;
    for (const name of ['title', 'aria-label', 'placeholder', 'alt']) {
      const value = el.getAttribute(name);
      if (value) check(value, `${describe(el)}[${name}]`);
    }
  }
  check(document.title, 'title');
  return found;
}

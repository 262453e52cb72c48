// Building DOM safely: text is only ever set with text nodes (textContent), attributes only with
// setAttribute under names written in this code. Nothing here parses markup, so data from a URL,
// a file or the store can never become HTML or script.

const SAFE_ATTRIBUTE = /^(?!on)[a-z][a-z0-9-]*$/;

/**
 * h('div', {class: 'card', attrs: {title: text}, style: {left: '4px'}}, child, 'text', [more])
 * children: Nodes, strings (as text), numbers, null/undefined/false (skipped) or arrays of those.
 */
export function h(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  if (props.class) node.className = props.class;
  if (props.text !== undefined) node.textContent = String(props.text);
  for (const [name, value] of Object.entries(props.attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (!SAFE_ATTRIBUTE.test(name)) throw new Error(`refusing attribute ${name}`);
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const [name, value] of Object.entries(props.style ?? {})) node.style.setProperty(name, String(value));
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replaces all children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

export function byId(id) {
  const node = document.getElementById(id);
  if (!node) throw new Error(`missing element #${id}`);
  return node;
}

const MARKS = [
  { open: '`', close: '`', tag: 'code' },
  { open: '**', close: '**', tag: 'strong' },
  { open: '[[', close: ']]', tag: 'kbd' },
  { open: '*', close: '*', tag: 'cite' },
];

/**
 * Text with light marks as nodes: `code`, **strong**, [[kbd]], *cite*. Every piece becomes a text
 * node inside an element named here, so no text can ever become markup.
 */
export function rich(text) {
  const nodes = [];
  let rest = String(text);
  while (rest.length) {
    let best = null;
    for (const mark of MARKS) {
      const at = rest.indexOf(mark.open);
      if (at === -1) continue;
      const end = rest.indexOf(mark.close, at + mark.open.length);
      if (end === -1) continue;
      if (!best || at < best.at) best = { mark, at, end };
    }
    if (!best) {
      nodes.push(rest);
      break;
    }
    if (best.at > 0) nodes.push(rest.slice(0, best.at));
    nodes.push(h(best.mark.tag, { text: rest.slice(best.at + best.mark.open.length, best.end) }));
    rest = rest.slice(best.end + best.mark.close.length);
  }
  return nodes;
}

/**
 * Puts the words of `lang` into the page: every `data-i18n="key"` element's content (with rich
 * marks) and every `data-i18n-attr="attribute:key;..."` attribute.
 */
export function translatePage(root, lang, t) {
  for (const node of root.querySelectorAll('[data-i18n]')) replace(node, rich(t(lang, node.dataset.i18n)));
  for (const node of root.querySelectorAll('[data-i18n-attr]')) {
    for (const pair of node.dataset.i18nAttr.split(';')) {
      const [name, key] = pair.split(':');
      if (!SAFE_ATTRIBUTE.test(name)) throw new Error(`refusing attribute ${name}`);
      node.setAttribute(name, String(t(lang, key)).replace(/`/g, ''));
    }
  }
}

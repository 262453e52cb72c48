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

// Values the dashboard does not control, drawn so that none can widen the page or pose as
// another: ids and owners cut to a line with invisible characters escaped (the whole in the
// tooltip), long texts (payloads, results, errors) cut with a button that shows the whole.
import { h } from '../../common/dom.js';
import { clip, visible } from '../model/shown.js';

/** How much of an id or owner a table cell shows. */
const CELL = 80;
/** How much of a long text shows before "show all". */
const TEXT = 2000;
/** How much of a value a tooltip carries. */
const TITLE = 4000;

/** An id, owner or queue as `code`: escaped, cut to CELL characters, the rest counted. */
export function codeText(value, { t }) {
  const text = visible(value);
  const { head, more } = clip(text, CELL);
  const attrs = more > 0 ? { title: clip(text, TITLE).head } : {};
  return h('code', { attrs }, head, more > 0 ? h('span', { class: 'more', text: t('dash.text.more', more) }) : null);
}

/** A payload, result or error as `samp`: escaped (line breaks kept), cut to TEXT characters with
 * a button that shows the whole. */
export function longText(value, { t }) {
  const text = visible(value, { keepLines: true });
  const { head, more } = clip(text, TEXT);
  const samp = h('samp', { text: head });
  if (more === 0) return samp;
  const all = h('button', { class: 'show-all', text: t('dash.text.all', text.length) });
  const rest = h('span', { class: 'more', text: t('dash.text.more', more) });
  all.addEventListener('click', () => {
    samp.textContent = text;
    rest.remove();
    all.remove();
  });
  return h('span', { class: 'long' }, samp, rest, ' ', all);
}

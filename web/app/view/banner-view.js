// Banners: errors (role=alert) and notices (role=status), each with optional buttons. The message
// is always text (its `code` marks drawn as <code>, common/dom.js rich()); buttons get their handlers from the controller.
import { h, rich } from '../../common/dom.js';

/** Shows a banner; returns it. kind: 'error' | 'notice'. actions: [{label, run, id?}]. */
export function showBanner(region, { kind, title, message, actions = [], key }) {
  if (key) region.querySelector(`[data-key="${CSS.escape(key)}"]`)?.remove();
  const close = h('button', { class: 'banner-close', text: '×', attrs: { type: 'button', 'aria-label': region.dataset.dismiss || 'Dismiss' } });
  const banner = h('div', {
    class: `banner banner-${kind}`,
    attrs: { role: kind === 'error' ? 'alert' : 'status', 'data-key': key ?? null },
  },
  h('div', { class: 'banner-body' },
    title ? h('strong', { class: 'banner-title', text: title }) : null,
    h('span', { class: 'banner-message' }, rich(message))),
  h('div', { class: 'banner-actions' },
    actions.map((action) => {
      const button = h('button', { text: action.label, attrs: { type: 'button', id: action.id } });
      button.addEventListener('click', () => {
        banner.remove();
        action.run();
      });
      return button;
    }),
    close));
  close.addEventListener('click', () => banner.remove());
  region.append(banner);
  return banner;
}

export function clearBanner(region, key) {
  region.querySelector(`[data-key="${CSS.escape(key)}"]`)?.remove();
}

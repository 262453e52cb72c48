// The leases in flight as lanes (model/lanes.js): one row per lease, its bar the time left of
// the lease's length, its words what the polls saw: time left and renewals, expired, taken over,
// ended. Drawing only.
import { h, replace } from '../../common/dom.js';
import { laneLook } from '../model/lanes.js';
import { codeText } from './text-view.js';

/** Draws `lanes` at `now` (the page's estimate of the server's clock). */
export function renderLanes(container, lanes, now, { t, span }) {
  if (lanes.length === 0) {
    replace(container, h('p', { text: t('dash.lanes.none') }));
    return;
  }
  const rows = lanes.map((lane) => {
    const look = laneLook(lane, now);
    const length = Math.max(1e-9, lane.until - lane.since);
    const left = lane.until - now;
    const words = {
      live: () => t('dash.lane.live', span(left), lane.renewals),
      expired: () => t('dash.lane.expired', span(now - (lane.endedAt ?? lane.until))),
      taken: () => t('dash.lane.taken', lane.by, lane.byFence),
      ended: () => t('dash.lane.ended'),
    }[look]();
    const width = look === 'live' ? Math.min(100, (left / length) * 100) : 100;
    return h('div', { class: `lane ${look}`, attrs: { 'data-job': lane.job, 'data-fence': lane.fence, 'data-look': look } },
      // Job ids and owners are data: drawn as code, never translated.
      h('div', { class: 'lane-label' }, codeText(lane.job, { t }), ' · ', codeText(lane.owner, { t }), ` · ${t('dash.lane.fence', lane.fence)}`),
      h('div', { class: 'lane-track' },
        h('div', { class: 'lane-bar', style: { width: `${width.toFixed(1)}%` } }),
        h('span', { class: 'lane-text', text: words })));
  });
  replace(container, rows);
}

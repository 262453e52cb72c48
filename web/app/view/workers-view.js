// The worker panels: what each worker remembers (its last fence for the selected job), and
// whether that fence is still the store's current one.
import { replace, h, rich } from '../../common/dom.js';
import { WORKERS } from '../model/timeline.js';
import { fenceFor } from '../model/derive.js';
import { fmt } from '../model/describe.js';
import { t } from '../../common/i18n.js';

// The message parts: strings, {job} (drawn as data) and {strong}.
function parts(list) {
  return list.map((part) => (typeof part === 'string' ? part
    : part.job !== undefined ? h('span', { class: 'mem-job', text: part.job })
      : h('strong', { text: part.strong })));
}

/** memory: from fenceMemory(); job: the job the buttons act on; row: that job's table row. */
export function renderWorkers(nodes, memory, job, row, lang) {
  for (const worker of WORKERS) {
    const node = nodes[worker];
    const has = memory.get(worker)?.has(job) ?? false;
    const fence = fenceFor(memory, worker, job);
    if (!job) {
      replace(node, rich(t(lang, 'mem.typeJob'))); // `id` is drawn as code
    } else if (!has) {
      replace(node, parts(t(lang, 'mem.noFence', job)));
    } else {
      const stale = row && row.fence !== fence;
      replace(node, parts(t(lang, 'mem.remembers', fmt(fence), job)),
        stale ? h('span', { class: 'pill stale', text: t(lang, 'mem.stale', fmt(row.fence)) }) : null);
    }
  }
}

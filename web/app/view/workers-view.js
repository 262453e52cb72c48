// The worker panels: what each worker remembers (its last fence for the selected job), and
// whether that fence is still the store's current one.
import { replace, h } from './dom.js';
import { WORKERS } from '../model/timeline.js';
import { fenceFor } from '../model/derive.js';
import { fmt } from '../model/describe.js';

/** memory: from fenceMemory(); job: the job the buttons act on; row: that job's table row. */
export function renderWorkers(nodes, memory, job, row) {
  for (const worker of WORKERS) {
    const node = nodes[worker];
    const has = memory.get(worker)?.has(job) ?? false;
    const fence = fenceFor(memory, worker, job);
    if (!job) {
      replace(node, 'type a job id above');
    } else if (!has) {
      replace(node, 'no fence for ', h('span', { class: 'mem-job', text: job }), ' yet (would send 0)');
    } else {
      const stale = row && row.fence !== fence;
      replace(node, 'remembers ', h('strong', { text: `fence ${fmt(fence)}` }), ' for ',
        h('span', { class: 'mem-job', text: job }),
        stale ? h('span', { class: 'pill stale', text: `stale: store has ${fmt(row.fence)}` }) : null);
    }
  }
}

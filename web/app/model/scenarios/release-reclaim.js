// The preset 'release-reclaim' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const releaseReclaim = {
  id: 'release-reclaim',
  title: { en: 'Release, then reclaim', ja: '解放してから再取得', zh: '释放后重新获取' },
  steps: [
    {
      say: {
        en: 'Release, then reclaim. A worker that gives a job up releases it, so others need not wait for the lease to run out. The fence is kept, so the old token stays invalid. Press Next.',
        ja: '解放してから再取得。ジョブをあきらめたワーカーはそれを `release` するので、他のワーカーはリースが切れるのを待たずに済みます。フェンスはそのまま残るので、古いトークンは無効のままです。「次へ」を押してください。',
        zh: '释放后重新获取。放弃任务的工作者会 `release` 它，这样别人不必等租约耗尽。令牌保持不变，所以旧令牌依然无效。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-9' }), expect: 'queued', claims: 'granted', say: { en: 'job-9 is enqueued.', ja: 'job-9 がキューに入ります。', zh: 'job-9 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-9', ttl: 10 }),
      expect: 'fence 1, until t=10',
      claims: 'granted',
      say: { en: 'At t=0 A claims job-9: fence 1, until t=10.', ja: 't=0 に A が job-9 を `claim` します：フェンス 1、t=10 まで。', zh: 't=0 时 A `claim` 了 job-9：令牌 1，租约至 t=10。' },
    },
    {
      do: e(3, 'A', 'release', { job: 'job-9', fence: 1 }),
      expect: 'released, fence 1 stays',
      claims: 'granted',
      say: {
        en: 'At t=3 A releases job-9: the owner is cleared and the lease ends at once, but the fence stays at 1.',
        ja: 't=3 に A が job-9 を `release` します。持ち主は消え、リースはすぐに終わりますが、フェンスは 1 のままです。',
        zh: 't=3 时 A `release` 了 job-9：持有者被清空，租约立即结束，但令牌仍然是 1。',
      },
    },
    {
      do: e(4, 'B', 'claim', { job: 'job-9', ttl: 10 }),
      expect: 'fence 2, until t=14',
      claims: 'granted',
      say: {
        en: 'At t=4 B claims job-9 at once, without waiting for t=10, and gets fence 2, never 1 again.',
        ja: 't=4 に B が t=10 を待たずにすぐ job-9 を `claim` し、フェンス 2 を受け取ります。1 が再び配られることはありません。',
        zh: 't=4 时 B 不必等到 t=10 就立即 `claim` 了 job-9，得到令牌 2，绝不会再发出 1。',
      },
    },
    {
      do: e(5, 'A', 'complete', { job: 'job-9', fence: 1, result: A_RESULT }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=5 A, confused, tries to complete with fence 1: stale fence 1, current 2. A released token never comes back to life. The store without fencing takes A’s result.',
        ja: 't=5、混乱した A がフェンス 1 で `complete` しようとします：古いフェンス 1（現在は 2）。解放したトークンが生き返ることはありません。フェンスのないストアは A の結果を受け取ってしまいます。',
        zh: 't=5 时糊涂的 A 试图用令牌 1 `complete`：过期的令牌 1，当前为 2。释放过的令牌永远不会复活。没有防护令牌的存储却收下了 A 的结果。',
      },
    },
    {
      do: e(7, 'B', 'complete', { job: 'job-9', fence: 2, result: B_RESULT }),
      expect: 'done, result stored',
      claims: 'granted',
      say: { en: 'At t=7 B completes with fence 2: granted.', ja: 't=7 に B がフェンス 2 で `complete` します：許可。', zh: 't=7 时 B 用令牌 2 `complete`：成功。' },
    },
    {
      say: {
        en: 'Releasing hands a job over quickly, and because the fence is never reset, the old holder cannot write any more.',
        ja: '`release` するとジョブをすぐに引き渡せます。フェンスは決してリセットされないので、前の持ち主はもう書き込めません。',
        zh: '`release` 能让任务迅速交接；由于令牌从不重置，之前的持有者再也无法写入。',
      },
    },
  ],
};

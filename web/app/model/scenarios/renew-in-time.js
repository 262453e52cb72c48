// The preset 'renew-in-time' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT } from './entry.js';

export const renewInTime = {
  id: 'renew-in-time',
  title: { en: 'A renews in time', ja: 'A が間に合うように延長する', zh: 'A 及时续租' },
  steps: [
    {
      say: {
        en: 'A renews in time. A lease is not a one-off: a worker that is alive renews it before it ends, like a heartbeat. Press Next.',
        ja: 'A が間に合うように延長する。リースは一度きりではありません。生きているワーカーは、切れる前に心拍のように延長します。「次へ」を押してください。',
        zh: 'A 及时续租。租约不是一次性的：活着的工作者会在租约结束前续租，就像心跳一样。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-7' }), expect: 'queued', claims: 'granted', say: { en: 'job-7 is enqueued.', ja: 'job-7 がキューに入ります。', zh: 'job-7 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-7', ttl: 10 }),
      expect: 'fence 1, until t=10',
      claims: 'granted',
      say: { en: 'At t=0 A claims job-7: fence 1, until t=10.', ja: 't=0 に A が job-7 を `claim` します：フェンス 1、t=10 まで。', zh: 't=0 时 A `claim` 了 job-7：令牌 1，租约至 t=10。' },
    },
    {
      do: e(8, 'A', 'renew', { job: 'job-7', fence: 1, ttl: 10 }),
      expect: 'renewed until t=18',
      claims: 'granted',
      say: {
        en: 'At t=8, before its lease ends, A renews it with its fence 1: the lease now lasts until t=18.',
        ja: 't=8、リースが切れる前に A がフェンス 1 で延長します。リースは t=18 までになりました。',
        zh: 't=8 时，在租约结束前，A 用令牌 1 续租：租约延长到 t=18。',
      },
    },
    {
      do: e(12, 'B', 'claim', { job: 'job-7', ttl: 10 }),
      expect: 'held by A until t=18',
      claims: 'held',
      say: {
        en: 'At t=12 B tries to claim job-7: held by A until t=18. Without the renewal, B would have got it.',
        ja: 't=12 に B が job-7 を `claim` しようとします：A が t=18 まで保持中。延長していなければ B が獲得していました。',
        zh: 't=12 时 B 尝试 `claim` job-7：A 持有租约至 t=18。如果没有续租，B 就拿到了。',
      },
    },
    {
      do: e(15, 'A', 'complete', { job: 'job-7', fence: 1, result: A_RESULT }),
      expect: 'done, result stored',
      claims: 'granted',
      say: {
        en: 'At t=15 A completes with fence 1, which is still current: granted, and the result is A’s.',
        ja: 't=15 に A がまだ有効なフェンス 1 で `complete` します：許可され、結果は A のものです。',
        zh: 't=15 时 A 用仍然有效的令牌 1 `complete`：成功，结果是 A 的。',
      },
    },
    {
      say: {
        en: 'A live worker keeps its lease by renewing in time. But a renewal never revives a lease that has already expired: see “Too late to renew”.',
        ja: '生きているワーカーは、間に合うように延長してリースを保ちます。ただし、すでに切れたリースは延長しても生き返りません。「延長が間に合わない」を見てください。',
        zh: '活着的工作者靠及时续租保住租约。但已经过期的租约，续租也救不回来：请看“续租太晚”。',
      },
    },
  ],
};

// The preset 'too-late' in three languages; scenarios.js says what a step holds.

import { e } from './entry.js';

export const tooLate = {
  id: 'too-late',
  title: { en: 'Too late to renew', ja: '延長が間に合わない', zh: '续租太晚' },
  steps: [
    {
      say: {
        en: 'Too late to renew. Even when nobody else has claimed the job, an expired lease is never revived. Press Next.',
        ja: '延長が間に合わない。他の誰も `claim` していなくても、切れたリースが生き返ることはありません。「次へ」を押してください。',
        zh: '续租太晚。即使没有别人 `claim` 这个任务，过期的租约也不会复活。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-5' }), expect: 'queued', claims: 'granted', say: { en: 'job-5 is enqueued.', ja: 'job-5 がキューに入ります。', zh: 'job-5 入队。' } },
    {
      do: e(0, 'C', 'claim', { job: 'job-5', ttl: 5 }),
      expect: 'fence 1, until t=5',
      claims: 'granted',
      say: { en: 'At t=0 C claims job-5 for 5 seconds: fence 1, until t=5.', ja: 't=0 に C が job-5 を 5 秒間 `claim` します：フェンス 1、t=5 まで。', zh: 't=0 时 C `claim` 了 job-5，租期 5 秒：令牌 1，租约至 t=5。' },
    },
    {
      do: e(7, 'C', 'renew', { job: 'job-5', fence: 1, ttl: 5 }),
      expect: 'lease expired at t=5',
      claims: 'expired',
      say: {
        en: 'At t=7 C tries to renew with fence 1: lease expired at t=5. Nobody else holds the job, yet the store says no: between t=5 and t=7 someone else could have claimed it.',
        ja: 't=7 に C がフェンス 1 で延長しようとします：リースは t=5 で期限切れ。他に誰も持っていなくても、ストアは拒否します。t=5 から t=7 の間に、別の誰かが `claim` できたからです。',
        zh: 't=7 时 C 试图用令牌 1 续租：租约已于 t=5 过期。虽然没人持有这个任务，存储仍然拒绝：在 t=5 到 t=7 之间，别人本可以 `claim` 它。',
      },
    },
    {
      do: e(8, 'C', 'complete', { job: 'job-5', fence: 1, result: "C's late result" }),
      expect: 'lease expired at t=5',
      claims: 'expired',
      say: { en: 'At t=8 C tries to complete with fence 1: refused for the same reason, lease expired at t=5.', ja: 't=8 に C がフェンス 1 で `complete` しようとします：同じ理由で拒否されます（リースは t=5 で期限切れ）。', zh: 't=8 时 C 试图用令牌 1 `complete`：因同样的原因被拒绝，租约已于 t=5 过期。' },
    },
    {
      do: e(9, 'C', 'claim', { job: 'job-5', ttl: 5 }),
      expect: 'fence 2, until t=14',
      claims: 'granted',
      say: {
        en: 'At t=9 C claims job-5 again and gets a new lease, with fence 2. Only a fresh claim gives a fresh lease.',
        ja: 't=9 に C がもう一度 job-5 を `claim` し、フェンス 2 の新しいリースを得ます。新しいリースは新しい `claim` でしか得られません。',
        zh: 't=9 时 C 重新 `claim` job-5，得到令牌 2 的新租约。只有重新 `claim` 才能得到新租约。',
      },
    },
    {
      do: e(10, 'C', 'complete', { job: 'job-5', fence: 2, result: "C's result" }),
      expect: 'done, result stored',
      claims: 'granted',
      say: { en: 'At t=10 C completes with fence 2: granted.', ja: 't=10 に C がフェンス 2 で `complete` します：許可。', zh: 't=10 时 C 用令牌 2 `complete`：成功。' },
    },
    {
      say: {
        en: 'An expired lease stays expired. A worker that lost its lease must claim again, and then it holds a new fence.',
        ja: '切れたリースは切れたままです。リースを失ったワーカーは `claim` し直す必要があり、そのとき新しいフェンスを持ちます。',
        zh: '过期的租约就是过期了。失去租约的工作者必须重新 `claim`，然后持有新的令牌。',
      },
    },
  ],
};

// The preset 'late-completion' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT } from './entry.js';

export const lateCompletion = {
  id: 'late-completion',
  title: { en: 'Incident: a late completion the queue accepted', ja: '事例：キューが受け入れた遅れた完了', zh: '事故：队列接受了迟到的完成' },
  source: {
    en: 'Source: `hatchet#2432`, a completion that arrived after the task’s timeout was accepted.',
    ja: '出典：`hatchet#2432`、タスクのタイムアウト後に届いた完了が受け入れられた。',
    zh: '出处：`hatchet#2432`，任务超时之后才到达的完成被接受了。',
  },
  steps: [
    {
      say: {
        en: 'A late completion. A’s lease runs out; nobody has claimed the job yet when A’s completion arrives. Should the store accept it? Press Next.',
        ja: '遅れた完了。A のリースが切れ、まだ誰もジョブを `claim` していないときに A の完了が届きます。ストアは受け入れるべきでしょうか。「次へ」を押してください。',
        zh: '迟到的完成。A 的租约到期了，还没有人 `claim` 这个任务时，A 的完成到了。存储该接受吗？请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-2432' }), expect: 'queued', claims: 'granted', say: { en: 'job-2432 is enqueued.', ja: 'job-2432 がキューに入ります。', zh: 'job-2432 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-2432', ttl: 10 }),
      expect: 'fence 1, until t=10',
      claims: 'granted',
      say: {
        en: 'At t=0 A claims job-2432 for 10 seconds: fence 1.',
        ja: 't=0 に A が job-2432 を 10 秒間 `claim` します：フェンス 1。',
        zh: 't=0 时 A `claim` 了 job-2432，租期 10 秒：令牌 1。',
      },
    },
    {
      do: e(14, 'A', 'complete', { job: 'job-2432', fence: 1, result: A_RESULT }),
      expect: 'lease expired at t=10',
      claims: 'expired',
      leaseOnly: true,
      say: {
        en: 'At t=14 A’s completion arrives, 4 seconds after its lease ended. leasefence refuses it: lease expired at t=10. The store without fencing accepts it.',
        ja: 't=14、リースが切れて 4 秒後に A の完了が届きます。leasefence は拒否します：リースは t=10 で期限切れ。フェンスのないストアは受け入れます。',
        zh: 't=14 时 A 的完成到了，比租约结束晚了 4 秒。leasefence 拒绝：租约已于 t=10 过期。没有防护令牌的存储接受了。',
      },
    },
    {
      do: e(15, 'B', 'claim', { job: 'job-2432', ttl: 10 }),
      expect: 'fence 2, until t=25',
      claims: 'granted',
      leaseOnly: false,
      say: {
        en: 'At t=15 B claims the job, as any worker may once a lease has ended: leasefence grants fence 2; the store without fencing refuses, since it already called the job done.',
        ja: 't=15 に B がジョブを `claim` します。リースが切れた後なら誰でもできることです。leasefence はフェンス 2 を出し、フェンスのないストアはすでに完了扱いなので拒否します。',
        zh: 't=15 时 B `claim` 了这个任务，租约结束后任何工作者都可以这样做：leasefence 给出令牌 2；没有防护令牌的存储已把任务当作完成，于是拒绝。',
      },
    },
    {
      say: {
        en: 'What the fence did: between t=10 and t=14 anyone could have claimed the job, so the store refused A’s expired lease and handed the job out again with a new fence, instead of trusting a result from a worker it had stopped waiting for.',
        ja: 'フェンスの働き：t=10 から t=14 の間は誰でもジョブを `claim` できたので、ストアは期限切れの A のリースを拒否し、新しいフェンスでジョブを渡し直しました。待つのをやめたワーカーの結果を信用はしません。',
        zh: '防护令牌的作用：在 t=10 到 t=14 之间任何人都可能 `claim` 这个任务，所以存储拒绝了 A 已过期的租约，并用新令牌重新派发任务，而不是相信一个它已不再等待的工作者的结果。',
      },
    },
  ],
};

// The preset 'late-renewals' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT } from './entry.js';

export const lateRenewals = {
  id: 'late-renewals',
  title: { en: 'Incident: a blocked event loop, renewals fire late', ja: '事例：イベントループが詰まり延長が遅れる', zh: '事故：事件循环阻塞，续租迟到' },
  source: {
    en: 'Source: `bull#1416`, lock-renewal timers firing minutes late while the event loop was blocked.',
    ja: '出典：`bull#1416`、イベントループが詰まっている間、ロック延長のタイマーが数分遅れて動いた。',
    zh: '出处：`bull#1416`，事件循环被阻塞时，锁续期的定时器晚了好几分钟才触发。',
  },
  steps: [
    {
      say: {
        en: 'A blocked event loop. A’s handler runs CPU-bound code on the one thread that also fires its renewal timer, so the renewal that was due at t=20 fires only at t=45. Press Next.',
        ja: 'イベントループの詰まり。A の処理は重い計算を続けるコードを、延長タイマーと同じ 1 本のスレッドで動かしています。そのため t=20 に予定されていた延長は t=45 にやっと動きます。「次へ」を押してください。',
        zh: '事件循环阻塞。A 的处理程序在同一个线程上运行计算量很大的代码，而续租定时器也在这个线程上，所以原定 t=20 的续租直到 t=45 才触发。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-1416' }), expect: 'queued', claims: 'granted', say: { en: 'job-1416 is enqueued.', ja: 'job-1416 がキューに入ります。', zh: 'job-1416 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-1416', ttl: 30 }),
      expect: 'fence 1, until t=30',
      claims: 'granted',
      say: {
        en: 'At t=0 A claims job-1416 for 30 seconds: fence 1.',
        ja: 't=0 に A が job-1416 を 30 秒間 `claim` します：フェンス 1。',
        zh: 't=0 时 A `claim` 了 job-1416，租期 30 秒：令牌 1。',
      },
    },
    {
      do: e(35, 'B', 'claim', { job: 'job-1416', ttl: 30 }),
      expect: 'fence 2, until t=65',
      claims: 'granted',
      say: {
        en: 'A’s lease ended at t=30 without a renewal. At t=35 B claims the job: fence 2, until t=65.',
        ja: 'A のリースは延長されないまま t=30 に切れました。t=35 に B がジョブを `claim` します：フェンス 2、t=65 まで。',
        zh: 'A 的租约在 t=30 到期，没有续租。t=35 时 B `claim` 了这个任务：令牌 2，租约至 t=65。',
      },
    },
    {
      do: e(45, 'A', 'renew', { job: 'job-1416', fence: 1, ttl: 30 }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=45 A’s late timer fires: A renews with fence 1. leasefence says stale fence 1, current 2, which tells A it lost the job. The store without fencing extends the lease by job id: A has just stretched B’s lease to t=75, and believes the job is still its own.',
        ja: 't=45 に A の遅れたタイマーが動き、フェンス 1 で延長します。leasefence は「古いフェンス 1（現在は 2）」と答え、A はジョブを失ったと分かります。フェンスのないストアはジョブ `id` でリースを延ばすので、A は B のリースを t=75 まで延ばしたうえ、ジョブはまだ自分のものだと思い込みます。',
        zh: 't=45 时 A 迟到的定时器触发：A 用令牌 1 续租。leasefence 回答“过期的令牌 1，当前为 2”，A 由此知道自己失去了任务。没有防护令牌的存储按任务 `id` 延长租约：A 把 B 的租约延到了 t=75，还以为任务仍归自己。',
      },
    },
    {
      do: e(50, 'A', 'complete', { job: 'job-1416', fence: 1, result: A_RESULT }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=50 A finishes and completes with fence 1: refused by leasefence, stale fence 1, current 2; the store without fencing marks the job done with A’s result while B is still working on it.',
        ja: 't=50 に A が処理を終え、フェンス 1 で `complete` します。leasefence は拒否します：古いフェンス 1（現在は 2）。フェンスのないストアは、B がまだ処理中なのに A の結果でジョブを完了にします。',
        zh: 't=50 时 A 处理完，用令牌 1 `complete`：被 leasefence 拒绝，过期的令牌 1，当前为 2；没有防护令牌的存储却在 B 还在处理时，用 A 的结果把任务标记为完成。',
      },
    },
    {
      say: {
        en: 'What the fence did: A’s late renewal and late completion were both refused with the current fence, so B kept a lease that ends when it should and the job is not done behind B’s back.',
        ja: 'フェンスの働き：A の遅れた延長も遅れた完了も、現在のフェンスとともに拒否されました。B のリースは本来どおりに終わり、B の知らないところでジョブが完了になることもありません。',
        zh: '防护令牌的作用：A 迟到的续租和迟到的完成都因当前令牌而被拒绝，所以 B 的租约按时结束，任务也不会背着 B 被标记完成。',
      },
    },
  ],
};

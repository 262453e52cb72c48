// The preset 'long-job' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT } from './entry.js';

export const longJob = {
  id: 'long-job',
  title: { en: 'Incident: a 6-hour job under a 4-hour lock', ja: '事例：4 時間のロックで 6 時間のジョブ', zh: '事故：4 小时的锁，6 小时的任务' },
  source: {
    en: 'Source: `graphile-worker#169`, a job longer than the fixed 4-hour lock ran twice.',
    ja: '出典：`graphile-worker#169`、固定 4 時間のロックより長いジョブが 2 回実行された。',
    zh: '出处：`graphile-worker#169`，比固定 4 小时锁更长的任务被执行了两次。',
  },
  steps: [
    {
      say: {
        en: 'A 6-hour job under a 4-hour lock. The lock cannot be renewed, and the job takes 6 hours. Times here are in seconds: 4 hours is t=14400. Press Next.',
        ja: '4 時間のロックで 6 時間のジョブ。ロックは延長できず、ジョブには 6 時間かかります。ここでの時間は秒で、4 時間は t=14400 です。「次へ」を押してください。',
        zh: '4 小时的锁，6 小时的任务。锁不能续期，而任务要跑 6 小时。这里的时间以秒计：4 小时是 t=14400。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-169' }), expect: 'queued', claims: 'granted', say: { en: 'job-169 is enqueued.', ja: 'job-169 がキューに入ります。', zh: 'job-169 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-169', ttl: 14400 }),
      expect: 'fence 1, until t=14400',
      claims: 'granted',
      say: {
        en: 'At t=0 A claims job-169 for 4 hours: fence 1.',
        ja: 't=0 に A が job-169 を 4 時間 `claim` します：フェンス 1。',
        zh: 't=0 时 A `claim` 了 job-169，租期 4 小时：令牌 1。',
      },
    },
    {
      do: e(14460, 'B', 'claim', { job: 'job-169', ttl: 14400 }),
      expect: 'fence 2, until t=28860',
      claims: 'granted',
      say: {
        en: 'After 4 hours the lock has run out while A still works. A minute later B claims the job and starts it again: fence 2.',
        ja: '4 時間が過ぎ、A がまだ処理中なのにロックが切れました。1 分後に B がジョブを `claim` し、最初からやり直します：フェンス 2。',
        zh: '4 小时后，A 还在处理，锁却已到期。一分钟后 B `claim` 了这个任务，从头再做：令牌 2。',
      },
    },
    {
      do: e(21600, 'A', 'complete', { job: 'job-169', fence: 1, result: A_RESULT }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At 6 hours A finishes and completes with fence 1. leasefence refuses it: stale fence 1, current 2. The store without fencing accepts it, and the job is done while B is running it a second time.',
        ja: '6 時間後に A が処理を終え、フェンス 1 で `complete` します。leasefence は拒否します：古いフェンス 1（現在は 2）。フェンスのないストアは受け入れ、B が 2 回目を実行している最中にジョブが完了になります。',
        zh: '6 小时后 A 处理完，用令牌 1 `complete`。leasefence 拒绝：过期的令牌 1，当前为 2。没有防护令牌的存储接受了，B 正在第二次执行时，任务就已经完成了。',
      },
    },
    {
      say: {
        en: 'What the fence did: it could not make the job shorter, but A’s completion after its lock ran out was refused, so only the run that holds the current fence can record a result.',
        ja: 'フェンスの働き：ジョブを短くすることはできませんが、ロックが切れた後の A の完了は拒否されました。結果を記録できるのは、現在のフェンスを持つ実行だけです。',
        zh: '防护令牌的作用：它不能让任务变短，但 A 在锁到期之后的完成被拒绝了，所以只有持有当前令牌的那次执行才能记录结果。',
      },
    },
  ],
};

// The preset 'poison-job' in three languages; scenarios.js says what a step holds.

import { e } from './entry.js';

export const poisonJob = {
  id: 'poison-job',
  title: { en: 'Incident: a poison job that kills every worker', ja: '事例：すべてのワーカーを落とす毒ジョブ', zh: '事故：让每个工作者崩溃的毒任务' },
  source: {
    en: 'Source: a common queue failure: a job that crashes each worker that claims it is claimed again and again, unless it is made dead.',
    ja: '出典：よくあるキューの障害。`claim` したワーカーを毎回落とすジョブは、デッドにしない限り何度も `claim` され続ける。',
    zh: '出处：常见的队列故障：一个让每个 `claim` 它的工作者都崩溃的任务，除非被标为死信，否则会被一次又一次地 `claim`。',
  },
  steps: [
    {
      say: {
        en: 'A poison job: its handler crashes on every attempt. A worker that catches the crash reports it with `fail` and a backoff; a worker that dies with it just lets its lease run out. At the third attempt the job is made dead, so it stops killing workers. Press Next.',
        ja: '毒ジョブ：ハンドラーが毎回落ちます。落ちたことに気づいたワーカーはバックオフ付きの `fail` で報告し、一緒に落ちたワーカーはリースが切れるに任せるしかありません。3 回目の試行でジョブをデッドにして、ワーカーを落とし続けないようにします。「次へ」を押してください。',
        zh: '毒任务：它的处理程序每次尝试都会崩溃。捕获到崩溃的工作者用带退避时间的 `fail` 报告；跟着一起崩溃的工作者只能让租约自然到期。第三次尝试时任务被标为死信，不再搞垮工作者。请按“下一步”。',
      },
    },
    { do: e(0, 'store', 'enqueue', { job: 'job-poison' }), expect: 'queued', claims: 'granted', say: { en: 'job-poison is enqueued.', ja: 'job-poison がキューに入ります。', zh: 'job-poison 入队。' } },
    {
      do: e(0, 'A', 'claim', { job: 'job-poison', ttl: 5 }),
      expect: 'fence 1, until t=5',
      claims: 'granted',
      say: { en: 'At t=0 A claims it: fence 1, the first attempt.', ja: 't=0 に A が `claim`：フェンス 1、1 回目の試行です。', zh: 't=0 时 A `claim` 了它：令牌 1，第一次尝试。' },
    },
    {
      do: e(1, 'A', 'fail', { job: 'job-poison', fence: 1, retryAt: 4, error: 'A: handler crashed' }),
      expect: 'failed, retry at t=4',
      claims: 'granted',
      leaseOnly: true,
      say: {
        en: 'At t=1 A’s handler crashes. A catches it and calls `fail` with fence 1 and a retry at t=4: nobody holds the job now, and it waits 3 seconds, the backoff. The store without fencing does the same, by job id.',
        ja: 't=1 に A のハンドラーが落ちます。A はそれを捕まえ、フェンス 1 と t=4 の再試行で `fail` を呼びます。ジョブは誰のものでもなくなり、バックオフの 3 秒間待ちます。フェンスのないストアもジョブ `id` で同じことをします。',
        zh: 't=1 时 A 的处理程序崩溃了。A 捕获到它，用令牌 1 和 t=4 的重试时间调用 `fail`：现在没人持有这个任务，它要等待 3 秒，也就是退避时间。没有防护令牌的存储按任务 `id` 做了同样的事。',
      },
    },
    {
      do: e(2, 'B', 'claim', { job: 'job-poison', ttl: 5 }),
      expect: 'waits until t=4',
      claims: 'scheduled',
      leaseOnly: false,
      say: {
        en: 'At t=2 B tries to claim it: refused, it waits until t=4. The backoff keeps a failing job from being picked up again at once, in both tables.',
        ja: 't=2 に B が `claim` しようとしますが、拒否されます：t=4 まで待機中。バックオフのおかげで、失敗したジョブがすぐにまた取られることはありません。どちらの表でも同じです。',
        zh: 't=2 时 B 尝试 `claim`：被拒绝，要等待至 t=4。退避时间让失败的任务不会马上又被取走，两个表都是如此。',
      },
    },
    {
      do: e(4, 'B', 'claim', { job: 'job-poison', ttl: 5 }),
      expect: 'fence 2, until t=9',
      claims: 'granted',
      say: {
        en: 'At t=4 B claims it: fence 2, the second attempt. This time the crash takes B’s whole process down: no `fail`, nothing.',
        ja: 't=4 に B が `claim`：フェンス 2、2 回目の試行です。今度はクラッシュが B のプロセスごと落とします。`fail` も何もありません。',
        zh: 't=4 时 B `claim` 了它：令牌 2，第二次尝试。这一次崩溃让 B 的整个进程都倒下了：没有 `fail`，什么都没有。',
      },
    },
    {
      at: 9,
      say: {
        en: 't=9: B’s lease runs out. A crash that reports nothing ends as an expiry, and the job can be claimed again.',
        ja: 't=9：B のリースが切れます。何も報告しないクラッシュは期限切れとして終わり、ジョブはまた `claim` できるようになります。',
        zh: 't=9：B 的租约到期了。什么都没报告的崩溃以到期告终，这个任务又可以被 `claim` 了。',
      },
    },
    {
      do: e(10, 'C', 'claim', { job: 'job-poison', ttl: 5 }),
      expect: 'fence 3, until t=15',
      claims: 'granted',
      say: { en: 'At t=10 C claims it: fence 3, the third attempt.', ja: 't=10 に C が `claim`：フェンス 3、3 回目の試行です。', zh: 't=10 时 C `claim` 了它：令牌 3，第三次尝试。' },
    },
    {
      do: e(11, 'B', 'fail', { job: 'job-poison', fence: 2, retryAt: 17, error: 'B: handler crashed' }),
      expect: 'stale fence 2, current 3',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=11 B, restarted, reports its old attempt as failed, with fence 2 and a retry at t=17. leasefence refuses: stale fence 2, current 3, and C’s attempt goes on. The store without fencing takes it by job id: C loses the job in the middle of its attempt, and the job would be handed out again at t=17 while C still runs it.',
        ja: 't=11、再起動した B が、前の試行が失敗したとフェンス 2 と t=17 の再試行で報告します。leasefence は拒否します：古いフェンス 2（現在は 3）。C の試行はそのまま続きます。フェンスのないストアはジョブ `id` だけで受け入れてしまい、C は試行の途中でジョブを失います。C がまだ動かしている間に、t=17 にジョブがまた配られてしまいます。',
        zh: 't=11 时重启后的 B 报告它之前的尝试失败了，带着令牌 2 和 t=17 的重试时间。leasefence 拒绝了：过期的令牌 2，当前为 3，C 的尝试继续进行。没有防护令牌的存储只按任务 `id` 就接受了：C 在尝试途中失去了这个任务，而且在 C 还在运行时，任务会在 t=17 被再次派发。',
      },
    },
    {
      do: e(12, 'C', 'fail', { job: 'job-poison', fence: 3, retryAt: null, error: 'C: handler crashed' }),
      expect: 'failed for good: dead',
      claims: 'granted',
      leaseOnly: true,
      say: {
        en: 'At t=12 C’s handler crashes too. That was attempt 3, and the fence counts the attempts: the most allowed. C calls `fail` with no retry time, and the job is dead: done, with no result, its error kept.',
        ja: 't=12 に C のハンドラーも落ちます。これは 3 回目の試行で、フェンスが試行の回数を数えています。上限です。C は再試行の時刻なしで `fail` を呼び、ジョブはデッドになります：完了扱いで結果はなく、エラーは残ります。',
        zh: 't=12 时 C 的处理程序也崩溃了。这是第三次尝试，令牌记着尝试的次数：已到上限。C 不带重试时间调用 `fail`，任务成为死信：已结束、没有结果，错误被保留。',
      },
    },
    {
      do: e(20, 'A', 'claim', { job: 'job-poison', ttl: 5 }),
      expect: 'job already done',
      claims: 'done',
      leaseOnly: false,
      say: {
        en: 'At t=20 A, restarted, tries to claim it: refused, job already done. A dead job is handed out to nobody, until someone calls `revive` on it.',
        ja: 't=20、再起動した A が `claim` しようとしますが、拒否されます：ジョブは完了済み。デッドのジョブは、誰かが `revive` するまで誰にも配られません。',
        zh: 't=20 时重启后的 A 尝试 `claim`：被拒绝，任务已完成。死信任务不会派发给任何人，直到有人对它调用 `revive`。',
      },
    },
    {
      say: {
        en: 'What the fence did: it counted the attempts, so the third failure made the job dead instead of letting it loop forever, and it refused B’s late failure report, which in the store without fencing took the job from C mid-attempt. The dead state ended it: done with no result, its errors kept, claimed by nobody until `revive`.',
        ja: 'フェンスの働き：試行の回数を数えたので、3 回目の失敗でジョブを永遠に繰り返させずにデッドにでき、B の遅れた失敗報告を拒否しました。フェンスのないストアでは、その報告が試行中の C からジョブを奪いました。デッドの状態がそれを終わらせます：結果なしで完了、エラーは残り、`revive` されるまで誰も `claim` しません。',
        zh: '防护令牌的作用：它记下了尝试次数，所以第三次失败让任务成为死信，而不是无休止地循环；它还拒绝了 B 迟到的失败报告，而在没有防护令牌的存储里，这个报告把任务从正在尝试的 C 手里夺走了。死信状态让这一切结束：没有结果地结束，错误被保留，在 `revive` 之前没人会 `claim` 它。',
      },
    },
  ],
};

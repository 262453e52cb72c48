// The guided story ('stale-worker') in three languages; scenarios.js says what a step holds.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const staleWorker = {
  id: 'stale-worker',
  title: { en: 'The stale worker (guided story)', ja: '止まったワーカー（ガイド付きストーリー）', zh: '卡住的工作者（引导故事）' },
  steps: [
    {
      say: {
        en: 'Welcome! Three workers, A, B and C, share one job queue: a real SQLite database inside your browser. To work on a job, a worker claims it and gets a lease for `ttl` seconds, plus a fence: a number that goes up by one with every claim. The right-hand table is the same queue in a store without fencing, as many queues are. Let’s watch what happens when a worker stalls. Press Next (or the → key).',
        ja: 'ようこそ。3 つのワーカー A・B・C が 1 つのジョブキューを共有しています。このブラウザの中で動く本物の SQLite データベースです。ジョブに取りかかるとき、ワーカーはそれを `claim` して、`ttl` 秒のリースとフェンスを受け取ります。フェンスは `claim` のたびに 1 ずつ増える番号です。右の表は、多くのキューと同じくフェンスのないストアで動かした同じキューです。ワーカーが止まると何が起きるか見てみましょう。「次へ」（または → キー）を押してください。',
        zh: '欢迎！A、B、C 三个工作者共用一个任务队列：一个运行在你浏览器里的真实 SQLite 数据库。工作者要处理任务时先 `claim` 它，得到一个持续 `ttl` 秒的租约和一个防护令牌：每次 `claim` 都加一的数字。右边的表是同一个队列在没有防护令牌的存储里的样子，很多队列都是这样。来看看工作者卡住时会发生什么。请按“下一步”（或 → 键）。',
      },
    },
    {
      do: e(0, 'store', 'enqueue', { job: 'job-42' }),
      expect: 'queued', // the store's answer, in English (checked by the browser tests)
      claims: 'granted',
      say: {
        en: 'A job, job-42, is enqueued, in both tables.',
        ja: 'ジョブ job-42 が両方の表のキューに入ります。',
        zh: '任务 job-42 进入两个表的队列。',
      },
    },
    {
      do: e(0, 'A', 'claim', { job: 'job-42', ttl: 10 }),
      expect: 'fence 1, until t=10',
      claims: 'granted',
      say: {
        en: 'At t=0 worker A claims job-42 for 10 seconds. The store grants it with fence 1: A’s lease lasts until t=10, and A keeps fence 1 to show with its writes.',
        ja: 't=0 にワーカー A が job-42 を 10 秒間 `claim` します。ストアはフェンス 1 で許可しました。A のリースは t=10 までで、A は書き込みに使うフェンス 1 を覚えておきます。',
        zh: 't=0 时工作者 A `claim` 了 job-42，租期 10 秒。存储批准并给出防护令牌 1：A 的租约到 t=10 为止，A 记下令牌 1，之后写入时要出示它。',
      },
    },
    {
      do: e(5, 'B', 'claim', { job: 'job-42', ttl: 10 }),
      expect: 'held by A until t=10',
      claims: 'held',
      say: {
        en: 'Then A stalls: a long garbage-collection pause, and A does not know it. At t=5 worker B tries to claim job-42: refused, held by A until t=10. While a lease is live, it protects its holder, in both stores.',
        ja: 'ところが A は止まってしまいます。長い GC の一時停止で、A 自身は気づいていません。t=5 にワーカー B が job-42 を `claim` しようとしますが、拒否されます：A が t=10 まで保持中。リースが有効な間は、どちらのストアでも持ち主が守られます。',
        zh: '接着 A 卡住了：一次很长的垃圾回收停顿，而 A 自己并不知道。t=5 时工作者 B 尝试 `claim` job-42：被拒绝，A 持有租约至 t=10。租约有效期间，两个存储都保护着持有者。',
      },
    },
    {
      at: 10,
      say: {
        en: 't=10: A’s lease ends. A is still frozen. It cannot notice its own pause, so it still believes the job is its own.',
        ja: 't=10：A のリースが切れました。A はまだ止まったままです。自分の停止には気づけないので、ジョブはまだ自分のものだと思っています。',
        zh: 't=10：A 的租约到期了。A 仍然卡着。它察觉不到自己的停顿，所以还以为这个任务归它。',
      },
    },
    {
      do: e(12, 'B', 'claim', { job: 'job-42', ttl: 10 }),
      expect: 'fence 2, until t=22',
      claims: 'granted',
      say: {
        en: 'At t=12 B claims job-42 again. The lease has expired, so B gets it, with fence 2. Fences only go up: from now on, A’s fence 1 is stale. The lease-only table has no fence: it only knows that B holds the lease.',
        ja: 't=12 に B がもう一度 job-42 を `claim` します。リースは切れているので B が獲得し、フェンスは 2 です。フェンスは増える一方なので、この時点で A のフェンス 1 は古くなりました。リースだけの表にはフェンスがなく、B がリースを持っていることしか分かりません。',
        zh: 't=12 时 B 再次 `claim` job-42。租约已过期，所以 B 拿到了，令牌为 2。令牌只增不减：从现在起，A 的令牌 1 就过期了。只有租约的表没有令牌，它只知道 B 持有租约。',
      },
    },
    {
      do: e(14, 'A', 'complete', { job: 'job-42', fence: 1, result: A_RESULT }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=14 A wakes up and, as if nothing happened, completes job-42 with its own result and fence 1, while B is still working on it. The job is not done yet, so only the fence can tell that A is late: leasefence checks owner, fence, done and the lease in the one `UPDATE` that writes, matches no row, and refuses A: stale fence 1, current 2. The store without fencing checks the job id only: it stores A’s stale result and marks the job done while B still holds the lease. Compare the two tables, and open “The check” to see both statements.',
        ja: 't=14、A が目を覚まし、何事もなかったかのように自分の結果とフェンス 1 で job-42 を `complete` します。B はまだ処理中です。ジョブはまだ完了していないので、A が遅れていると分かるのはフェンスだけです。leasefence は書き込む 1 つの `UPDATE` の中で持ち主・フェンス・完了・リースを確かめ、一致する行がないので A を拒否します：古いフェンス 1（現在は 2）。フェンスのないストアはジョブ `id` しか見ないので、B がリースを持っているのに A の古い結果を保存し、ジョブを完了にします。2 つの表を比べ、「チェック」で両方の文を見てください。',
        zh: 't=14 时 A 醒了过来，若无其事地用自己的结果和令牌 1 去 `complete` job-42，而 B 还在处理它。任务还没完成，所以只有令牌能看出 A 迟到了：leasefence 在执行写入的那一条 `UPDATE` 里同时检查持有者、令牌、是否完成和租约，没有匹配的行，于是拒绝 A：过期的令牌 1，当前为 2。没有防护令牌的存储只检查任务 `id`：B 还持有租约，它却保存了 A 过期的结果，并把任务标记为完成。比较一下两个表，再打开“检查”看看这两条语句。',
      },
    },
    {
      do: e(16, 'B', 'complete', { job: 'job-42', fence: 2, result: B_RESULT }),
      expect: 'done, result stored',
      claims: 'granted',
      leaseOnly: true,
      say: {
        en: 'At t=16 B completes job-42 with its result and fence 2: granted, and in leasefence the stored result is B’s. The store without fencing accepts it too, over a job it had already marked done: for two seconds its answer was A’s stale result, and anyone who read it then acted on it. B overwrites it now; the job was completed twice.',
        ja: 't=16 に B が自分の結果とフェンス 2 で job-42 を `complete` します。許可され、leasefence に保存された結果は B のものです。フェンスのないストアも、すでに完了にしたジョブの上に受け入れます。2 秒の間、そこにあった答えは A の古い結果で、その間に読んだ人はそれを使ってしまいました。いま B の結果がそれを上書きし、ジョブは 2 回完了したことになります。',
        zh: 't=16 时 B 用自己的结果和令牌 2 `complete` job-42：成功，leasefence 里保存的结果是 B 的。没有防护令牌的存储也接受了，尽管它早已把这个任务标记为完成：有两秒钟它给出的答案是 A 过期的结果，这期间读到它的人都照着用了。现在 B 的结果覆盖了它，任务被完成了两次。',
      },
    },
    {
      do: e(18, 'B', 'complete', { job: 'job-42', fence: 2, result: B_RESULT }),
      expect: 'job already done',
      claims: 'done',
      leaseOnly: true,
      say: {
        en: 'At t=18 B’s completion arrives a second time: its client did not get the first answer and sent it again. B’s fence 2 is the current one, so the fence cannot catch this; the `done` check can: job already done. That is the second line of defence, for a job that is already finished. It could not have stopped A at t=14: then the job was not done yet. The store without fencing writes the job once more.',
        ja: 't=18 に B の完了がもう一度届きます。B のクライアントが最初の答えを受け取れず、送り直したのです。B のフェンス 2 は現在のものなので、フェンスではこれを止められません。止めるのは `done` の確認です：ジョブは完了済み。これは終わったジョブのための第 2 の防御線です。t=14 の A は止められませんでした。そのときジョブはまだ完了していなかったからです。フェンスのないストアはもう一度ジョブに書き込みます。',
        zh: 't=18 时 B 的完成又到了一次：它的客户端没收到第一次的回答，于是重发了。B 的令牌 2 是当前令牌，所以令牌挡不住这次写入；挡住它的是 `done` 检查：任务已完成。这是针对已经结束的任务的第二道防线。它挡不住 t=14 的 A：那时任务还没完成。没有防护令牌的存储又写了一次这个任务。',
      },
    },
    {
      say: {
        en: 'No lease length could have saved A’s late write: A cannot see its own pause. At t=14 the job was not done, so a check of `done` alone would have let A’s stale result in, as the lease-only table shows; only the store’s check of the fence on every write kept the stale worker out. Now try it yourself: drag the time slider back to t=12 and act differently (the timeline forks), or pick an incident from the list.',
        ja: 'どんなリース時間でも A の遅れた書き込みは防げません。A は自分の停止を見られないからです。t=14 にはジョブはまだ完了していなかったので、`done` の確認だけなら、リースだけの表のとおり A の古い結果が入っていました。古いワーカーを締め出したのは、ストアが書き込みのたびに行うフェンスの確認だけです。今度は自分で試してみましょう。時間スライダーを t=12 に戻して別の操作をする（タイムラインが分岐します）か、一覧から実際の事例を選んでください。',
        zh: '无论租约设多长，都救不了 A 这次迟到的写入：A 看不见自己的停顿。t=14 时任务还没完成，所以只检查 `done` 的话，A 过期的结果就会像只有租约的表那样被写进去；把卡住的工作者挡在门外的，只有存储在每次写入时对令牌的检查。现在自己试试吧：把时间滑块拖回 t=12 换一种操作（时间线会分叉），或者从列表里选一个真实事故。',
      },
    },
  ],
};

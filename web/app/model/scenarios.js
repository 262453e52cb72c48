// The guided story and the preset scenarios: data, narrated in English, Japanese and Chinese.
// A scenario is a list of steps; a step says something and may perform one entry (or only move
// the clock, with `at`). Pure data and pure functions.
//
// Narration may mark code with `backticks` (operation names, columns); the story view draws those
// as <code>. Presets from real incidents carry a one-line `source`; their last step says what the
// fence did. Every entry also runs on the lease-only store (a completion checked by job id alone),
// whose table is drawn next to leasefence's, so each step's `expect` is leasefence's answer and
// `leaseOnly` (when given) whether the lease-only store accepted the write.

const e = (t, worker, op, args) => ({ t, worker, op, args });
const A_RESULT = "A's result";
const B_RESULT = "B's result";

export const SCENARIOS = Object.freeze([
  {
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
  },
  {
    id: 'gc-pause',
    title: { en: 'Incident: a GC pause longer than the lease', ja: '事例：リースより長い GC 停止', zh: '事故：比租约更长的 GC 停顿' },
    source: {
      en: 'Source: Martin Kleppmann, *How to do distributed locking* (2016), the token 33/34 example.',
      ja: '出典：Martin Kleppmann の *How to do distributed locking*（2016）、トークン 33/34 の例。',
      zh: '出处：Martin Kleppmann 的 *How to do distributed locking*（2016），令牌 33/34 的例子。',
    },
    steps: [
      {
        say: {
          en: 'A GC pause longer than the lease. In Kleppmann’s example client 1 holds token 33, pauses for garbage collection, its lease expires, client 2 gets token 34; then client 1 wakes and writes with 33, and the storage refuses it because it has seen 34. Here the storage is the job queue, the tokens are fences 1 and 2, and A wakes before B has finished: the job is not done yet. Press Next.',
          ja: 'リースより長い GC 停止。Kleppmann の例では、クライアント 1 がトークン 33 を持ったまま GC で止まり、リースが切れ、クライアント 2 がトークン 34 を得ます。その後クライアント 1 が目を覚まして 33 で書き込み、ストレージは 34 を見ているので拒否します。ここではストレージはジョブキュー、トークンはフェンス 1 と 2 で、A は B が終える前に目を覚まします。ジョブはまだ完了していません。「次へ」を押してください。',
          zh: '比租约更长的 GC 停顿。在 Kleppmann 的例子里，客户端 1 持有令牌 33 时因垃圾回收停顿，租约到期，客户端 2 拿到令牌 34；然后客户端 1 醒来，用 33 写入，存储因为见过 34 而拒绝了它。这里的存储是任务队列，令牌是 1 和 2，而 A 在 B 完成之前就醒了：任务还没完成。请按“下一步”。',
        },
      },
      { do: e(0, 'store', 'enqueue', { job: 'job-33' }), expect: 'queued', claims: 'granted', say: { en: 'job-33 is enqueued.', ja: 'job-33 がキューに入ります。', zh: 'job-33 入队。' } },
      {
        do: e(0, 'A', 'claim', { job: 'job-33', ttl: 10 }),
        expect: 'fence 1, until t=10',
        claims: 'granted',
        say: {
          en: 'At t=0 A claims job-33 for 10 seconds: fence 1. Right after, A’s garbage collector stops the world for 15 seconds.',
          ja: 't=0 に A が job-33 を 10 秒間 `claim` します：フェンス 1。その直後、A の GC が 15 秒間すべてを止めます。',
          zh: 't=0 时 A `claim` 了 job-33，租期 10 秒：令牌 1。紧接着，A 的垃圾回收让一切停了 15 秒。',
        },
      },
      {
        do: e(11, 'B', 'claim', { job: 'job-33', ttl: 10 }),
        expect: 'fence 2, until t=21',
        claims: 'granted',
        say: {
          en: 'At t=11, after A’s lease ended, B claims job-33: fence 2, and starts working on it.',
          ja: 't=11、A のリースが切れた後に B が job-33 を `claim` します：フェンス 2。B は処理を始めます。',
          zh: 't=11，A 的租约结束后，B `claim` 了 job-33：令牌 2，并开始处理。',
        },
      },
      {
        do: e(15, 'A', 'complete', { job: 'job-33', fence: 1, result: A_RESULT }),
        expect: 'stale fence 1, current 2',
        claims: 'stale_fence',
        leaseOnly: true,
        say: {
          en: 'At t=15 A’s pause ends and it writes its result with fence 1, while B is still working on the job. The job is not done, so only the fence shows that A is late: leasefence refuses it, stale fence 1, current 2. The store without fencing stores A’s stale result and marks the job done under B.',
          ja: 't=15 に A の停止が終わり、フェンス 1 で結果を書き込みます。B はまだジョブを処理中です。ジョブは完了していないので、A が遅れていると分かるのはフェンスだけです。leasefence は拒否します：古いフェンス 1（現在は 2）。フェンスのないストアは A の古い結果を保存し、B の処理中にジョブを完了にします。',
          zh: 't=15 时 A 的停顿结束，它用令牌 1 写入结果，而 B 还在处理这个任务。任务还没完成，所以只有令牌能看出 A 迟到了：leasefence 拒绝了，过期的令牌 1，当前为 2。没有防护令牌的存储保存了 A 过期的结果，并在 B 处理期间把任务标记为完成。',
        },
      },
      {
        do: e(17, 'B', 'complete', { job: 'job-33', fence: 2, result: B_RESULT }),
        expect: 'done, result stored',
        claims: 'granted',
        leaseOnly: true,
        say: {
          en: 'At t=17 B writes its result with fence 2: granted. The store without fencing takes it too, over a job it had already called done with A’s result.',
          ja: 't=17 に B がフェンス 2 で結果を書き込みます：許可。フェンスのないストアも、A の結果ですでに完了としたジョブの上に受け入れます。',
          zh: 't=17 时 B 用令牌 2 写入结果：成功。没有防护令牌的存储也接受了，尽管它早已用 A 的结果把任务标记为完成。',
        },
      },
      {
        say: {
          en: 'What the fence did: A’s write carried fence 1 after fence 2 had been handed out, before anyone had finished, so a check of `done` could not have refused it; the fence did, and only B’s result was ever stored. Without the check, the paused client’s result was the job’s answer until B’s replaced it.',
          ja: 'フェンスの働き：A の書き込みは、フェンス 2 が配られた後、まだ誰も終えていないうちのフェンス 1 だったので、`done` の確認では拒否できませんでした。拒否したのはフェンスで、保存されたのは B の結果だけです。確認がなければ、B の結果に置き換わるまで、止まっていたクライアントの結果がジョブの答えでした。',
          zh: '防护令牌的作用：令牌 2 发出之后、还没有人完成之前，A 的写入还带着令牌 1，所以 `done` 检查拒绝不了它；拒绝它的是令牌，保存下来的只有 B 的结果。没有这个检查，在 B 的结果替换它之前，停顿过的客户端的结果一直是任务的答案。',
        },
      },
    ],
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
  {
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
  },
]);

export const STORY_ID = 'stale-worker';

export function findScenario(id) {
  return SCENARIOS.find((s) => s.id === id) ?? null;
}

/** The timeline of a scenario, every entry in the future (the playhead at the start). */
export function scenarioDoc(scenario) {
  const entries = scenario.steps.filter((s) => s.do).map((s) => ({ ...s.do, args: { ...s.do.args } }));
  return { entries, k: 0, now: 0 };
}

/** Where the playhead stands after step `s` of a scenario: {k, now}. */
export function stepPlayhead(scenario, s) {
  let k = 0;
  let now = 0;
  for (let i = 0; i <= s && i < scenario.steps.length; i++) {
    const step = scenario.steps[i];
    if (step.do) {
      k += 1;
      now = step.do.t;
    } else if (typeof step.at === 'number') {
      now = step.at;
    }
  }
  return { k, now };
}

/** The step whose playhead is the latest one not after {k, now}. */
export function stepAt(scenario, { k, now }) {
  let found = 0;
  for (let s = 0; s < scenario.steps.length; s++) {
    const p = stepPlayhead(scenario, s);
    if (p.k < k || (p.k === k && p.now <= now)) found = s;
  }
  return found;
}

/**
 * The story position `{id, step}` that `position` names on `doc`, or null: only on that scenario's
 * own timeline (a saved page, a shared link), with a step it has.
 */
export function storyOn(doc, position) {
  if (!position || typeof position !== 'object' || typeof position.id !== 'string' || !Number.isInteger(position.step)) return null;
  const scenario = findScenario(position.id);
  if (!scenario || position.step < 0 || position.step >= scenario.steps.length) return null;
  if (JSON.stringify(scenarioDoc(scenario).entries) !== JSON.stringify(doc.entries)) return null;
  return { id: scenario.id, step: position.step };
}

/**
 * Whether a step points the reader at the two tables and the check (far below the story): the
 * last step, and every step that compares the two stores (`leaseOnly`).
 */
export function pointsAtTables(scenario, s) {
  const step = scenario.steps[s];
  return !!step && (s === scenario.steps.length - 1 || step.leaseOnly !== undefined);
}

/** The narration of a step in a language (English when missing). */
export function narration(scenario, s, lang) {
  const say = scenario.steps[s]?.say ?? {};
  return say[lang] ?? say.en ?? '';
}

export function scenarioTitle(scenario, lang) {
  return scenario.title[lang] ?? scenario.title.en;
}

/** The one-line source of a preset from a real incident, or null. */
export function scenarioSource(scenario, lang) {
  return scenario.source ? scenario.source[lang] ?? scenario.source.en : null;
}

// The preset 'gc-pause' in three languages; scenarios.js says what a step holds.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const gcPause = {
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
};

// The preset 'priorities' in three languages; scenarios.js says what a step holds. The workers call
// `claim_next`, so the store picks each job (docs/contract.md section 11): an urgent job overtakes
// an older one, and the fence still refuses a worker that stalled past its lease.

import { e, A_RESULT, B_RESULT } from './entry.js';

export const priorities = {
  id: 'priorities',
  title: { en: 'Priorities: an urgent job overtakes, the fence still holds', ja: '優先度：急ぎのジョブが追い越し、フェンスは変わらず守る', zh: '优先级：紧急任务插队，防护令牌照样把关' },
  steps: [
    {
      say: {
        en: 'Priorities. Every job has a `priority` (0 unless given), and `claim_next` lets the store pick the job: the highest priority first, and among equals the one that has waited longest. Here an urgent job overtakes older ones; then a worker stalls, and the fence refuses its late result all the same. Press Next.',
        ja: '優先度。どのジョブにも `priority` があり（指定しなければ 0）、`claim_next` ではストアがジョブを選びます：優先度の高いものから、同じなら長く待っているものから。ここでは急ぎのジョブが先に待っていたジョブを追い越します。その後ワーカーが止まり、その遅れた結果はやはりフェンスが拒否します。「次へ」を押してください。',
        zh: '优先级。每个任务都有一个 `priority`（不指定就是 0），`claim_next` 让存储挑选任务：优先级最高的先，同级时等待最久的先。这里一个紧急任务插到了先来的任务前面；随后一个工作者停顿，它迟到的结果照样被防护令牌拒绝。请按“下一步”。',
      },
    },
    {
      do: e(0, 'store', 'enqueue', { job: 'job-low-1', priority: 0 }),
      expect: 'queued',
      claims: 'granted',
      say: {
        en: 'At t=0 job-low-1 is enqueued with priority 0. The jobs table shows each job’s `queue` and `priority`.',
        ja: 't=0 に job-low-1 が優先度 0 でキューに入ります。ジョブの表には各ジョブの `queue` と `priority` が出ます。',
        zh: 't=0 时 job-low-1 以优先级 0 入队。任务表显示每个任务的 `queue` 和 `priority`。',
      },
    },
    {
      do: e(0, 'store', 'enqueue', { job: 'job-low-2', priority: 0 }),
      expect: 'queued',
      claims: 'granted',
      say: { en: 'Then job-low-2, also with priority 0.', ja: '続いて job-low-2 も優先度 0 で入ります。', zh: '接着 job-low-2 入队，优先级也是 0。' },
    },
    {
      do: e(1, 'A', 'claim_next', { ttl: 10 }),
      expect: 'fence 1, until t=11',
      claims: 'granted',
      say: {
        en: 'At t=1 A calls `claim_next` for 10 seconds. Both jobs have priority 0, so the store picks the one enqueued first: job-low-1, fence 1, until t=11.',
        ja: 't=1 に A が 10 秒間の `claim_next` を呼びます。どちらも優先度 0 なので、ストアは先に入ったほうを選びます：job-low-1、フェンス 1、t=11 まで。',
        zh: 't=1 时 A 调用 `claim_next`，租期 10 秒。两个任务的优先级都是 0，所以存储挑先入队的那个：job-low-1，令牌 1，租约至 t=11。',
      },
    },
    {
      do: e(3, 'store', 'enqueue', { job: 'job-urgent', priority: 10 }),
      expect: 'queued',
      claims: 'granted',
      say: {
        en: 'At t=3 an urgent job arrives: job-urgent, with priority 10.',
        ja: 't=3 に急ぎのジョブが届きます：job-urgent、優先度 10。',
        zh: 't=3 时来了一个紧急任务：job-urgent，优先级 10。',
      },
    },
    {
      do: e(4, 'B', 'claim_next', { ttl: 10 }),
      expect: 'fence 1, until t=14',
      claims: 'granted',
      say: {
        en: 'At t=4 B calls `claim_next`. job-low-2 has waited since t=0, but job-urgent has the higher priority and overtakes it: B gets job-urgent, fence 1, until t=14.',
        ja: 't=4 に B が `claim_next` を呼びます。job-low-2 は t=0 から待っていますが、優先度の高い job-urgent が追い越します：B が得るのは job-urgent、フェンス 1、t=14 まで。',
        zh: 't=4 时 B 调用 `claim_next`。job-low-2 从 t=0 起就在等，但 job-urgent 优先级更高，插到了它前面：B 拿到 job-urgent，令牌 1，租约至 t=14。',
      },
    },
    {
      do: e(6, 'B', 'complete', { job: 'job-urgent', fence: 1, result: B_RESULT }),
      expect: 'done, result stored',
      claims: 'granted',
      say: {
        en: 'At t=6 B completes job-urgent with fence 1.',
        ja: 't=6 に B がフェンス 1 で job-urgent を完了します。',
        zh: 't=6 时 B 用令牌 1 完成了 job-urgent。',
      },
    },
    {
      do: e(7, 'B', 'claim_next', { ttl: 10 }),
      expect: 'fence 1, until t=17',
      claims: 'granted',
      say: {
        en: 'At t=7 B calls `claim_next` again and gets job-low-2, the only job nobody holds: fence 1, until t=17.',
        ja: 't=7 に B がもう一度 `claim_next` を呼び、誰も持っていない唯一のジョブ job-low-2 を得ます：フェンス 1、t=17 まで。',
        zh: 't=7 时 B 再次调用 `claim_next`，拿到了唯一没人持有的任务 job-low-2：令牌 1，租约至 t=17。',
      },
    },
    {
      at: 11,
      say: {
        en: 'Meanwhile A has stalled (a long pause of its process) and never renewed: at t=11 its lease on job-low-1 ends, and the job may be claimed again.',
        ja: 'その間に A は止まっていて（プロセスの長い停止）、一度も延長していません：t=11 に job-low-1 のリースが切れ、ジョブはまた取得できるようになります。',
        zh: '与此同时 A 停顿了（进程长时间暂停），一直没有续租：t=11 时它在 job-low-1 上的租约结束，这个任务又可以被获取了。',
      },
    },
    {
      do: e(12, 'C', 'claim_next', { ttl: 10 }),
      expect: 'fence 2, until t=22',
      claims: 'granted',
      say: {
        en: 'At t=12 C calls `claim_next` and gets job-low-1: fence 2, until t=22. The fence went up by one, so A’s fence 1 is now stale.',
        ja: 't=12 に C が `claim_next` を呼び、job-low-1 を得ます：フェンス 2、t=22 まで。フェンスが 1 つ上がったので、A のフェンス 1 はもう古くなりました。',
        zh: 't=12 时 C 调用 `claim_next`，拿到了 job-low-1：令牌 2，租约至 t=22。令牌加了一，所以 A 的令牌 1 已经过期。',
      },
    },
    {
      do: e(14, 'A', 'complete', { job: 'job-low-1', fence: 1, result: A_RESULT }),
      expect: 'stale fence 1, current 2',
      claims: 'stale_fence',
      leaseOnly: true,
      say: {
        en: 'At t=14 A wakes and completes job-low-1 with fence 1. leasefence refuses it: stale fence 1, current 2. The store without fencing accepts A’s result and marks the job done while C is still working on it.',
        ja: 't=14 に A が目を覚まし、フェンス 1 で job-low-1 を完了しようとします。leasefence は拒否します：古いフェンス 1（現在は 2）。フェンスのないストアは A の結果を受け入れ、C がまだ処理している間にジョブを完了にします。',
        zh: 't=14 时 A 醒来，用令牌 1 完成 job-low-1。leasefence 拒绝了：过期的令牌 1，当前为 2。没有防护令牌的存储接受了 A 的结果，在 C 还在处理时就把任务标记为完成。',
      },
    },
    {
      say: {
        en: 'What the fence did: priorities decide which job a worker gets next, not who may write it. The urgent job went first; when A’s lease ran out, its job went to C with a new fence, so A’s late result was refused instead of overwriting C’s work.',
        ja: 'フェンスの働き：優先度が決めるのはワーカーが次にどのジョブを得るかで、誰が書き込めるかではありません。急ぎのジョブが先に処理され、A のリースが切れるとそのジョブは新しいフェンスとともに C に渡りました。だから A の遅れた結果は C の仕事を上書きせず、拒否されました。',
        zh: '防护令牌的作用：优先级决定工作者下一个拿到哪个任务，而不决定谁可以写入。紧急任务先被处理；A 的租约结束后，它的任务带着新令牌交给了 C，所以 A 迟到的结果被拒绝，没有覆盖 C 的工作。',
      },
    },
  ],
};

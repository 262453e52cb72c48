// The guided story and the preset scenarios: data, narrated in English, Japanese and Chinese.
// A scenario is a list of steps; a step says something and may perform one entry (or only move
// the clock, with `at`). Pure data and pure functions.

const e = (t, worker, op, args) => ({ t, worker, op, args });

export const SCENARIOS = Object.freeze([
  {
    id: 'stale-worker',
    title: { en: 'The stale worker (guided story)', ja: '止まったワーカー（ガイド付きストーリー）', zh: '过期的 worker（引导故事）' },
    steps: [
      {
        say: {
          en: 'Welcome! Three workers, A, B and C, share one job queue: a real SQLite database inside your browser. To work on a job, a worker claims it and gets a lease for ttl seconds, plus a fence: a number that goes up by one with every claim. Let’s watch what happens when a worker stalls. Press Next (or the → key).',
          ja: 'ようこそ。3 つのワーカー A・B・C が 1 つのジョブキューを共有しています。このブラウザの中で動く本物の SQLite データベースです。ジョブに取りかかるとき、ワーカーはそれを claim して、ttl 秒のリースとフェンスを受け取ります。フェンスは claim のたびに 1 ずつ増える番号です。ワーカーが止まると何が起きるか見てみましょう。「Next」（または → キー）を押してください。',
          zh: '欢迎！A、B、C 三个 worker 共用一个任务队列：一个运行在你浏览器里的真实 SQLite 数据库。worker 要处理任务时先 claim 它，得到一个持续 ttl 秒的租约，以及一个 fence：每次 claim 都加一的编号。来看看当一个 worker 卡住时会发生什么。请按 Next（或 → 键）。',
        },
      },
      {
        do: e(0, 'store', 'enqueue', { job: 'job-42' }),
        expect: 'queued', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'A job arrives: job-42 is enqueued. Nobody holds it yet, and its fence is 0.',
          ja: 'ジョブが届きました。job-42 がキューに入ります。まだ誰も持っておらず、フェンスは 0 です。',
          zh: '来了一个任务：job-42 入队。现在还没人持有它，它的 fence 是 0。',
        },
      },
      {
        do: e(0, 'A', 'claim', { job: 'job-42', ttl: 10 }),
        expect: 'fence 1, until t=10', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=0 worker A claims job-42 for 10 seconds. The store grants it with fence 1: A’s lease runs until t=10, and A remembers fence 1 for its writes.',
          ja: 't=0 にワーカー A が job-42 を 10 秒間 claim します。ストアはフェンス 1 で許可しました。A のリースは t=10 までで、A は書き込みに使うフェンス 1 を覚えておきます。',
          zh: 't=0 时 worker A claim 了 job-42，租期 10 秒。store 批准并给出 fence 1：A 的租约到 t=10 为止，A 记下 fence 1，之后写入时要出示它。',
        },
      },
      {
        do: e(5, 'B', 'claim', { job: 'job-42', ttl: 10 }),
        expect: 'held by A until t=10', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'Then A stalls: a long garbage-collection pause, and A does not know it. At t=5 worker B tries to claim job-42: refused, held by A until t=10. While a lease is live, it protects its holder.',
          ja: 'ところが A は止まってしまいます。長い GC の一時停止で、A 自身は気づいていません。t=5 にワーカー B が job-42 を claim しようとしますが、拒否されます：A が t=10 まで保持中。リースが有効な間は、持ち主が守られます。',
          zh: '接着 A 卡住了：一次很长的垃圾回收停顿，而 A 自己并不知道。t=5 时 worker B 尝试 claim job-42：被拒绝，A 持有租约至 t=10。租约有效期间，它保护着持有者。',
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
        expect: 'fence 2, until t=22', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=12 B claims job-42 again. The lease has expired, so B gets it, with fence 2. Fences only go up: from now on, A’s fence 1 is stale.',
          ja: 't=12 に B がもう一度 job-42 を claim します。リースは切れているので B が獲得し、フェンスは 2 です。フェンスは増える一方なので、この時点で A のフェンス 1 は古くなりました。',
          zh: 't=12 时 B 再次 claim job-42。租约已过期，所以 B 拿到了，fence 为 2。fence 只增不减：从现在起，A 的 fence 1 就过期了。',
        },
      },
      {
        do: e(14, 'A', 'complete', { job: 'job-42', fence: 1, result: "A's result" }),
        expect: 'stale fence 1, current 2', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=14 A wakes up and, as if nothing happened, completes job-42 with its result and fence 1. The store checks the fence inside the write: stale fence 1, current 2. A’s write is refused, and its result is not stored.',
          ja: 't=14、A が目を覚まし、何事もなかったかのように自分の結果とフェンス 1 で job-42 を complete します。ストアは書き込みの中でフェンスを確かめます：古いフェンス 1（現在は 2）。A の書き込みは拒否され、その結果は保存されません。',
          zh: 't=14 时 A 醒了过来，若无其事地用自己的结果和 fence 1 去 complete job-42。store 在写入时检查 fence：过期的 fence 1，当前为 2。A 的写入被拒绝，它的结果没有被保存。',
        },
      },
      {
        do: e(16, 'B', 'complete', { job: 'job-42', fence: 2, result: "B's result" }),
        expect: 'done, result stored', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=16 B completes job-42 with fence 2: granted. The job is done, and the stored result is B’s, as the jobs table shows.',
          ja: 't=16 に B がフェンス 2 で job-42 を complete します：許可。ジョブは完了し、ジョブ表のとおり保存された結果は B のものです。',
          zh: 't=16 时 B 用 fence 2 complete job-42：成功。任务完成，任务表里保存的结果是 B 的。',
        },
      },
      {
        say: {
          en: 'No lease length could have saved A’s late write: A cannot see its own pause. The fence, checked by the store on every write, is what keeps the stale worker out. Now try it yourself: drag the time slider back to t=12 and act differently (the timeline forks), or pick another scenario.',
          ja: 'どんなリース時間でも A の遅れた書き込みは防げません。A は自分の停止を見られないからです。古いワーカーを締め出すのは、ストアが書き込みのたびに確かめるフェンスです。今度は自分で試してみましょう。時間スライダーを t=12 に戻して別の操作をする（タイムラインが分岐します）か、別のシナリオを選んでください。',
          zh: '无论租约设多长，都救不了 A 这次迟到的写入：A 看不见自己的停顿。把过期 worker 挡在门外的，是 store 在每次写入时检查的 fence。现在自己试试吧：把时间滑块拖回 t=12 换一种操作（时间线会分叉），或者选择另一个场景。',
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
          ja: 'A が間に合うように延長する。リースは一度きりではありません。生きているワーカーは、切れる前に心拍のように延長します。「Next」を押してください。',
          zh: 'A 及时续租。租约不是一次性的：活着的 worker 会在租约结束前续租，就像心跳一样。请按 Next。',
        },
      },
      {
        do: e(0, 'store', 'enqueue', { job: 'job-7' }),
        expect: 'queued', // the store's answer, in English (checked by the browser tests)
        say: { en: 'job-7 is enqueued.', ja: 'job-7 がキューに入ります。', zh: 'job-7 入队。' },
      },
      {
        do: e(0, 'A', 'claim', { job: 'job-7', ttl: 10 }),
        expect: 'fence 1, until t=10', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=0 A claims job-7: fence 1, until t=10.',
          ja: 't=0 に A が job-7 を claim します：フェンス 1、t=10 まで。',
          zh: 't=0 时 A claim 了 job-7：fence 1，租约至 t=10。',
        },
      },
      {
        do: e(8, 'A', 'renew', { job: 'job-7', fence: 1, ttl: 10 }),
        expect: 'renewed until t=18', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=8, before its lease ends, A renews it with its fence 1: the lease now lasts until t=18.',
          ja: 't=8、リースが切れる前に A がフェンス 1 で延長します。リースは t=18 までになりました。',
          zh: 't=8 时，在租约结束前，A 用 fence 1 续租：租约延长到 t=18。',
        },
      },
      {
        do: e(12, 'B', 'claim', { job: 'job-7', ttl: 10 }),
        expect: 'held by A until t=18', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=12 B tries to claim job-7: held by A until t=18. Without the renewal, B would have got it.',
          ja: 't=12 に B が job-7 を claim しようとします：A が t=18 まで保持中。延長していなければ B が獲得していました。',
          zh: 't=12 时 B 尝试 claim job-7：A 持有租约至 t=18。如果没有续租，B 就拿到了。',
        },
      },
      {
        do: e(15, 'A', 'complete', { job: 'job-7', fence: 1, result: "A's result" }),
        expect: 'done, result stored', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=15 A completes with fence 1, which is still current: granted, and the result is A’s.',
          ja: 't=15 に A がまだ有効なフェンス 1 で complete します：許可され、結果は A のものです。',
          zh: 't=15 时 A 用仍然有效的 fence 1 complete：成功，结果是 A 的。',
        },
      },
      {
        say: {
          en: 'A live worker keeps its lease by renewing in time. But a renewal never revives a lease that has already expired: see “Too late to renew”.',
          ja: '生きているワーカーは、間に合うように延長してリースを保ちます。ただし、すでに切れたリースは延長しても生き返りません。「延長が間に合わない」を見てください。',
          zh: '活着的 worker 靠及时续租保住租约。但已经过期的租约，续租也救不回来：请看“续租太晚”。',
        },
      },
    ],
  },
  {
    id: 'release-reclaim',
    title: { en: 'Release, then reclaim', ja: '解放してから再 claim', zh: '释放后重新 claim' },
    steps: [
      {
        say: {
          en: 'Release, then reclaim. A worker that gives a job up releases it, so others need not wait for the lease to run out. The fence is kept, so the old token stays invalid. Press Next.',
          ja: '解放してから再 claim。ジョブをあきらめたワーカーはそれを release するので、他のワーカーはリースが切れるのを待たずに済みます。フェンスはそのまま残るので、古いトークンは無効のままです。「Next」を押してください。',
          zh: '释放后重新 claim。放弃任务的 worker 会 release 它，这样别人不必等租约耗尽。fence 保持不变，所以旧令牌依然无效。请按 Next。',
        },
      },
      {
        do: e(0, 'store', 'enqueue', { job: 'job-9' }),
        expect: 'queued', // the store's answer, in English (checked by the browser tests)
        say: { en: 'job-9 is enqueued.', ja: 'job-9 がキューに入ります。', zh: 'job-9 入队。' },
      },
      {
        do: e(0, 'A', 'claim', { job: 'job-9', ttl: 10 }),
        expect: 'fence 1, until t=10', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=0 A claims job-9: fence 1, until t=10.',
          ja: 't=0 に A が job-9 を claim します：フェンス 1、t=10 まで。',
          zh: 't=0 时 A claim 了 job-9：fence 1，租约至 t=10。',
        },
      },
      {
        do: e(3, 'A', 'release', { job: 'job-9', fence: 1 }),
        expect: 'released, fence 1 stays', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=3 A releases job-9: the owner is cleared and the lease ends at once, but the fence stays at 1.',
          ja: 't=3 に A が job-9 を release します。持ち主は消え、リースはすぐに終わりますが、フェンスは 1 のままです。',
          zh: 't=3 时 A release 了 job-9：持有者被清空，租约立即结束，但 fence 仍然是 1。',
        },
      },
      {
        do: e(4, 'B', 'claim', { job: 'job-9', ttl: 10 }),
        expect: 'fence 2, until t=14', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=4 B claims job-9 at once, without waiting for t=10, and gets fence 2, never 1 again.',
          ja: 't=4 に B が t=10 を待たずにすぐ job-9 を claim し、フェンス 2 を受け取ります。1 が再び配られることはありません。',
          zh: 't=4 时 B 不必等到 t=10 就立即 claim 了 job-9，得到 fence 2，绝不会再发出 1。',
        },
      },
      {
        do: e(5, 'A', 'complete', { job: 'job-9', fence: 1, result: "A's result" }),
        expect: 'stale fence 1, current 2', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=5 A, confused, tries to complete with fence 1: stale fence 1, current 2. A released token never comes back to life.',
          ja: 't=5、混乱した A がフェンス 1 で complete しようとします：古いフェンス 1（現在は 2）。解放したトークンが生き返ることはありません。',
          zh: 't=5 时糊涂的 A 试图用 fence 1 complete：过期的 fence 1，当前为 2。释放过的令牌永远不会复活。',
        },
      },
      {
        do: e(7, 'B', 'complete', { job: 'job-9', fence: 2, result: "B's result" }),
        expect: 'done, result stored', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=7 B completes with fence 2: granted.',
          ja: 't=7 に B がフェンス 2 で complete します：許可。',
          zh: 't=7 时 B 用 fence 2 complete：成功。',
        },
      },
      {
        say: {
          en: 'Releasing hands a job over quickly, and because the fence is never reset, the old holder cannot write any more.',
          ja: 'release するとジョブをすぐに引き渡せます。フェンスは決してリセットされないので、前の持ち主はもう書き込めません。',
          zh: 'release 能让任务迅速交接；由于 fence 从不重置，之前的持有者再也无法写入。',
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
          ja: '延長が間に合わない。他の誰も claim していなくても、切れたリースが生き返ることはありません。「Next」を押してください。',
          zh: '续租太晚。即使没有别人 claim 这个任务，过期的租约也不会复活。请按 Next。',
        },
      },
      {
        do: e(0, 'store', 'enqueue', { job: 'job-5' }),
        expect: 'queued', // the store's answer, in English (checked by the browser tests)
        say: { en: 'job-5 is enqueued.', ja: 'job-5 がキューに入ります。', zh: 'job-5 入队。' },
      },
      {
        do: e(0, 'C', 'claim', { job: 'job-5', ttl: 5 }),
        expect: 'fence 1, until t=5', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=0 C claims job-5 for 5 seconds: fence 1, until t=5.',
          ja: 't=0 に C が job-5 を 5 秒間 claim します：フェンス 1、t=5 まで。',
          zh: 't=0 时 C claim 了 job-5，租期 5 秒：fence 1，租约至 t=5。',
        },
      },
      {
        do: e(7, 'C', 'renew', { job: 'job-5', fence: 1, ttl: 5 }),
        expect: 'lease expired at t=5', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=7 C tries to renew with fence 1: lease expired at t=5. Nobody else holds the job, yet the store says no: between t=5 and t=7 someone else could have claimed it.',
          ja: 't=7 に C がフェンス 1 で延長しようとします：リースは t=5 で期限切れ。他に誰も持っていなくても、ストアは拒否します。t=5 から t=7 の間に、別の誰かが claim できたからです。',
          zh: 't=7 时 C 试图用 fence 1 续租：租约已于 t=5 过期。虽然没人持有这个任务，store 仍然拒绝：在 t=5 到 t=7 之间，别人本可以 claim 它。',
        },
      },
      {
        do: e(8, 'C', 'complete', { job: 'job-5', fence: 1, result: "C's late result" }),
        expect: 'lease expired at t=5', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=8 C tries to complete with fence 1: refused for the same reason.',
          ja: 't=8 に C がフェンス 1 で complete しようとします：同じ理由で拒否されます。',
          zh: 't=8 时 C 试图用 fence 1 complete：因同样的原因被拒绝。',
        },
      },
      {
        do: e(9, 'C', 'claim', { job: 'job-5', ttl: 5 }),
        expect: 'fence 2, until t=14', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=9 C claims job-5 again and gets a new lease, with fence 2. Only a fresh claim gives a fresh lease.',
          ja: 't=9 に C がもう一度 job-5 を claim し、フェンス 2 の新しいリースを得ます。新しいリースは新しい claim でしか得られません。',
          zh: 't=9 时 C 重新 claim job-5，得到 fence 2 的新租约。只有重新 claim 才能得到新租约。',
        },
      },
      {
        do: e(10, 'C', 'complete', { job: 'job-5', fence: 2, result: "C's result" }),
        expect: 'done, result stored', // the store's answer, in English (checked by the browser tests)
        say: {
          en: 'At t=10 C completes with fence 2: granted.',
          ja: 't=10 に C がフェンス 2 で complete します：許可。',
          zh: 't=10 时 C 用 fence 2 complete：成功。',
        },
      },
      {
        say: {
          en: 'An expired lease stays expired. A worker that lost its lease must claim again, and then it holds a new fence.',
          ja: '切れたリースは切れたままです。リースを失ったワーカーは claim し直す必要があり、そのとき新しいフェンスを持ちます。',
          zh: '过期的租约就是过期了。失去租约的 worker 必须重新 claim，然后持有新的 fence。',
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

/** The narration of a step in a language (English when missing). */
export function narration(scenario, s, lang) {
  const say = scenario.steps[s]?.say ?? {};
  return say[lang] ?? say.en ?? '';
}

export function scenarioTitle(scenario, lang) {
  return scenario.title[lang] ?? scenario.title.en;
}

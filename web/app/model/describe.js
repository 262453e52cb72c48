// Outcomes in words, in English, Japanese or Chinese. Pure functions that return plain strings;
// the views put them on the page as text, never as markup.
import { granted, jobOf } from './derive.js';

import { t } from '../../common/i18n.js';

export { LANGUAGES, isLanguage } from '../../common/i18n.js';

/** Numbers as people write them: 10, 12.5, never 12.499999999. */
export function fmt(n) {
  if (typeof n !== 'number' || !Number.isFinite(n)) return String(n);
  return Number.isInteger(n) ? String(n) : String(Number(n.toFixed(3)));
}

const PHRASES = {
  en: {
    claimGranted: (f, u) => `fence ${f}, until t=${u}`,
    renewGranted: (u) => `renewed until t=${u}`,
    completeGranted: () => 'done, result stored',
    releaseGranted: (f) => `released, fence ${f} stays`,
    failRetry: (u) => `failed, retry at t=${u}`,
    failDead: () => 'failed for good: dead',
    reviveGranted: () => 'revived, queued again',
    enqueueTrue: () => 'queued',
    nothingToClaim: () => 'nothing to claim',
    priority: (n) => `priority ${n}`,
    queue: (q) => `queue “${q}”`,
    enqueueFalse: () => 'already queued',
    not_found: () => 'no such job',
    done: () => 'job already done',
    held: (owner, u) => `held by ${owner} until t=${u}`,
    stale_fence: (mine, current) => `stale fence ${mine}, current ${current}`,
    not_owner: (f) => `not the owner of fence ${f}`,
    expired: (u) => `lease expired at t=${u}`,
    scheduled: (u) => `waits until t=${u}`,
    not_dead: () => 'not dead',
    refused: () => 'refused',
    error: (code, message) => `error (${code}): ${message}`,
    pending: () => 'not played yet',
    granted: 'granted',
    refusedWord: 'refused',
    noResult: 'no result',
    fence: (f) => `fence ${f}`,
    ttl: (t) => `ttl ${t}`,
    retryAt: (u) => `retry t=${u}`,
    noRetry: 'no retry',
  },
  ja: {
    claimGranted: (f, u) => `フェンス ${f}、t=${u} まで`,
    renewGranted: (u) => `t=${u} まで延長`,
    completeGranted: () => '完了、結果を保存',
    releaseGranted: (f) => `解放（フェンス ${f} はそのまま）`,
    failRetry: (u) => `失敗、t=${u} に再試行`,
    failDead: () => '失敗、デッドに',
    reviveGranted: () => '復活、キューに戻った',
    enqueueTrue: () => 'キューに追加',
    nothingToClaim: () => '取得できるジョブなし',
    priority: (n) => `優先度 ${n}`,
    queue: (q) => `キュー “${q}”`,
    enqueueFalse: () => '登録済み',
    not_found: () => 'そのジョブはない',
    done: () => 'ジョブは完了済み',
    held: (owner, u) => `${owner} が t=${u} まで保持中`,
    stale_fence: (mine, current) => `古いフェンス ${mine}（現在は ${current}）`,
    not_owner: (f) => `フェンス ${f} の持ち主ではない`,
    expired: (u) => `リースは t=${u} で期限切れ`,
    scheduled: (u) => `t=${u} まで待機中`,
    not_dead: () => 'デッドではない',
    refused: () => '拒否',
    error: (code, message) => `エラー（${code}）：${message}`,
    pending: () => '未実行',
    granted: '許可',
    refusedWord: '拒否',
    noResult: '結果なし',
    fence: (f) => `フェンス ${f}`,
    ttl: (t) => `ttl ${t}`,
    retryAt: (u) => `t=${u} に再試行`,
    noRetry: '再試行なし',
  },
  zh: {
    claimGranted: (f, u) => `令牌 ${f}，租约至 t=${u}`,
    renewGranted: (u) => `续租至 t=${u}`,
    completeGranted: () => '完成，结果已保存',
    releaseGranted: (f) => `已释放，令牌 ${f} 不变`,
    failRetry: (u) => `失败，t=${u} 重试`,
    failDead: () => '失败，成为死信',
    reviveGranted: () => '已复活，重新入队',
    enqueueTrue: () => '已入队',
    nothingToClaim: () => '没有可领取的任务',
    priority: (n) => `优先级 ${n}`,
    queue: (q) => `队列 “${q}”`,
    enqueueFalse: () => '已在队列中',
    not_found: () => '没有这个任务',
    done: () => '任务已完成',
    held: (owner, u) => `${owner} 持有租约至 t=${u}`,
    stale_fence: (mine, current) => `过期的令牌 ${mine}，当前为 ${current}`,
    not_owner: (f) => `不是令牌 ${f} 的持有者`,
    expired: (u) => `租约已于 t=${u} 过期`,
    scheduled: (u) => `等待至 t=${u}`,
    not_dead: () => '不是死信',
    refused: () => '被拒绝',
    error: (code, message) => `错误（${code}）：${message}`,
    pending: () => '尚未执行',
    granted: '成功',
    refusedWord: '被拒绝',
    noResult: '无结果',
    fence: (f) => `令牌 ${f}`,
    ttl: (t) => `ttl ${t}`,
    retryAt: (u) => `t=${u} 重试`,
    noRetry: '不重试',
  },
};

function phrases(lang) {
  return PHRASES[lang] ?? PHRASES.en;
}

/** A reason object from the store, in words. `entry` supplies the caller's own fence. */
export function reasonText(reason, entry, lang = 'en') {
  const p = phrases(lang);
  switch (reason?.code) {
    case 'not_found': return p.not_found();
    case 'done': return p.done();
    case 'held': return p.held(reason.owner ?? '?', fmt(reason.until));
    case 'stale_fence': return p.stale_fence(fmt(entry.args.fence), fmt(reason.fence));
    case 'not_owner': return p.not_owner(fmt(entry.args.fence));
    case 'expired': return p.expired(fmt(reason.until));
    case 'scheduled': return p.scheduled(fmt(reason.until));
    case 'not_dead': return p.not_dead();
    default: return p.refused();
  }
}

/**
 * The outcome of one entry: {kind, icon, text}. kind is 'granted', 'refused', 'error' or
 * 'pending'; the icon repeats it without colour (✓ ✗ ! …).
 */
export function outcomeText(entry, outcome, lang = 'en') {
  const p = phrases(lang);
  if (!outcome) return { kind: 'pending', icon: '…', text: p.pending() };
  if (outcome.error) {
    return { kind: 'error', icon: '!', text: p.error(String(outcome.error.code), String(outcome.error.message)) };
  }
  if (entry.op === 'claim_next' && outcome.value === null) {
    return { kind: 'refused', icon: '–', text: p.nothingToClaim() };
  }
  if (entry.op === 'enqueue') {
    return outcome.value === true
      ? { kind: 'granted', icon: '✓', text: p.enqueueTrue() }
      : { kind: 'refused', icon: '–', text: p.enqueueFalse() };
  }
  if (granted(entry, outcome)) {
    const a = entry.args;
    const text = {
      claim: () => p.claimGranted(fmt(outcome.value), fmt(entry.t + a.ttl)),
      claim_next: () => p.claimGranted(fmt(outcome.value), fmt(entry.t + a.ttl)),
      renew: () => p.renewGranted(fmt(entry.t + a.ttl)),
      complete: () => p.completeGranted(),
      release: () => p.releaseGranted(fmt(a.fence)),
      fail: () => (a.retryAt === null ? p.failDead() : p.failRetry(fmt(a.retryAt))),
      revive: () => p.reviveGranted(),
    }[entry.op]();
    return { kind: 'granted', icon: '✓', text };
  }
  return { kind: 'refused', icon: '✗', text: reasonText(outcome.reason, entry, lang) };
}

/** The arguments of an entry in a few words: "ttl 10", "fence 1 · “A's result”", "priority 5". */
export function argsText(entry, lang = 'en') {
  const p = phrases(lang);
  const a = entry.args;
  switch (entry.op) {
    case 'enqueue': return [a.queue === undefined ? null : p.queue(a.queue), a.priority === undefined ? null : p.priority(fmt(a.priority))]
      .filter(Boolean).join(' · ');
    case 'claim': case 'claim_next': return p.ttl(fmt(a.ttl));
    case 'renew': return `${p.fence(fmt(a.fence))} · ${p.ttl(fmt(a.ttl))}`;
    case 'complete': return `${p.fence(fmt(a.fence))} · ${a.result === null ? p.noResult : `“${a.result}”`}`;
    case 'release': return p.fence(fmt(a.fence));
    case 'fail': return [p.fence(fmt(a.fence)), a.retryAt === null ? p.noRetry : p.retryAt(fmt(a.retryAt)),
      ...(a.error === null ? [] : [`“${a.error}”`])].join(' · ');
    default: return '';
  }
}

/** An operation's name in a language: the word on the button that makes it. */
export function opName(op, lang = 'en') {
  return t(lang, `op.${op}`);
}

/** One line for the status bar and screen readers. */
export function statusLine(entry, outcome, lang = 'en') {
  const o = outcomeText(entry, outcome, lang);
  const who = entry.worker === 'store' ? t(lang, 'lane.store') : entry.worker;
  const args = argsText(entry, lang);
  const job = jobOf(entry, outcome);
  return `t=${fmt(entry.t)} · ${who}: ${opName(entry.op, lang)}${job === null ? '' : ` ${job}`}${args ? ` (${args})` : ''} → ${o.icon} ${o.text}`;
}

const CHIPS = {
  en: {
    claim: (f, w) => `fence ${f} → ${w}`, complete: (w) => `done, result of ${w}`, release: (w) => `released by ${w}`,
    fail: (w, u) => (u === null ? `dead, failed by ${w}` : `waits until t=${u}, failed by ${w}`), revive: () => 'revived',
  },
  ja: {
    claim: (f, w) => `フェンス ${f} → ${w}`, complete: (w) => `完了、${w} の結果`, release: (w) => `${w} が解放`,
    fail: (w, u) => (u === null ? `${w} の失敗でデッド` : `${w} の失敗、t=${u} まで待機`), revive: () => '復活',
  },
  zh: {
    claim: (f, w) => `令牌 ${f} → ${w}`, complete: (w) => `完成，${w} 的结果`, release: (w) => `${w} 已释放`,
    fail: (w, u) => (u === null ? `${w} 失败，成为死信` : `${w} 失败，等待至 t=${u}`), revive: () => '已复活',
  },
};

/**
 * What the store recorded for a granted claim, complete, release, fail or revive:
 * "job-42: fence 2 → B", "job-9: dead, failed by C".
 */
export function storeChipText(entry, outcome, lang = 'en') {
  const c = CHIPS[lang] ?? CHIPS.en;
  const what = entry.op === 'claim' || entry.op === 'claim_next' ? c.claim(fmt(outcome.value), entry.worker)
    : entry.op === 'fail' ? c.fail(entry.worker, entry.args.retryAt === null ? null : fmt(entry.args.retryAt))
      : c[entry.op](entry.worker);
  return `${jobOf(entry, outcome)}: ${what}`;
}

// The storage line under the timeline: what the browser answered to persist() and how much of the
// origin's quota is used (both come from Rust over web-sys: crate/src/wasm/browser_host.rs).
import { t } from '../../common/i18n.js';

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB'];

/** 1234567 -> '1.2 MB' (powers of 1000, as browsers' storage settings show them). */
export function formatBytes(bytes) {
  if (typeof bytes !== 'number' || !Number.isFinite(bytes) || bytes < 0) return 'unknown';
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < UNITS.length - 1) {
    value /= 1000;
    unit += 1;
  }
  const digits = unit === 0 || value >= 10 ? 0 : 1;
  return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/**
 * `asked`: persist()'s answer (true/false) or `{error}` when it could not be asked; `estimate`:
 * `{usage, quota, persisted}` from the store's worker, or `{error}`.
 */
export function storageLine({ asked, estimate }, lang = 'en') {
  let persistence;
  if (estimate?.persisted === true || asked === true) persistence = t(lang, 'storage.persisted');
  else if (asked === false) persistence = t(lang, 'storage.notPersisted');
  else persistence = t(lang, 'storage.persistFailed', asked?.error ?? '?');
  if (!estimate || estimate.error) return t(lang, 'storage.unknown', persistence, estimate?.error ?? '?');
  return t(lang, 'storage.line', persistence, formatBytes(estimate.usage), formatBytes(estimate.quota));
}

// How the dashboard shows values it does not control (job ids, owners, payloads, results, errors)
// and spans of time: pure functions, no DOM.

/**
 * Characters that change how text around them is drawn, or draw nothing: bidirectional
 * overrides and isolates, zero-width characters, other format characters, and controls. Shown
 * as visible escapes, so that one id cannot pose as another (`\u{202E}` reverses what follows).
 */
const INVISIBLE = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/gu;

/**
 * `text` with every invisible or direction-changing character written as `\u{XXXX}`;
 * `keepLines` leaves line breaks and tabs as they are (payloads, results, errors).
 */
export function visible(text, { keepLines = false } = {}) {
  return String(text).replace(INVISIBLE, (c) =>
    keepLines && (c === '\n' || c === '\t' || c === '\r')
      ? c
      : `\\u{${c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}}`);
}

/**
 * The first `max` characters of `text` (whole code points) and how many more there are:
 * `{head, more}`, `more` 0 when nothing was cut.
 */
export function clip(text, max) {
  const s = String(text);
  if (s.length <= max) return { head: s, more: 0 };
  const head = Array.from(s.slice(0, max + 1)).slice(0, max).join('');
  return { head, more: s.length - head.length };
}

/**
 * A span of `seconds` in words, as a person reads one: `850 ms`, `4.2 s`, `52 s`,
 * `19 min 52 s`, `2 h 3 min`. `unit(name, n)` spells one unit in the page's language
 * (`ms`, `s`, `min`, `h`).
 */
export function duration(seconds, unit) {
  const s = Math.max(0, Number(seconds) || 0);
  if (s < 1) return unit('ms', Math.round(s * 1000));
  if (s < 10) return unit('s', (Math.floor(s * 10) / 10).toFixed(1));
  if (s < 60) return unit('s', Math.floor(s));
  const whole = Math.floor(s);
  if (whole < 3600) {
    const [m, rest] = [Math.floor(whole / 60), whole % 60];
    return rest === 0 ? unit('min', m) : `${unit('min', m)} ${unit('s', rest)}`;
  }
  const [hours, m] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60)];
  return m === 0 ? unit('h', hours) : `${unit('h', hours)} ${unit('min', m)}`;
}

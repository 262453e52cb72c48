// Timelines in a URL: JSON, UTF-8, base64url (RFC 4648 section 5, no padding). Pure functions.
import { LIMITS, docToJson, parseDocText } from './timeline.js';

export const HASH_KEY = 'timeline';

function bytesToBase64url(bytes) {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function base64urlToBytes(text) {
  const base64 = text.replaceAll('-', '+').replaceAll('_', '/');
  const binary = atob(base64 + '='.repeat((4 - (base64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

/** The URL hash (with '#') that replays `doc`. */
export function docToHash(doc) {
  const json = JSON.stringify(docToJson(doc));
  return `#${HASH_KEY}=${bytesToBase64url(new TextEncoder().encode(json))}`;
}

/**
 * Reads a URL hash. Returns null when it carries no timeline, else {ok: true, doc} or
 * {ok: false, error}. The payload is size-checked before it is decoded, decoded as strict UTF-8,
 * parsed as JSON and validated; nothing in it is ever run or rendered as markup.
 */
export function hashToDoc(hash) {
  if (typeof hash !== 'string') return null;
  const prefix = `#${HASH_KEY}=`;
  if (!hash.startsWith(prefix)) return null;
  const payload = hash.slice(prefix.length);
  const maxChars = Math.ceil((LIMITS.text * 4) / 3) + 4;
  if (payload.length > maxChars) {
    return { ok: false, error: `Invalid shared link: the timeline is larger than ${LIMITS.text} characters.` };
  }
  if (!/^[A-Za-z0-9_-]*$/.test(payload) || payload.length % 4 === 1) {
    return { ok: false, error: 'Invalid shared link: the timeline is not base64url text.' };
  }
  let text;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(base64urlToBytes(payload));
  } catch {
    return { ok: false, error: 'Invalid shared link: the timeline is not UTF-8 text.' };
  }
  const parsed = parseDocText(text);
  return parsed.ok ? parsed : { ok: false, error: parsed.error.replace(/^Invalid timeline/, 'Invalid shared link') };
}

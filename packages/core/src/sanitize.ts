import { scrubSecrets } from './secrets.js';

/**
 * The sanitise stage: every text that leaves a server passes here. Control characters, ANSI
 * escapes, bidi controls, stray Unicode tags and zero-width spaces are removed, and known secret
 * formats are scrubbed (the scrubber the audit trail shares). The guard issue extends it
 * (entity-decoding second pass, size budgets, untrusted-content framing) behind the same functions.
 */

/** What was removed, for the audit record. */
export type SanitizeFlag = 'ansi' | 'control' | 'bidi' | 'tag' | 'zero_width' | 'secret';

/* eslint-disable no-control-regex -- these patterns exist to match control characters */
// CSI, OSC and two-character escape sequences.
const ANSI =
  /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)|\u001b[@-Z\\-_]/g;
// C0 except tab, newline, carriage return; DEL; C1.
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/g;
/* eslint-enable no-control-regex */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
// Zero-width space, word joiner, BOM. ZWJ/ZWNJ stay: emoji sequences and Indic/Persian text need them.
const ZERO_WIDTH = /[\u200b\u2060\ufeff]/g;
// Tag characters are legitimate only inside an emoji tag sequence (subdivision flags).
const TAG_SEQUENCE_OR_TAG = /\u{1f3f4}[\u{e0020}-\u{e007e}]+\u{e007f}|[\u{e0000}-\u{e007f}]/gu;

/** The result of sanitising one string. */
export interface Sanitized {
  text: string;
  flags: ReadonlySet<SanitizeFlag>;
}

/** Sanitises one string, reporting what it removed. */
export function sanitizeText(input: string, flags: Set<SanitizeFlag> = new Set()): Sanitized {
  const scrubbed = scrubSecrets(input);
  let text = scrubbed.text;
  if (scrubbed.kinds.length > 0) flags.add('secret');
  // Fast path: printable ASCII plus tab/newline needs no more work.
  // eslint-disable-next-line no-control-regex
  if (!/[^\u0009\u000a\u000d\u0020-\u007e]/.test(text)) return { text, flags };
  const strip = (re: RegExp, flag: SanitizeFlag): void => {
    const next = text.replace(re, '');
    if (next !== text) {
      flags.add(flag);
      text = next;
    }
  };
  strip(ANSI, 'ansi');
  strip(CONTROL, 'control');
  strip(BIDI, 'bidi');
  strip(ZERO_WIDTH, 'zero_width');
  const tagged = text.replace(TAG_SEQUENCE_OR_TAG, (m) => (m.length > 2 ? m : ''));
  if (tagged !== text) {
    flags.add('tag');
    text = tagged;
  }
  return { text, flags };
}

/** Base64 payloads (image/audio `data`, resource `blob`) are binary: left as they are. */
function isBinaryField(parent: Record<string, unknown>, key: string): boolean {
  return key === 'blob' || (key === 'data' && (parent.type === 'image' || parent.type === 'audio'));
}

/** Sanitises every string inside a JSON-like value (structured content, messages). */
export function sanitizeDeep<T>(value: T, flags: Set<SanitizeFlag>): T {
  if (typeof value === 'string') return sanitizeText(value, flags).text as T;
  if (Array.isArray(value)) return value.map((v: unknown) => sanitizeDeep(v, flags)) as T;
  if (value !== null && typeof value === 'object') {
    const parent = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(parent))
      out[k] = isBinaryField(parent, k) ? v : sanitizeDeep(v, flags);
    return out as T;
  }
  return value;
}

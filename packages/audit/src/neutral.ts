/**
 * What the CLI prints is inert, whatever a log holds. A tampered log — or a genuine one that
 * recorded what a caller sent — may carry terminal escapes (ESC, the 8-bit CSI U+009B),
 * carriage returns and backspaces that overwrite a line, bidi controls that reorder it, and line
 * separators. Printed raw, a log could paint "intact" over its own DAMAGED line.
 */

/**
 * C0 and C1 controls, DEL, the bidi controls and marks, and the Unicode line and paragraph
 * separators (U+0085 is among the C1 controls).
 */
/* eslint-disable no-control-regex -- matching controls is the point */
const UNSAFE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

/** {@link UNSAFE} less the C0 controls, which JSON text holds only as its own whitespace. */
const BEYOND_C0 = /[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Any value as text: strings as they are, anything else as JSON. */
export const asText = (value: unknown): string =>
  typeof value === 'string' ? value : value === undefined ? '' : (JSON.stringify(value) ?? '');

/**
 * `value` as text with every {@link UNSAFE} character removed: how a writer keeps what a caller
 * chose (a client name, a URI) out of a record's reach into a reader's terminal.
 */
export function withoutUnsafe(value: unknown): string {
  return asText(value).replace(UNSAFE, '');
}

const hex = (c: string): string => c.charCodeAt(0).toString(16).padStart(4, '0');

/** One value for a terminal: every unsafe character shown as a visible `\u{…}` escape. */
export function forTerminal(value: unknown): string {
  return asText(value).replace(UNSAFE, (c) => `\\u{${c.charCodeAt(0).toString(16)}}`);
}

/**
 * JSON text for a terminal: `JSON.stringify` escapes C0 controls but writes C1 controls, bidi
 * controls and U+2028/U+2029 raw; they only occur inside strings, so `\uXXXX` keeps it JSON.
 */
export function jsonForTerminal(text: string): string {
  return text.replace(BEYOND_C0, (c) => `\\u${hex(c)}`);
}

/**
 * The audit line as written: canonical JSON with U+2028, U+2029 and U+0085 escaped, so a reader
 * that splits lines on them (JavaScript's line terminators, Python's `str.splitlines`, Node's
 * readline) still sees one record per line. The hash covers the canonical text (RFC 8785, which
 * writes them raw); parsing the line gives the same value, so verifiers are unaffected.
 */
export function lineSafe(json: string): string {
  return json.replace(/[\u0085\u2028\u2029]/g, (c) => `\\u${hex(c)}`);
}

import { createHash } from 'node:crypto';

/**
 * Canonical JSON: object keys sorted by UTF-16 code units, no whitespace, `undefined` members
 * dropped, scalars as `JSON.stringify` writes them. For the values audit records hold (strings,
 * finite numbers, booleans, null, arrays, plain objects) this is the JSON Canonicalization
 * Scheme of RFC 8785, so any language can recompute a hash.
 */
export function canonicalJson(value: unknown): string {
  // Written for speed: this runs for every audit record.
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let out = '[';
        for (let i = 0; i < value.length; i++)
          out += `${i ? ',' : ''}${canonicalJson(value[i] ?? null)}`;
        return `${out}]`;
      }
      const record = value as Record<string, unknown>;
      let out = '{';
      let first = true;
      for (const key of Object.keys(record).sort()) {
        const member = record[key];
        if (member === undefined) continue;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(member)}`;
        first = false;
      }
      return `${out}}`;
    }
    default:
      return 'null';
  }
}

/** `sha256:` + hex SHA-256 of a string. */
export function sha256(text: string): string {
  return `sha256:${createHash('sha256').update(text).digest('hex')}`;
}

/** SHA-256 of the canonical JSON of a value. */
export function sha256Canonical(value: unknown): string {
  return sha256(canonicalJson(value));
}

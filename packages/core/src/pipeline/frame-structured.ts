/**
 * Framing third-party strings inside structured content. A tool's output schema marks each
 * string a third party wrote with {@link untrusted} (`x-untrusted` in its JSON Schema); the core
 * wraps every such value of a structured result in an untrusted-data frame, as the text view
 * frames the same text — so in either view every vendor-written string is inside a frame
 * (docs/security.md). A string the schema does not mark is the server's own, or of a closed set
 * it checked against the vendor's documented format (an id, a Slack channel name).
 */
import { randomBytes } from 'node:crypto';
import * as z from 'zod';

/** The JSON Schema keyword a marked string carries. */
export const UNTRUSTED_KEYWORD = 'x-untrusted';

/** Marks a string of an output schema as written by a third party (framed in structured content). */
export function untrusted<T extends z.ZodType>(schema: T): T {
  return schema.meta({ [UNTRUSTED_KEYWORD]: true });
}

type Schema = Record<string, unknown>;

/** Whether a JSON Schema marks any string (so a result needs the walk). */
export function marksUntrusted(schema: unknown): boolean {
  return JSON.stringify(schema ?? null).includes(`"${UNTRUSTED_KEYWORD}":true`);
}

/** The output schema a result is walked with, when it marks something. */
export function framingSchema(output: z.ZodType | undefined): Schema | undefined {
  if (output === undefined) return undefined;
  const schema = z.toJSONSchema(output, { io: 'output', unrepresentable: 'any' }) as Schema;
  return marksUntrusted(schema) ? schema : undefined;
}

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value === 'number'
    ? Number.isInteger(value)
      ? 'integer'
      : 'number'
    : typeof value;
}

function fits(schema: Schema, value: unknown): boolean {
  const type = schema.type;
  const actual = typeOf(value);
  if (type === undefined) return true;
  const types = Array.isArray(type) ? type : [type];
  return types.includes(actual) || (actual === 'integer' && types.includes('number'));
}

/** A schema that marks every string, whatever the shape around it. */
export const EVERY_STRING: Schema = { [UNTRUSTED_KEYWORD]: true, everything: true };

/** `value` with every string the schema marks framed (a fresh nonce per answer by default). */
export function frameMarked(
  value: unknown,
  schema: Schema,
  nonce = randomBytes(6).toString('hex'),
): unknown {
  const frame = (text: string) =>
    text === '' ? text : `<untrusted-data-${nonce}>${text}</untrusted-data-${nonce}>`;
  const walk = (v: unknown, s: Schema | undefined): unknown => {
    if (s === undefined) return v;
    if (s.everything === true) {
      if (typeof v === 'string') return frame(v);
      if (Array.isArray(v)) return v.map((item) => walk(item, s));
      if (v !== null && typeof v === 'object') {
        return Object.fromEntries(Object.entries(v).map(([key, inner]) => [key, walk(inner, s)]));
      }
      return v;
    }
    const alternatives = (s.anyOf ?? s.oneOf) as Schema[] | undefined;
    if (alternatives !== undefined) {
      return walk(
        v,
        alternatives.find((alt) => fits(alt, v)),
      );
    }
    if (typeof v === 'string') return s[UNTRUSTED_KEYWORD] === true ? frame(v) : v;
    if (Array.isArray(v)) {
      const items = s.items as Schema | undefined;
      return items === undefined ? v : v.map((item) => walk(item, items));
    }
    if (v !== null && typeof v === 'object') {
      const properties = (s.properties ?? {}) as Record<string, Schema>;
      const rest =
        typeof s.additionalProperties === 'object' ? (s.additionalProperties as Schema) : undefined;
      return Object.fromEntries(
        Object.entries(v).map(([key, inner]) => [key, walk(inner, properties[key] ?? rest)]),
      );
    }
    return v;
  };
  return walk(value, schema);
}

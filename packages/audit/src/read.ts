import { createReadStream, openSync, readSync, closeSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { AuditRecord } from './record.js';
import { lastJsonLine } from './sinks.js';

/** One line of input, as the readers see it. */
export interface Line {
  file: string;
  line: number;
  /** The parsed audit record; absent for lines that are not audit records. */
  record?: AuditRecord;
  /** Set when the line is not JSON at all (`torn` when it is the unterminated last line). */
  unparseable?: 'garbage' | 'torn';
  /** Set for JSON lines that are not audit records (ordinary log lines on a shared stream). */
  foreign?: boolean;
  /** Set for lines that claim to be audit records but are not well formed: what is wrong. */
  malformed?: string;
}

function isAuditRecord(value: unknown): value is AuditRecord {
  const audit = (value as { audit?: { schema_version?: unknown } } | null)?.audit;
  return typeof audit?.schema_version === 'string';
}

type Check = (value: unknown) => boolean;
const string: Check = (v) => typeof v === 'string';
const optional =
  (check: Check): Check =>
  (v) =>
    v === undefined || check(v);
const integer: Check = (v) => Number.isSafeInteger(v);
const number: Check = (v) => typeof v === 'number' && Number.isFinite(v);

/**
 * The members every reader relies on, with their types: a record that claims to be an audit
 * record (it has `audit.schema_version`) but breaks one is malformed — a tampered log, never
 * something a reader prints or counts as if it were a record.
 */
const SHAPE: ReadonlyArray<readonly [string, Check]> = [
  ['@timestamp', string],
  ['event.action', string],
  ['event.outcome', string],
  ['event.reason', string],
  ['event.id', optional(string)],
  ['event.duration', optional(number)],
  ['service.name', string],
  ['audit.seq', integer],
  ['audit.hash', string],
  ['audit.prev_hash', (v) => v === null || typeof v === 'string'],
  ['audit.stream', optional(string)],
  ['user.id', optional(string)],
  ['auth.method', optional(string)],
  ['mcp.name', optional(string)],
  ['target.resource', optional(string)],
  ['error.message', optional(string)],
  ['error.type', optional(string)],
  ['client.name', optional(string)],
  ['tool.access', optional(string)],
  ['audit.checkpoint', (v) => v === undefined || (v !== null && typeof v === 'object')],
];

/** A checkpoint's members, when the record has one. */
const CHECKPOINT: ReadonlyArray<readonly [string, Check]> = [
  ['audit.checkpoint.covers.seq', integer],
  ['audit.checkpoint.covers.hash', string],
  ['audit.checkpoint.algorithm', string],
  ['audit.checkpoint.key_id', optional(string)],
  ['audit.checkpoint.signature', optional(string)],
  ['audit.checkpoint.time', string],
];

/** What is wrong with a record's shape, or undefined when nothing is. */
export function malformation(record: AuditRecord): string | undefined {
  const checks = record.audit.checkpoint === undefined ? SHAPE : [...SHAPE, ...CHECKPOINT];
  for (const [path, check] of checks) {
    let value: unknown = record;
    for (const key of path.split('.')) {
      value =
        value !== null && typeof value === 'object' && Object.hasOwn(value, key)
          ? (value as Record<string, unknown>)[key]
          : undefined;
    }
    if (!check(value)) return `${path} is missing or of the wrong type`;
  }
  return undefined;
}

/**
 * The lines of a stream, split on `\n` only: U+2028, U+2029, U+0085 and a lone `\r` are text
 * inside a record, never line ends (readline splits on some of them, so a record holding one
 * would vanish and a genuine log would read as damaged).
 */
/** The lines of a stream; the last one says whether it was cut short (no line break after it). */
async function* linesOf(input: Readable): AsyncGenerator<{ text: string; unterminated: boolean }> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  for await (const chunk of input as AsyncIterable<Buffer | string>) {
    const parts = (rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk))).split('\n');
    rest = parts.pop()!;
    for (const text of parts) yield { text, unterminated: false };
  }
  rest += decoder.end();
  if (rest !== '') yield { text: rest, unterminated: true };
}

/** How deep a line's JSON may nest (docs/audit-format.md §1); a deeper line is not read. */
export const MAX_DEPTH = 1000;

/**
 * A line's JSON value; throws when it is not JSON, or nests deeper than {@link MAX_DEPTH}
 * (counted outside strings before it is parsed, so no verifier meets a stack it cannot hold).
 */
export function parseLine(text: string): unknown {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) throw new SyntaxError(`nested deeper than ${MAX_DEPTH} levels`);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return JSON.parse(text);
}

/** The first audit record of a file (to order rotated files), read without loading the file. */
function firstRecord(path: string): AuditRecord | undefined {
  const fd = openSync(path, 'r');
  try {
    const buffer = Buffer.alloc(1 << 20);
    const n = readSync(fd, buffer, 0, buffer.length, 0);
    for (const text of buffer.subarray(0, n).toString('utf8').split('\n')) {
      try {
        const value: unknown = JSON.parse(text);
        if (isAuditRecord(value)) return value;
      } catch {
        // not JSON: keep looking
      }
    }
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Orders audit files the way their chains run, so `audit.jsonl*` can be given in any order (the
 * active file sorts first by name): a file follows the one whose last record its first record
 * chains to; chains that link to nothing given start in the order of their first timestamp.
 */
export function orderFiles(paths: readonly string[]): string[] {
  const files = paths.map((path) => {
    const first = firstRecord(path);
    const last = (lastJsonLine(path)?.value as AuditRecord | undefined)?.audit?.hash;
    return { path, prev: first?.audit.prev_hash ?? null, time: first?.['@timestamp'] ?? '', last };
  });
  const byLast = new Map(files.filter((f) => f.last !== undefined).map((f) => [f.last!, f]));
  const heads = files
    .filter((f) => f.prev === null || !byLast.has(f.prev))
    .sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
  const byPrev = new Map(files.filter((f) => f.prev !== null).map((f) => [f.prev!, f]));
  const ordered: string[] = [];
  const placed = new Set<string>();
  for (const head of heads) {
    for (
      let f: (typeof files)[number] | undefined = head;
      f && !placed.has(f.path);
      f = f.last === undefined ? undefined : byPrev.get(f.last)
    ) {
      ordered.push(f.path);
      placed.add(f.path);
    }
  }
  // Files caught in a cycle (a damaged set) keep their given order at the end.
  return [...ordered, ...paths.filter((p) => !placed.has(p))];
}

/**
 * Streams the lines of the given files (`-` is standard input) in chain order, one at a time:
 * memory stays flat whatever the size of the log.
 */
export async function* readLines(
  paths: readonly string[],
  stdin: Readable = process.stdin,
): AsyncGenerator<Line> {
  const files = paths.includes('-') ? paths : orderFiles(paths);
  for (const [index, file] of files.entries()) {
    const input = file === '-' ? stdin : createReadStream(file);
    const lines = linesOf(input);
    const lastFile = index === files.length - 1;
    let number = 0;
    let pending: Line | undefined;
    for await (const { text, unterminated } of lines) {
      if (pending) yield pending;
      number++;
      pending = undefined;
      if (text.trim() === '') continue;
      let value: unknown;
      try {
        value = parseLine(text);
      } catch {
        // An unterminated last line of the last file is a torn write (the process died
        // mid-line, or the tail was cut); any other line that is not JSON is damage.
        pending = {
          file,
          line: number,
          unparseable: unterminated && lastFile ? 'torn' : 'garbage',
        };
        continue;
      }
      if (!isAuditRecord(value)) {
        pending = { file, line: number, foreign: true };
        continue;
      }
      const wrong = malformation(value);
      pending =
        wrong === undefined
          ? { file, line: number, record: value }
          : { file, line: number, malformed: wrong };
    }
    if (pending) yield pending;
  }
}

/** Only the audit records of the given files, in chain order. */
export async function* readRecords(
  paths: readonly string[],
  stdin?: Readable,
): AsyncGenerator<AuditRecord> {
  for await (const line of readLines(paths, stdin)) if (line.record) yield line.record;
}

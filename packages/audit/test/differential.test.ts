// The two verifiers — `gatehouse-audit verify` and the Python one written from the specification
// alone — must give the same verdict on any input: they once parted on an integer literal beyond
// 2^53, 1e21 written as digits and 3.0 for an integer (the Python verifier read them as exact
// integers, not as the doubles docs/audit-format.md §2 says every number is), and the Python one
// answered a 3 000-deep nesting with a traceback. Generated here: logs the real writer made of
// values that stress the format (numbers of every range, strings of every plane, lone
// surrogates, deep nesting), written out again as other encoders spell the same values (numbers
// as other literals, escapes, key order, whitespace), some of them then damaged. Every log gets
// both verdicts; any difference is a finding. `npm run test:long` runs thousands.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditLog, fileSink } from '../src/index.js';
import { SERVICE, lifecycleEntry, python, reference, seeded, tempDir } from './helpers.js';
import type { Verdict } from './helpers.js';

const LONG = process.env.GATEHOUSE_TEST_LONG === '1';
const LOGS = LONG ? 2_000 : 60;
const SEED = Number(process.env.GATEHOUSE_TEST_SEED ?? 7129);

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T =>
  items[Math.floor(random() * items.length)]!;

/** Numbers from every range ECMAScript's serialisation treats apart. */
const NUMBERS = [
  0,
  -0,
  1,
  -1,
  3,
  17,
  2 ** 31,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 53 + 2,
  Number('12345678901234567890'),
  1e20,
  1e21,
  1.5e21,
  123e-20,
  1e-6,
  1e-7,
  0.1,
  0.1 + 0.2,
  5e-324,
  1.7976931348623157e308,
  -4.25,
  1 / 3,
  255 / 7,
];

/** Strings from every plane, escapes, separators and lone surrogates. */
const STRINGS = [
  '',
  'plain',
  'quote " backslash \\ slash /',
  'line\u2028separator\u2029and\u0085next',
  'controls \u0001\u001f\u007f',
  '日本語のテキスト',
  '😀 emoji 👩🏽‍💻',
  'lone \ud800 high',
  'lone \udc00 low',
  'ｆｕｌｌ ｗｉｄｔｈ',
  'é combining e\u0301',
];

function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

/** A value as generated: numbers, strings, keys in every order, nesting at the limits. */
function value(random: Random, depth = 0): unknown {
  const roll = random();
  if (depth > 3 || roll < 0.35) return pick(random, NUMBERS);
  if (roll < 0.65) return pick(random, STRINGS);
  if (roll < 0.8)
    return Array.from({ length: 1 + Math.floor(random() * 3) }, () => value(random, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = 0; i < 1 + Math.floor(random() * 3); i++)
    out[pick(random, STRINGS) || `k${i}`] = value(random, depth + 1);
  return out;
}

/** Another spelling of the same number, as some encoder would write it. */
function numberSpelling(n: number, random: Random): string {
  const canonical = JSON.stringify(n);
  if (!Number.isFinite(n) || Object.is(n, -0)) return canonical;
  const options = [canonical];
  if (Number.isInteger(n)) {
    options.push(`${canonical.replace(/e\+?/, 'e')}`);
    if (Math.abs(n) < 1e21) options.push(`${canonical}.0`, `${canonical}e0`, `${canonical}E+0`);
    // The exact decimal of the double, or an integer literal with more digits than a double
    // holds that still reads as the same double.
    if (Math.abs(n) >= 1e16) options.push(BigInt(n).toString());
  } else {
    options.push(canonical.toUpperCase(), canonical.replace(/^0\./, '.'));
  }
  return pick(
    random,
    options.filter((o) => Number(o) === n && /^-?\d/.test(o)),
  );
}

/** A string spelled with random escapes of the characters that need none. */
function stringSpelling(s: string, random: Random): string {
  const canonical = JSON.stringify(s);
  if (random() < 0.5) return canonical;
  // One draw whatever the string holds (a record's hashes and stream id differ from run to
  // run, and the numbers after them must not); only letters outside an escape sequence (the
  // `u`, `d` and `f` of `\ud800` and `\u001f` are the escape's own).
  const own = seeded(Math.floor(random() * 2 ** 32));
  return canonical.replace(/\\(?:u[0-9a-fA-F]{4}|.)|[A-Za-z\u00e9\u65e5]/g, (m) =>
    m.length === 1 && own() < 0.3 ? `\\u${m.charCodeAt(0).toString(16).padStart(4, '0')}` : m,
  );
}

/** JSON text of `v` as another encoder writes it: same value, other spelling. */
function spell(v: unknown, random: Random): string {
  if (typeof v === 'number') return numberSpelling(v, random);
  if (typeof v === 'string') return stringSpelling(v, random);
  if (v === null || typeof v === 'boolean') return JSON.stringify(v);
  const space = () => (random() < 0.2 ? ' ' : '');
  if (Array.isArray(v)) return `[${v.map((x) => `${space()}${spell(x, random)}`).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [entries[i], entries[j]] = [entries[j]!, entries[i]!];
  }
  return `{${entries.map(([k, x]) => `${stringSpelling(k, random)}:${space()}${spell(x, random)}`).join(',')}}`;
}

/** How deep `spell` may recurse: far below any stack Node starts with. */
const SPELL_DEPTH = 200;

/** How deep the brackets of a JSON text nest (strings skipped), without recursion. */
function nesting(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
    else if (c === ']' || c === '}') depth--;
  }
  return deepest;
}

/** Damage of the kinds a verifier names, applied to the lines of a log. */
const DAMAGE: Array<(lines: string[], random: Random) => string[]> = [
  (l) => l,
  (l) => l,
  (l) => l,
  (l, r) => l.toSpliced(Math.floor(r() * l.length), 1),
  (l, r) => {
    const i = Math.floor(r() * (l.length - 1));
    return l.toSpliced(i, 2, l[i + 1]!, l[i]!);
  },
  (l, r) => {
    const i = Math.floor(r() * l.length);
    return l.with(i, l[i]!.replace(/"user-(\d)"/, '"user-7$1"'));
  },
  (l, r) => l.toSpliced(Math.floor(r() * l.length), 0, '{"not": "a record"'),
];

/** One generated log: written by the real writer, spelled again, maybe damaged. */
function generate(dir: string, n: number, random: Random): string {
  const original = join(dir, `log-${n}.raw`);
  const log = new AuditLog({
    sinks: [fileSink({ path: original, maxBytes: 1e12, daily: false })],
    service: SERVICE,
    checkpointEvery: 3,
  });
  log.append(lifecycleEntry('gatehouse/start'));
  for (let i = 0; i < 2 + Math.floor(random() * 6); i++) {
    const deep = random() < 0.1 ? pick(random, [999, 1000, 1001, 3000]) : 0;
    log.append({
      '@timestamp': new Date(Date.UTC(2026, 11, 7, 10, 0, i)).toISOString(),
      event: {
        id: `diff-${n}-${i}`,
        kind: 'event',
        category: ['api'],
        type: ['access'],
        action: 'tools/call',
        outcome: 'success',
        reason: 'ok',
      },
      user: { id: `user-${i % 3}` },
      mcp: { value: deep > 0 ? nested(deep - 2, 'deep') : value(random) } as never,
    });
  }
  log.append(lifecycleEntry('gatehouse/stop'));
  log.close();
  const lines = readFileSync(original, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      // Each line is spelled from a stream of its own, drawn here: the same seed makes the
      // same logs whatever a line holds.
      const spelling = seeded(Math.floor(random() * 2 ** 32));
      if (random() >= 0.7) return line;
      // Too deep to re-spell by recursion here: as written (where the stack would run out
      // varies from run to run).
      if (nesting(line) > SPELL_DEPTH) return line;
      try {
        return spell(JSON.parse(line), spelling);
      } catch {
        return line; // a line that is not JSON (none are written): as written
      }
    });
  const damaged = pick(random, DAMAGE)(lines, random);
  const path = join(dir, `log-${n}.jsonl`);
  // Now and then the last line is cut short (a torn write).
  const text = `${damaged.join('\n')}\n`;
  writeFileSync(
    path,
    random() < 0.1 ? text.slice(0, text.length - 1 - Math.floor(random() * 20)) : text,
  );
  return path;
}

describe('the two verifiers on generated logs', () => {
  it(`give the same verdict on ${LOGS} logs of every number form, string, nesting and key order (seed ${SEED})`, async () => {
    const dir = tempDir();
    const random = seeded(SEED);
    const files = Array.from({ length: LOGS }, (_, n) => generate(dir, n, random));
    const theirs = python(files, undefined, undefined, true);
    const differ: Array<{ file: string; node: Verdict; python: Verdict }> = [];
    const kinds = new Map<string, number>();
    for (const [i, file] of files.entries()) {
      const ours = await reference([file]);
      kinds.set(ours.kind ?? 'intact', (kinds.get(ours.kind ?? 'intact') ?? 0) + 1);
      if (JSON.stringify(ours) !== JSON.stringify(theirs[i])) {
        differ.push({ file, node: ours, python: theirs[i]! });
      }
    }
    console.log(
      `verifier differential: ${LOGS} logs, verdicts ${JSON.stringify(Object.fromEntries(kinds))}`,
    );
    expect(differ).toEqual([]);
    // Both sides of the oracle occur: intact logs (spelled otherwise) and damaged ones.
    expect(kinds.get('intact')).toBeGreaterThan(LOGS / 5);
    expect(kinds.size).toBeGreaterThan(2);
  }, 600_000);
});

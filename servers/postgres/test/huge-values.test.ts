import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectStdio, seededRandom } from '@gatehouse/testkit';
import type { StdioConnection } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, text } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// Values PostgreSQL builds far past what an answer can carry (docs/adr/0024-huge-values.md),
// through the built binary over stdio, as a client runs it. Roads to a huge value that were
// found and are tested here: a repetition with a constant count (repeat, lpad, rpad), nested
// repetitions, concatenations of them, array_fill, a concatenating aggregate (string_agg,
// array_agg, json_agg…) over the rows a constant generate_series makes — directly, through a
// subquery, a CTE or a join — and values whose size no constant tells (a repetition of a
// function's result, an aggregate over a subquery the check cannot count). The invariants, over
// named statements and seeded random compositions of them: the process never grows past its
// memory bound (it never buffers a message over the frame limit), every failure is the
// request's own error (never "PostgreSQL failed … not caused by your request"), and the server
// answers normally afterwards.

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
/** How far the process may grow above its resting size while answering (the bound tested). */
const GROWTH_MB = 128;

let company: CompanyDatabase;
let server: StdioConnection;
let resting = 0;

function memoryMb(pid: number, key: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${key}:\\s+(\\d+)`).exec(status)![1]) / 1024;
}

async function ask(sql: string) {
  const result = await server.client.callTool({ name: 'postgres_query', arguments: { sql } });
  return { isError: result.isError === true, text: text(result) };
}

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'huge');
  server = await connectStdio(BIN, [], {
    // A short statement timeout: what the constants do not bound is stopped by it.
    env: {
      PATH: process.env.PATH ?? '',
      POSTGRES_URL: company.url,
      POSTGRES_STATEMENT_TIMEOUT_MS: '3000',
    },
  });
  // Warm: the first calls load and compile what every later call uses.
  for (let i = 0; i < 20; i++) await ask(`SELECT repeat('x', ${1000 * i}), count(*) FROM orders`);
  resting = memoryMb(server.pid!, 'VmHWM');
});

afterAll(async () => {
  await server?.close();
  await company?.close();
});

/** What each answer must be: data within the caps, or a refusal or error of the request's own. */
function expectBounded(sql: string, answer: { isError: boolean; text: string }): string {
  if (!answer.isError) return 'answered';
  expect(answer.text, sql).not.toMatch(/not caused by your request|\(503\)|unreachable/i);
  if (/rule value_size/.test(answer.text)) return 'refused';
  expect(answer.text, sql).toMatch(
    /PostgreSQL built a row of [\d.]+ MB for this statement, more than the [\d.]+ MB this server reads|PostgreSQL could not run this statement \(54\d{3}\)|statement timeout/,
  );
  return 'failed';
}

describe('a statement that builds a huge value', () => {
  it.each([
    ["SELECT repeat('x', 100000000)", 'refused'],
    ["SELECT length(repeat('x', 100000000))", 'refused'],
    ["SELECT repeat(repeat('x', 10000), 20000)", 'refused'],
    ["SELECT lpad('x', 200000000)", 'refused'],
    ["SELECT rpad('', 50000000, 'é')", 'refused'],
    ["SELECT repeat('ab', 3000000) || repeat('cd', 3000000)", 'refused'],
    ['SELECT array_fill(0, ARRAY[100000, 1000])', 'refused'],
    ["SELECT string_agg(repeat('y', 1000), ',') FROM generate_series(1, 300000)", 'refused'],
    [
      "SELECT length(string_agg(repeat(md5(g::text), 40000), '')) FROM (SELECT g FROM generate_series(1, 1000) g) s",
      'refused',
    ],
    [
      'WITH s AS (SELECT g FROM generate_series(1, 1000) g) SELECT array_agg(repeat(md5(g::text), 40000)) FROM s',
      'refused',
    ],
    // Sizes no constant tells: PostgreSQL builds them, and the server does not read them.
    ["SELECT repeat(md5('x'), 1000000)", 'failed'],
    ["SELECT string_agg(repeat(md5(id::text), 1000), ',') FROM orders", 'failed'],
    // What a reasonable query builds is answered (long values cut in place).
    ["SELECT string_agg(g::text, ',') FROM generate_series(1, 100000) g", 'answered'],
    ["SELECT repeat('-', 40) AS rule, count(*) FROM orders", 'answered'],
  ])('%s → %s, the process within its bound', async (sql, expected) => {
    const answer = await ask(sql);
    expect(expectBounded(sql, answer), answer.text.slice(0, 300)).toBe(expected);
    expect(memoryMb(server.pid!, 'VmHWM')).toBeLessThan(resting + GROWTH_MB);
  });

  it(
    'holds over seeded compositions of repetitions, concatenations and aggregates',
    { timeout: 300_000 },
    async () => {
      const next = seededRandom(Number(process.env.GATEHOUSE_TEST_SEED ?? 20261207));
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
      const count = () => pick([10, 1000, 100_000, 3_000_000, 50_000_000, 200_000_000]);
      const value = (depth: number): string => {
        if (depth === 0) return pick(["'x'", "'abc'", 'md5(name)', "'é'", 'name']);
        const inner = value(depth - 1);
        return pick([
          `repeat(${inner}, ${count()})`,
          `lpad(${inner}, ${count()})`,
          `rpad(${inner}, ${count()}, 'ab')`,
          `${inner} || ${value(depth - 1)}`,
          `concat(${inner}, ${inner})`,
          `left(${inner}, 100)`,
        ]);
      };
      const statement = (): string => {
        const v = value(1 + Math.floor(next() * 2));
        return pick([
          `SELECT ${v} FROM customers LIMIT 2`,
          `SELECT length(${v}) FROM customers LIMIT 2`,
          `SELECT string_agg(${v}, ',') FROM customers`,
          `SELECT count(*) FROM (SELECT ${v} AS v FROM customers) s WHERE length(v) > 0`,
          `SELECT string_agg(${v}, ',') FROM generate_series(1, ${count()}) g, customers AS name`,
          `SELECT array_agg(${v}) FROM (SELECT name FROM customers LIMIT 3) s`,
        ]);
      };
      const outcomes = new Map<string, number>();
      for (let i = 0; i < 60; i++) {
        const sql = statement();
        const started = performance.now();
        const outcome = expectBounded(sql, await ask(sql));
        if (process.env.HUGE_DEBUG)
          console.log(outcome, Math.round(performance.now() - started), sql);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        expect(memoryMb(server.pid!, 'VmHWM'), sql).toBeLessThan(resting + GROWTH_MB);
      }
      console.log(`huge values (seeded): ${JSON.stringify(Object.fromEntries(outcomes))}`);
      // The generator reaches both sides of the limit.
      expect(outcomes.get('answered')).toBeGreaterThan(5);
      expect(outcomes.get('refused')).toBeGreaterThan(5);
    },
  );

  it('answers normally afterwards', async () => {
    const answer = await ask('SELECT count(*)::int AS n FROM customers');
    expect(answer.isError).toBe(false);
    expect(answer.text).toMatch(/n \(integer\)\n200\n/);
  });
});

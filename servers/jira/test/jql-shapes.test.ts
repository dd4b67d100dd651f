// Jira's parse tree is written back as JQL by src/jql.ts. A tree of a shape the code does not
// know — a field without a name, an operand that is not an object, a list that is not a list —
// must be a clear refusal (a ToolError), never a crash: generated trees, every answer checked.
import { ToolError } from '@gatehouse/core';
import { seededRandom } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';
import { writeClause, writeOrderBy } from '../src/jql.ts';
import type { Clause, ParsedQuery } from '../src/jql.ts';

const PROJECTS = ['OPS', 'WEB'];

describe('a parse tree of an unexpected shape', () => {
  it.each([
    ['a field without a name', { field: {}, operator: '=', operand: { value: 'x' } }],
    ['a numeric field name', { field: { name: 5 }, operator: '=', operand: { value: 'x' } }],
    ['an operand that is text', { field: { name: 'labels' }, operator: '=', operand: 'x' }],
    [
      'a value that is a number',
      { field: { name: 'labels' }, operator: '=', operand: { value: 1 } },
    ],
    [
      'a list that is an object',
      { field: { name: 'labels' }, operator: 'in', operand: { values: {} } },
    ],
    [
      'a function with object arguments',
      {
        field: { name: 'fixVersion' },
        operator: 'in',
        operand: { function: 'unreleasedVersions', arguments: [{}] },
      },
    ],
    ['clauses that are text', { operator: 'and', clauses: 'x' }],
    ['no clauses', { operator: 'or', clauses: [] }],
    ['null', null],
  ])('%s is refused in words', (_n, tree) => {
    expect(() => writeClause(tree as Clause, PROJECTS)).toThrow(ToolError);
  });

  it('an ORDER BY of an unexpected shape is refused in words', () => {
    for (const order of [{ fields: 'x' }, { fields: [null] }, { fields: [{ field: 3 }] }, 'x'])
      expect(() => writeOrderBy(order as unknown as ParsedQuery['orderBy'])).toThrow(ToolError);
  });

  it('generated trees: every answer is JQL or a ToolError, never another error', () => {
    const random = seededRandom(23);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const leaf = (): unknown =>
      pick([
        null,
        1,
        'x',
        [],
        {},
        { value: 'v' },
        { value: 2 },
        { keyword: 'EMPTY' },
        { function: 'openSprints', arguments: [] },
        { function: 7 },
        { values: [{ value: 'a' }] },
        { values: 'a' },
      ]);
    const tree = (depth: number): unknown =>
      depth === 0 || random() < 0.3
        ? pick([
            {
              field: { name: pick(['labels', 5, null, 'status', 'project']) },
              operator: pick(['=', 'in', '~', 'was', 5]),
              operand: leaf(),
            },
            { field: pick([null, {}, 'x']), operand: leaf() },
            leaf(),
          ])
        : {
            operator: pick(['and', 'or', 'not', 'xor', 3]),
            clauses: pick([[tree(depth - 1), tree(depth - 1)], [], 'x', [tree(depth - 1)]]),
          };
    let written = 0;
    for (let n = 0; n < 2_000; n++) {
      try {
        expect(typeof writeClause(tree(4) as Clause, PROJECTS)).toBe('string');
        written++;
      } catch (error) {
        expect(error).toBeInstanceOf(ToolError);
      }
    }
    expect(written).toBeGreaterThan(0);
  });
});

import { describe, expect, it } from 'vitest';
import { CappedRows, jsonBytes } from '../src/sql/execute.ts';

// The byte cap is checked for every row without serialising it: the count must be exactly what
// JSON.stringify writes, in UTF-8, or a result could pass the cap by a few bytes (or be cut early).
const VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  42,
  -7.25,
  1e21,
  5e-324,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  '',
  'plain ascii ~!@#$%^&*()_+{}|:<>?',
  'a "quoted" word',
  'back\\slash',
  'tab\tnew\nline\u0000nul\u001fus\u007fdel',
  'emoji 👩‍💻 and a flag 🏴󠁧󠁢󠁳󠁣󠁴󠁿',
  '日本語 עברית العربية',
  'lone surrogate \ud800 here',
  'line\u2028separator',
  { a: 1, b: ['x', null] },
  [1, 'two', { three: 3 }],
];

describe('jsonBytes', () => {
  it.each(VALUES.map((v) => [JSON.stringify(v), v]))('%s', (_shown, value) => {
    expect(jsonBytes(value)).toBe(Buffer.byteLength(JSON.stringify(value)));
  });
});

describe('the byte cap', () => {
  it('counts each kept row as its JSON in the rows array, empty rows included', () => {
    const caps = { maxRows: 1_000, maxBytes: 1_000_000 };
    const rows = new CappedRows(caps);
    rows.describe([]);
    expect(rows.add([])).toBe(true);
    const kept = new CappedRows(caps);
    kept.describe(
      ['a', 'b', 'c'].map((name) => ({
        name,
        tableID: 0,
        columnID: 0,
        dataTypeID: 25, // text: values pass through as given
        dataTypeSize: -1,
        dataTypeModifier: -1,
        format: 'text',
      })),
    );
    for (const row of [
      ['x', null, 'y"z'],
      ['👩‍💻', '', '\\'],
    ])
      kept.add(row);
    // Cut exactly at the cap: a cap one byte smaller keeps one row fewer.
    const exact = Buffer.byteLength(JSON.stringify(kept.rows));
    for (const [maxBytes, expected] of [
      [exact, 2],
      [exact - 1, 1],
    ] as const) {
      const capped = new CappedRows({ maxRows: 10, maxBytes });
      capped.describe(kept.fields);
      for (const row of kept.rows) capped.add(row as string[]);
      expect(capped.rows).toHaveLength(expected);
      expect(Buffer.byteLength(JSON.stringify(capped.rows))).toBeLessThanOrEqual(maxBytes);
    }
  });
});

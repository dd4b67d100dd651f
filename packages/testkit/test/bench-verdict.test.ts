// The performance table's verdicts (bench/verdict.mjs): which rows meet their target, read from
// the target's words — what `npm run bench` marks and names at the end.
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module of the benchmarks, without types
import { verdict } from '../../../bench/verdict.mjs';

const row = (ours: string, ratio: string, target: string) => ({ ours, ratio, target });

describe('verdict', () => {
  it.each([
    [row('0.52 ms', '2.22', '≤ 1.2×'), 'missed'],
    [row('0.26 ms', '1.10', '≤ 1.1×'), 'met'],
    [row('1072/s', '0.75', '≥ 1.0×'), 'missed'],
    [row('579/s', '1.02', '≥ 1.0×'), 'met'],
    [row('126 MB', '1.29', '≤ 150 MB'), 'met'],
    [row('212 MB', '1.80', '≤ 200 MB'), 'missed'],
    [row('1500 B', '', '≤ 1 500 B'), 'met'],
    [row('1501 B', '', '≤ 1 500 B'), 'missed'],
    [row('393 B', '2.69', 'never bigger'), 'missed'],
    [row('22844 B', '0.20', 'never bigger'), 'met'],
    [row('2 MB', '2.00', 'nothing growing (≤ 10 MB)'), 'met'],
    [row('31 MB', '9.00', 'nothing growing (≤ 10 MB)'), 'missed'],
    [row('0.26 ms', '1.11', '(a floor: no target)'), ''],
  ])('%o → %s', (r, expected) => {
    expect(verdict(r)).toBe(expected);
  });
});

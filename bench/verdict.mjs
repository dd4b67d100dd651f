// Whether a row of the performance table meets its target, read from the target's own words:
// "≤ 1.2×" / "≥ 1.0×" compare the ratio, "≤ 150 MB" / "≤ 1 500 B" compare ours, "never bigger"
// is a ratio of at most 1, "nothing growing (≤ 10 MB)" compares ours. Floors and rows without a
// number have no verdict. run.mjs prints a column of it and names the rows that miss.

/** A number written with spaces between its thousands ("1 500"). */
const number = (text) => Number(String(text).replace(/[\s\u202f]/g, ''));

/** 'met', 'missed', or '' when the row has no target to meet (a floor) or nothing to compare. */
export function verdict(row) {
  const target = String(row.target);
  const ratio = row.ratio === '' ? NaN : Number(row.ratio);
  const ours = number(/^[\d\s.]+/.exec(String(row.ours))?.[0] ?? 'NaN');
  const bound = /^([≤≥])\s*([\d\s.]+?)\s*(×|MB|B)(?=\s|$)/.exec(target);
  let ok;
  if (bound !== null) {
    const [, sign, value, unit] = bound;
    const measured = unit === '×' ? ratio : ours;
    ok = sign === '≤' ? measured <= number(value) : measured >= number(value);
    if (Number.isNaN(measured)) return '';
  } else if (target === 'never bigger') {
    if (Number.isNaN(ratio)) return '';
    ok = ratio <= 1;
  } else if (/^nothing growing \(≤ [\d.]+ MB\)$/.test(target)) {
    if (Number.isNaN(ours)) return '';
    ok = ours <= number(/≤ ([\d.]+)/.exec(target)[1]);
  } else {
    return '';
  }
  return ok ? 'met' : 'missed';
}

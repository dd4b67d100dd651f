// Order statistics of benchmark samples (numbers): one definition for every benchmark.

/** The q-quantile (0–1) of a list of samples; undefined for none. */
export function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** The median of a list of samples (0 for none). */
export const median = (values) => quantile(values, 0.5) ?? 0;

/** The 99th percentile of a list of samples. */
export const p99 = (values) => quantile(values, 0.99);

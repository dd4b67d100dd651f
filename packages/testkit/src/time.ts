import { availableParallelism, loadavg } from 'node:os';

/**
 * How much longer the tests' waits may take on this machine than on a quiet 8-core one: the
 * GATEHOUSE_TEST_TIME_SCALE variable when set (e.g. 3 on a slow CI runner), else from the
 * machine — ×2 on 2 cores or fewer, ×1.5 on 3–4 — and ×1.5 more when it is already loaded (its
 * one-minute load above its cores). Every wait of the testkit (a log line, an event, a start)
 * and every vitest timeout is scaled by it, so a loaded 2-core machine does not fail a test for
 * being slow; a real hang still fails, later.
 */
function machineScale(): number {
  // eslint-disable-next-line no-restricted-syntax -- the test harness's own setting, not a server's
  const set = Number(process.env.GATEHOUSE_TEST_TIME_SCALE);
  if (Number.isFinite(set) && set > 0) return set;
  const cores = availableParallelism();
  const base = cores <= 2 ? 2 : cores <= 4 ? 1.5 : 1;
  return loadavg()[0]! > cores ? base * 1.5 : base;
}

export const TIME_SCALE = machineScale();

/** `ms` as this machine's wait: `ms` × {@link TIME_SCALE}. */
export function scaled(ms: number): number {
  return Math.round(ms * TIME_SCALE);
}

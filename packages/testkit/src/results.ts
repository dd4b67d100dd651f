// What tests read off an answer, and how they wait for an event.
import { scaled } from './time.js';

/** The text of a tool result as the model reads it: its text blocks, one per line. */
export function resultText(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

/**
 * Polls `probe` until `ok` holds for its value or `timeoutMs` (scaled for this machine) passes,
 * and returns the last value (the test asserts on it, so a timeout fails with what was seen). Wait on an event this way — a
 * log line, a fake's request log, a count — never with a fixed sleep.
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean = Boolean,
  timeoutMs = scaled(10_000),
  intervalMs = 25,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let value = await probe();
  while (!ok(value) && Date.now() < end) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    value = await probe();
  }
  return value;
}

/**
 * What a server's `test/upstream.ts` exports (docs/adding-a-server.md): a running upstream for it
 * — the vendor's fake on loopback, or a real database — the variables that point the server at
 * it, and one call the server must answer with `expect` in its text. The server's contract test
 * and the image test (docker/test/images.test.ts) both drive the server with it.
 */
export interface ServerUpstream {
  readonly env: Readonly<Record<string, string>>;
  readonly call: { readonly name: string; readonly arguments: Record<string, unknown> };
  /** What the answer to the call contains. */
  readonly expect: string;
  close(): Promise<void>;
}

/** The module `servers/<id>/test/upstream.ts` is. */
export interface UpstreamModule {
  upstream(): Promise<ServerUpstream>;
}

/** The text of a tool result as the model reads it: its text blocks, one per line. */
export function resultText(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}

/**
 * Polls `probe` until `ok` holds for its value or `timeoutMs` passes, and returns the last value
 * (the test asserts on it, so a timeout fails with what was seen). Wait on an event this way — a
 * log line, a fake's request log, a count — never with a fixed sleep.
 */
export async function eventually<T>(
  probe: () => T | Promise<T>,
  ok: (value: T) => boolean = Boolean,
  timeoutMs = 10_000,
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

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

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

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
  /**
   * A credential this upstream rejects: started with it, the server must refuse to start (exit 2)
   * with `<variable>: <said>`, audit the refusal, and show the value nowhere.
   */
  readonly rejected: { readonly variable: string; readonly value: string; readonly said: string };
  close(): Promise<void>;
}

/** The module `servers/<id>/test/upstream.ts` is. */
export interface UpstreamModule {
  upstream(): Promise<ServerUpstream>;
}

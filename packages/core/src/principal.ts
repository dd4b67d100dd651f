/** How a principal was established. */
export type AuthMethod = 'local' | 'none' | 'api_key' | 'oauth';

/**
 * Who is calling. Comes from the transport (the local operator on stdio, authentication on
 * HTTP), never from tool arguments.
 */
export interface Principal {
  readonly id: string;
  readonly authMethod: AuthMethod;
  readonly scopes: readonly string[];
  /** Id of the credential used (key id, token `jti`), never the credential. */
  readonly credentialId?: string;
  /**
   * What the credential says of the caller besides its id: a token's string claims (`email`, a
   * tenant), an API key's configured `claims`. What bound tool parameters read (ToolDefinition
   * `bound`); never taken from a request.
   */
  readonly claims?: Readonly<Record<string, string>>;
  /**
   * A token's claims that are lists of strings (`groups`, `roles`): what a role map may match a
   * group on (servers/postgres, ADR 0027). Never taken from a request.
   */
  readonly claimLists?: Readonly<Record<string, readonly string[]>>;
}

/**
 * The principal of an unauthenticated HTTP caller. Only possible on a loopback bind
 * (`GATEHOUSE_AUTH=none`), which is local trust like stdio: every scope.
 */
export const ANONYMOUS: Principal = Object.freeze({
  id: 'anonymous',
  authMethod: 'none',
  scopes: Object.freeze(['*']),
});

/** The principal of the local operator on stdio (local trust: whoever started the process). */
export function localPrincipal(id: string): Principal {
  return Object.freeze({
    id,
    authMethod: 'local',
    scopes: Object.freeze(['*']),
  });
}

/**
 * The operator's command that disconnects a person (ADR 0026), run with the deployment's own
 * configuration: `gatehouse-<server> disconnect --api-key-principal ci-alice` or
 * `… disconnect --subject <sub>` (a principal of GATEHOUSE_OAUTH_ISSUER). The token is revoked at
 * the vendor and the grant deleted, exactly as the person's `disconnect` tool does.
 */
import type { GrantOwner } from './grant.js';
import { disconnect } from './mode.js';
import type { UpstreamIdentity } from './mode.js';

const USAGE =
  'usage: disconnect --api-key-principal <principal> | --subject <sub of GATEHOUSE_OAUTH_ISSUER>';

/** Runs the command; what to print and the exit code (0 done, 1 failed, 2 bad usage). */
export async function disconnectCommand(
  identity: UpstreamIdentity | undefined,
  args: readonly string[],
): Promise<{ readonly code: 0 | 1 | 2; readonly message: string }> {
  if (identity === undefined) {
    return {
      code: 2,
      message: 'disconnect: this server does not act as each person (GATEHOUSE_IDENTITY=user)',
    };
  }
  const [flag, subject, ...rest] = args;
  const issuer =
    flag === '--api-key-principal'
      ? 'api-key'
      : flag === '--subject'
        ? identity.oauthIssuer
        : undefined;
  if (subject === undefined || subject === '' || rest.length > 0 || flag === undefined) {
    return { code: 2, message: USAGE };
  }
  if (issuer === undefined) {
    return {
      code: 2,
      message:
        flag === '--subject'
          ? 'disconnect: --subject needs GATEHOUSE_OAUTH_ISSUER, the issuer of the principal'
          : USAGE,
    };
  }
  const owner: GrantOwner = {
    server: identity.server,
    issuer,
    subject,
    upstream: identity.upstream,
  };
  try {
    const done = await disconnect(identity, owner);
    if (done === undefined) {
      return {
        code: 0,
        message: `disconnect: ${subject} had no ${identity.vendor} account linked`,
      };
    }
    return {
      code: done.revoked ? 0 : 1,
      message: done.revoked
        ? `disconnect: ${subject} no longer acts as ${done.login} on ${identity.vendor}; the token was revoked there`
        : `disconnect: ${subject}'s grant (${done.login}) was deleted, but ${identity.vendor} did not confirm revoking its token: revoke it there`,
    };
  } catch (error) {
    return { code: 1, message: `disconnect failed: ${(error as Error).message}` };
  }
}

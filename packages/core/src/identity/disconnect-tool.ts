/**
 * The `disconnect` tool of a server acting as each person (ADR 0026): the caller forgets the
 * upstream account they linked — its token revoked at the vendor, the grant deleted. It acts
 * only on the caller's own grant, found by who is asking; it takes no argument that could name
 * anyone else's.
 */
import * as z from 'zod';
import { IDEMPOTENT_WRITE_ANNOTATIONS, defineTool } from '../define.js';
import type { ToolDefinition } from '../define.js';
import { ToolError } from '../errors.js';
import { disconnect, ownerOf } from './mode.js';
import type { UpstreamIdentity } from './mode.js';

/** The tool `name` (`github_disconnect`) for `identity`'s vendor. */
export function disconnectTool(identity: UpstreamIdentity, name: string): ToolDefinition {
  const vendor = identity.vendor;
  return defineTool({
    name,
    title: `Disconnect your ${vendor} account`,
    description: `Forgets the ${vendor} account you linked to this server${identity.revoke === undefined ? ` (${vendor} offers no way to revoke its token from here: remove the app in your ${vendor} account settings to end its access there)` : ` and revokes its token at ${vendor}`}. Afterwards nothing is sent to ${vendor} for you until you link an account again.`,
    access: 'write',
    annotations: IDEMPOTENT_WRITE_ANNOTATIONS,
    input: z.strictObject({}),
    output: z.object({
      disconnected: z.boolean().describe('Whether an account was linked and is now forgotten'),
      account: z.string().optional().describe(`The ${vendor} login that was linked`),
      revoked: z.boolean().optional().describe(`Whether ${vendor} confirmed the revocation`),
    }),
    target: () => `identity:${identity.upstream}`,
    handler: async (_args, ctx) => {
      const owner = ownerOf(identity, ctx.principal);
      if (owner === undefined) {
        throw new ToolError(
          `This caller cannot link a ${vendor} account (no API key or token), so there is none to disconnect.`,
          { code: 'no_identity' },
        );
      }
      if (ctx.dryRun) {
        return ctx.preview(
          {
            ...(identity.revoke === undefined ? {} : { revoke: `your ${vendor} token` }),
            forget: 'your linked account',
          },
          `would disconnect your ${vendor} account`,
        );
      }
      const done = await disconnect(identity, owner);
      if (done === undefined) {
        return {
          text: `No ${vendor} account was linked for you; nothing to disconnect.`,
          structured: { disconnected: false },
        };
      }
      const revocation = done.revoked
        ? `its token was revoked at ${vendor}`
        : identity.revoke === undefined
          ? `${vendor} offers no way to revoke its token from here (remove the app in your ${vendor} settings to end its access there)`
          : `${vendor} did not confirm revoking its token (revoke the app in your ${vendor} settings to be sure)`;
      return {
        text: `Disconnected ${ctx.untrustedValue(done.login)}: this server forgot the account and ${revocation}.`,
        structured: { disconnected: true, account: done.login, revoked: done.revoked },
      };
    },
  });
}

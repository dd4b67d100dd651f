/**
 * The operator's side of acting as each person (ADR 0026): the variables a SaaS server adds to
 * its configuration, their checks, and the {@link UpstreamIdentity} they build. The vendor part
 * (its OAuth endpoints and client, who a token is, revoking one) comes from the server.
 */
import * as client from 'openid-client';
import * as z from 'zod';
import { envList, secretText } from '../config.js';
import { ConfigError } from '../errors.js';
import type { BaseConfig, ConfigCheck } from '../config.js';
import type { Logger } from '../logger.js';
import { createConnect } from './connect.js';
import type { ConnectVendor } from './connect.js';
import { fileGrantStore, redisGrantStore } from './grant-store.js';
import { Keyring } from './keyring.js';
import type { UpstreamIdentity } from './mode.js';
import { refreshGrant, upstreamOAuth } from './upstream-oauth.js';
import type { UpstreamOAuthOptions } from './upstream-oauth.js';
import { Vault } from './vault.js';

/** What is wrong with a key file's text, in words that never hold a key. */
function keyringProblem(text: string): string | undefined {
  try {
    Keyring.parse(text, 'the keys');
    return undefined;
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.join('; ');
    throw error;
  }
}

/** `principal=login` pairs: which upstream login each API-key principal links. */
const LOGIN_PAIR = /^[^=\s]+=[^=\s]+$/;

/** The variables of the identity mode, spread into a SaaS server's `defineConfig`. */
export const identityShape = {
  GATEHOUSE_IDENTITY: z
    .enum(['service', 'user'])
    .default('service')
    .describe(
      'Whose rights calls to the vendor use: service (the configured credential, for everyone) or user (each person their own, linked once through /connect; HTTP only; nothing falls back).',
    ),
  GATEHOUSE_IDENTITY_READ_FALLBACK: envList
    .default([])
    .describe(
      'In user mode, read tools (names) that use the service credential for a person who has not linked an account. Empty by default: no tool falls back.',
    ),
  GATEHOUSE_VAULT_KEYS: secretText(keyringProblem)
    .optional()
    .describe(
      'User mode: the keys that seal linked accounts at rest, one a line, "<key id> <32 random bytes in base64>"; the first seals, every one opens (rotation). Usually as GATEHOUSE_VAULT_KEYS_FILE.',
    ),
  GATEHOUSE_GRANTS_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'User mode, one instance: the file (mode 600) that keeps the sealed linked accounts. With GATEHOUSE_REDIS_URL they are kept in Redis instead, shared by the replicas.',
    ),
  GATEHOUSE_CONNECT_CLIENT_ID: z
    .string()
    .min(1)
    .optional()
    .describe(
      "User mode with oauth: this server's client id at the identity provider (GATEHOUSE_OAUTH_ISSUER), which signs the browser in before an account is linked.",
    ),
  GATEHOUSE_CONNECT_CLIENT_SECRET: secretText()
    .optional()
    .describe('The client secret that goes with GATEHOUSE_CONNECT_CLIENT_ID.'),
  GATEHOUSE_IDENTITY_LOGINS: envList
    .pipe(
      z.array(
        z
          .string()
          .regex(
            LOGIN_PAIR,
            'expected principal=login pairs (an API key principal, =, the upstream login)',
          ),
      ),
    )
    .default([])
    .describe(
      'User mode with api_key: principal=account pairs, the upstream account each API key principal may link — its id (never renamed; Slack U…, Atlassian account id) or its login — checked after the vendor answers. A principal not named cannot link.',
    ),
};

type IdentitySettings = z.output<z.ZodObject<typeof identityShape>>;

/** The checks across the identity variables and the core's (transport, authentication, Redis). */
export const identityCheck: ConfigCheck = {
  reads: [
    'GATEHOUSE_IDENTITY',
    'GATEHOUSE_VAULT_KEYS',
    'GATEHOUSE_GRANTS_FILE',
    'GATEHOUSE_CONNECT_CLIENT_ID',
    'GATEHOUSE_CONNECT_CLIENT_SECRET',
    'GATEHOUSE_IDENTITY_LOGINS',
    'GATEHOUSE_IDENTITY_READ_FALLBACK',
    'GATEHOUSE_TRANSPORT',
    'GATEHOUSE_AUTH',
    'GATEHOUSE_REDIS_URL',
    'GATEHOUSE_PUBLIC_URL',
    'GATEHOUSE_OAUTH_ISSUER',
  ],
  problems: (raw) => {
    const c = raw as Partial<IdentitySettings & BaseConfig>;
    if (c.GATEHOUSE_IDENTITY !== 'user') {
      return (c.GATEHOUSE_IDENTITY_READ_FALLBACK ?? []).length > 0
        ? ['GATEHOUSE_IDENTITY_READ_FALLBACK: only means something with GATEHOUSE_IDENTITY=user']
        : [];
    }
    if (c.GATEHOUSE_TRANSPORT !== 'http') {
      // Over stdio the configured credential already is the local user's own.
      return [
        "GATEHOUSE_TRANSPORT: acting as each person upstream needs the HTTP transport; over stdio the configured credential is already the local user's own (use GATEHOUSE_IDENTITY=service)",
      ];
    }
    const auth = c.GATEHOUSE_AUTH ?? [];
    const problems: string[] = [];
    const need = (ok: boolean, problem: string) => {
      if (!ok) problems.push(problem);
    };
    need(
      !auth.includes('none'),
      'GATEHOUSE_AUTH: user mode acts as each person and needs to know who they are (api_key or oauth, not none)',
    );
    need(
      c.GATEHOUSE_PUBLIC_URL !== undefined,
      'GATEHOUSE_PUBLIC_URL: user mode needs it (the link to /connect and the vendor’s callback are built on it)',
    );
    need(
      c.GATEHOUSE_VAULT_KEYS !== undefined,
      'GATEHOUSE_VAULT_KEYS: user mode needs the keys that seal linked accounts (usually as GATEHOUSE_VAULT_KEYS_FILE)',
    );
    need(
      (c.GATEHOUSE_REDIS_URL === undefined) !== (c.GATEHOUSE_GRANTS_FILE === undefined),
      c.GATEHOUSE_REDIS_URL === undefined
        ? 'GATEHOUSE_GRANTS_FILE: user mode needs a place for linked accounts (this file, for one instance; or GATEHOUSE_REDIS_URL, shared by replicas)'
        : 'GATEHOUSE_GRANTS_FILE: with GATEHOUSE_REDIS_URL the replicas keep linked accounts in Redis; unset the file',
    );
    if (auth.includes('oauth')) {
      need(
        c.GATEHOUSE_CONNECT_CLIENT_ID !== undefined &&
          c.GATEHOUSE_CONNECT_CLIENT_SECRET !== undefined,
        'GATEHOUSE_CONNECT_CLIENT_ID: user mode with oauth needs a client at the identity provider (with GATEHOUSE_CONNECT_CLIENT_SECRET) to sign the browser in before an account is linked',
      );
    }
    if (auth.includes('api_key')) {
      need(
        (c.GATEHOUSE_IDENTITY_LOGINS ?? []).length > 0,
        'GATEHOUSE_IDENTITY_LOGINS: user mode with api_key needs the upstream login each key principal may link (principal=login pairs)',
      );
    }
    return problems;
  },
};

/** What the server tells about its vendor. */
export interface IdentityVendor extends Omit<ConnectVendor, 'oauth'> {
  /** The upstream host grants are for (`github.com`, a GitHub Enterprise host). */
  readonly upstream: string;
  /** The vendor's OAuth endpoints and this deployment's client there. */
  readonly oauth: UpstreamOAuthOptions;
}

/**
 * The identity of a server in `user` mode, or undefined in `service` mode. Synchronous: the
 * Redis store connects and the identity provider is discovered on first use (a failure fails
 * that call or that page, and never falls back).
 */
export function identityFromConfig(
  config: IdentitySettings & BaseConfig,
  server: string,
  vendor: IdentityVendor,
  logger: Logger,
): UpstreamIdentity | undefined {
  if (config.GATEHOUSE_IDENTITY !== 'user') return undefined;
  const keyring = Keyring.parse(config.GATEHOUSE_VAULT_KEYS!, 'GATEHOUSE_VAULT_KEYS');
  const store =
    config.GATEHOUSE_REDIS_URL === undefined
      ? fileGrantStore(config.GATEHOUSE_GRANTS_FILE!, 'GATEHOUSE_GRANTS_FILE')
      : redisGrantStore(config.GATEHOUSE_REDIS_URL, server);
  const vault = new Vault(keyring, store);
  const oauth = upstreamOAuth(vendor.oauth);
  const issuer = config.GATEHOUSE_OAUTH_ISSUER;
  const idpClient = config.GATEHOUSE_CONNECT_CLIENT_ID;
  const connect = createConnect({
    server,
    publicUrl: config.GATEHOUSE_PUBLIC_URL!,
    keyring,
    vault,
    store,
    vendor: { ...vendor, oauth, authorizationParameters: vendor.oauth.authorizationParameters },
    expectedLogins: new Map(
      config.GATEHOUSE_IDENTITY_LOGINS.map((pair) => pair.split('=') as [string, string]),
    ),
    ...(issuer === undefined || idpClient === undefined
      ? {}
      : {
          idp: {
            issuer,
            config: discovered(issuer, idpClient, config.GATEHOUSE_CONNECT_CLIENT_SECRET!),
          },
        }),
    logger,
  });
  return {
    vendor: vendor.name,
    upstream: vendor.upstream,
    server,
    vault,
    connect,
    refresh: (grant) => refreshGrant(oauth, grant),
    revoke: vendor.revoke,
    oauthIssuer: issuer,
    readFallback: new Set(config.GATEHOUSE_IDENTITY_READ_FALLBACK),
  };
}

/** The identity provider's client configuration, discovered once it is first needed. */
function discovered(
  issuer: string,
  clientId: string,
  clientSecret: string,
): () => Promise<client.Configuration> {
  let pending: Promise<client.Configuration> | undefined;
  return () => {
    pending ??= client
      .discovery(new URL(issuer), clientId, clientSecret, undefined, {
        execute: isLoopbackHttp(issuer) ? [client.allowInsecureRequests] : [],
      })
      .catch((error: unknown) => {
        pending = undefined; // the next sign-in tries again
        throw error;
      });
    return pending;
  };
}

function isLoopbackHttp(url: string): boolean {
  const u = new URL(url);
  return u.protocol === 'http:' && ['127.0.0.1', '[::1]', 'localhost'].includes(u.hostname);
}

import { createHash, timingSafeEqual } from 'node:crypto';
import type {
  JWTPayload,
  JWTVerifyGetKey,
  JSONWebKeySet,
  KeyObject as JoseKey,
  errors as JoseErrors,
} from 'jose';
import { getOAuthProtectedResourceMetadataUrl } from '@modelcontextprotocol/server';
import type { BaseConfig } from './config.js';
import { CLAIM_NAME, parseApiKeys } from './config.js';
import type { Principal } from './principal.js';

/** The result of authenticating one HTTP request. */
export type AuthOutcome =
  | { ok: true; principal: Principal }
  | {
      ok: false;
      status: 400 | 401 | 403 | 503;
      /** RFC 6750 error code; absent when no credentials were presented. */
      error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
      description: string;
      /** The scope that was missing (insufficient_scope). */
      scope?: string;
    };

/** RFC 9728 protected resource metadata. */
export interface ResourceMetadata {
  resource: string;
  authorization_servers: string[];
  scopes_supported: string[];
  bearer_methods_supported: ['header'];
  resource_name?: string;
}

/** Authenticates bearer credentials (API keys, OAuth 2.1 JWT access tokens) into a principal. */
export interface Authenticator {
  authenticate(authorization: string | undefined): Promise<AuthOutcome>;
  /** The `WWW-Authenticate` header for a failed outcome. */
  challenge(outcome: Extract<AuthOutcome, { ok: false }>): string;
  /** The RFC 9728 document and the paths it is served at, when OAuth is on. */
  readonly metadata?: { paths: string[]; url: string; document: ResourceMetadata };
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
const quote = (value: string): string => value.replace(/["\\]/g, '');

/** The RFC 9728 protected-resource metadata of an OAuth-protected server, and where it is served. */
function resourceMetadata(
  config: BaseConfig,
  options: { scopes: readonly string[]; resourceName?: string },
): NonNullable<Authenticator['metadata']> {
  const publicUrl = config.GATEHOUSE_PUBLIC_URL!;
  const url = getOAuthProtectedResourceMetadataUrl(new URL(publicUrl));
  return {
    url,
    paths: [...new Set([new URL(url).pathname, '/.well-known/oauth-protected-resource'])],
    document: {
      resource: publicUrl,
      authorization_servers:
        config.GATEHOUSE_OAUTH_AUTHORIZATION_SERVERS.length > 0
          ? [...config.GATEHOUSE_OAUTH_AUTHORIZATION_SERVERS]
          : [config.GATEHOUSE_OAUTH_ISSUER!],
      scopes_supported: [...new Set(options.scopes)].sort(),
      bearer_methods_supported: ['header'],
      ...(options.resourceName === undefined ? {} : { resource_name: options.resourceName }),
    },
  };
}

/** The principal of a verified token's claims. */
function principalOf(payload: JWTPayload, token: string): AuthOutcome {
  // The subject becomes the principal id in every audit record: a non-empty string of
  // printable characters, or the token is refused.
  if (
    typeof payload.sub !== 'string' ||
    !/^[^\p{C}]{1,256}$/u.test(payload.sub) ||
    payload.sub.trim() === ''
  ) {
    return {
      ok: false,
      status: 401,
      error: 'invalid_token',
      description: 'the token has no usable subject (sub must be a non-empty string)',
    };
  }
  const raw: unknown = payload.scope ?? payload.scp;
  const scopes = Array.isArray(raw)
    ? raw.filter((s): s is string => typeof s === 'string')
    : typeof raw === 'string'
      ? raw.split(' ').filter(Boolean)
      : [];
  return {
    ok: true,
    principal: {
      id: payload.sub,
      authMethod: 'oauth',
      scopes,
      credentialId:
        typeof payload.jti === 'string' ? payload.jti : `sha256:${sha256Hex(token).slice(0, 16)}`,
      claims: stringClaims(payload),
      claimLists: listClaims(payload),
    },
  };
}

/**
 * A verified token's claims that are lists of strings (`groups`, `roles`): at most 16 lists of
 * at most 256 entries, each entry as a string claim's value. A list holding anything else is
 * left out whole.
 */
function listClaims(payload: JWTPayload): Readonly<Record<string, readonly string[]>> {
  const lists: Array<[string, readonly string[]]> = [];
  for (const [name, value] of Object.entries(payload).slice(0, 256)) {
    if (lists.length === 16) break;
    if (
      Array.isArray(value) &&
      CLAIM_NAME.test(name) &&
      value.length <= 256 &&
      value.every((v) => typeof v === 'string' && /^[^\p{C}]{0,1024}$/u.test(v))
    )
      lists.push([name, Object.freeze([...(value as string[])])]);
  }
  return Object.freeze(Object.fromEntries(lists));
}

/**
 * A verified token's string claims (`email`, `tenant`, `sub`…), for bound tool parameters: at
 * most 64, names as CLAIM_NAME, values of printable characters up to 1 KiB. A claim that is not
 * a string (a number, a list, an object) is left out: a parameter bound to it is refused, as it
 * is when the claim is missing.
 */
function stringClaims(payload: JWTPayload): Readonly<Record<string, string>> {
  const claims: Array<[string, string]> = [];
  for (const [name, value] of Object.entries(payload).slice(0, 256)) {
    if (claims.length === 64) break;
    if (typeof value === 'string' && CLAIM_NAME.test(name) && /^[^\p{C}]{0,1024}$/u.test(value))
      claims.push([name, value]);
  }
  // fromEntries defines own properties: a claim named __proto__ stays a claim.
  return Object.freeze(Object.fromEntries(claims));
}

/**
 * Builds the authenticator the config asks for. The token is checked and dropped here: the
 * principal carries an id, scopes and a credential id (key id, token `jti`), never the token,
 * so nothing downstream can forward it to an upstream API.
 */
export async function createAuthenticator(
  config: BaseConfig,
  options: { scopes: readonly string[]; resourceName?: string },
): Promise<Authenticator | undefined> {
  const methods = config.GATEHOUSE_AUTH;
  if (methods.includes('none')) return undefined;
  // Loaded only when authentication is configured: stdio servers start without it.
  const jose = await import('jose');
  const { createLocalJWKSet, createRemoteJWKSet, importSPKI, jwtVerify } = jose;
  const apiKeys =
    methods.includes('api_key') && config.GATEHOUSE_API_KEYS !== undefined
      ? parseApiKeys(config.GATEHOUSE_API_KEYS).map((k) => ({
          ...k,
          digest: Buffer.from(k.sha256, 'hex'),
        }))
      : [];

  let keys: JWTVerifyGetKey | JoseKey | undefined;
  const metadata = methods.includes('oauth') ? resourceMetadata(config, options) : undefined;
  if (methods.includes('oauth')) {
    if (config.GATEHOUSE_OAUTH_JWKS_URL !== undefined) {
      // jose caches the key set and refetches it (rate-limited) when a token names an unknown
      // key id, which is how issuers rotate keys.
      keys = createRemoteJWKSet(new URL(config.GATEHOUSE_OAUTH_JWKS_URL), {
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        timeoutDuration: 5_000,
      });
    }
  }
  const staticKey = (async (): Promise<JWTVerifyGetKey | JoseKey | undefined> => {
    const text = config.GATEHOUSE_OAUTH_PUBLIC_KEY?.trim();
    if (text === undefined) return undefined;
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as JSONWebKeySet | JSONWebKeySet['keys'][number];
      return createLocalJWKSet('keys' in jwk ? jwk : { keys: [jwk] });
    }
    return importSPKI(text, config.GATEHOUSE_OAUTH_ALGORITHMS[0] ?? 'RS256');
  })();

  const audience = config.GATEHOUSE_OAUTH_AUDIENCE ?? config.GATEHOUSE_PUBLIC_URL;

  const viaApiKey = (token: string): AuthOutcome => {
    const digest = Buffer.from(sha256Hex(token), 'hex');
    // Compare against every key, always, in constant time per key.
    let match: (typeof apiKeys)[number] | undefined;
    for (const key of apiKeys)
      if (timingSafeEqual(digest, key.digest) && match === undefined) match = key;
    if (match === undefined)
      return { ok: false, status: 401, error: 'invalid_token', description: 'unknown API key' };
    return {
      ok: true,
      principal: {
        id: match.principal,
        authMethod: 'api_key',
        scopes: match.scopes,
        credentialId: match.id,
        ...(match.claims === undefined ? {} : { claims: Object.freeze({ ...match.claims }) }),
      },
    };
  };

  const viaJwt = async (token: string): Promise<AuthOutcome> => {
    const key = keys ?? (await staticKey);
    if (key === undefined)
      return {
        ok: false,
        status: 401,
        error: 'invalid_token',
        description: 'no key to verify tokens',
      };
    try {
      const { payload } = await jwtVerify(token, key as JWTVerifyGetKey, {
        issuer: config.GATEHOUSE_OAUTH_ISSUER!,
        ...(audience === undefined ? {} : { audience }),
        algorithms: [...config.GATEHOUSE_OAUTH_ALGORITHMS],
        clockTolerance: config.GATEHOUSE_OAUTH_CLOCK_SKEW_S,
        requiredClaims: ['exp', 'sub'],
      });
      return principalOf(payload, token);
    } catch (error) {
      return jwtFailure(error, jose.errors);
    }
  };

  return {
    ...(metadata === undefined ? {} : { metadata }),
    async authenticate(authorization) {
      if (authorization === undefined || authorization.trim() === '') {
        return { ok: false, status: 401, description: 'authentication required' };
      }
      const match = /^Bearer +([\x21-\x7e]+)$/i.exec(authorization.trim());
      if (match === null) {
        return {
          ok: false,
          status: 400,
          error: 'invalid_request',
          description: 'expected "Authorization: Bearer <token>"',
        };
      }
      const token = match[1]!;
      if (methods.includes('oauth') && JWT_SHAPE.test(token)) return viaJwt(token);
      if (methods.includes('api_key')) return viaApiKey(token);
      return { ok: false, status: 401, error: 'invalid_token', description: 'malformed token' };
    },
    challenge(outcome) {
      const parts = ['realm="gatehouse"'];
      if (outcome.error !== undefined)
        parts.push(`error="${outcome.error}"`, `error_description="${quote(outcome.description)}"`);
      if (outcome.scope !== undefined) parts.push(`scope="${quote(outcome.scope)}"`);
      if (metadata !== undefined) parts.push(`resource_metadata="${metadata.url}"`);
      return `Bearer ${parts.join(', ')}`;
    },
  };
}

/** Maps a jose verification error to the answer the client gets. */
function jwtFailure(error: unknown, errors: typeof JoseErrors): AuthOutcome {
  const invalid = (description: string): AuthOutcome => ({
    ok: false,
    status: 401,
    error: 'invalid_token',
    description,
  });
  if (error instanceof errors.JWTExpired) return invalid('token expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return invalid('token not yet valid');
    if (error.claim === 'iss') return invalid('wrong issuer');
    if (error.claim === 'aud') return invalid('wrong audience (not issued for this server)');
    return invalid(`invalid claim: ${error.claim}`);
  }
  if (error instanceof errors.JWSSignatureVerificationFailed)
    return invalid('signature does not verify');
  if (error instanceof errors.JWKSNoMatchingKey) return invalid('unknown key id');
  if (error instanceof errors.JOSEAlgNotAllowed) return invalid('algorithm not allowed');
  if (error instanceof errors.JWKSTimeout || !(error instanceof errors.JOSEError)) {
    return {
      ok: false,
      status: 503,
      description: 'the token cannot be verified right now (key set unavailable)',
    };
  }
  return invalid('malformed token');
}

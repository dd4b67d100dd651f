import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey, JWK, JWTPayload } from 'jose';

/** A loopback OAuth 2.1 issuer for tests: serves a JWKS and mints signed access tokens. */
export interface TestIssuer {
  /** The issuer URL (`iss`). */
  readonly issuer: string;
  /** Where the JWKS is served. */
  readonly jwksUrl: string;
  /** How many times the JWKS was fetched (to observe caching and refetch on rotation). */
  readonly jwksFetches: number;
  /** Mints a token; `kid` picks a key, `unpublished: true` signs with a key not in the JWKS. */
  mint(
    claims: JWTPayload,
    options?: { kid?: string; unpublished?: boolean; alg?: string },
  ): Promise<string>;
  /** Adds a new key to the JWKS (key rotation); returns its kid. */
  rotate(): Promise<string>;
  close(): Promise<void>;
}

interface Key {
  kid: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

async function newKey(kid: string): Promise<Key> {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return {
    kid,
    privateKey,
    jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' },
  };
}

/** Starts a test issuer on an ephemeral loopback port. */
export async function startTestIssuer(): Promise<TestIssuer> {
  const keys: Key[] = [await newKey('key-1')];
  const stray = await newKey('stray');
  let fetches = 0;
  const server = createServer((req, res) => {
    if (req.url === '/jwks.json') {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: keys.map((k) => k.jwk) }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: `${base}/`,
    jwksUrl: `${base}/jwks.json`,
    get jwksFetches() {
      return fetches;
    },
    async mint(claims, options = {}) {
      const key = options.unpublished
        ? stray
        : (keys.find((k) => k.kid === options.kid) ?? keys[keys.length - 1]!);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: key.kid, typ: 'at+jwt' })
        .sign(key.privateKey);
    },
    async rotate() {
      const key = await newKey(`key-${keys.length + 1}`);
      keys.push(key);
      return key.kid;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

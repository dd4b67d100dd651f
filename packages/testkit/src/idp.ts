/**
 * A real OpenID provider for tests (`oidc-provider`, certified), standing in for the company's
 * IdP: authorization code with PKCE, discovery, JWKS. Signing in is the test's: a browser visits
 * `/sign-in?login=<account>` (it sets the provider's test session cookie), and the interaction
 * then finishes as that account, consent granted for the scopes asked.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Provider from 'oidc-provider';

export interface TestIdpClient {
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUris: readonly string[];
}

export interface TestIdp {
  /** The issuer (`iss`), also the discovery base. */
  readonly issuer: string;
  /** Every account that finished signing in, in order. */
  readonly signIns: string[];
  close(): Promise<void>;
}

const SESSION = 'test_idp_login';

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

/** Starts the provider on 127.0.0.1 (random port), with `accounts` able to sign in. */
export async function startTestIdp(options: {
  clients: readonly TestIdpClient[];
  accounts: readonly string[];
}): Promise<TestIdp> {
  const signIns: string[] = [];
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const provider = new Provider(issuer, {
    clients: options.clients.map((c) => ({
      client_id: c.clientId,
      client_secret: c.clientSecret,
      redirect_uris: [...c.redirectUris],
      grant_types: ['authorization_code'],
      response_types: ['code'],
    })),
    cookies: { keys: [randomBytes(32).toString('hex')] },
    jwks: {
      keys: [
        {
          ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
            format: 'jwk',
          }),
          kid: 'test-idp',
          use: 'sig',
        },
      ],
    },
    features: { devInteractions: { enabled: false } },
    pkce: { required: () => true },
    findAccount: (_ctx, id) =>
      options.accounts.includes(id) ? { accountId: id, claims: () => ({ sub: id }) } : undefined,
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const callback = provider.callback();

  async function interaction(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await provider.interactionDetails(req, res);
    const login = cookieOf(req, SESSION);
    if (details.prompt.name === 'login') {
      if (login === undefined || !options.accounts.includes(login)) {
        res.writeHead(401, { 'content-type': 'text/html' });
        res.end('<p>Sign in first (/sign-in?login=…).</p>');
        return;
      }
      signIns.push(login);
      await provider.interactionFinished(req, res, { login: { accountId: login } });
      return;
    }
    const grant = new provider.Grant({
      accountId: details.session!.accountId,
      clientId: details.params.client_id as string,
    });
    const scope = details.params.scope;
    grant.addOIDCScope(typeof scope === 'string' ? scope : 'openid');
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } });
  }

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/sign-in') {
      const login = url.searchParams.get('login') ?? '';
      res.writeHead(options.accounts.includes(login) ? 200 : 401, {
        'set-cookie': `${SESSION}=${encodeURIComponent(login)}; Path=/; HttpOnly`,
        'content-type': 'text/html',
      });
      res.end('<p>signed in</p>');
      return;
    }
    if (url.pathname.startsWith('/interaction/')) {
      interaction(req, res).catch((error: unknown) => {
        res.writeHead(500);
        res.end(String(error));
      });
      return;
    }
    void callback(req, res);
  });

  return {
    issuer,
    signIns,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

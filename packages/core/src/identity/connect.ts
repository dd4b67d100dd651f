/**
 * `/connect/<server>/…`: where a person links their upstream account (ADR 0026). The link a
 * URL elicitation carries opens `start`, which sends the browser to the vendor's authorization
 * page (authorization code with PKCE, `openid-client`); the vendor returns it to `callback`,
 * which exchanges the code, asks the vendor who the account is, and stores the grant.
 *
 * Three things make the link safe to show, forward or replay:
 * - the flow handle in the link is sealed (owner, elicitation id, expiry) and single-use;
 * - the vendor's `callback` must arrive in the browser that opened `start` (a sealed cookie
 *   holds the PKCE verifier and `state`): a victim sent the vendor's page links nothing;
 * - the browser must prove it is the owner. For principals from API keys the operator names the
 *   upstream login each key links to, checked after the callback (a mismatch revokes the token
 *   just issued). Principals from the company's IdP sign the browser in with the same IdP first;
 *   until that step is configured their links are refused (fail closed).
 *
 * Pages name nothing the browser's user may not see: never the flow's owner, never the login a
 * key expects.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as client from 'openid-client';
import type { Logger } from '../logger.js';
import type { Grant, GrantOwner } from './grant.js';
import type { GrantStore } from './grant-store.js';
import type { Keyring } from './keyring.js';
import { grantOf } from './upstream-oauth.js';
import type { Vault } from './vault.js';

/** The vendor side of linking: its OAuth server, and who an access token is. */
export interface ConnectVendor {
  /** Shown on pages (`GitHub`). */
  readonly name: string;
  readonly oauth: client.Configuration;
  /** Who the account of a fresh access token is. */
  whoami(accessToken: string): Promise<Grant['account']>;
  /** Revokes an access token just issued (a link refused after the callback). */
  revoke(accessToken: string): Promise<void>;
}

export interface ConnectOptions {
  /** The server's name (`gatehouse-github`): the path below `/connect/`. */
  readonly server: string;
  /** GATEHOUSE_PUBLIC_URL: links and the vendor's callback URL are built on it. */
  readonly publicUrl: string;
  readonly keyring: Keyring;
  readonly vault: Vault;
  /** Where flow handles are spent (single use across replicas). */
  readonly store: GrantStore;
  readonly vendor: ConnectVendor;
  /** For principals from API keys: the upstream login each principal must link. */
  readonly expectedLogins: ReadonlyMap<string, string>;
  readonly logger: Logger;
  /** How long a link and its browser step live (default ten minutes). */
  readonly flowMs?: number;
  /** Told when a flow linked an account (for `notifications/elicitation/complete`). */
  readonly onLinked?: (owner: GrantOwner, elicitationId: string) => void;
}

/** A flow as its link carries it, sealed. */
interface Flow {
  readonly id: string;
  readonly owner: GrantOwner;
  readonly elicitationId: string;
  readonly expiresAt: number;
}

/** The browser's half of a flow, in a sealed cookie. */
interface BrowserStep {
  readonly flow: Flow;
  readonly verifier: string;
  readonly state: string;
}

export interface Connect {
  /** The link a URL elicitation carries for `owner`. */
  link(owner: GrantOwner, elicitationId: string): string;
  /** Answers a request below `/connect/<server>/`; false when the path is not one of ours. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
}

const escape = (text: string): string =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

function page(res: ServerResponse, status: number, title: string, text: string): void {
  res.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'content-security-policy': "default-src 'none'",
    'x-frame-options': 'DENY',
  });
  res.end(
    `<!doctype html><meta charset="utf-8"><title>${escape(title)}</title><h1>${escape(title)}</h1><p>${escape(text)}</p>`,
  );
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/**
 * Sealing for the flow's values, each bound to what it is for: a flow handle never opens as a
 * cookie, nor one server's as another's.
 */
function sealer(keyring: Keyring, server: string) {
  const purpose = (what: string) => `connect|${what}|${server}`;
  return {
    seal: (what: string, value: unknown): string =>
      keyring.seal(JSON.stringify(value), purpose(what)),
    open: <T>(what: string, text: string | null | undefined): T | undefined => {
      if (text === null || text === undefined) return undefined;
      const plain = keyring.open(text, purpose(what));
      if (plain === undefined) return undefined;
      try {
        return JSON.parse(plain) as T;
      } catch {
        return undefined;
      }
    },
  };
}

export function createConnect(options: ConnectOptions): Connect {
  const { server, keyring, vault, vendor, logger } = options;
  const base = new URL(`/connect/${encodeURIComponent(server)}/`, options.publicUrl);
  const callback = new URL('callback', base).href;
  const flowMs = options.flowMs ?? 600_000;
  const secure = base.protocol === 'https:';
  const cookie = `gatehouse_connect_${server.replace(/[^A-Za-z0-9_]/g, '_')}`;
  const { seal, open } = sealer(keyring, server);
  const setCookie = (res: ServerResponse, value: string, maxAgeS: number) =>
    res.setHeader(
      'set-cookie',
      `${cookie}=${value}; Path=${base.pathname}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`,
    );
  const refuse = (res: ServerResponse, status: number, text: string) =>
    page(res, status, `Not linked to ${vendor.name}`, text);
  const expired = 'This link has expired or is not valid. Ask again from your MCP client.';

  async function start(url: URL, res: ServerResponse): Promise<void> {
    const flow = open<Flow>('flow', url.searchParams.get('flow'));
    if (flow === undefined || flow.expiresAt <= Date.now()) return refuse(res, 400, expired);
    if (flow.owner.issuer !== 'api-key') {
      return refuse(
        res,
        403,
        'Linking for people signed in through the identity provider needs this server to sign the browser in with it first, which is not configured here. Nothing was linked.',
      );
    }
    if (!options.expectedLogins.has(flow.owner.subject)) {
      return refuse(
        res,
        403,
        `This server has not been told which ${vendor.name} account this API key links to. Nothing was linked; ask the server's operator.`,
      );
    }
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const step: BrowserStep = { flow, verifier, state };
    setCookie(res, seal('browser', step), Math.ceil((flow.expiresAt - Date.now()) / 1000));
    const to = client.buildAuthorizationUrl(vendor.oauth, {
      redirect_uri: callback,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    res.writeHead(302, { location: to.href, 'cache-control': 'no-store' });
    res.end();
  }

  async function finish(req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const step = open<BrowserStep>('browser', cookieOf(req, cookie));
    // The cookie goes whatever happens next: one browser step, one try.
    setCookie(res, '', 0);
    if (step === undefined || url.searchParams.get('state') !== step.state) {
      return refuse(
        res,
        400,
        'This page must be reached from the link your MCP client showed, in the same browser. Nothing was linked.',
      );
    }
    const { flow } = step;
    if (flow.expiresAt <= Date.now()) return refuse(res, 400, expired);
    if (!(await options.store.claim(flow.id, flowMs))) {
      return refuse(res, 409, 'This link was used already. Nothing more was linked.');
    }
    let tokens: client.TokenEndpointResponse;
    try {
      tokens = await client.authorizationCodeGrant(vendor.oauth, url, {
        pkceCodeVerifier: step.verifier,
        expectedState: step.state,
      });
    } catch (error) {
      logger.warn({ err: error, server }, 'linking: the vendor refused the authorization code');
      return refuse(
        res,
        502,
        `${vendor.name} did not accept the authorization. Nothing was linked.`,
      );
    }
    let account: Grant['account'];
    try {
      account = await vendor.whoami(tokens.access_token);
    } catch (error) {
      logger.warn({ err: error, server }, 'linking: the vendor did not say who the account is');
      await vendor.revoke(tokens.access_token).catch(() => undefined);
      return refuse(res, 502, `${vendor.name} did not say who you are. Nothing was linked.`);
    }
    const expected = options.expectedLogins.get(flow.owner.subject);
    if (expected === undefined || expected.toLowerCase() !== account.login.toLowerCase()) {
      await vendor.revoke(tokens.access_token).catch((error: unknown) => {
        logger.warn({ err: error, server }, 'linking: could not revoke a refused token');
      });
      return refuse(
        res,
        403,
        `The ${vendor.name} account you signed in with is not the one this link is for. Nothing was linked.`,
      );
    }
    await vault.put(flow.owner, grantOf(tokens, account));
    options.onLinked?.(flow.owner, flow.elicitationId);
    page(
      res,
      200,
      `Linked to ${vendor.name}`,
      `Linked as ${account.login}. Return to your MCP client and ask again.`,
    );
  }

  return {
    link: (owner, elicitationId) => {
      const flow: Flow = {
        id: randomBytes(16).toString('base64url'),
        owner,
        elicitationId,
        expiresAt: Date.now() + flowMs,
      };
      const url = new URL('start', base);
      url.searchParams.set('flow', seal('flow', flow));
      return url.href;
    },
    handle: async (req, res) => {
      const url = new URL(req.url ?? '/', base);
      if (!url.pathname.startsWith(base.pathname)) return false;
      const action = url.pathname.slice(base.pathname.length);
      if (req.method !== 'GET' || (action !== 'start' && action !== 'callback')) {
        page(res, 404, 'Not found', 'There is nothing here.');
        return true;
      }
      try {
        if (action === 'start') await start(url, res);
        else await finish(req, url, res);
      } catch (error) {
        // The vault or the vendor failed under us: said plainly, logged, nothing half-linked.
        logger.error({ err: error, server }, 'linking failed');
        if (!res.headersSent)
          refuse(res, 500, 'Something failed on our side. Nothing was linked; try again.');
        else res.end();
      }
      return true;
    },
  };
}

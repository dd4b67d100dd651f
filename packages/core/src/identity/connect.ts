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
 * - the browser must prove it is the owner. Principals from the company's IdP sign the browser
 *   in with the same IdP first (`signed-in` compares `iss` and `sub`; without an IdP configured
 *   their links are refused). For principals from API keys the operator names the upstream
 *   login each key links to, checked after the callback (a mismatch revokes the token just
 *   issued).
 *
 * Pages name nothing the browser's user may not see: never the flow's owner, never the login a
 * key expects.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as client from 'openid-client';
import type { Logger } from '../logger.js';
import { sanitizeText } from '../sanitize.js';
import { AccountRefusedError } from './grant.js';
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
  /** The vendor's own parameters of its authorization URL (scopes, audience, workspace). */
  readonly authorizationParameters?: Readonly<Record<string, string>> | undefined;
  /** Who the account of a fresh access token is. */
  whoami(accessToken: string): Promise<Grant['account']>;
  /**
   * Revokes an access token just issued (a link refused after the callback); absent for a
   * vendor that offers no revocation (Atlassian's 3LO).
   */
  readonly revoke?: ((accessToken: string) => Promise<void>) | undefined;
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
  /**
   * The company's IdP, as an OpenID client of it: a principal it vouched for signs the browser
   * in with it before the vendor is asked (its `iss` and `sub` must be the flow's owner's).
   * Without it such principals are refused.
   */
  readonly idp?:
    { readonly issuer: string; readonly config: () => Promise<client.Configuration> } | undefined;
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

/**
 * The browser's half of a flow, in a sealed cookie: which step it is at (signing in with the
 * IdP, or at the vendor), and that step's PKCE verifier, state and nonce.
 */
interface BrowserStep {
  readonly flow: Flow;
  readonly at: 'idp' | 'vendor';
  readonly verifier: string;
  readonly state: string;
  readonly nonce?: string;
}

/** Why a visit to the pages linked nothing (the audit's `gatehouse.refused`). */
export type ConnectRefusal =
  /** The link or the browser step expired, or was not one of ours. */
  | 'expired'
  /** The browser came without the step's cookie or state (another browser, a forged page). */
  | 'elsewhere'
  /** The link was used already. */
  | 'replayed'
  /** An API key's principal the operator named no upstream login for. */
  | 'no_login_configured'
  /** A principal from an IdP this server cannot sign the browser in with. */
  | 'no_idp'
  /** The IdP did not sign the browser in. */
  | 'idp_refused'
  /** The browser signed in to the IdP as someone else than the link's owner. */
  | 'wrong_person'
  /** The vendor did not accept the authorization code. */
  | 'vendor_refused'
  /** The vendor did not say who the account is. */
  | 'unknown_account'
  /** The vendor account is not the one the operator named for the key. */
  | 'wrong_account'
  /** The vendor account cannot act here (another site or workspace). */
  | 'account_refused'
  /** Something failed on our side (the vault, the IdP, the vendor unreachable). */
  | 'error';

/** What one visit to the pages did, for the audit trail (never a token, never a code). */
export interface ConnectOutcome {
  readonly linked: boolean;
  readonly refused?: ConnectRefusal;
  readonly step: 'start' | 'signed-in' | 'callback';
  /** Whose link it was, once it could be opened. */
  readonly owner?: GrantOwner;
  /** The vendor account linked, or refused as not the expected one. */
  readonly account?: Grant['account'];
  /** The elicitation the link answered. */
  readonly elicitationId?: string;
}

export interface Connect {
  /** The link a URL elicitation carries for `owner`. */
  link(owner: GrantOwner, elicitationId: string): string;
  /**
   * Answers a request below `/connect/<server>/`; false when the path is not one of ours. Each
   * visit that links or refuses is told to `report` (the runtime audits it).
   */
  handle(
    req: IncomingMessage,
    res: ServerResponse,
    report?: (outcome: ConnectOutcome) => void,
  ): Promise<boolean>;
}

/** A page's text: cleaned like every answer (a vendor's login among it), then HTML-escaped. */
const escape = (text: string): string =>
  sanitizeText(text).text.replace(
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

const EXPIRED = 'This link has expired or is not valid. Ask again from your MCP client.';
const ELSEWHERE =
  'This page must be reached from the link your MCP client showed, in the same browser. Nothing was linked.';

/** One visit to a page: its answer, which step, and where its outcome is told. */
interface Visit {
  readonly res: ServerResponse;
  readonly step: ConnectOutcome['step'];
  readonly report: ((outcome: ConnectOutcome) => void) | undefined;
}

/** One server's `/connect` pages. */
class ConnectPages implements Connect {
  readonly #base: URL;
  readonly #cookie: string;
  readonly #secure: boolean;
  readonly #flowMs: number;
  readonly #sealed: ReturnType<typeof sealer>;

  constructor(private readonly options: ConnectOptions) {
    this.#base = new URL(`/connect/${encodeURIComponent(options.server)}/`, options.publicUrl);
    this.#cookie = `gatehouse_connect_${options.server.replace(/[^A-Za-z0-9_]/g, '_')}`;
    this.#secure = this.#base.protocol === 'https:';
    this.#flowMs = options.flowMs ?? 600_000;
    this.#sealed = sealer(options.keyring, options.server);
  }

  link(owner: GrantOwner, elicitationId: string): string {
    const flow: Flow = {
      id: randomBytes(16).toString('base64url'),
      owner,
      elicitationId,
      expiresAt: Date.now() + this.#flowMs,
    };
    const url = new URL('start', this.#base);
    url.searchParams.set('flow', this.#sealed.seal('flow', flow));
    return url.href;
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    report?: (outcome: ConnectOutcome) => void,
  ): Promise<boolean> {
    const url = new URL(req.url ?? '/', this.#base);
    if (!url.pathname.startsWith(this.#base.pathname)) return false;
    const action = url.pathname.slice(this.#base.pathname.length);
    const run = { start: this.#start, 'signed-in': this.#signedIn, callback: this.#callback }[
      action
    ];
    if (req.method !== 'GET' || run === undefined) {
      page(res, 404, 'Not found', 'There is nothing here.');
      return true;
    }
    const visit: Visit = { res, step: action as Visit['step'], report };
    try {
      await run.call(this, req, url, visit);
    } catch (error) {
      // The vault, the IdP or the vendor failed under us: said plainly, nothing half-linked.
      this.options.logger.error({ err: error, server: this.options.server }, 'linking failed');
      if (!res.headersSent) {
        this.#refuse(
          visit,
          500,
          'Something failed on our side. Nothing was linked; try again.',
          'error',
        );
      } else res.end();
    }
    return true;
  }

  /** A page that says nothing was linked, and the refusal told to the visit's report. */
  #refuse(
    visit: Visit,
    status: number,
    text: string,
    refused: ConnectRefusal,
    about: { flow?: Flow; account?: Grant['account'] } = {},
  ): void {
    page(visit.res, status, `Not linked to ${this.options.vendor.name}`, text);
    visit.report?.({
      linked: false,
      refused,
      step: visit.step,
      ...(about.flow === undefined
        ? {}
        : { owner: about.flow.owner, elicitationId: about.flow.elicitationId }),
      ...(about.account === undefined ? {} : { account: about.account }),
    });
  }

  #setCookie(res: ServerResponse, step: BrowserStep | undefined): void {
    const value = step === undefined ? '' : this.#sealed.seal('browser', step);
    const maxAge =
      step === undefined ? 0 : Math.max(1, Math.ceil((step.flow.expiresAt - Date.now()) / 1000));
    res.setHeader(
      'set-cookie',
      `${this.#cookie}=${value}; Path=${this.#base.pathname}; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${this.#secure ? '; Secure' : ''}`,
    );
  }

  /** The browser's step, if it is at `at` and the answer's state is its own; the cookie goes. */
  #step(req: IncomingMessage, url: URL, res: ServerResponse, at: BrowserStep['at']) {
    const step = this.#sealed.open<BrowserStep>('browser', cookieOf(req, this.#cookie));
    this.#setCookie(res, undefined); // one browser step, one try
    if (step === undefined || step.at !== at || url.searchParams.get('state') !== step.state) {
      return undefined;
    }
    return step;
  }

  async #start(_req: IncomingMessage, url: URL, visit: Visit): Promise<void> {
    const { idp, vendor, expectedLogins } = this.options;
    const { res } = visit;
    const flow = this.#sealed.open<Flow>('flow', url.searchParams.get('flow'));
    if (flow === undefined || flow.expiresAt <= Date.now()) {
      return this.#refuse(visit, 400, EXPIRED, 'expired');
    }
    if (flow.owner.issuer === 'api-key') {
      if (!expectedLogins.has(flow.owner.subject)) {
        return this.#refuse(
          visit,
          403,
          `This server has not been told which ${vendor.name} account this API key links to. Nothing was linked; ask the server's operator.`,
          'no_login_configured',
          { flow },
        );
      }
      return this.#toVendor(res, flow);
    }
    if (idp === undefined || idp.issuer !== flow.owner.issuer) {
      return this.#refuse(
        visit,
        403,
        'Linking for people signed in through the identity provider needs this server to sign the browser in with it first, which is not configured here. Nothing was linked.',
        'no_idp',
        { flow },
      );
    }
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    this.#setCookie(res, { flow, at: 'idp', verifier, state, nonce });
    const to = client.buildAuthorizationUrl(await idp.config(), {
      redirect_uri: new URL('signed-in', this.#base).href,
      scope: 'openid',
      state,
      nonce,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    res.writeHead(302, { location: to.href, 'cache-control': 'no-store' });
    res.end();
  }

  /** Back from the IdP: the browser's person must be the flow's owner before the vendor is asked. */
  async #signedIn(req: IncomingMessage, url: URL, visit: Visit): Promise<void> {
    const { idp } = this.options;
    const step = this.#step(req, url, visit.res, 'idp');
    if (step === undefined || idp === undefined) {
      return this.#refuse(visit, 400, ELSEWHERE, 'elsewhere');
    }
    const { flow } = step;
    if (flow.expiresAt <= Date.now()) return this.#refuse(visit, 400, EXPIRED, 'expired', { flow });
    let claims: client.IDToken | undefined;
    try {
      const tokens = await client.authorizationCodeGrant(await idp.config(), url, {
        pkceCodeVerifier: step.verifier,
        expectedState: step.state,
        ...(step.nonce === undefined ? {} : { expectedNonce: step.nonce }),
        idTokenExpected: true,
      });
      claims = tokens.claims();
    } catch (error) {
      this.options.logger.warn(
        { err: error },
        'linking: the identity provider refused the sign-in',
      );
    }
    if (claims === undefined) {
      return this.#refuse(
        visit,
        502,
        'The identity provider did not sign you in. Nothing was linked.',
        'idp_refused',
        { flow },
      );
    }
    if (claims.iss !== flow.owner.issuer || claims.sub !== flow.owner.subject) {
      return this.#refuse(
        visit,
        403,
        'You signed in as someone other than the person this link was made for. Nothing was linked.',
        'wrong_person',
        { flow },
      );
    }
    return this.#toVendor(visit.res, flow);
  }

  /** Sends the browser to the vendor's authorization page, PKCE and state in its cookie. */
  async #toVendor(res: ServerResponse, flow: Flow): Promise<void> {
    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    this.#setCookie(res, { flow, at: 'vendor', verifier, state });
    const to = client.buildAuthorizationUrl(this.options.vendor.oauth, {
      ...this.options.vendor.authorizationParameters,
      redirect_uri: new URL('callback', this.#base).href,
      state,
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    });
    res.writeHead(302, { location: to.href, 'cache-control': 'no-store' });
    res.end();
  }

  async #callback(req: IncomingMessage, url: URL, visit: Visit): Promise<void> {
    const { vendor, logger, server } = this.options;
    const step = this.#step(req, url, visit.res, 'vendor');
    if (step === undefined) return this.#refuse(visit, 400, ELSEWHERE, 'elsewhere');
    const { flow } = step;
    if (flow.expiresAt <= Date.now()) return this.#refuse(visit, 400, EXPIRED, 'expired', { flow });
    if (!(await this.options.store.claim(flow.id, this.#flowMs))) {
      const text = 'This link was used already. Nothing more was linked.';
      return this.#refuse(visit, 409, text, 'replayed', { flow });
    }
    let tokens: client.TokenEndpointResponse;
    try {
      tokens = await client.authorizationCodeGrant(vendor.oauth, url, {
        pkceCodeVerifier: step.verifier,
        expectedState: step.state,
      });
    } catch (error) {
      logger.warn({ err: error, server }, 'linking: the vendor refused the authorization code');
      const text = `${vendor.name} did not accept the authorization. Nothing was linked.`;
      return this.#refuse(visit, 502, text, 'vendor_refused', { flow });
    }
    const account = await this.#account(tokens.access_token, flow);
    if (account === 'unknown') {
      const text = `${vendor.name} did not say who you are. Nothing was linked.`;
      return this.#refuse(visit, 502, text, 'unknown_account', { flow });
    }
    if ('refused' in account) {
      const text = `${account.refused}. Nothing was linked.`;
      return this.#refuse(visit, 403, text, 'account_refused', { flow });
    }
    if ('mismatch' in account) {
      const text = `The ${vendor.name} account you signed in with is not the one this link is for. Nothing was linked.`;
      return this.#refuse(visit, 403, text, 'wrong_account', { flow, account: account.mismatch });
    }
    await this.options.vault.put(flow.owner, grantOf(tokens, account));
    this.options.onLinked?.(flow.owner, flow.elicitationId);
    page(
      visit.res,
      200,
      `Linked to ${vendor.name}`,
      `Linked as ${account.login}. Return to your MCP client and ask again.`,
    );
    visit.report?.({
      linked: true,
      step: visit.step,
      owner: flow.owner,
      account,
      elicitationId: flow.elicitationId,
    });
  }

  /**
   * Who the fresh token's account is — or why it is not linked (the token is then revoked): the
   * vendor did not say, or an API key's principal signed in as another account than the one
   * the operator named for it.
   */
  async #account(
    accessToken: string,
    flow: Flow,
  ): Promise<Grant['account'] | 'unknown' | { mismatch: Grant['account'] } | { refused: string }> {
    const { vendor, logger, server, expectedLogins } = this.options;
    const revoke = async () =>
      vendor.revoke?.(accessToken).catch((error: unknown) => {
        logger.warn({ err: error, server }, 'linking: could not revoke a refused token');
      });
    let account: Grant['account'];
    try {
      account = await vendor.whoami(accessToken);
    } catch (error) {
      await revoke();
      if (error instanceof AccountRefusedError) return { refused: error.message };
      logger.warn({ err: error, server }, 'linking: the vendor did not say who the account is');
      return 'unknown';
    }
    if (flow.owner.issuer === 'api-key') {
      const expected = expectedLogins.get(flow.owner.subject);
      // The account's id (never renamed) or its login, as the operator wrote it.
      const named =
        expected === account.id || expected?.toLowerCase() === account.login.toLowerCase();
      if (expected === undefined || !named) {
        await revoke();
        return { mismatch: account };
      }
    }
    return account;
  }
}

export function createConnect(options: ConnectOptions): Connect {
  return new ConnectPages(options);
}

import { createHash, createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { jwtVerify } from 'jose';
import type { IncomingMessage } from 'node:http';
import { GitHubOAuth } from './github-oauth.js';
import type { GitHubOAuthOptions, UserReach } from './github-oauth.js';
import { linkPages, readJson } from './http-fake.js';
import type { FakeFailure, HttpFake, RouteContext, RouteHandler } from './http-fake.js';

/**
 * The GitHub fake's world: its repositories and who may do what in them (credentials, GitHub App
 * installations, collaborators), issues transferred away, and the route kit the route modules
 * (github-routes-*.ts) register their endpoints with.
 */

/** A comment in the fake. */
export interface FakeComment {
  id: number;
  body: string;
  user: string;
  created_at: string;
  updated_at: string;
}

/** An issue (or, with `pull_request`, a pull request) in the fake. */
export interface FakeIssue {
  number: number;
  title: string;
  body: string | null;
  state: 'open' | 'closed';
  state_reason: 'completed' | 'reopened' | 'not_planned' | 'duplicate' | null;
  labels: string[];
  assignees: string[];
  user: string;
  milestone: number | null;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  comments: FakeComment[];
  pull_request?: boolean;
  locked?: boolean;
}

/** A repository in the fake. */
export interface FakeRepo {
  owner: string;
  name: string;
  private: boolean;
  issues: FakeIssue[];
  labels: Array<{ name: string; color: string; description: string | null }>;
  milestones: Array<{
    number: number;
    title: string;
    state: 'open' | 'closed';
    description: string | null;
    due_on: string | null;
  }>;
  /** Repository files (path → UTF-8 text), for the contents API. */
  files: Record<string, string>;
  /** Login → permission; logins absent are `read` on public repos, `none` on private ones. */
  collaborators: Record<string, 'admin' | 'maintain' | 'write' | 'triage' | 'read'>;
}

/** Who a credential is, and what it reaches. */
export interface FakeCredential {
  login: string;
  /** `owner/name` of the repositories it reaches (beyond public ones); `*` for all. */
  repos: readonly string[] | '*';
  /** Classic PAT scopes, sent as X-OAuth-Scopes (fine-grained tokens send none). */
  scopes?: string;
  /**
   * The permission it has on the private repositories it reaches when it is not a listed
   * collaborator — a GitHub App installation's `issues: write` (default: none beyond read).
   */
  permission?: 'read' | 'write';
  /**
   * The repositories it may write to, when less than its permission says: a GitHub App user
   * access token writes only where the app is installed (github-oauth.ts). Absent: no limit.
   */
  writes?: readonly string[];
}

/** A canned failure for the next matching request (see {@link HttpFake}). */
export interface GitHubFakeFailure extends FakeFailure {
  /** `secondary` for a secondary rate limit (403 + retry-after), `primary` for an exhausted quota. */
  rateLimit?: 'primary' | 'secondary';
}

/** Who calls: a credential, or a GitHub App's JWT. */
export type Caller = FakeCredential | 'app';

/** Options of {@link startGitHubFake}. */
export interface GitHubFakeOptions {
  repos: FakeRepo[];
  /** Token → credential. */
  tokens?: Record<string, FakeCredential>;
  /** A GitHub App: id, its public key (PEM), installation id → credential of the bot. */
  app?: {
    id: number;
    publicKey: string | KeyObject;
    installations: Record<number, FakeCredential>;
  };
  /** The app's OAuth side: user access tokens for the users of its installations (github-oauth.ts). */
  oauth?: GitHubOAuthOptions;
  /** Mount the API below this path (`/api/v3` as on GitHub Enterprise Server). */
  prefix?: string;
  /**
   * Misbehave: search ignores `repo:`/`user:`/`org:` scoping and returns matches from every
   * repository the credential reaches (to test a server's own filtering of results).
   */
  unscopedSearch?: boolean;
}

/** The fake's clock origin: every fixed timestamp it makes. */
export const EPOCH = Date.parse('2025-01-01T00:00:00Z');

/** A stable numeric id for a name (users, labels, milestones, issues, repositories). */
export function userId(login: string): number {
  return createHash('sha256').update(login).digest().readUInt32BE(0) % 90_000_000;
}

/** The repositories, the credentials, and what each may see and do. */
export class GitHubWorld {
  /** The API's base URL, once listening. */
  base = '';
  readonly web = 'https://github.example.test';
  readonly prefix: string;
  readonly tokens: Map<string, FakeCredential>;
  readonly installationTokens = new Map<string, FakeCredential>();
  /** `owner/repo#n` → `owner/repo/issues/m` of issues transferred away. */
  readonly transfers = new Map<string, string>();
  /** Installation credentials act by their own permission on the repositories they reach. */
  readonly #granted = new Map<string, 'read' | 'write'>();
  readonly #appKey: KeyObject | undefined;
  /** User access tokens of the GitHub App, when it has an OAuth side. */
  readonly oauth: GitHubOAuth | undefined;
  #nextId = 1_000_000;

  constructor(readonly options: GitHubFakeOptions) {
    this.prefix = options.prefix ?? '';
    this.tokens = new Map(Object.entries(options.tokens ?? {}));
    const app = options.app;
    this.#appKey =
      app === undefined
        ? undefined
        : typeof app.publicKey === 'string'
          ? createPublicKey(app.publicKey)
          : app.publicKey;
    for (const cred of [...this.tokens.values(), ...Object.values(app?.installations ?? {})]) {
      if (cred.permission !== undefined) this.#granted.set(cred.login, cred.permission);
    }
    this.oauth =
      options.oauth === undefined
        ? undefined
        : new GitHubOAuth(options.oauth, (login) =>
            userReach(this.repos, Object.values(app?.installations ?? {}), login),
          );
  }

  get repos(): FakeRepo[] {
    return this.options.repos;
  }

  nextId(): number {
    return this.#nextId++;
  }

  readonly repoOf = (owner: string, name: string): FakeRepo | undefined =>
    this.options.repos.find(
      (r) =>
        r.owner.toLowerCase() === owner.toLowerCase() &&
        r.name.toLowerCase() === name.toLowerCase(),
    );

  /** `owner/name` → its repository; throws for one the fake does not hold. */
  readonly repoByName = (name: string): FakeRepo => {
    const [owner, repo] = name.split('/');
    const found = this.repoOf(owner ?? '', repo ?? '');
    if (found === undefined) throw new Error(`no repo ${name} in the fake`);
    return found;
  };

  readonly fullName = (r: FakeRepo): string => `${r.owner}/${r.name}`;

  readonly reaches = (cred: FakeCredential, r: FakeRepo): boolean =>
    !r.private || cred.repos === '*' || cred.repos.includes(this.fullName(r));

  readonly permission = (r: FakeRepo, login: string): string =>
    r.collaborators[login] ?? this.#granted.get(login) ?? (r.private ? 'none' : 'read');

  readonly canPush = (r: FakeRepo, login: string): boolean =>
    ['admin', 'maintain', 'write'].includes(this.permission(r, login));

  /** Who a request's `Authorization` is: a token's credential, or the GitHub App (a JWT). */
  readonly authenticate = async (req: IncomingMessage): Promise<Caller | undefined> => {
    const header = req.headers.authorization ?? '';
    const [scheme, value] = header.split(' ');
    if (value === undefined || !/^(token|bearer)$/i.test(scheme ?? '')) return undefined;
    const direct =
      this.tokens.get(value) ??
      this.installationTokens.get(value) ??
      this.oauth?.credentialOf(value);
    if (direct !== undefined) return direct;
    const app = this.options.app;
    if (this.#appKey !== undefined && app !== undefined && value.split('.').length === 3) {
      try {
        const { payload } = await jwtVerify(value, this.#appKey, { algorithms: ['RS256'] });
        if (String(payload.iss) === String(app.id)) return 'app';
      } catch {
        return undefined;
      }
    }
    return undefined;
  };
}

/** What a route module registers its endpoints with. */
export interface GitHubRoutes {
  readonly world: GitHubWorld;
  readonly route: (method: string, path: string, handle: RouteHandler<Caller>) => void;
  readonly send: HttpFake<Caller>['send'];
  readonly error: HttpFake<Caller>['error'];
  readonly readBody: typeof readJson;
  /** The repository the path names, reached by the caller (404 otherwise; 403 for a JWT). */
  readonly withRepo: (
    ctx: RouteContext<Caller>,
    then: (r: FakeRepo, cred: FakeCredential) => Promise<void> | void,
  ) => Promise<void> | void;
  /**
   * Whether the credential may write to the repository; if not, GitHub's 403 is sent (a user
   * access token outside the app's installations) and false returned.
   */
  readonly writable: (ctx: RouteContext<Caller>, r: FakeRepo, cred: FakeCredential) => boolean;
  /** Slices a list by page/per_page and builds GitHub's Link header. */
  readonly paginate: <T>(url: URL, items: T[]) => { page: T[]; headers: Record<string, string> };
}

export function githubRoutes(world: GitHubWorld, http: HttpFake<Caller>): GitHubRoutes {
  const send = http.send.bind(http);
  const error = http.error.bind(http);
  return {
    world,
    route: (method, path, handle) => http.route(method, path, handle),
    send,
    error,
    readBody: readJson,
    withRepo: (ctx, then) => {
      const [owner, name] = ctx.params.map(decodeURIComponent);
      const r = world.repoOf(owner ?? '', name ?? '');
      if (ctx.cred === 'app')
        return error(
          ctx.res,
          ctx.meta,
          403,
          'A JSON web token cannot be used to access this resource',
        );
      if (r === undefined || !world.reaches(ctx.cred, r))
        return error(ctx.res, ctx.meta, 404, 'Not Found');
      return then(r, ctx.cred);
    },
    writable: (ctx, r, cred) => {
      if (cred.writes === undefined || cred.writes.includes(world.fullName(r))) return true;
      error(ctx.res, ctx.meta, 403, 'Resource not accessible by integration');
      return false;
    },
    paginate: (url, items) => linkPages(url, world.base, items, { pathPrefix: world.prefix }),
  };
}

/**
 * What a user access token reaches: what both the app and the user can access [generate: "a
 * user access token can only access resources that both the user and app can access"] — public
 * repositories, and the private ones of the app's installations where the user is a
 * collaborator; and where it may write: the app's installations only (the app's `issues: write`
 * holds there and nowhere else; GitHub answers 403 "Resource not accessible by integration").
 */
export function userReach(
  repos: readonly FakeRepo[],
  installations: readonly FakeCredential[],
  login: string,
): UserReach {
  const installed = repos.filter((r) =>
    installations.some((i) => i.repos === '*' || i.repos.includes(`${r.owner}/${r.name}`)),
  );
  return {
    repos: installed
      .filter((r) => r.private && r.collaborators[login] !== undefined)
      .map((r) => `${r.owner}/${r.name}`),
    writes: installed.map((r) => `${r.owner}/${r.name}`),
  };
}

import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { HttpFake } from './http-fake.js';
import type { FakeResponse } from './http-fake.js';
import { accountRoutes } from './github-routes-account.js';
import { oauthRoutes } from './github-routes-oauth.js';
import type { GitHubOAuth, GitHubOAuthOptions } from './github-oauth.js';
import { githubSeed } from './github-seed.js';
import { issueRoutes } from './github-routes-issues.js';
import { repoRoutes } from './github-routes-repo.js';
import { searchRoutes } from './github-routes-search.js';
import { githubShapes } from './github-shapes.js';
import { GitHubWorld, githubRoutes } from './github-world.js';
import type { Caller, FakeRepo, GitHubFakeFailure, GitHubFakeOptions } from './github-world.js';

export type { FakeResponse } from './http-fake.js';

/**
 * A loopback GitHub REST API for tests: the issues, comments, labels, milestones, search,
 * contents, collaborator-permission, user and repository endpoints a Gatehouse server uses,
 * with GitHub's behaviour (Link pagination, 401/403/404/422 bodies, primary and secondary rate
 * limits, installation tokens for GitHub Apps, and — with `oauth` — a GitHub App's user access
 * tokens: the web flow with PKCE, expiry, rotation, revocation, each user's own reach; see
 * github-oauth.ts). Every API response is recorded with its OpenAPI
 * path so tests can validate the bodies against GitHub's published description
 * (`validateGitHubResponses`).
 *
 * The fake is its world (github-world.ts: repositories, credentials, permissions), the shapes of
 * its answers (github-shapes.ts) and route modules that register their endpoints on it
 * (github-routes-*.ts); this file puts them together.
 */

/** A running fake. */
export interface GitHubFake {
  /** Base URL for Octokit (`baseUrl`). */
  readonly url: string;
  readonly repos: FakeRepo[];
  /** Every request, as `METHOD /path?query`. */
  readonly requests: string[];
  readonly responses: FakeResponse[];
  /** Queue a failure for the next matching request(s). */
  fail(failure: GitHubFakeFailure): void;
  /** Drops every failure still queued. */
  clearFailures(): void;
  /**
   * Transfers an issue to another repository, as GitHub does: the issue gets a number there,
   * and requests for the old one are answered `301 Moved Permanently` with its new address.
   * Returns the new number.
   */
  transfer(from: string, number: number, to: string): number;
  repo(fullName: string): FakeRepo;
  /**
   * The GitHub App's user access tokens, when `oauth` is configured: its clock (`advance`),
   * sign-in (`signIn`) and every grant issued. The web pages answer at the server's root
   * (`rootUrl`), the API below `url`.
   */
  readonly oauth: GitHubOAuth | undefined;
  /** The server's root: where GitHub's web pages (`/login/oauth/…`) answer. */
  readonly rootUrl: string;
  close(): Promise<void>;
}

/** Starts the fake on 127.0.0.1 (random port). */
export async function startGitHubFake(options: GitHubFakeOptions): Promise<GitHubFake> {
  const world = new GitHubWorld(options);
  const http = new HttpFake<Caller>({
    prefix: world.prefix,
    authenticate: world.authenticate,
    errorBody: (status, message) => ({
      message,
      documentation_url: 'https://docs.github.com/rest',
      status: String(status),
    }),
    failureMessage: (status) => (status >= 500 ? 'Server Error' : 'Failure injected by the test'),
    headers: (meta) => ({
      'x-github-request-id': randomBytes(6).toString('hex').toUpperCase(),
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': '4999',
      'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
      'x-ratelimit-used': '1',
      'x-ratelimit-resource': meta.route === '/search/issues' ? 'search' : 'core',
    }),
    rateLimitReply: (failure) =>
      failure.rateLimit === 'secondary'
        ? {
            message:
              'You have exceeded a secondary rate limit. Please wait a few minutes before you try again.',
            headers: { 'retry-after': String(failure.retryAfter ?? 60) },
          }
        : {
            message: 'API rate limit exceeded for user.',
            headers: {
              'x-ratelimit-remaining': '0',
              'x-ratelimit-reset': String(
                Math.floor(Date.now() / 1000) + (failure.retryAfter ?? 60),
              ),
            },
          },
    // `{path}` (contents) spans slashes; every other parameter is one segment.
    multiSegment: ['path'],
  });
  const api = githubRoutes(world, http);
  const shapes = githubShapes(world);
  accountRoutes(api, shapes);
  repoRoutes(api, shapes);
  issueRoutes(api, shapes);
  searchRoutes(api, shapes);
  oauthRoutes(world, http);
  world.base = await http.listen();

  return {
    url: world.base,
    repos: options.repos,
    requests: http.requests,
    responses: http.responses,
    fail: (failure) => http.fail(failure),
    clearFailures: () => http.clearFailures(),
    transfer: (from, number, to) => {
      const source = world.repoByName(from);
      const target = world.repoByName(to);
      const index = source.issues.findIndex((i) => i.number === number);
      if (index === -1) throw new Error(`no issue ${from}#${number} in the fake`);
      const [issue] = source.issues.splice(index, 1);
      const moved = Math.max(0, ...target.issues.map((i) => i.number)) + 1;
      target.issues.push({ ...issue!, number: moved });
      world.transfers.set(`${from}#${number}`, `${to}/issues/${moved}`);
      return moved;
    },
    repo: (name): FakeRepo => world.repoByName(name),
    oauth: world.oauth,
    rootUrl: world.base.slice(0, world.base.length - world.prefix.length),
    close: () => http.close(),
  };
}

/**
 * The fake with a GitHub App whose users sign in through its OAuth side (github-oauth.ts): the
 * seed's repositories (or `repos`), the app installed on `installed` (default `acme/api`), and
 * `oauth.users` able to sign in. The app's own key is made here (its JWTs are not used).
 */
export async function startGitHubAppFake(options: {
  readonly oauth: GitHubOAuthOptions;
  readonly installed?: readonly string[];
  readonly repos?: FakeRepo[];
  /** Personal access tokens besides the app's (a service credential). */
  readonly tokens?: GitHubFakeOptions['tokens'];
}): Promise<GitHubFake> {
  const { publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return startGitHubFake({
    repos: options.repos ?? githubSeed(),
    app: {
      id: 4242,
      publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      installations: {
        77: { login: 'gatehouse[bot]', repos: [...(options.installed ?? ['acme/api'])] },
      },
    },
    oauth: options.oauth,
    ...(options.tokens === undefined ? {} : { tokens: options.tokens }),
  });
}

import { randomUUID } from 'node:crypto';
import { HttpFake } from './http-fake.js';
import { AtlassianOAuth, atlassianOAuthRoutes } from './jira-oauth.js';
import type { FakeFailure, FakeResponse } from './http-fake.js';
import { accountRoutes } from './jira-routes-account.js';
import { issueRoutes } from './jira-routes-issues.js';
import { projectRoutes } from './jira-routes-projects.js';
import { searchRoutes } from './jira-routes-search.js';
import { jiraShapes } from './jira-shapes.js';
import { JiraSite, jiraRoutes } from './jira-site.js';
import type { FakeJiraIssue, JiraCaller, JiraFakeOptions, JiraWorld } from './jira-site.js';

/**
 * A loopback Jira Cloud REST v3 for tests, on the testkit's fake framework: the current user,
 * permissions per project, `/search/jql` with page tokens over a JQL subset it really evaluates
 * (`jira-jql.ts`), `/jql/parse`, issues (by a key that moved, too), comments, users, and Jira's
 * error bodies (`errorMessages`, `errors`). Run the real jira.js client against it with
 * `onSchemaMismatch: 'throw'` and `AUDIT_SCHEMAS=true` and every response is checked against
 * jira.js's schemas, generated from Jira's own specification.
 *
 * The fake is its site (jira-site.ts: the world, credentials, permissions, search's lag), the
 * shapes of its answers (jira-shapes.ts) and route modules that register their endpoints on it
 * (jira-routes-*.ts); this file puts them together.
 */

export interface JiraFake {
  /** The site URL (`host` for jira.js). */
  readonly url: string;
  readonly world: JiraWorld;
  readonly requests: string[];
  readonly responses: FakeResponse[];
  /** Every JQL query the fake evaluated, as received. */
  readonly queries: string[];
  /** ADF documents sent to it that break the official ADF schema (they were refused). */
  readonly adfProblems: string[];
  fail(failure: FakeFailure): void;
  /** Drops every failure still queued. */
  clearFailures(): void;
  issue(key: string): FakeJiraIssue;
  /** Moves an issue to another project, as Jira does: a new key, the old one still resolves. */
  move(key: string, project: string): string;
  /** Lets search see every write made so far (ends the `searchLagMs` of each). */
  settle(): void;
  /** The properties on an account's user record (key → value), as the REST API keeps them. */
  userProperties(accountId: string): Map<string, unknown>;
  /** The 3LO app's tokens, when `oauth` is configured: its clock, sign-in and grants. */
  readonly oauth: AtlassianOAuth | undefined;
  /** Where Atlassian's sign-in, authorize and token endpoints and its gateway answer (the same host). */
  readonly rootUrl: string;
  /** The site's cloud id: its requests through the gateway go to `/ex/jira/{cloudId}/…`. */
  readonly cloudId: string;
  close(): Promise<void>;
}

export async function startJiraFake(options: JiraFakeOptions): Promise<JiraFake> {
  const site = new JiraSite(options);
  const oauth = options.oauth === undefined ? undefined : new AtlassianOAuth(options.oauth);
  const cloudId = randomUUID();
  const gateway = `/ex/jira/${cloudId}/`;
  const http = new HttpFake<JiraCaller>({
    authenticate: (req) => {
      const c = site.credentialOf(req);
      if (c !== undefined) return { accountId: c.accountId };
      // A 3LO token is taken through the gateway only, never at the site's own address [3lo].
      const holder = req.url?.startsWith(gateway) === true ? oauth?.bearerHolder(req) : undefined;
      return holder === undefined ? undefined : { accountId: holder };
    },
    // The gateway's `/ex/jira/{cloudId}/rest/…` is the site's `/rest/…`, for its cloud id only.
    rewrite: (path) =>
      path.startsWith(gateway)
        ? `/${path.slice(gateway.length)}`
        : path.startsWith('/ex/')
          ? '/ex'
          : undefined,
    errorBody: (_status, message) => ({ errorMessages: [message], errors: {} }),
    failureMessage: (status) =>
      status >= 500 ? 'Internal server error' : 'Failure injected by the test',
    headers: () => ({ 'atl-traceid': Math.random().toString(16).slice(2) }),
    rateLimitReply: (failure) => ({
      message: 'Rate limit exceeded.',
      headers: {
        'retry-after': String(failure.retryAfter ?? 30),
        'x-ratelimit-reason': 'jira-quota-global-based',
      },
    }),
    unauthorized: 'Client must be authenticated to access this resource.',
  });
  const api = jiraRoutes(site, http);
  const shapes = jiraShapes(site);
  accountRoutes(api, shapes);
  searchRoutes(api, shapes);
  issueRoutes(api, shapes);
  projectRoutes(api);
  if (oauth !== undefined) {
    atlassianOAuthRoutes(http, oauth, {
      cloudId,
      url: () => site.base,
      profile: (accountId) => {
        const u = site.world.users.find((x) => x.accountId === accountId);
        return u === undefined
          ? undefined
          : {
              account_id: u.accountId,
              ...(u.emailAddress === undefined ? {} : { email: u.emailAddress }),
              name: u.displayName,
              nickname: u.displayName.split(' ')[0]!,
              picture: `${site.base}/avatar/${u.accountId}.png`,
              account_status: 'active',
              account_type: 'atlassian',
            };
      },
    });
  }
  site.base = await http.listen();
  return {
    url: site.base,
    world: site.world,
    requests: http.requests,
    responses: http.responses,
    queries: site.queries,
    adfProblems: site.adfProblems,
    fail: (f) => http.fail(f),
    clearFailures: () => http.clearFailures(),
    issue: (key) => {
      const i = site.findIssue(key);
      if (i === undefined) throw new Error(`no issue ${key} in the fake`);
      return i;
    },
    move: (key, project) => {
      const i = site.findIssue(key)!;
      const n =
        Math.max(
          0,
          ...site.world.issues
            .filter((x) => x.key.startsWith(`${project}-`))
            .map((x) => Number(x.key.split('-')[1])),
        ) + 1;
      site.writing(i);
      i.previousKeys = [...(i.previousKeys ?? []), i.key];
      i.key = `${project}-${n}`;
      return i.key;
    },
    settle: () => site.settle(),
    userProperties: (accountId) => site.userRecord(accountId),
    oauth,
    rootUrl: site.base,
    cloudId,
    close: () => http.close(),
  };
}

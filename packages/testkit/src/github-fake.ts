import type { IncomingMessage } from 'node:http';
import { createHash, createPublicKey, randomBytes } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { jwtVerify } from 'jose';
import { HttpFake, linkPages, readJson } from './http-fake.js';
import type { FakeFailure, FakeResponse, RouteContext, RouteHandler } from './http-fake.js';

export type { FakeResponse } from './http-fake.js';

/**
 * A loopback GitHub REST API for tests: the issues, comments, labels, milestones, search,
 * contents, collaborator-permission, user and repository endpoints a Gatehouse server uses,
 * with GitHub's behaviour (Link pagination, 401/403/404/422 bodies, primary and secondary rate
 * limits, installation tokens for GitHub Apps). Every response is recorded with its OpenAPI
 * path so tests can validate the bodies against GitHub's published description
 * (`validateGitHubResponses`).
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
}

/** A canned failure for the next matching request (see {@link HttpFake}). */
export interface GitHubFakeFailure extends FakeFailure {
  /** `secondary` for a secondary rate limit (403 + retry-after), `primary` for an exhausted quota. */
  rateLimit?: 'primary' | 'secondary';
}

/** Who calls: a credential, or a GitHub App's JWT. */
type Caller = FakeCredential | 'app';

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
  /** Mount the API below this path (`/api/v3` as on GitHub Enterprise Server). */
  prefix?: string;
  /**
   * Misbehave: search ignores `repo:`/`user:`/`org:` scoping and returns matches from every
   * repository the credential reaches (to test a server's own filtering of results).
   */
  unscopedSearch?: boolean;
}

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
  close(): Promise<void>;
}

const EPOCH = Date.parse('2025-01-01T00:00:00Z');

function userId(login: string): number {
  return createHash('sha256').update(login).digest().readUInt32BE(0) % 90_000_000;
}

function simpleUser(api: string, web: string, login: string) {
  const id = userId(login);
  const bot = login.endsWith('[bot]');
  const l = encodeURIComponent(login);
  return {
    login,
    id,
    node_id: Buffer.from(`04:User${id}`).toString('base64'),
    avatar_url: `https://avatars.example.test/u/${id}?v=4`,
    gravatar_id: '',
    url: `${api}/users/${l}`,
    html_url: `${web}/${l}`,
    followers_url: `${api}/users/${l}/followers`,
    following_url: `${api}/users/${l}/following{/other_user}`,
    gists_url: `${api}/users/${l}/gists{/gist_id}`,
    starred_url: `${api}/users/${l}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/users/${l}/subscriptions`,
    organizations_url: `${api}/users/${l}/orgs`,
    repos_url: `${api}/users/${l}/repos`,
    events_url: `${api}/users/${l}/events{/privacy}`,
    received_events_url: `${api}/users/${l}/received_events`,
    type: bot ? 'Bot' : 'User',
    user_view_type: 'public',
    site_admin: false,
  };
}

/** Parses a search query: qualifiers (`key:value`, `key:"a b"`, `-key:v`), phrases and words. */
export function parseSearchQuery(q: string): {
  qualifiers: Array<{ key: string; value: string; negated: boolean }>;
  terms: string[];
} {
  const qualifiers: Array<{ key: string; value: string; negated: boolean }> = [];
  const terms: string[] = [];
  const pattern = /(-?)([a-z-]+):(?:"([^"]*)"|(\S+))|"([^"]*)"|(\S+)/gi;
  for (const m of q.matchAll(pattern)) {
    if (m[2] !== undefined) {
      qualifiers.push({
        key: m[2].toLowerCase(),
        value: m[3] ?? m[4] ?? '',
        negated: m[1] === '-',
      });
    } else {
      const term = m[5] ?? m[6] ?? '';
      if (term !== '' && !/^(AND|OR|NOT)$/.test(term)) terms.push(term.toLowerCase());
    }
  }
  return { qualifiers, terms };
}

/** Starts the fake on 127.0.0.1 (random port). */
export async function startGitHubFake(options: GitHubFakeOptions): Promise<GitHubFake> {
  const prefix = options.prefix ?? '';
  const tokens = new Map(Object.entries(options.tokens ?? {}));
  const grant = (cred: FakeCredential) => {
    if (cred.permission !== undefined) granted.set(cred.login, cred.permission);
  };
  const installationTokens = new Map<string, FakeCredential>();
  let nextId = 1_000_000;
  const appKey =
    options.app === undefined
      ? undefined
      : typeof options.app.publicKey === 'string'
        ? createPublicKey(options.app.publicKey)
        : options.app.publicKey;
  let base = '';
  const web = 'https://github.example.test';

  const repoOf = (owner: string, name: string) =>
    options.repos.find(
      (r) =>
        r.owner.toLowerCase() === owner.toLowerCase() &&
        r.name.toLowerCase() === name.toLowerCase(),
    );
  const fullName = (r: FakeRepo) => `${r.owner}/${r.name}`;
  const reaches = (cred: FakeCredential, r: FakeRepo) =>
    !r.private || cred.repos === '*' || cred.repos.includes(fullName(r));
  // Installation credentials act by their own permission on the repositories they reach.
  const granted = new Map<string, 'read' | 'write'>();
  const permission = (r: FakeRepo, login: string) => {
    const viaCredential = granted.get(login);
    return r.collaborators[login] ?? viaCredential ?? (r.private ? 'none' : 'read');
  };
  const canPush = (r: FakeRepo, login: string) =>
    ['admin', 'maintain', 'write'].includes(permission(r, login));

  const labelObj = (r: FakeRepo, name: string) => {
    const l = r.labels.find((x) => x.name === name) ?? { name, color: 'ededed', description: null };
    const id = userId(`${fullName(r)}#label:${name}`);
    return {
      id,
      node_id: Buffer.from(`LA_${id}`).toString('base64'),
      url: `${base}/repos/${fullName(r)}/labels/${encodeURIComponent(name)}`,
      name,
      description: l.description,
      color: l.color,
      default: false,
    };
  };
  const milestoneObj = (r: FakeRepo, number: number | null) => {
    const m = r.milestones.find((x) => x.number === number);
    if (m === undefined) return null;
    const inMilestone = r.issues.filter((i) => i.milestone === m.number && !i.pull_request);
    const id = userId(`${fullName(r)}#milestone:${m.number}`);
    return {
      url: `${base}/repos/${fullName(r)}/milestones/${m.number}`,
      html_url: `${web}/${fullName(r)}/milestone/${m.number}`,
      labels_url: `${base}/repos/${fullName(r)}/milestones/${m.number}/labels`,
      id,
      node_id: Buffer.from(`MI_${id}`).toString('base64'),
      number: m.number,
      state: m.state,
      title: m.title,
      description: m.description,
      creator: simpleUser(base, web, r.owner),
      open_issues: inMilestone.filter((i) => i.state === 'open').length,
      closed_issues: inMilestone.filter((i) => i.state === 'closed').length,
      created_at: new Date(EPOCH).toISOString(),
      updated_at: new Date(EPOCH).toISOString(),
      closed_at: null,
      due_on: m.due_on,
    };
  };
  const association = (r: FakeRepo, login: string) =>
    login === r.owner ? 'OWNER' : r.collaborators[login] !== undefined ? 'COLLABORATOR' : 'NONE';
  const issueObj = (r: FakeRepo, i: FakeIssue) => {
    const id = userId(`${fullName(r)}#${i.number}`);
    const url = `${base}/repos/${fullName(r)}/issues/${i.number}`;
    return {
      id,
      node_id: Buffer.from(`I_${id}`).toString('base64'),
      url,
      repository_url: `${base}/repos/${fullName(r)}`,
      labels_url: `${url}/labels{/name}`,
      comments_url: `${url}/comments`,
      events_url: `${url}/events`,
      html_url: `${web}/${fullName(r)}/${i.pull_request ? 'pull' : 'issues'}/${i.number}`,
      number: i.number,
      state: i.state,
      state_reason: i.state_reason,
      title: i.title,
      body: i.body,
      user: simpleUser(base, web, i.user),
      labels: i.labels.map((l) => labelObj(r, l)),
      assignee: i.assignees[0] === undefined ? null : simpleUser(base, web, i.assignees[0]),
      assignees: i.assignees.map((a) => simpleUser(base, web, a)),
      milestone: milestoneObj(r, i.milestone),
      locked: i.locked ?? false,
      active_lock_reason: null,
      comments: i.comments.length,
      ...(i.pull_request
        ? {
            pull_request: {
              url: `${base}/repos/${fullName(r)}/pulls/${i.number}`,
              html_url: `${web}/${fullName(r)}/pull/${i.number}`,
              diff_url: `${web}/${fullName(r)}/pull/${i.number}.diff`,
              patch_url: `${web}/${fullName(r)}/pull/${i.number}.patch`,
              merged_at: null,
            },
          }
        : {}),
      closed_at: i.closed_at,
      created_at: i.created_at,
      updated_at: i.updated_at,
      author_association: association(r, i.user),
      reactions: {
        url: `${url}/reactions`,
        total_count: 0,
        '+1': 0,
        '-1': 0,
        laugh: 0,
        confused: 0,
        heart: 0,
        hooray: 0,
        eyes: 0,
        rocket: 0,
      },
    };
  };
  const commentObj = (r: FakeRepo, i: FakeIssue, c: FakeComment) => ({
    id: c.id,
    node_id: Buffer.from(`IC_${c.id}`).toString('base64'),
    url: `${base}/repos/${fullName(r)}/issues/comments/${c.id}`,
    html_url: `${web}/${fullName(r)}/issues/${i.number}#issuecomment-${c.id}`,
    body: c.body,
    user: simpleUser(base, web, c.user),
    created_at: c.created_at,
    updated_at: c.updated_at,
    issue_url: `${base}/repos/${fullName(r)}/issues/${i.number}`,
    author_association: association(r, c.user),
  });
  const repositoryObj = (r: FakeRepo, login: string) => {
    const id = userId(`repo:${fullName(r)}`);
    const api = `${base}/repos/${fullName(r)}`;
    const perm = permission(r, login);
    const level = ['read', 'triage', 'write', 'maintain', 'admin'].indexOf(perm);
    return {
      id,
      node_id: Buffer.from(`R_${id}`).toString('base64'),
      name: r.name,
      full_name: fullName(r),
      owner: simpleUser(base, web, r.owner),
      private: r.private,
      html_url: `${web}/${fullName(r)}`,
      description: null,
      fork: false,
      url: api,
      archive_url: `${api}/{archive_format}{/ref}`,
      assignees_url: `${api}/assignees{/user}`,
      blobs_url: `${api}/git/blobs{/sha}`,
      branches_url: `${api}/branches{/branch}`,
      collaborators_url: `${api}/collaborators{/collaborator}`,
      comments_url: `${api}/comments{/number}`,
      commits_url: `${api}/commits{/sha}`,
      compare_url: `${api}/compare/{base}...{head}`,
      contents_url: `${api}/contents/{+path}`,
      contributors_url: `${api}/contributors`,
      deployments_url: `${api}/deployments`,
      downloads_url: `${api}/downloads`,
      events_url: `${api}/events`,
      forks_url: `${api}/forks`,
      git_commits_url: `${api}/git/commits{/sha}`,
      git_refs_url: `${api}/git/refs{/sha}`,
      git_tags_url: `${api}/git/tags{/sha}`,
      git_url: `git://github.example.test/${fullName(r)}.git`,
      issue_comment_url: `${api}/issues/comments{/number}`,
      issue_events_url: `${api}/issues/events{/number}`,
      issues_url: `${api}/issues{/number}`,
      keys_url: `${api}/keys{/key_id}`,
      labels_url: `${api}/labels{/name}`,
      languages_url: `${api}/languages`,
      merges_url: `${api}/merges`,
      milestones_url: `${api}/milestones{/number}`,
      notifications_url: `${api}/notifications{?since,all,participating}`,
      pulls_url: `${api}/pulls{/number}`,
      releases_url: `${api}/releases{/id}`,
      ssh_url: `git@github.example.test:${fullName(r)}.git`,
      stargazers_url: `${api}/stargazers`,
      statuses_url: `${api}/statuses/{sha}`,
      subscribers_url: `${api}/subscribers`,
      subscription_url: `${api}/subscription`,
      tags_url: `${api}/tags`,
      teams_url: `${api}/teams`,
      trees_url: `${api}/git/trees{/sha}`,
      clone_url: `${web}/${fullName(r)}.git`,
      mirror_url: null,
      hooks_url: `${api}/hooks`,
      svn_url: `${web}/${fullName(r)}`,
      homepage: null,
      language: 'TypeScript',
      forks_count: 0,
      forks: 0,
      stargazers_count: 0,
      watchers_count: 0,
      watchers: 0,
      size: 1,
      default_branch: 'main',
      open_issues_count: r.issues.filter((i) => i.state === 'open').length,
      open_issues: r.issues.filter((i) => i.state === 'open').length,
      is_template: false,
      topics: [],
      has_issues: true,
      has_projects: false,
      has_wiki: false,
      has_pages: false,
      has_downloads: false,
      has_discussions: false,
      archived: false,
      disabled: false,
      visibility: r.private ? 'private' : 'public',
      pushed_at: new Date(EPOCH).toISOString(),
      created_at: new Date(EPOCH).toISOString(),
      updated_at: new Date(EPOCH).toISOString(),
      permissions: {
        admin: level >= 4,
        maintain: level >= 3,
        push: level >= 2,
        triage: level >= 1,
        pull: level >= 0,
      },
      license: null,
      network_count: 0,
      subscribers_count: 0,
    };
  };

  /** Slices a list by page/per_page and builds GitHub's Link header. */
  const paginate = <T>(url: URL, items: T[]) => linkPages(url, base, items, { pathPrefix: prefix });
  const readBody = readJson;

  const authenticate = async (
    req: IncomingMessage,
  ): Promise<FakeCredential | 'app' | undefined> => {
    const header = req.headers.authorization ?? '';
    const [scheme, value] = header.split(' ');
    if (value === undefined || !/^(token|bearer)$/i.test(scheme ?? '')) return undefined;
    const direct = tokens.get(value) ?? installationTokens.get(value);
    if (direct !== undefined) return direct;
    if (appKey !== undefined && options.app !== undefined && value.split('.').length === 3) {
      try {
        const { payload } = await jwtVerify(value, appKey, { algorithms: ['RS256'] });
        if (String(payload.iss) === String(options.app.id)) return 'app';
      } catch {
        return undefined;
      }
    }
    return undefined;
  };

  const http = new HttpFake<Caller>({
    prefix,
    authenticate,
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
  const send = http.send.bind(http);
  const error = http.error.bind(http);

  const route = (method: string, path: string, handle: RouteHandler<Caller>): void =>
    http.route(method, path, handle);

  const withRepo = (
    ctx: RouteContext<Caller>,
    then: (r: FakeRepo, cred: FakeCredential) => Promise<void> | void,
  ) => {
    const [owner, name] = ctx.params.map(decodeURIComponent);
    const r = repoOf(owner ?? '', name ?? '');
    if (ctx.cred === 'app')
      return error(
        ctx.res,
        ctx.meta,
        403,
        'A JSON web token cannot be used to access this resource',
      );
    if (r === undefined || !reaches(ctx.cred, r)) return error(ctx.res, ctx.meta, 404, 'Not Found');
    return then(r, ctx.cred);
  };
  const issueIn = (r: FakeRepo, number: string | undefined) =>
    r.issues.find((i) => i.number === Number(number));
  /** `owner/repo#n` → `owner/repo/issues/m` of issues transferred away. */
  const transfers = new Map<string, string>();

  for (const cred of tokens.values()) grant(cred);
  for (const cred of Object.values(options.app?.installations ?? {})) grant(cred);

  route('GET', '/user', ({ res, cred, meta }) => {
    if (cred === 'app')
      return error(res, meta, 403, 'A JSON web token cannot be used to access this resource');
    send(
      res,
      meta,
      200,
      {
        ...simpleUser(base, web, cred.login),
        user_view_type: 'private',
        name: cred.login,
        company: null,
        blog: '',
        location: null,
        email: null,
        hireable: null,
        bio: null,
        twitter_username: null,
        public_repos: 0,
        public_gists: 0,
        followers: 0,
        following: 0,
        created_at: new Date(EPOCH).toISOString(),
        updated_at: new Date(EPOCH).toISOString(),
        private_gists: 0,
        total_private_repos: 0,
        owned_private_repos: 0,
        disk_usage: 0,
        collaborators: 0,
        two_factor_authentication: true,
      },
      cred.scopes === undefined ? {} : { 'x-oauth-scopes': cred.scopes },
    );
  });

  route(
    'POST',
    '/app/installations/{installation_id}/access_tokens',
    ({ res, cred, params, meta }) => {
      if (cred !== 'app') return error(res, meta, 401, 'A JSON web token could not be decoded');
      const installation = options.app?.installations[Number(params[0])];
      if (installation === undefined) return error(res, meta, 404, 'Not Found');
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      installationTokens.set(token, installation);
      send(res, meta, 201, {
        token,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        permissions: { issues: 'write', metadata: 'read', contents: 'read' },
        repository_selection: 'selected',
      });
    },
  );

  route('GET', '/repos/{owner}/{repo}', (ctx) =>
    withRepo(ctx, (r, cred) => send(ctx.res, ctx.meta, 200, repositoryObj(r, cred.login))),
  );

  route('GET', '/repos/{owner}/{repo}/issues', (ctx) =>
    withRepo(ctx, (r) => {
      const q = ctx.url.searchParams;
      const state = q.get('state') ?? 'open';
      const labels = (q.get('labels') ?? '').split(',').filter((l) => l !== '');
      const assignee = q.get('assignee');
      const creator = q.get('creator');
      const mentioned = q.get('mentioned');
      const milestone = q.get('milestone');
      const since = q.get('since');
      const sort = q.get('sort') ?? 'created';
      const direction = q.get('direction') ?? 'desc';
      let items = r.issues.filter(
        (i) =>
          (state === 'all' || i.state === state) &&
          labels.every((l) => i.labels.includes(l)) &&
          (assignee === null ||
            (assignee === 'none'
              ? i.assignees.length === 0
              : assignee === '*'
                ? i.assignees.length > 0
                : i.assignees.includes(assignee))) &&
          (creator === null || i.user === creator) &&
          (mentioned === null || (i.body ?? '').includes(`@${mentioned}`)) &&
          (milestone === null ||
            (milestone === 'none'
              ? i.milestone === null
              : milestone === '*'
                ? i.milestone !== null
                : i.milestone === Number(milestone))) &&
          (since === null || i.updated_at >= since),
      );
      const key = (i: FakeIssue) =>
        sort === 'updated'
          ? i.updated_at
          : sort === 'comments'
            ? String(i.comments.length).padStart(8, '0')
            : i.created_at;
      items = [...items].sort((a, b) =>
        key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : a.number - b.number,
      );
      if (direction === 'desc') items.reverse();
      const { page, headers } = paginate(ctx.url, items);
      send(
        ctx.res,
        ctx.meta,
        200,
        page.map((i) => issueObj(r, i)),
        headers,
      );
    }),
  );

  route('POST', '/repos/{owner}/{repo}/issues', (ctx) =>
    withRepo(ctx, async (r, cred) => {
      const body = await readBody(ctx.req);
      if (!canPush(r, cred.login) && permission(r, cred.login) === 'none') {
        return error(ctx.res, ctx.meta, 404, 'Not Found');
      }
      if (typeof body.title !== 'string' || body.title === '') {
        return error(ctx.res, ctx.meta, 422, 'Validation Failed', {
          errors: [{ resource: 'Issue', code: 'missing_field', field: 'title' }],
        });
      }
      const assignees = (body.assignees as string[] | undefined) ?? [];
      const unknown = assignees.filter((a) => !canPush(r, a) && a !== r.owner);
      if (unknown.length > 0) {
        return error(ctx.res, ctx.meta, 422, 'Validation Failed', {
          errors: [{ value: unknown[0], resource: 'Issue', field: 'assignees', code: 'invalid' }],
        });
      }
      const push = canPush(r, cred.login);
      const now = new Date().toISOString();
      const issue: FakeIssue = {
        number: Math.max(0, ...r.issues.map((i) => i.number)) + 1,
        title: body.title,
        body: typeof body.body === 'string' ? body.body : null,
        state: 'open',
        state_reason: null,
        // Without push access GitHub silently drops labels, assignees and milestone.
        labels: push ? ((body.labels as string[] | undefined) ?? []) : [],
        assignees: push ? assignees : [],
        user: cred.login,
        milestone: push && typeof body.milestone === 'number' ? body.milestone : null,
        created_at: now,
        updated_at: now,
        closed_at: null,
        comments: [],
      };
      for (const l of issue.labels) {
        if (!r.labels.some((x) => x.name === l))
          r.labels.push({ name: l, color: 'ededed', description: null });
      }
      r.issues.push(issue);
      send(ctx.res, ctx.meta, 201, issueObj(r, issue), {
        location: `${base}/repos/${fullName(r)}/issues/${issue.number}`,
      });
    }),
  );

  route('GET', '/repos/{owner}/{repo}/issues/{issue_number}', (ctx) =>
    withRepo(ctx, (r) => {
      const moved = transfers.get(`${fullName(r)}#${ctx.params[2]}`);
      if (moved !== undefined) {
        const location = `${base}/repos/${moved}`;
        return send(
          ctx.res,
          ctx.meta,
          301,
          {
            message: 'Moved Permanently',
            url: location,
            documentation_url:
              'https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects',
          },
          { location },
        );
      }
      const issue = issueIn(r, ctx.params[2]);
      if (issue === undefined) return error(ctx.res, ctx.meta, 404, 'Not Found');
      send(ctx.res, ctx.meta, 200, issueObj(r, issue));
    }),
  );

  route('PATCH', '/repos/{owner}/{repo}/issues/{issue_number}', (ctx) =>
    withRepo(ctx, async (r, cred) => {
      const issue = issueIn(r, ctx.params[2]);
      const body = await readBody(ctx.req);
      if (issue === undefined) return error(ctx.res, ctx.meta, 404, 'Not Found');
      if (!canPush(r, cred.login) && issue.user !== cred.login) {
        return error(ctx.res, ctx.meta, 403, 'Must have admin rights to Repository.');
      }
      if (body.state !== undefined && body.state !== 'open' && body.state !== 'closed') {
        return error(ctx.res, ctx.meta, 422, 'Validation Failed', {
          errors: [{ resource: 'Issue', code: 'invalid', field: 'state' }],
        });
      }
      if (typeof body.title === 'string') issue.title = body.title;
      if (typeof body.body === 'string') issue.body = body.body;
      if (Array.isArray(body.labels)) issue.labels = body.labels as string[];
      if (Array.isArray(body.assignees)) issue.assignees = body.assignees as string[];
      if (body.milestone !== undefined) issue.milestone = body.milestone as number | null;
      if (body.state === 'closed' && issue.state === 'open') {
        issue.state = 'closed';
        issue.closed_at = new Date().toISOString();
        issue.state_reason = (body.state_reason as FakeIssue['state_reason']) ?? 'completed';
      } else if (body.state === 'open' && issue.state === 'closed') {
        issue.state = 'open';
        issue.closed_at = null;
        issue.state_reason = 'reopened';
      }
      issue.updated_at = new Date().toISOString();
      send(ctx.res, ctx.meta, 200, issueObj(r, issue));
    }),
  );

  route('GET', '/repos/{owner}/{repo}/issues/{issue_number}/comments', (ctx) =>
    withRepo(ctx, (r) => {
      const issue = issueIn(r, ctx.params[2]);
      if (issue === undefined) return error(ctx.res, ctx.meta, 404, 'Not Found');
      const since = ctx.url.searchParams.get('since');
      const items = issue.comments.filter((c) => since === null || c.updated_at >= since);
      const { page, headers } = paginate(ctx.url, items);
      send(
        ctx.res,
        ctx.meta,
        200,
        page.map((c) => commentObj(r, issue, c)),
        headers,
      );
    }),
  );

  route('POST', '/repos/{owner}/{repo}/issues/{issue_number}/comments', (ctx) =>
    withRepo(ctx, async (r, cred) => {
      const issue = issueIn(r, ctx.params[2]);
      const body = await readBody(ctx.req);
      if (issue === undefined) return error(ctx.res, ctx.meta, 404, 'Not Found');
      if (typeof body.body !== 'string' || body.body === '') {
        return error(ctx.res, ctx.meta, 422, 'Validation Failed', {
          errors: [{ resource: 'IssueComment', code: 'missing_field', field: 'body' }],
        });
      }
      if (issue.locked === true && !canPush(r, cred.login)) {
        return error(ctx.res, ctx.meta, 403, 'Unable to create comment because issue is locked.');
      }
      const now = new Date().toISOString();
      const comment: FakeComment = {
        id: nextId++,
        body: body.body,
        user: cred.login,
        created_at: now,
        updated_at: now,
      };
      issue.comments.push(comment);
      issue.updated_at = now;
      send(ctx.res, ctx.meta, 201, commentObj(r, issue, comment));
    }),
  );

  route('GET', '/repos/{owner}/{repo}/labels', (ctx) =>
    withRepo(ctx, (r) => {
      const { page, headers } = paginate(ctx.url, r.labels);
      send(
        ctx.res,
        ctx.meta,
        200,
        page.map((l) => labelObj(r, l.name)),
        headers,
      );
    }),
  );

  route('GET', '/repos/{owner}/{repo}/milestones', (ctx) =>
    withRepo(ctx, (r) => {
      const state = ctx.url.searchParams.get('state') ?? 'open';
      const items = r.milestones.filter((m) => state === 'all' || m.state === state);
      const { page, headers } = paginate(ctx.url, items);
      send(
        ctx.res,
        ctx.meta,
        200,
        page.map((m) => milestoneObj(r, m.number)),
        headers,
      );
    }),
  );

  route('GET', '/repos/{owner}/{repo}/collaborators/{username}/permission', (ctx) =>
    withRepo(ctx, (r) => {
      const login = decodeURIComponent(ctx.params[2] ?? '');
      const perm = permission(r, login);
      const legacy = perm === 'maintain' ? 'write' : perm === 'triage' ? 'read' : perm;
      send(ctx.res, ctx.meta, 200, {
        permission: legacy,
        role_name: perm,
        user: {
          ...simpleUser(base, web, login),
          permissions: {
            admin: perm === 'admin',
            maintain: ['admin', 'maintain'].includes(perm),
            push: canPush(r, login),
            triage: perm !== 'none' && perm !== 'read',
            pull: perm !== 'none',
          },
          role_name: perm,
        },
      });
    }),
  );

  route('GET', '/repos/{owner}/{repo}/contents/{path}', (ctx) =>
    withRepo(ctx, (r) => {
      const path = decodeURIComponent(ctx.params[2] ?? '').replace(/\/$/, '');
      const api = `${base}/repos/${fullName(r)}`;
      const entry = (p: string, type: 'file' | 'dir', content?: string) => {
        const sha = createHash('sha1')
          .update(content ?? p)
          .digest('hex');
        return {
          type,
          size: content === undefined ? 0 : Buffer.byteLength(content),
          name: p.split('/').at(-1)!,
          path: p,
          sha,
          url: `${api}/contents/${p}?ref=main`,
          git_url: `${api}/git/${type === 'dir' ? 'trees' : 'blobs'}/${sha}`,
          html_url: `${web}/${fullName(r)}/${type === 'dir' ? 'tree' : 'blob'}/main/${p}`,
          download_url: type === 'dir' ? null : `https://raw.example.test/${fullName(r)}/main/${p}`,
          _links: {
            self: `${api}/contents/${p}?ref=main`,
            git: `${api}/git/${type === 'dir' ? 'trees' : 'blobs'}/${sha}`,
            html: `${web}/${fullName(r)}/${type === 'dir' ? 'tree' : 'blob'}/main/${p}`,
          },
        };
      };
      const file = r.files[path];
      if (file !== undefined) {
        return send(ctx.res, ctx.meta, 200, {
          ...entry(path, 'file', file),
          content: Buffer.from(file)
            .toString('base64')
            .replace(/(.{60})/g, '$1\n'),
          encoding: 'base64',
        });
      }
      const children = new Map<string, 'file' | 'dir'>();
      for (const p of Object.keys(r.files)) {
        if (!p.startsWith(`${path}/`)) continue;
        const rest = p.slice(path.length + 1);
        const [head, ...tail] = rest.split('/');
        children.set(`${path}/${head}`, tail.length > 0 ? 'dir' : 'file');
      }
      if (children.size === 0) return error(ctx.res, ctx.meta, 404, 'Not Found');
      send(
        ctx.res,
        ctx.meta,
        200,
        [...children]
          .sort()
          .map(([p, type]) => entry(p, type, type === 'file' ? r.files[p] : undefined)),
      );
    }),
  );

  route('GET', '/search/issues', ({ res, url, cred, meta }) => {
    if (cred === 'app')
      return error(res, meta, 403, 'A JSON web token cannot be used to access this resource');
    const q = url.searchParams.get('q') ?? '';
    if (q.trim() === '') {
      return error(res, meta, 422, 'Validation Failed', {
        errors: [{ resource: 'Search', field: 'q', code: 'missing' }],
      });
    }
    const { qualifiers, terms } = parseSearchQuery(q);
    const scoped = qualifiers.filter((x) => ['repo', 'org', 'user'].includes(x.key) && !x.negated);
    for (const s of scoped.filter((x) => x.key === 'repo')) {
      const [o, n] = s.value.split('/');
      const r = repoOf(o ?? '', n ?? '');
      if (r === undefined || !reaches(cred, r)) {
        return error(res, meta, 422, 'Validation Failed', {
          errors: [
            {
              message:
                'The listed users and repositories cannot be searched either because the resources do not exist or you do not have permission to view them.',
              resource: 'Search',
              field: 'q',
              code: 'invalid',
            },
          ],
        });
      }
    }
    const candidates = options.repos.filter(
      (r) =>
        reaches(cred, r) &&
        (scoped.length === 0 ||
          options.unscopedSearch === true ||
          scoped.some((s) =>
            s.key === 'repo'
              ? s.value.toLowerCase() === fullName(r).toLowerCase()
              : s.value.toLowerCase() === r.owner.toLowerCase(),
          )),
    );
    const items: Array<{ r: FakeRepo; i: FakeIssue }> = [];
    for (const r of candidates) {
      for (const i of r.issues) {
        const ok = qualifiers.every(({ key, value, negated }) => {
          const v = value.toLowerCase();
          let hit: boolean;
          switch (key) {
            case 'repo':
            case 'org':
            case 'user':
              return true;
            case 'is':
            case 'type':
              hit =
                v === 'issue'
                  ? !i.pull_request
                  : v === 'pr'
                    ? Boolean(i.pull_request)
                    : v === i.state;
              break;
            case 'state':
              hit = v === i.state;
              break;
            case 'label':
              hit = i.labels.some((l) => l.toLowerCase() === v);
              break;
            case 'author':
              hit = i.user.toLowerCase() === v;
              break;
            case 'assignee':
              hit = i.assignees.some((a) => a.toLowerCase() === v);
              break;
            case 'mentions':
              hit = (i.body ?? '').toLowerCase().includes(`@${v}`);
              break;
            case 'milestone':
              hit = r.milestones.some(
                (m) => m.number === i.milestone && m.title.toLowerCase() === v,
              );
              break;
            case 'no':
              hit =
                v === 'label'
                  ? i.labels.length === 0
                  : v === 'assignee'
                    ? i.assignees.length === 0
                    : v === 'milestone'
                      ? i.milestone === null
                      : false;
              break;
            case 'in':
              return true;
            case 'created':
            case 'updated': {
              const date = key === 'created' ? i.created_at : i.updated_at;
              const m = /^(>=|<=|>|<)?(.+)$/.exec(value)!;
              const bound = m[2]!;
              hit =
                m[1] === '>='
                  ? date >= bound
                  : m[1] === '>'
                    ? date > bound
                    : m[1] === '<='
                      ? date <= `${bound}~`
                      : m[1] === '<'
                        ? date < bound
                        : date.startsWith(bound);
              break;
            }
            default:
              hit = false;
          }
          return negated ? !hit : hit;
        });
        const text = `${i.title}\n${i.body ?? ''}`.toLowerCase();
        if (ok && terms.every((t) => text.includes(t))) items.push({ r, i });
      }
    }
    const sort = url.searchParams.get('sort');
    const order = url.searchParams.get('order') ?? 'desc';
    if (sort === 'created' || sort === 'updated' || sort === 'comments') {
      const key = ({ i }: { i: FakeIssue }) =>
        sort === 'comments'
          ? String(i.comments.length).padStart(8, '0')
          : sort === 'created'
            ? i.created_at
            : i.updated_at;
      items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      if (order === 'desc') items.reverse();
    }
    const { page, headers } = paginate(url, items);
    send(
      res,
      meta,
      200,
      {
        total_count: items.length,
        incomplete_results: false,
        search_type: 'lexical',
        items: page.map(({ r, i }) => {
          const { reactions: _reactions, ...rest } = issueObj(r, i);
          return { ...rest, score: 1 };
        }),
      },
      headers,
    );
  });

  function repoByName(name: string): FakeRepo {
    const [owner, repo] = name.split('/');
    const found = repoOf(owner ?? '', repo ?? '');
    if (found === undefined) throw new Error(`no repo ${name} in the fake`);
    return found;
  }
  base = await http.listen();

  return {
    url: base,
    repos: options.repos,
    requests: http.requests,
    responses: http.responses,
    fail: (failure) => http.fail(failure),
    clearFailures: () => http.clearFailures(),
    transfer: (from, number, to) => {
      const source = repoByName(from);
      const target = repoByName(to);
      const index = source.issues.findIndex((i) => i.number === number);
      if (index === -1) throw new Error(`no issue ${from}#${number} in the fake`);
      const [issue] = source.issues.splice(index, 1);
      const moved = Math.max(0, ...target.issues.map((i) => i.number)) + 1;
      target.issues.push({ ...issue!, number: moved });
      transfers.set(`${from}#${number}`, `${to}/issues/${moved}`);
      return moved;
    },
    repo: (name) => repoByName(name),
    close: () => http.close(),
  };
}

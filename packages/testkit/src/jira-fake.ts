import type { IncomingMessage } from 'node:http';
import { HttpFake, readJson } from './http-fake.js';
import type { FakeFailure, FakeResponse, RouteContext } from './http-fake.js';
import { validateAdf } from './jira-adf.js';
import { JqlError, matches, parseJql } from './jira-jql.js';

/**
 * A loopback Jira Cloud REST v3 for tests, on the testkit's fake framework: the current user,
 * permissions per project, `/search/jql` with page tokens over a JQL subset it really evaluates
 * (`jira-jql.ts`), `/jql/parse`, issues (by a key that moved, too), comments, users, and Jira's
 * error bodies (`errorMessages`, `errors`). Run the real jira.js client against it with
 * `onSchemaMismatch: 'throw'` and `AUDIT_SCHEMAS=true` and every response is checked against
 * jira.js's schemas, generated from Jira's own specification.
 */

export interface FakeJiraUser {
  accountId: string;
  displayName: string;
  emailAddress?: string;
  /** The projects this person may browse (default: all). */
  projects?: string[];
}

/** An Atlassian Document Format document. */
export type Adf = { type: 'doc'; version: 1; content: unknown[] };

export interface FakeJiraComment {
  id: string;
  author: string;
  body: Adf;
  created: string;
  properties?: Record<string, unknown>;
}

export interface FakeJiraIssue {
  id: string;
  key: string;
  summary: string;
  description: Adf | null;
  status: string;
  statusCategory: 'To Do' | 'In Progress' | 'Done';
  issuetype: string;
  priority: string;
  labels: string[];
  assignee: string | null;
  reporter: string;
  created: string;
  updated: string;
  comments: FakeJiraComment[];
  /** Keys it had before it moved to another project. */
  previousKeys?: string[];
  /** Issue entity properties (key → value). */
  properties?: Record<string, unknown>;
  /** Links to other issues: this issue `type.outward` the other (e.g. blocks). */
  links?: Array<{ type: 'Blocks' | 'Relates'; key: string }>;
  /** The parent's key, for a sub-task. */
  parent?: string;
  /** Set by a transition to Done. */
  resolution?: string;
  /** Release names (fixVersion). */
  fixVersions?: string[];
  /** The sprint it is in. */
  sprint?: string;
}

export interface FakeJiraProject {
  id: string;
  key: string;
  name: string;
  issueTypes: Array<{ id: string; name: string; subtask?: boolean }>;
  /** Fields a create must set beyond project, type and summary (by issue type name). */
  required?: Record<string, string[]>;
  /** Custom fields of every issue type's create screen (after the system ones). */
  customFields?: Array<{ id: string; name: string; required?: boolean; options?: string[] }>;
}

export interface JiraWorld {
  users: FakeJiraUser[];
  projects: FakeJiraProject[];
  issues: FakeJiraIssue[];
  /** Versions (releases) per project, for fixVersion and the version functions. */
  versions?: Array<{ project: string; name: string; released: boolean }>;
  /** Sprints by state, for sprint and openSprints()/futureSprints()/closedSprints(). */
  sprints?: Array<{ name: string; state: 'active' | 'future' | 'closed' }>;
}

export interface JiraFakeOptions {
  world: JiraWorld;
  /** Basic credentials (e-mail → API token) and bearer tokens, each acting as an account. */
  credentials: Array<{ email?: string; token: string; accountId: string }>;
  /** Permissions per project key the credentials lack (default: all granted). */
  denied?: Record<string, string[]>;
  /**
   * Issue entity property keys an app declared an index for, so JQL can search them
   * (`issue.property[KEY].path`). Default none: a REST client cannot declare one.
   */
  indexedProperties?: string[];
  /**
   * How long a write takes to reach search (`/search/jql`). Jira Cloud's search is eventually
   * consistent with writes — "The delay might vary from a few seconds to minutes"
   * (https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile/) — so until then a
   * search sees the issue as it was before (a new one not at all), unless the request names its id
   * in `reconcileIssues` (at most 50). Default 1 000 ms; `settle()` ends every lag at once.
   */
  searchLagMs?: number;
}

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
  close(): Promise<void>;
}

/** A search request, from a POST body or a GET query. */
interface SearchBody {
  jql?: string;
  nextPageToken?: string;
  maxResults?: number;
  fields?: string[];
  /** Up to 5 issue property keys to return with each issue (REST v3 "Search for issues using JQL enhanced search", `properties`). */
  properties?: string[];
  /** Issue ids search must show as they are now (read after write), at most 50. */
  reconcileIssues?: number[];
}

/** The fields of a create or edit request, as the fake reads them. */
interface FieldsIn {
  project?: { key?: string; id?: string };
  issuetype?: { id?: string; name?: string };
  summary?: unknown;
  description?: unknown;
  priority?: { name?: string };
  labels?: unknown;
  assignee?: { accountId?: string } | null;
  [field: string]: unknown;
}

const RESOLUTIONS = ['Done', "Won't Do", 'Duplicate'];

const PERMISSIONS = [
  'BROWSE_PROJECTS',
  'CREATE_ISSUES',
  'EDIT_ISSUES',
  'ADD_COMMENTS',
  'TRANSITION_ISSUES',
];
const CATEGORY = {
  'To Do': { id: 2, key: 'new', colorName: 'blue-gray' },
  'In Progress': { id: 4, key: 'indeterminate', colorName: 'yellow' },
  Done: { id: 3, key: 'done', colorName: 'green' },
} as const;

export async function startJiraFake(options: JiraFakeOptions): Promise<JiraFake> {
  const { world } = options;
  const queries: string[] = [];
  const adfProblems: string[] = [];
  let base = '';
  let nextId = 1000;
  const now = () => new Date().toISOString().replace('Z', '+0000');
  /**
   * Search's view of what was written less than `searchLagMs` ago: the issue as it was before the
   * first write of the lag (undefined: it did not exist yet). Cited at {@link JiraFakeOptions}.
   */
  const lag = options.searchLagMs ?? 1_000;
  const unsettled = new Map<string, { until: number; before: FakeJiraIssue | undefined }>();
  /** Call before a write changes `issue` (or after a create pushed it, with `created`). */
  const writing = (issue: FakeJiraIssue, created = false) => {
    if (lag <= 0) return;
    const held = unsettled.get(issue.id);
    const before =
      held !== undefined && Date.now() < held.until
        ? held.before
        : created
          ? undefined
          : structuredClone(issue);
    unsettled.set(issue.id, { until: Date.now() + lag, before });
  };
  /** The issues as a search sees them: settled ones as they are, the rest as they were. */
  const searchable = (reconcile: readonly number[]): FakeJiraIssue[] =>
    world.issues.flatMap((i) => {
      const held = unsettled.get(i.id);
      if (held === undefined || Date.now() >= held.until || reconcile.includes(Number(i.id)))
        return [i];
      return held.before === undefined ? [] : [held.before];
    });
  /** Jira refuses an ADF document that breaks the schema (and the tests see it). */
  const badAdf = (doc: unknown, field: string): string | undefined => {
    const problems = validateAdf(doc);
    if (problems.length === 0) return undefined;
    adfProblems.push(`${field}: ${problems.join('; ')}`);
    return `${field}: Operation value must be an Atlassian Document (${problems[0]})`;
  };
  const TRANSITIONS = [
    { id: '11', name: 'To Do', to: 'To Do', category: 'To Do' as const },
    { id: '21', name: 'Start progress', to: 'In Progress', category: 'In Progress' as const },
    { id: '31', name: 'Done', to: 'Done', category: 'Done' as const },
  ];
  const credentialOf = (req: IncomingMessage) => {
    const header = req.headers.authorization ?? '';
    const [scheme, value = ''] = header.split(' ');
    if (/^bearer$/i.test(scheme ?? ''))
      return options.credentials.find((c) => c.email === undefined && c.token === value);
    if (!/^basic$/i.test(scheme ?? '')) return undefined;
    const [email, token] = Buffer.from(value, 'base64').toString('utf8').split(':');
    return options.credentials.find((c) => c.email === email && c.token === token);
  };
  const http = new HttpFake<{ accountId: string }>({
    authenticate: (req) => {
      const c = credentialOf(req);
      return c === undefined ? undefined : { accountId: c.accountId };
    },
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
  type Ctx = RouteContext<{ accountId: string }>;
  const send = http.send.bind(http);
  const error = http.error.bind(http);

  const user = (accountId: string | null) => {
    if (accountId === null) return null;
    const u = world.users.find((x) => x.accountId === accountId);
    return {
      self: `${base}/rest/api/3/user?accountId=${accountId}`,
      accountId,
      displayName: u?.displayName ?? accountId,
      active: true,
      accountType: 'atlassian',
      timeZone: 'Europe/Berlin',
    };
  };
  const projectOf = (i: FakeJiraIssue) =>
    world.projects.find((p) => p.key === i.key.split('-')[0])!;
  const canBrowse = (project: string) =>
    !(options.denied?.[project] ?? []).includes('BROWSE_PROJECTS');
  const issueFields = (i: FakeJiraIssue) => {
    const p = projectOf(i);
    const type = p.issueTypes.find((t) => t.name === i.issuetype) ?? p.issueTypes[0]!;
    return {
      summary: i.summary,
      description: i.description,
      status: {
        self: `${base}/rest/api/3/status/1`,
        id: String(Object.keys(CATEGORY).indexOf(i.statusCategory) + 1),
        name: i.status,
        statusCategory: {
          self: `${base}/rest/api/3/statuscategory/1`,
          ...CATEGORY[i.statusCategory],
          name: i.statusCategory,
        },
      },
      issuetype: {
        self: `${base}/rest/api/3/issuetype/${type.id}`,
        id: type.id,
        name: type.name,
        subtask: type.subtask === true,
      },
      priority: { self: `${base}/rest/api/3/priority/3`, id: '3', name: i.priority },
      labels: i.labels,
      assignee: user(i.assignee),
      reporter: user(i.reporter),
      project: { self: `${base}/rest/api/3/project/${p.id}`, id: p.id, key: p.key, name: p.name },
      created: i.created,
      updated: i.updated,
      comment: { comments: [], maxResults: 0, startAt: 0, total: i.comments.length },
      issuelinks: [
        ...(i.links ?? []).map((l) => ({ l, outward: true, other: findIssue(l.key) })),
        ...world.issues.flatMap((o) =>
          (o.links ?? [])
            .filter((l) => l.key === i.key)
            .map((l) => ({ l, outward: false, other: o })),
        ),
      ]
        .filter((x) => x.other !== undefined)
        .map(({ l, outward, other }, n) => ({
          id: String(9000 + n),
          type: {
            id: l.type === 'Blocks' ? '1' : '2',
            name: l.type,
            inward: l.type === 'Blocks' ? 'is blocked by' : 'relates to',
            outward: l.type === 'Blocks' ? 'blocks' : 'relates to',
          },
          [outward ? 'outwardIssue' : 'inwardIssue']: {
            id: other!.id,
            key: other!.key,
            fields: { summary: other!.summary, status: { name: other!.status } },
          },
        })),
      subtasks: world.issues
        .filter((o) => o.parent === i.key)
        .map((o) => ({
          id: o.id,
          key: o.key,
          fields: { summary: o.summary, status: { name: o.status } },
        })),
    };
  };
  const issueObject = (
    i: FakeJiraIssue,
    fields: string[] | undefined,
    properties: string[] = [],
  ) => {
    const all = issueFields(i) as Record<string, unknown>;
    const wanted =
      fields === undefined || fields.includes('*all') || fields.length === 0
        ? Object.keys(all)
        : fields;
    const held = properties.filter((p) => i.properties?.[p] !== undefined);
    return {
      id: i.id,
      key: i.key,
      self: `${base}/rest/api/3/issue/${i.id}`,
      fields: Object.fromEntries(wanted.filter((f) => f in all).map((f) => [f, all[f]])),
      ...(held.length === 0
        ? {}
        : { properties: Object.fromEntries(held.map((p) => [p, i.properties![p]])) }),
    };
  };
  /** The issue's values of a JQL field, lower-cased (undefined: no such field). */
  const fieldValues =
    (i: FakeJiraIssue) =>
    (field: string): Array<string | null> | undefined => {
      const lower = (v: string | null) => (v === null ? null : v.toLowerCase());
      const userValues = (id: string | null) => {
        if (id === null) return [null];
        const u = world.users.find((x) => x.accountId === id);
        return [id, u?.displayName ?? null, u?.emailAddress ?? null].map(lower);
      };
      switch (field) {
        case 'project':
          return [projectOf(i).key, projectOf(i).name, projectOf(i).id].map(lower);
        case 'key':
        case 'issuekey':
        case 'id':
          return [i.key, i.id, ...(i.previousKeys ?? [])].map(lower);
        case 'status':
          return [lower(i.status)];
        case 'statuscategory':
          return [lower(i.statusCategory)];
        case 'issuetype':
        case 'type':
          return [lower(i.issuetype)];
        case 'priority':
          return [lower(i.priority)];
        case 'labels':
          return i.labels.map(lower);
        case 'assignee':
          return userValues(i.assignee);
        case 'reporter':
          return userValues(i.reporter);
        case 'summary':
          return [lower(i.summary)];
        case 'description':
          return [lower(JSON.stringify(i.description ?? ''))];
        case 'text':
          return [
            lower(
              `${i.summary} ${JSON.stringify(i.description ?? '')} ${i.comments.map((c) => JSON.stringify(c.body)).join(' ')}`,
            ),
          ];
        case 'fixversion':
          return (i.fixVersions ?? []).map(lower);
        case 'sprint':
          return [lower(i.sprint ?? null)];
        case 'created':
        case 'createddate':
          return [i.created];
        case 'updated':
        case 'updateddate':
          return [i.updated];
        default: {
          // issue.property[KEY].path: an issue entity property's value — searchable only when an
          // app declared an index for it (Forge `jira:entityProperty`, Connect
          // `jiraEntityProperties`); a REST client cannot. Unindexed, the clause names an unknown
          // field: 400. developer.atlassian.com/cloud/jira/platform/jira-entity-properties/,
          // "Making searchable entity properties".
          const property = /^issue\.property\[([^\]]+)\]\.(.+)$/.exec(field);
          if (property === null) return undefined;
          if (!(options.indexedProperties ?? []).includes(property[1]!)) return undefined;
          const value = (i.properties?.[property[1]!] as Record<string, unknown> | undefined)?.[
            property[2]!
          ];
          return [
            typeof value === 'string' || typeof value === 'number'
              ? String(value).toLowerCase()
              : null,
          ];
        }
      }
    };
  const findIssue = (keyOrId: string) =>
    world.issues.find(
      (i) => i.key === keyOrId || i.id === keyOrId || (i.previousKeys ?? []).includes(keyOrId),
    );

  http.route('GET', '/rest/api/3/myself', ({ res, meta, cred }) =>
    send(res, meta, 200, {
      ...user(cred.accountId),
      emailAddress: options.credentials.find((c) => c.accountId === cred.accountId)?.email ?? '',
    }),
  );

  http.route('GET', '/rest/api/3/mypermissions', ({ res, meta, url }) => {
    const project = url.searchParams.get('projectKey') ?? '';
    const wanted = (url.searchParams.get('permissions') ?? PERMISSIONS.join(',')).split(',');
    const denied = options.denied?.[project] ?? [];
    send(res, meta, 200, {
      permissions: Object.fromEntries(
        wanted.map((p, n) => [
          p,
          {
            id: String(n + 10),
            key: p,
            name: p,
            type: 'PROJECT',
            description: p,
            havePermission: !denied.includes(p),
          },
        ]),
      ),
    });
  });

  http.route('POST', '/rest/api/3/jql/parse', async ({ req, res, meta }) => {
    const body = (await readJson(req)) as { queries?: string[] };
    send(res, meta, 200, {
      queries: (body.queries ?? []).map((query) => {
        try {
          return { query, structure: parseJql(query) };
        } catch (e) {
          return { query, errors: [(e as Error).message] };
        }
      }),
    });
  });

  /**
   * The JQL functions the fake evaluates, as support.atlassian.com's "JQL functions" reference
   * defines them: versions of the named projects (all browsable ones without an argument), sprints
   * by state, issue types that are (not) sub-tasks. Names are compared lower-cased.
   */
  const jqlFunctions = (name: string, args: readonly string[]): string[] | undefined => {
    const versions = (released: boolean) =>
      (world.versions ?? [])
        .filter(
          (v) =>
            v.released === released &&
            (args.length === 0
              ? canBrowse(v.project)
              : args.some((a) => a.toLowerCase() === v.project.toLowerCase())),
        )
        .map((v) => v.name.toLowerCase());
    const sprints = (state: string) =>
      (world.sprints ?? []).filter((x) => x.state === state).map((x) => x.name.toLowerCase());
    const types = (subtask: boolean) => [
      ...new Set(
        world.projects.flatMap((p) =>
          p.issueTypes
            .filter((t) => (t.subtask === true) === subtask)
            .map((t) => t.name.toLowerCase()),
        ),
      ),
    ];
    switch (name) {
      case 'unreleasedversions':
        return versions(false);
      case 'releasedversions':
        return versions(true);
      case 'opensprints':
        return sprints('active');
      case 'futuresprints':
        return sprints('future');
      case 'closedsprints':
        return sprints('closed');
      case 'standardissuetypes':
        return types(false);
      case 'subtaskissuetypes':
        return types(true);
      default:
        return undefined;
    }
  };

  /** POST with a JSON body, or GET with the query (as some clients send it). */
  const searchJql = (ctx: Ctx, body: SearchBody): void => {
    const jql = body.jql ?? '';
    queries.push(jql);
    let parsed;
    try {
      parsed = parseJql(jql);
    } catch (e) {
      return error(ctx.res, ctx.meta, 400, (e as Error).message);
    }
    // "The JQL query, required to be bounded": a search with no restriction is refused, in Jira's
    // words (REST v3 "Search for issues using JQL enhanced search",
    // https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issue-search/#api-rest-api-3-search-jql-post).
    if (parsed.where === undefined)
      return error(
        ctx.res,
        ctx.meta,
        400,
        'Unbounded JQL queries are not allowed here. Please add a search restriction to your query.',
      );
    // Read after write for "up to 50 issues" (search-and-reconcile, cited at JiraFakeOptions).
    const reconcile = body.reconcileIssues ?? [];
    if (reconcile.length > 50)
      return error(ctx.res, ctx.meta, 400, 'At most 50 issues can be reconciled.');
    const me = ctx.cred.accountId;
    let found: FakeJiraIssue[];
    try {
      found = searchable(reconcile).filter(
        (i) =>
          canBrowse(projectOf(i).key) && matches(parsed.where!, fieldValues(i), me, jqlFunctions),
      );
    } catch (e) {
      if (e instanceof JqlError) return error(ctx.res, ctx.meta, 400, e.message);
      throw e;
    }
    for (const { field, direction } of [...(parsed.orderBy?.fields ?? [])].reverse()) {
      const key = (i: FakeJiraIssue) => fieldValues(i)(field.name.toLowerCase())?.[0] ?? '';
      found.sort(
        (a, b) =>
          (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0) * (direction === 'desc' ? -1 : 1),
      );
    }
    const start =
      body.nextPageToken === undefined
        ? 0
        : Number(Buffer.from(body.nextPageToken, 'base64url').toString().split(':')[1]);
    const size = Math.min(5_000, Math.max(1, body.maxResults ?? 50));
    const page = found.slice(start, start + size);
    const isLast = start + size >= found.length;
    // "A list of up to 5 issue properties to include in the results" (the endpoint's reference).
    if ((body.properties ?? []).length > 5)
      return error(ctx.res, ctx.meta, 400, 'At most 5 issue properties can be requested.');
    send(ctx.res, ctx.meta, 200, {
      issues: page.map((i) => issueObject(i, body.fields, body.properties)),
      isLast,
      ...(isLast
        ? {}
        : { nextPageToken: Buffer.from(`page:${start + size}`).toString('base64url') }),
    });
  };
  http.route('POST', '/rest/api/3/search/jql', async (ctx: Ctx) =>
    searchJql(ctx, await readJson(ctx.req)),
  );
  http.route('GET', '/rest/api/3/search/jql', (ctx: Ctx) => {
    const q = ctx.url.searchParams;
    const fields = q.getAll('fields').flatMap((f) => f.split(','));
    const properties = q.getAll('properties').flatMap((f) => f.split(','));
    const token = q.get('nextPageToken');
    const max = q.get('maxResults');
    const reconcile = q.getAll('reconcileIssues').flatMap((f) => f.split(','));
    searchJql(ctx, {
      ...(reconcile.length === 0 ? {} : { reconcileIssues: reconcile.map(Number) }),
      jql: q.get('jql') ?? '',
      ...(token === null ? {} : { nextPageToken: token }),
      ...(max === null ? {} : { maxResults: Number(max) }),
      ...(fields.length === 0 ? {} : { fields }),
      ...(properties.length === 0 ? {} : { properties }),
    });
  });

  http.route('GET', '/rest/api/3/issue/{issueIdOrKey}', ({ res, meta, params, url }) => {
    const i = findIssue(decodeURIComponent(params[0] ?? ''));
    if (i === undefined || !canBrowse(projectOf(i).key)) {
      return error(res, meta, 404, 'Issue does not exist or you do not have permission to see it.');
    }
    // Repeated (fields=a&fields=b) or comma-separated, as clients send them.
    const listed = url.searchParams.getAll('fields').flatMap((f) => f.split(','));
    const fields = listed.length === 0 ? undefined : listed;
    send(res, meta, 200, issueObject(i, fields));
  });

  http.route('GET', '/rest/api/3/issue/{issueIdOrKey}/comment', ({ res, meta, params, url }) => {
    const i = findIssue(decodeURIComponent(params[0] ?? ''));
    if (i === undefined || !canBrowse(projectOf(i).key)) {
      return error(res, meta, 404, 'Issue does not exist or you do not have permission to see it.');
    }
    const startAt = Number(url.searchParams.get('startAt') ?? 0);
    const maxResults = Number(url.searchParams.get('maxResults') ?? 50);
    send(res, meta, 200, {
      startAt,
      maxResults,
      total: i.comments.length,
      comments: i.comments.slice(startAt, startAt + maxResults).map((c) => ({
        self: `${base}/rest/api/3/issue/${i.id}/comment/${c.id}`,
        id: c.id,
        author: user(c.author),
        body: c.body,
        created: c.created,
        updated: c.created,
        ...(url.searchParams.get('expand')?.includes('properties')
          ? {
              properties: Object.entries(c.properties ?? {}).map(([key, value]) => ({
                key,
                value,
              })),
            }
          : {}),
      })),
    });
  });

  const matching = (q: string) =>
    world.users.filter(
      (u) =>
        q !== '' &&
        (u.displayName.toLowerCase().includes(q) ||
          (u.emailAddress ?? '').toLowerCase().includes(q)),
    );
  http.route('GET', '/rest/api/3/user/search', ({ res, meta, url }) => {
    const q = (url.searchParams.get('query') ?? '').toLowerCase();
    send(
      res,
      meta,
      200,
      matching(q).map((u) => user(u.accountId)),
    );
  });
  // "Find users with browse permission" (REST v3, user search): the people matching the query who
  // may browse the project (or the issue's project); one of projectKey and issueKey is required.
  http.route('GET', '/rest/api/3/user/viewissue/search', ({ res, meta, url }) => {
    const q = (url.searchParams.get('query') ?? '').toLowerCase();
    const issueKey = url.searchParams.get('issueKey');
    const project =
      url.searchParams.get('projectKey') ??
      (issueKey === null ? undefined : findIssue(issueKey)?.key.split('-')[0]);
    if (project === undefined)
      return error(res, meta, 400, 'Either an issue key or a project key is required.');
    send(
      res,
      meta,
      200,
      matching(q)
        .filter((u) => u.projects === undefined || u.projects.includes(project))
        .map((u) => user(u.accountId)),
    );
  });

  /**
   * User properties: data an app keeps on a user's record, read directly (not through search).
   * "Access to Jira, to set a property on the calling user's record"; any other user's needs
   * Administer Jira, which the fake's accounts lack; values are non-empty JSON of at most 32 768
   * bytes. REST v3 "User properties":
   * https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-user-properties/.
   */
  const userProperties = new Map<string, Map<string, unknown>>();
  const ownRecord = (ctx: Ctx): Map<string, unknown> | undefined => {
    const accountId = ctx.url.searchParams.get('accountId');
    if (accountId === null) {
      error(ctx.res, ctx.meta, 400, 'The accountId query parameter needs to be provided.');
      return undefined;
    }
    if (accountId !== ctx.cred.accountId) {
      error(ctx.res, ctx.meta, 403, 'You do not have permission to edit this user.');
      return undefined;
    }
    let own = userProperties.get(accountId);
    if (own === undefined) userProperties.set(accountId, (own = new Map<string, unknown>()));
    return own;
  };
  const noBody = (ctx: Ctx, status: number) => {
    ctx.res.writeHead(status).end();
    http.responses.push({
      method: ctx.meta.method,
      route: ctx.meta.route,
      status,
      body: undefined,
    });
  };
  const propertyUrl = (accountId: string, key: string) =>
    `${base}/rest/api/3/user/properties/${encodeURIComponent(key)}?accountId=${accountId}`;
  http.route('GET', '/rest/api/3/user/properties', (ctx: Ctx) => {
    const own = ownRecord(ctx);
    if (own === undefined) return;
    send(ctx.res, ctx.meta, 200, {
      keys: [...own.keys()].map((key) => ({ key, self: propertyUrl(ctx.cred.accountId, key) })),
    });
  });
  /** The caller's record and the property named in the path, when it exists (else 404). */
  const existing = (ctx: Ctx) => {
    const own = ownRecord(ctx);
    if (own === undefined) return undefined;
    const key = decodeURIComponent(ctx.params[0] ?? '');
    if (own.has(key)) return { own, key };
    error(ctx.res, ctx.meta, 404, `The property with key '${key}' does not exist.`);
    return undefined;
  };
  http.route('GET', '/rest/api/3/user/properties/{propertyKey}', (ctx: Ctx) => {
    const found = existing(ctx);
    if (found !== undefined)
      send(ctx.res, ctx.meta, 200, { key: found.key, value: found.own.get(found.key) });
  });
  http.route('PUT', '/rest/api/3/user/properties/{propertyKey}', async (ctx: Ctx) => {
    const own = ownRecord(ctx);
    if (own === undefined) return;
    const key = decodeURIComponent(ctx.params[0] ?? '');
    const value = await readJson(ctx.req);
    const text = JSON.stringify(value);
    if (key.length > 255 || text === '{}' || text.length > 32_768)
      return error(ctx.res, ctx.meta, 400, 'The property value is empty or too long.');
    const existed = own.has(key);
    own.set(key, value);
    noBody(ctx, existed ? 200 : 201);
  });
  http.route('DELETE', '/rest/api/3/user/properties/{propertyKey}', (ctx: Ctx) => {
    const found = existing(ctx);
    if (found === undefined) return;
    found.own.delete(found.key);
    noBody(ctx, 204);
  });

  /**
   * A create-metadata page: `startAt`, and `maxResults` at most 50 — "Default: 50" in the REST v3
   * reference of "Get create field metadata for a project and issue type id"; the fake pages there.
   */
  const pageOf = (url: URL) => ({
    startAt: Math.max(0, Number(url.searchParams.get('startAt') ?? 0) || 0),
    maxResults: Math.min(50, Math.max(1, Number(url.searchParams.get('maxResults') ?? 50) || 50)),
  });
  const browsable = (ctx: Ctx, keyOrId: string) => {
    const i = findIssue(decodeURIComponent(keyOrId));
    if (i === undefined || !canBrowse(projectOf(i).key)) {
      error(
        ctx.res,
        ctx.meta,
        404,
        'Issue does not exist or you do not have permission to see it.',
      );
      return undefined;
    }
    return i;
  };
  const allowed = (ctx: Ctx, project: string, permission: string): boolean => {
    if (!(options.denied?.[project] ?? []).includes(permission)) return true;
    error(
      ctx.res,
      ctx.meta,
      403,
      `You do not have permission (${permission}) in project ${project}.`,
    );
    return false;
  };

  http.route(
    'GET',
    '/rest/api/3/issue/createmeta/{projectIdOrKey}/issuetypes',
    ({ res, meta, params, url }) => {
      const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
      if (p === undefined || !canBrowse(p.key))
        return error(res, meta, 404, 'No project could be found with key.');
      const { startAt, maxResults } = pageOf(url);
      send(res, meta, 200, {
        startAt,
        maxResults,
        total: p.issueTypes.length,
        issueTypes: p.issueTypes.slice(startAt, startAt + maxResults).map((t) => ({
          self: `${base}/rest/api/3/issuetype/${t.id}`,
          id: t.id,
          name: t.name,
          subtask: t.subtask === true,
          description: '',
        })),
      });
    },
  );

  http.route(
    'GET',
    '/rest/api/3/issue/createmeta/{projectIdOrKey}/issuetypes/{issueTypeId}',
    ({ res, meta, params, url }) => {
      const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
      const t = p?.issueTypes.find((x) => x.id === params[1]);
      if (p === undefined || t === undefined || !canBrowse(p.key))
        return error(res, meta, 404, 'Issue type not found.');
      const field = (
        fieldId: string,
        name: string,
        required: boolean,
        schema: Record<string, unknown>,
        allowedValues?: string[],
      ) => ({
        fieldId,
        key: fieldId,
        name,
        required,
        hasDefaultValue: false,
        operations: ['set'],
        schema,
        ...(allowedValues === undefined
          ? {}
          : {
              allowedValues: allowedValues.map((v, n) => ({
                id: String(n + 1),
                name: v,
                self: `${base}/rest/api/3/priority/${n + 1}`,
              })),
            }),
      });
      const extra = new Set(p.required?.[t.name] ?? []);
      const fields = [
        field('summary', 'Summary', true, { type: 'string', system: 'summary' }),
        field('issuetype', 'Issue Type', true, { type: 'issuetype', system: 'issuetype' }),
        field('project', 'Project', true, { type: 'project', system: 'project' }),
        field('description', 'Description', extra.has('description'), {
          type: 'string',
          system: 'description',
        }),
        field(
          'priority',
          'Priority',
          extra.has('priority'),
          { type: 'priority', system: 'priority' },
          ['Highest', 'High', 'Medium', 'Low', 'Lowest'],
        ),
        field('labels', 'Labels', extra.has('labels'), {
          type: 'array',
          items: 'string',
          system: 'labels',
        }),
        field('assignee', 'Assignee', extra.has('assignee'), { type: 'user', system: 'assignee' }),
        // A select list's options come as `value`, not `name`: allowedValues of an option field in
        // REST v3 "Get create field metadata for a project and issue type id"
        // (developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-issues/).
        ...(p.customFields ?? []).map((c) =>
          c.options === undefined
            ? field(c.id, c.name, c.required === true, { type: 'string', custom: 'textfield' })
            : {
                ...field(c.id, c.name, c.required === true, { type: 'option', custom: 'select' }),
                allowedValues: c.options.map((value, n) => ({
                  self: `${base}/rest/api/3/customFieldOption/${n + 1}`,
                  id: String(n + 1),
                  value,
                })),
              },
        ),
      ];
      const { startAt, maxResults } = pageOf(url);
      send(res, meta, 200, {
        startAt,
        maxResults,
        total: fields.length,
        fields: fields.slice(startAt, startAt + maxResults),
      });
    },
  );

  http.route('POST', '/rest/api/3/issue', async (ctx: Ctx) => {
    const body = (await readJson(ctx.req)) as {
      fields?: FieldsIn;
      properties?: Array<{ key: string; value: unknown }>;
    };
    const f = body.fields ?? {};
    const p = world.projects.find((x) => x.key === f.project?.key || x.id === f.project?.id);
    if (p === undefined || !canBrowse(p.key))
      return error(ctx.res, ctx.meta, 400, 'Specify a valid project ID or key', {
        errors: { project: 'Specify a valid project ID or key' },
      });
    if (!allowed(ctx, p.key, 'CREATE_ISSUES')) return;
    const type = p.issueTypes.find((t) => t.id === f.issuetype?.id || t.name === f.issuetype?.name);
    const errors: Record<string, string> = {};
    if (type === undefined) errors.issuetype = 'Specify an issue type';
    if (typeof f.summary !== 'string' || f.summary === '')
      errors.summary = 'You must specify a summary of the issue.';
    for (const r of p.required?.[type?.name ?? ''] ?? [])
      if (f[r] === undefined) errors[r] = `${r} is required.`;
    if (f.description !== undefined) {
      if (typeof f.description === 'string')
        errors.description =
          'Operation value must be an Atlassian Document (a string was sent to v3)';
      else {
        const bad = badAdf(f.description, 'description');
        if (bad !== undefined) errors.description = bad;
      }
    }
    if (Object.keys(errors).length > 0)
      return error(ctx.res, ctx.meta, 400, '', { errorMessages: [], errors });
    const n =
      Math.max(
        0,
        ...world.issues
          .filter((x) => x.key.startsWith(`${p.key}-`))
          .map((x) => Number(x.key.split('-')[1])),
      ) + 1;
    const issue: FakeJiraIssue = {
      id: String(++nextId),
      key: `${p.key}-${n}`,
      summary: String(f.summary),
      description: (f.description as Adf | undefined) ?? null,
      status: 'To Do',
      statusCategory: 'To Do',
      issuetype: type!.name,
      priority: f.priority?.name ?? 'Medium',
      labels: Array.isArray(f.labels) ? f.labels.map(String) : [],
      assignee: f.assignee?.accountId ?? null,
      reporter: ctx.cred.accountId,
      created: now(),
      updated: now(),
      comments: [],
      properties: Object.fromEntries((body.properties ?? []).map((x) => [x.key, x.value])),
    };
    world.issues.push(issue);
    writing(issue, true);
    send(ctx.res, ctx.meta, 201, {
      id: issue.id,
      key: issue.key,
      self: `${base}/rest/api/3/issue/${issue.id}`,
    });
  });

  http.route('PUT', '/rest/api/3/issue/{issueIdOrKey}', async (ctx: Ctx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined || !allowed(ctx, projectOf(i).key, 'EDIT_ISSUES')) return;
    const body = (await readJson(ctx.req)) as {
      fields?: FieldsIn;
      update?: Record<string, Array<{ add?: unknown; remove?: unknown }>>;
    };
    const f = body.fields ?? {};
    if (f.description !== undefined && f.description !== null) {
      const bad =
        typeof f.description === 'string'
          ? 'description: a string was sent to v3'
          : badAdf(f.description, 'description');
      if (bad !== undefined)
        return error(ctx.res, ctx.meta, 400, '', {
          errorMessages: [],
          errors: { description: bad },
        });
    }
    writing(i);
    if (typeof f.summary === 'string') i.summary = f.summary;
    if (f.description !== undefined) i.description = f.description as Adf | null;
    if (f.priority?.name !== undefined) i.priority = f.priority.name;
    if (f.assignee !== undefined) i.assignee = f.assignee?.accountId ?? null;
    if (Array.isArray(f.labels)) i.labels = f.labels.map(String);
    for (const op of body.update?.labels ?? []) {
      if (typeof op.add === 'string' && !i.labels.includes(op.add)) i.labels.push(op.add);
      if (typeof op.remove === 'string') i.labels = i.labels.filter((l) => l !== op.remove);
    }
    i.updated = now();
    ctx.res.writeHead(204).end();
    http.responses.push({
      method: ctx.meta.method,
      route: ctx.meta.route,
      status: 204,
      body: undefined,
    });
  });

  http.route('POST', '/rest/api/3/issue/{issueIdOrKey}/comment', async (ctx: Ctx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined || !allowed(ctx, projectOf(i).key, 'ADD_COMMENTS')) return;
    const body = (await readJson(ctx.req)) as {
      body?: unknown;
      properties?: Array<{ key: string; value: unknown }>;
    };
    const bad =
      typeof body.body === 'string'
        ? 'body: a string was sent to v3'
        : badAdf(body.body, 'comment');
    if (bad !== undefined)
      return error(ctx.res, ctx.meta, 400, '', { errorMessages: [], errors: { comment: bad } });
    const c: FakeJiraComment = {
      id: String(++nextId),
      author: ctx.cred.accountId,
      body: body.body as Adf,
      created: now(),
      properties: Object.fromEntries((body.properties ?? []).map((x) => [x.key, x.value])),
    };
    writing(i);
    i.comments.push(c);
    i.updated = now();
    send(ctx.res, ctx.meta, 201, {
      self: `${base}/rest/api/3/issue/${i.id}/comment/${c.id}`,
      id: c.id,
      author: user(c.author),
      body: c.body,
      created: c.created,
      updated: c.created,
    });
  });

  http.route('GET', '/rest/api/3/issue/{issueIdOrKey}/transitions', (ctx: Ctx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined) return;
    send(ctx.res, ctx.meta, 200, {
      transitions: TRANSITIONS.filter((t) => t.to !== i.status).map((t) => ({
        id: t.id,
        name: t.name,
        to: {
          self: `${base}/rest/api/3/status/${t.id}`,
          id: t.id,
          name: t.to,
          statusCategory: {
            self: `${base}/rest/api/3/statuscategory/1`,
            ...CATEGORY[t.category],
            name: t.category,
          },
        },
        hasScreen: t.to === 'Done',
        ...(ctx.url.searchParams.get('expand')?.includes('transitions.fields') && t.to === 'Done'
          ? {
              fields: {
                resolution: {
                  key: 'resolution',
                  name: 'Resolution',
                  required: true,
                  operations: ['set'],
                  schema: { type: 'resolution', system: 'resolution' },
                  allowedValues: RESOLUTIONS.map((r, n) => ({ id: String(n + 1), name: r })),
                },
              },
            }
          : {}),
        isGlobal: true,
        isInitial: false,
        isAvailable: true,
        isConditional: false,
      })),
    });
  });

  http.route('POST', '/rest/api/3/issue/{issueIdOrKey}/transitions', async (ctx: Ctx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined || !allowed(ctx, projectOf(i).key, 'TRANSITION_ISSUES')) return;
    const body = (await readJson(ctx.req)) as { transition?: { id?: string } };
    const t = TRANSITIONS.find((x) => x.id === body.transition?.id && x.to !== i.status);
    if (t === undefined)
      return error(
        ctx.res,
        ctx.meta,
        400,
        "Transition id is not valid for this issue's current status.",
        { errors: {} },
      );
    const fields = (body as { fields?: { resolution?: { name?: string } } }).fields;
    if (t.to === 'Done' && !RESOLUTIONS.includes(fields?.resolution?.name ?? '')) {
      return error(ctx.res, ctx.meta, 400, '', {
        errorMessages: [],
        errors: { resolution: 'Resolution is required.' },
      });
    }
    writing(i);
    i.status = t.to;
    i.statusCategory = t.category;
    if (fields?.resolution?.name !== undefined) i.resolution = fields.resolution.name;
    i.updated = now();
    ctx.res.writeHead(204).end();
    http.responses.push({
      method: ctx.meta.method,
      route: ctx.meta.route,
      status: 204,
      body: undefined,
    });
  });

  http.route('GET', '/rest/api/3/project/{projectIdOrKey}/statuses', ({ res, meta, params }) => {
    const p = world.projects.find((x) => x.key === params[0] || x.id === params[0]);
    if (p === undefined || !canBrowse(p.key))
      return error(res, meta, 404, 'No project could be found.');
    const statuses = TRANSITIONS.map((t) => ({
      self: `${base}/rest/api/3/status/${t.id}`,
      id: t.id,
      name: t.to,
      description: '',
      statusCategory: {
        self: `${base}/rest/api/3/statuscategory/1`,
        ...CATEGORY[t.category],
        name: t.category,
      },
    }));
    send(
      res,
      meta,
      200,
      p.issueTypes.map((t) => ({
        self: `${base}/rest/api/3/issuetype/${t.id}`,
        id: t.id,
        name: t.name,
        subtask: t.subtask === true,
        statuses,
      })),
    );
  });

  base = await http.listen();
  return {
    url: base,
    world,
    requests: http.requests,
    responses: http.responses,
    queries,
    adfProblems,
    fail: (f) => http.fail(f),
    clearFailures: () => http.clearFailures(),
    issue: (key) => {
      const i = findIssue(key);
      if (i === undefined) throw new Error(`no issue ${key} in the fake`);
      return i;
    },
    move: (key, project) => {
      const i = findIssue(key)!;
      const n =
        Math.max(
          0,
          ...world.issues
            .filter((x) => x.key.startsWith(`${project}-`))
            .map((x) => Number(x.key.split('-')[1])),
        ) + 1;
      writing(i);
      i.previousKeys = [...(i.previousKeys ?? []), i.key];
      i.key = `${project}-${n}`;
      return i.key;
    },
    settle: () => unsettled.clear(),
    userProperties: (accountId) => {
      let own = userProperties.get(accountId);
      if (own === undefined) userProperties.set(accountId, (own = new Map<string, unknown>()));
      return own;
    },
    close: () => http.close(),
  };
}

/** A small Jira site: two projects the server may use, one it may not, a reserved-word key. */
export function jiraSeed(): JiraWorld {
  const doc = (text: string): Adf => ({
    type: 'doc',
    version: 1,
    content: [{ type: 'paragraph', content: [{ type: 'text', text }] }],
  });
  const types = [
    { id: '10001', name: 'Bug' },
    { id: '10002', name: 'Task' },
    { id: '10003', name: 'Sub-task', subtask: true },
  ];
  const at = (day: number) =>
    new Date(Date.UTC(2026, 10, day, 9)).toISOString().replace('Z', '+0000');
  const world: JiraWorld = {
    users: [
      { accountId: '557058:alice', displayName: 'Alice Adams', emailAddress: 'alice@acme.example' },
      { accountId: '557058:bob', displayName: 'Bob Brown', emailAddress: 'bob@acme.example' },
      { accountId: '557058:bot', displayName: 'Gatehouse Bot', emailAddress: 'bot@acme.example' },
      {
        accountId: '557058:carol',
        displayName: 'Carol Confidential',
        emailAddress: 'carol@acme.example',
        projects: ['HR'],
      },
    ],
    projects: [
      { id: '10000', key: 'OPS', name: 'Operations', issueTypes: types },
      { id: '10010', key: 'WEB', name: 'Website', issueTypes: types },
      { id: '10020', key: 'HR', name: 'People (confidential)', issueTypes: types },
      { id: '10030', key: 'AND', name: 'A reserved word', issueTypes: types },
    ],
    issues: [
      {
        id: '1',
        key: 'OPS-1',
        summary: 'Database failover drill',
        description: doc('Run the **drill** on Friday.'),
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'Medium',
        labels: ['drill'],
        assignee: '557058:alice',
        reporter: '557058:bob',
        created: at(1),
        updated: at(5),
        comments: [
          { id: '100', author: '557058:bob', body: doc('Scheduled for 14:00.'), created: at(2) },
        ],
      },
      {
        id: '2',
        key: 'OPS-2',
        summary: 'Disk full on db-7',
        description: doc('Alerts since 03:00'),
        status: 'In Progress',
        statusCategory: 'In Progress',
        issuetype: 'Bug',
        priority: 'High',
        labels: ['incident', 'db'],
        assignee: '557058:bot',
        reporter: '557058:alice',
        created: at(3),
        updated: at(6),
        comments: [],
      },
      {
        id: '3',
        key: 'WEB-1',
        summary: 'Login page typo',
        description: null,
        status: 'Done',
        statusCategory: 'Done',
        issuetype: 'Bug',
        priority: 'Low',
        labels: [],
        assignee: null,
        reporter: '557058:alice',
        created: at(4),
        updated: at(4),
        comments: [],
      },
      {
        id: '4',
        key: 'HR-1',
        summary: 'Salary review (confidential)',
        description: doc('Numbers inside'),
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'High',
        labels: ['confidential'],
        assignee: '557058:alice',
        reporter: '557058:alice',
        created: at(2),
        updated: at(2),
        comments: [],
      },
      {
        id: '5',
        key: 'AND-1',
        summary: 'Reserved-word project key',
        description: null,
        status: 'To Do',
        statusCategory: 'To Do',
        issuetype: 'Task',
        priority: 'Low',
        labels: [],
        assignee: null,
        reporter: '557058:bob',
        created: at(1),
        updated: at(1),
        comments: [],
      },
    ],
  };
  // OPS-1 and OPS-2 are in the current sprint; OPS-1 is planned for release 2026.12.
  Object.assign(
    world.issues.find((x) => x.key === 'OPS-1')!,
    {
      sprint: 'OPS Sprint 48',
      fixVersions: ['2026.12'],
    },
  );
  world.issues.find((x) => x.key === 'OPS-2')!.sprint = 'OPS Sprint 48';
  world.sprints = [
    { name: 'OPS Sprint 47', state: 'closed' },
    { name: 'OPS Sprint 48', state: 'active' },
    { name: 'OPS Sprint 49', state: 'future' },
  ];
  world.versions = [
    { project: 'OPS', name: '2026.11', released: true },
    { project: 'OPS', name: '2026.12', released: false },
    { project: 'HR', name: 'HR-2027', released: false },
  ];
  // OPS-2 blocks OPS-1 and relates to HR-1 (a project the servers under test may not see);
  // OPS-3 is a sub-task of OPS-1.
  world.issues.find((x) => x.key === 'OPS-2')!.links = [
    { type: 'Blocks', key: 'OPS-1' },
    { type: 'Relates', key: 'HR-1' },
  ];
  world.issues.push({
    id: '6',
    key: 'OPS-3',
    summary: 'Check replica lag',
    description: null,
    status: 'To Do',
    statusCategory: 'To Do',
    issuetype: 'Sub-task',
    priority: 'Medium',
    labels: [],
    assignee: null,
    reporter: '557058:bob',
    created: at(2),
    updated: at(2),
    comments: [],
    parent: 'OPS-1',
  });
  return world;
}

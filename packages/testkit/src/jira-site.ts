import { AsyncLocalStorage } from 'node:async_hooks';
import type { IncomingMessage } from 'node:http';
import type { HttpFake, RouteContext, RouteHandler } from './http-fake.js';
import { validateAdf } from './jira-adf.js';
import type { AtlassianOAuthOptions } from './jira-oauth.js';

/**
 * The Jira fake's site: the world it serves (projects, issues, users), who the credentials are,
 * what each may browse, search's lag behind writes, and the route kit the route modules
 * (jira-routes-*.ts) register their endpoints with.
 */

export interface FakeJiraUser {
  accountId: string;
  displayName: string;
  emailAddress?: string;
  /**
   * The projects this person may browse (default: all): calls as them — with their 3LO token or
   * their own credentials — see nothing of the others, and the user pickers offer them only there.
   */
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
  /**
   * An Atlassian OAuth 2.0 (3LO) app (jira-oauth.ts): people (`users`: account ids) link their
   * own accounts, and a call with their token through the gateway acts as them.
   */
  oauth?: AtlassianOAuthOptions;
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

/** A search request, from a POST body or a GET query. */
export interface SearchBody {
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
export interface FieldsIn {
  project?: { key?: string; id?: string };
  issuetype?: { id?: string; name?: string };
  summary?: unknown;
  description?: unknown;
  priority?: { name?: string };
  labels?: unknown;
  assignee?: { accountId?: string } | null;
  [field: string]: unknown;
}

export const RESOLUTIONS = ['Done', "Won't Do", 'Duplicate'];

export const PERMISSIONS = [
  'BROWSE_PROJECTS',
  'CREATE_ISSUES',
  'EDIT_ISSUES',
  'ADD_COMMENTS',
  'TRANSITION_ISSUES',
];
export const CATEGORY = {
  'To Do': { id: 2, key: 'new', colorName: 'blue-gray' },
  'In Progress': { id: 4, key: 'indeterminate', colorName: 'yellow' },
  Done: { id: 3, key: 'done', colorName: 'green' },
} as const;

/** The workflow every project of the fake has: To Do → In Progress → Done. */
export const TRANSITIONS = [
  { id: '11', name: 'To Do', to: 'To Do', category: 'To Do' as const },
  { id: '21', name: 'Start progress', to: 'In Progress', category: 'In Progress' as const },
  { id: '31', name: 'Done', to: 'Done', category: 'Done' as const },
];

/** Who a request is. */
export interface JiraCaller {
  accountId: string;
}

/** The state of a running fake beyond its world, and what every route asks of it. */
export class JiraSite {
  /** The site URL, once listening. */
  base = '';
  readonly world: JiraWorld;
  /** Every JQL query the fake evaluated, as received. */
  readonly queries: string[] = [];
  /** ADF documents sent to it that break the official ADF schema (they were refused). */
  readonly adfProblems: string[] = [];
  /**
   * Search's view of what was written less than `searchLagMs` ago: the issue as it was before the
   * first write of the lag (undefined: it did not exist yet). Cited at {@link JiraFakeOptions}.
   */
  readonly #unsettled = new Map<string, { until: number; before: FakeJiraIssue | undefined }>();
  readonly #lag: number;
  readonly #userProperties = new Map<string, Map<string, unknown>>();
  /** Who the request being answered is (its account id), across the route's awaits. */
  readonly caller = new AsyncLocalStorage<string>();
  #nextId = 1000;

  constructor(readonly options: JiraFakeOptions) {
    this.world = options.world;
    this.#lag = options.searchLagMs ?? 1_000;
  }

  nextId(): number {
    return ++this.#nextId;
  }

  readonly now = (): string => new Date().toISOString().replace('Z', '+0000');

  /** Call before a write changes `issue` (or after a create pushed it, with `created`). */
  readonly writing = (issue: FakeJiraIssue, created = false): void => {
    if (this.#lag <= 0) return;
    const held = this.#unsettled.get(issue.id);
    const before =
      held !== undefined && Date.now() < held.until
        ? held.before
        : created
          ? undefined
          : structuredClone(issue);
    this.#unsettled.set(issue.id, { until: Date.now() + this.#lag, before });
  };

  /** The issues as a search sees them: settled ones as they are, the rest as they were. */
  readonly searchable = (reconcile: readonly number[]): FakeJiraIssue[] =>
    this.world.issues.flatMap((i) => {
      const held = this.#unsettled.get(i.id);
      if (held === undefined || Date.now() >= held.until || reconcile.includes(Number(i.id)))
        return [i];
      return held.before === undefined ? [] : [held.before];
    });

  /** Lets search see every write made so far. */
  settle(): void {
    this.#unsettled.clear();
  }

  /** Jira refuses an ADF document that breaks the schema (and the tests see it). */
  readonly badAdf = (doc: unknown, field: string): string | undefined => {
    const problems = validateAdf(doc);
    if (problems.length === 0) return undefined;
    this.adfProblems.push(`${field}: ${problems.join('; ')}`);
    return `${field}: Operation value must be an Atlassian Document (${problems[0]})`;
  };

  /** Who a request's `Authorization` is: Basic e-mail:token, or Bearer (a token without e-mail). */
  readonly credentialOf = (req: IncomingMessage) => {
    const header = req.headers.authorization ?? '';
    const [scheme, value = ''] = header.split(' ');
    if (/^bearer$/i.test(scheme ?? ''))
      return this.options.credentials.find((c) => c.email === undefined && c.token === value);
    if (!/^basic$/i.test(scheme ?? '')) return undefined;
    const [email, token] = Buffer.from(value, 'base64').toString('utf8').split(':');
    return this.options.credentials.find((c) => c.email === email && c.token === token);
  };

  readonly projectOf = (i: FakeJiraIssue): FakeJiraProject =>
    this.world.projects.find((p) => p.key === i.key.split('-')[0])!;

  /** Whether the calling account may browse `project`: the credentials' grants and its own. */
  readonly canBrowse = (project: string): boolean =>
    !(this.options.denied?.[project] ?? []).includes('BROWSE_PROJECTS') && this.#personMay(project);

  /** Whether the calling account's own project permissions reach `project`. */
  readonly #personMay = (project: string): boolean => {
    const who = this.caller.getStore();
    const projects = this.world.users.find((u) => u.accountId === who)?.projects;
    return projects === undefined || projects.includes(project);
  };

  /** Whether the calling account holds `permission` in `project`. */
  readonly holds = (project: string, permission: string): boolean =>
    !(this.options.denied?.[project] ?? []).includes(permission) && this.#personMay(project);

  /** An issue by key, id, or a key it had before it moved. */
  readonly findIssue = (keyOrId: string): FakeJiraIssue | undefined =>
    this.world.issues.find(
      (i) => i.key === keyOrId || i.id === keyOrId || (i.previousKeys ?? []).includes(keyOrId),
    );

  /** The properties on an account's user record (key → value). */
  userRecord(accountId: string): Map<string, unknown> {
    let own = this.#userProperties.get(accountId);
    if (own === undefined) this.#userProperties.set(accountId, (own = new Map<string, unknown>()));
    return own;
  }
}

/** The context of a route of the fake. */
export type JiraCtx = RouteContext<JiraCaller>;

/** What a route module registers its endpoints with. */
export interface JiraRoutes {
  readonly site: JiraSite;
  readonly route: (method: string, path: string, handle: RouteHandler<JiraCaller>) => void;
  readonly send: HttpFake<JiraCaller>['send'];
  readonly error: HttpFake<JiraCaller>['error'];
  /** An answer without a body (204, or 200/201 of a property write), recorded like the rest. */
  readonly noBody: (ctx: JiraCtx, status: number) => void;
  /** The issue the path names, when the caller may browse it (else 404, answered). */
  readonly browsable: (ctx: JiraCtx, keyOrId: string) => FakeJiraIssue | undefined;
  /** Whether the caller holds `permission` in `project` (else 403, answered). */
  readonly allowed: (ctx: JiraCtx, project: string, permission: string) => boolean;
  /** A create-metadata page: `startAt`, and `maxResults` at most 50. */
  readonly pageOf: (url: URL) => { startAt: number; maxResults: number };
}

export function jiraRoutes(site: JiraSite, http: HttpFake<JiraCaller>): JiraRoutes {
  const error = http.error.bind(http);
  const { findIssue, canBrowse, projectOf } = site;
  return {
    site,
    // Every route answers as the caller: what they may browse follows them through its awaits.
    route: (method, path, handle) =>
      http.route(method, path, (ctx) => site.caller.run(ctx.cred.accountId, () => handle(ctx))),
    send: http.send.bind(http),
    error,
    noBody: (ctx, status) => {
      ctx.res.writeHead(status).end();
      http.responses.push({
        method: ctx.meta.method,
        route: ctx.meta.route,
        status,
        body: undefined,
      });
    },
    // "Default: 50" in the REST v3 reference of "Get create field metadata for a project and
    // issue type id"; the fake pages there.
    pageOf: (url) => ({
      startAt: Math.max(0, Number(url.searchParams.get('startAt') ?? 0) || 0),
      maxResults: Math.min(50, Math.max(1, Number(url.searchParams.get('maxResults') ?? 50) || 50)),
    }),
    browsable: (ctx, keyOrId) => {
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
    },
    allowed: (ctx, project, permission) => {
      if (site.holds(project, permission)) return true;
      error(
        ctx.res,
        ctx.meta,
        403,
        `You do not have permission (${permission}) in project ${project}.`,
      );
      return false;
    },
  };
}

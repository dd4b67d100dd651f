import { readJson } from './http-fake.js';
import { JqlError, matches, parseJql } from './jira-jql.js';
import type { FakeJiraIssue, JiraCtx, JiraRoutes, JiraSite, SearchBody } from './jira-site.js';
import type { JiraShapes } from './jira-shapes.js';

/** The issue's values of a JQL field, lower-cased (undefined: no such field). */
export const fieldValues =
  (site: JiraSite, i: FakeJiraIssue) =>
  (field: string): Array<string | null> | undefined => {
    const { world, projectOf } = site;
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
        if (!(site.options.indexedProperties ?? []).includes(property[1]!)) return undefined;
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

/** `/jql/parse` and `/search/jql` (POST and GET), over the JQL subset jira-jql.ts evaluates. */
export function searchRoutes(api: JiraRoutes, shapes: JiraShapes): void {
  const { site, route, send, error } = api;
  const { world, canBrowse, projectOf } = site;
  route('POST', '/rest/api/3/jql/parse', async ({ req, res, meta }) => {
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
  const searchJql = (ctx: JiraCtx, body: SearchBody): void => {
    const jql = body.jql ?? '';
    site.queries.push(jql);
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
      found = site
        .searchable(reconcile)
        .filter(
          (i) =>
            canBrowse(projectOf(i).key) &&
            matches(parsed.where!, fieldValues(site, i), me, jqlFunctions),
        );
    } catch (e) {
      if (e instanceof JqlError) return error(ctx.res, ctx.meta, 400, e.message);
      throw e;
    }
    for (const { field, direction } of [...(parsed.orderBy?.fields ?? [])].reverse()) {
      const key = (i: FakeJiraIssue) => fieldValues(site, i)(field.name.toLowerCase())?.[0] ?? '';
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
      issues: page.map((i) => shapes.issueObject(i, body.fields, body.properties)),
      isLast,
      ...(isLast
        ? {}
        : { nextPageToken: Buffer.from(`page:${start + size}`).toString('base64url') }),
    });
  };
  route('POST', '/rest/api/3/search/jql', async (ctx: JiraCtx) =>
    searchJql(ctx, await readJson(ctx.req)),
  );
  route('GET', '/rest/api/3/search/jql', (ctx: JiraCtx) => {
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
}

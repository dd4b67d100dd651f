import { readJson } from './http-fake.js';
import { CATEGORY, RESOLUTIONS, TRANSITIONS } from './jira-site.js';
import type {
  Adf,
  FakeJiraComment,
  FakeJiraIssue,
  FieldsIn,
  JiraCtx,
  JiraRoutes,
} from './jira-site.js';
import type { JiraShapes } from './jira-shapes.js';

/** An issue and its comments: read, create, edit, comment, and its workflow's transitions. */
export function issueRoutes(api: JiraRoutes, shapes: JiraShapes): void {
  const { site, route, send, error, noBody, browsable, allowed } = api;
  const { world, canBrowse, projectOf, findIssue } = site;
  route('GET', '/rest/api/3/issue/{issueIdOrKey}', ({ res, meta, params, url }) => {
    const i = findIssue(decodeURIComponent(params[0] ?? ''));
    if (i === undefined || !canBrowse(projectOf(i).key)) {
      return error(res, meta, 404, 'Issue does not exist or you do not have permission to see it.');
    }
    // Repeated (fields=a&fields=b) or comma-separated, as clients send them.
    const listed = url.searchParams.getAll('fields').flatMap((f) => f.split(','));
    const fields = listed.length === 0 ? undefined : listed;
    send(res, meta, 200, shapes.issueObject(i, fields));
  });

  route('GET', '/rest/api/3/issue/{issueIdOrKey}/comment', ({ res, meta, params, url }) => {
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
        ...shapes.comment(i, c),
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

  route('POST', '/rest/api/3/issue', async (ctx: JiraCtx) => {
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
        const bad = site.badAdf(f.description, 'description');
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
      id: String(site.nextId()),
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
      created: site.now(),
      updated: site.now(),
      comments: [],
      properties: Object.fromEntries((body.properties ?? []).map((x) => [x.key, x.value])),
    };
    world.issues.push(issue);
    site.writing(issue, true);
    send(ctx.res, ctx.meta, 201, {
      id: issue.id,
      key: issue.key,
      self: `${site.base}/rest/api/3/issue/${issue.id}`,
    });
  });

  route('PUT', '/rest/api/3/issue/{issueIdOrKey}', async (ctx: JiraCtx) => {
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
          : site.badAdf(f.description, 'description');
      if (bad !== undefined)
        return error(ctx.res, ctx.meta, 400, '', {
          errorMessages: [],
          errors: { description: bad },
        });
    }
    site.writing(i);
    if (typeof f.summary === 'string') i.summary = f.summary;
    if (f.description !== undefined) i.description = f.description as Adf | null;
    if (f.priority?.name !== undefined) i.priority = f.priority.name;
    if (f.assignee !== undefined) i.assignee = f.assignee?.accountId ?? null;
    if (Array.isArray(f.labels)) i.labels = f.labels.map(String);
    for (const op of body.update?.labels ?? []) {
      if (typeof op.add === 'string' && !i.labels.includes(op.add)) i.labels.push(op.add);
      if (typeof op.remove === 'string') i.labels = i.labels.filter((l) => l !== op.remove);
    }
    i.updated = site.now();
    noBody(ctx, 204);
  });

  route('POST', '/rest/api/3/issue/{issueIdOrKey}/comment', async (ctx: JiraCtx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined || !allowed(ctx, projectOf(i).key, 'ADD_COMMENTS')) return;
    const body = (await readJson(ctx.req)) as {
      body?: unknown;
      properties?: Array<{ key: string; value: unknown }>;
    };
    const bad =
      typeof body.body === 'string'
        ? 'body: a string was sent to v3'
        : site.badAdf(body.body, 'comment');
    if (bad !== undefined)
      return error(ctx.res, ctx.meta, 400, '', { errorMessages: [], errors: { comment: bad } });
    const c: FakeJiraComment = {
      id: String(site.nextId()),
      author: ctx.cred.accountId,
      body: body.body as Adf,
      created: site.now(),
      properties: Object.fromEntries((body.properties ?? []).map((x) => [x.key, x.value])),
    };
    site.writing(i);
    i.comments.push(c);
    i.updated = site.now();
    send(ctx.res, ctx.meta, 201, shapes.comment(i, c));
  });

  route('GET', '/rest/api/3/issue/{issueIdOrKey}/transitions', (ctx: JiraCtx) => {
    const i = browsable(ctx, ctx.params[0] ?? '');
    if (i === undefined) return;
    send(ctx.res, ctx.meta, 200, {
      transitions: TRANSITIONS.filter((t) => t.to !== i.status).map((t) => ({
        id: t.id,
        name: t.name,
        to: {
          self: `${site.base}/rest/api/3/status/${t.id}`,
          id: t.id,
          name: t.to,
          statusCategory: {
            self: `${site.base}/rest/api/3/statuscategory/1`,
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

  route('POST', '/rest/api/3/issue/{issueIdOrKey}/transitions', async (ctx: JiraCtx) => {
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
    site.writing(i);
    i.status = t.to;
    i.statusCategory = t.category;
    if (fields?.resolution?.name !== undefined) i.resolution = fields.resolution.name;
    i.updated = site.now();
    noBody(ctx, 204);
  });
}

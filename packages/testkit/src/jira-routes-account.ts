import { readJson } from './http-fake.js';
import { PERMISSIONS } from './jira-site.js';
import type { JiraCtx, JiraRoutes } from './jira-site.js';
import type { JiraShapes } from './jira-shapes.js';

/** The caller (`myself`, `mypermissions`), finding people, and user-record properties. */
export function accountRoutes(api: JiraRoutes, shapes: JiraShapes): void {
  const { site, route, send, error, noBody } = api;
  const { world, findIssue } = site;
  route('GET', '/rest/api/3/myself', ({ res, meta, cred }) =>
    send(res, meta, 200, {
      ...shapes.user(cred.accountId),
      emailAddress:
        site.options.credentials.find((c) => c.accountId === cred.accountId)?.email ?? '',
    }),
  );

  route('GET', '/rest/api/3/mypermissions', ({ res, meta, url }) => {
    const project = url.searchParams.get('projectKey') ?? '';
    const wanted = (url.searchParams.get('permissions') ?? PERMISSIONS.join(',')).split(',');

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
            havePermission: site.holds(project, p),
          },
        ]),
      ),
    });
  });

  const matching = (q: string) =>
    world.users.filter(
      (u) =>
        q !== '' &&
        (u.displayName.toLowerCase().includes(q) ||
          (u.emailAddress ?? '').toLowerCase().includes(q)),
    );
  route('GET', '/rest/api/3/user/search', ({ res, meta, url }) => {
    const q = (url.searchParams.get('query') ?? '').toLowerCase();
    send(
      res,
      meta,
      200,
      matching(q).map((u) => shapes.user(u.accountId)),
    );
  });
  // "Find users with browse permission" (REST v3, user search): the people matching the query who
  // may browse the project (or the issue's project); one of projectKey and issueKey is required.
  route('GET', '/rest/api/3/user/viewissue/search', ({ res, meta, url }) => {
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
        .map((u) => shapes.user(u.accountId)),
    );
  });

  /**
   * User properties: data an app keeps on a user's record, read directly (not through search).
   * "Access to Jira, to set a property on the calling user's record"; any other user's needs
   * Administer Jira, which the fake's accounts lack; values are non-empty JSON of at most 32 768
   * bytes. REST v3 "User properties":
   * https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-user-properties/.
   */
  const ownRecord = (ctx: JiraCtx): Map<string, unknown> | undefined => {
    const accountId = ctx.url.searchParams.get('accountId');
    if (accountId === null) {
      error(ctx.res, ctx.meta, 400, 'The accountId query parameter needs to be provided.');
      return undefined;
    }
    if (accountId !== ctx.cred.accountId) {
      error(ctx.res, ctx.meta, 403, 'You do not have permission to edit this user.');
      return undefined;
    }
    return site.userRecord(accountId);
  };
  const propertyUrl = (accountId: string, key: string) =>
    `${site.base}/rest/api/3/user/properties/${encodeURIComponent(key)}?accountId=${accountId}`;
  route('GET', '/rest/api/3/user/properties', (ctx: JiraCtx) => {
    const own = ownRecord(ctx);
    if (own === undefined) return;
    send(ctx.res, ctx.meta, 200, {
      keys: [...own.keys()].map((key) => ({ key, self: propertyUrl(ctx.cred.accountId, key) })),
    });
  });
  /** The caller's record and the property named in the path, when it exists (else 404). */
  const existing = (ctx: JiraCtx) => {
    const own = ownRecord(ctx);
    if (own === undefined) return undefined;
    const key = decodeURIComponent(ctx.params[0] ?? '');
    if (own.has(key)) return { own, key };
    error(ctx.res, ctx.meta, 404, `The property with key '${key}' does not exist.`);
    return undefined;
  };
  route('GET', '/rest/api/3/user/properties/{propertyKey}', (ctx: JiraCtx) => {
    const found = existing(ctx);
    if (found !== undefined)
      send(ctx.res, ctx.meta, 200, { key: found.key, value: found.own.get(found.key) });
  });
  route('PUT', '/rest/api/3/user/properties/{propertyKey}', async (ctx: JiraCtx) => {
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
  route('DELETE', '/rest/api/3/user/properties/{propertyKey}', (ctx: JiraCtx) => {
    const found = existing(ctx);
    if (found === undefined) return;
    found.own.delete(found.key);
    noBody(ctx, 204);
  });
}

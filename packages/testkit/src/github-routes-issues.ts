import type { FakeComment, FakeIssue, FakeRepo, GitHubRoutes } from './github-world.js';
import type { GitHubShapes } from './github-shapes.js';

/**
 * Issues and their comments: list (filters, sort, Link pages), create (what GitHub drops without
 * push access), get (a transferred issue answers 301), update, and comments (a locked issue).
 */
export function issueRoutes(api: GitHubRoutes, shapes: GitHubShapes): void {
  const { world, route, send, error, withRepo, paginate, readBody, writable } = api;
  const { fullName, canPush, permission } = world;
  const issueIn = (r: FakeRepo, number: string | undefined) =>
    r.issues.find((i) => i.number === Number(number));

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
        page.map((i) => shapes.issue(r, i)),
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
      if (!writable(ctx, r, cred)) return;
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
      send(ctx.res, ctx.meta, 201, shapes.issue(r, issue), {
        location: `${world.base}/repos/${fullName(r)}/issues/${issue.number}`,
      });
    }),
  );

  route('GET', '/repos/{owner}/{repo}/issues/{issue_number}', (ctx) =>
    withRepo(ctx, (r) => {
      const moved = world.transfers.get(`${fullName(r)}#${ctx.params[2]}`);
      if (moved !== undefined) {
        const location = `${world.base}/repos/${moved}`;
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
      send(ctx.res, ctx.meta, 200, shapes.issue(r, issue));
    }),
  );

  route('PATCH', '/repos/{owner}/{repo}/issues/{issue_number}', (ctx) =>
    withRepo(ctx, async (r, cred) => {
      const issue = issueIn(r, ctx.params[2]);
      const body = await readBody(ctx.req);
      if (issue === undefined) return error(ctx.res, ctx.meta, 404, 'Not Found');
      if (!writable(ctx, r, cred)) return;
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
      send(ctx.res, ctx.meta, 200, shapes.issue(r, issue));
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
        page.map((c) => shapes.comment(r, issue, c)),
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
      if (!writable(ctx, r, cred)) return;
      if (issue.locked === true && !canPush(r, cred.login)) {
        return error(ctx.res, ctx.meta, 403, 'Unable to create comment because issue is locked.');
      }
      const now = new Date().toISOString();
      const comment: FakeComment = {
        id: world.nextId(),
        body: body.body,
        user: cred.login,
        created_at: now,
        updated_at: now,
      };
      issue.comments.push(comment);
      issue.updated_at = now;
      send(ctx.res, ctx.meta, 201, shapes.comment(r, issue, comment));
    }),
  );
}

import { createHash } from 'node:crypto';
import type { GitHubRoutes } from './github-world.js';
import type { GitHubShapes } from './github-shapes.js';

/** A repository, its labels and milestones, a collaborator's permission, and its files. */
export function repoRoutes(api: GitHubRoutes, shapes: GitHubShapes): void {
  const { world, route, send, error, withRepo, paginate } = api;
  const { fullName, canPush, permission } = world;

  route('GET', '/repos/{owner}/{repo}', (ctx) =>
    withRepo(ctx, (r, cred) => send(ctx.res, ctx.meta, 200, shapes.repository(r, cred.login))),
  );

  route('GET', '/repos/{owner}/{repo}/labels', (ctx) =>
    withRepo(ctx, (r) => {
      const { page, headers } = paginate(ctx.url, r.labels);
      send(
        ctx.res,
        ctx.meta,
        200,
        page.map((l) => shapes.label(r, l.name)),
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
        page.map((m) => shapes.milestone(r, m.number)),
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
          ...shapes.user(login),
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
      const api = `${world.base}/repos/${fullName(r)}`;
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
          html_url: `${world.web}/${fullName(r)}/${type === 'dir' ? 'tree' : 'blob'}/main/${p}`,
          download_url: type === 'dir' ? null : `https://raw.example.test/${fullName(r)}/main/${p}`,
          _links: {
            self: `${api}/contents/${p}?ref=main`,
            git: `${api}/git/${type === 'dir' ? 'trees' : 'blobs'}/${sha}`,
            html: `${world.web}/${fullName(r)}/${type === 'dir' ? 'tree' : 'blob'}/main/${p}`,
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
}

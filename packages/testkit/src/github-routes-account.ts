import { randomBytes } from 'node:crypto';
import { EPOCH } from './github-world.js';
import type { GitHubRoutes } from './github-world.js';
import type { GitHubShapes } from './github-shapes.js';

/** `GET /user` (who a token is, its OAuth scopes) and a GitHub App's installation tokens. */
export function accountRoutes(api: GitHubRoutes, shapes: GitHubShapes): void {
  const { world, route, send, error } = api;
  route('GET', '/user', ({ res, cred, meta }) => {
    if (cred === 'app')
      return error(res, meta, 403, 'A JSON web token cannot be used to access this resource');
    send(
      res,
      meta,
      200,
      {
        ...shapes.user(cred.login),
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
      const installation = world.options.app?.installations[Number(params[0])];
      if (installation === undefined) return error(res, meta, 404, 'Not Found');
      const token = `ghs_${randomBytes(18).toString('hex')}`;
      world.installationTokens.set(token, installation);
      send(res, meta, 201, {
        token,
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
        permissions: { issues: 'write', metadata: 'read', contents: 'read' },
        repository_selection: 'selected',
      });
    },
  );
}

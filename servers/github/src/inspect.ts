import { checkCredential, startupBounds } from '@gatehouse/core/saas';
import type { GitHub } from './client.js';
import { githubError, requestOptions } from './client.js';
import type { GitHubConfig } from './config.js';
import { parseRepo } from './scope.js';
import type { RepoScope } from './scope.js';

/** What the credentials reach, as checked at start. */
export interface AccessReport {
  /** The login of a token, or `GitHub App installation N`. */
  readonly identity: string;
  /** Classic PAT scopes (fine-grained tokens and apps have none). */
  readonly scopes: readonly string[] | undefined;
  readonly repos: ReadonlyArray<{ repo: string; visible: boolean; push: boolean }>;
  readonly warnings: readonly string[];
}

const BROAD_SCOPES = [
  'delete_repo',
  'admin:org',
  'admin:repo_hook',
  'admin:enterprise',
  'workflow',
  'write:packages',
];

/**
 * Checks the credentials work and reports what they reach (the server's start-up check): a
 * rejected token is a {@link CredentialError} (exit 2); repositories the credentials cannot see,
 * missing push access with write tools on, and over-broad classic scopes are warnings.
 */
export async function inspectAccess(
  github: GitHub,
  config: GitHubConfig,
  scope: RepoScope,
  writes: boolean,
): Promise<AccessReport> {
  const bounds = startupBounds(config.GITHUB_REQUEST_TIMEOUT_MS, 2);
  const warnings: string[] = [];
  let identity = `GitHub App installation ${config.GITHUB_APP_INSTALLATION_ID ?? '?'}`;
  let scopes: string[] | undefined;
  const credential = <T>(fn: () => Promise<T>) =>
    checkCredential(
      config.GITHUB_TOKEN === undefined ? 'GITHUB_APP_PRIVATE_KEY' : 'GITHUB_TOKEN',
      () => 'GitHub rejected the credentials (401)',
      fn,
      githubError,
    );
  if (config.GITHUB_TOKEN !== undefined) {
    const me = await credential(() => github.rest.users.getAuthenticated(requestOptions(bounds)));
    identity = me.data.login;
    const header = me.headers['x-oauth-scopes'];
    if (typeof header === 'string') {
      scopes = header
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '');
      const broad = scopes.filter((s) => BROAD_SCOPES.includes(s));
      if (broad.length > 0) {
        warnings.push(
          `the classic token has scopes this server never needs (${broad.join(', ')}); use a fine-grained token limited to Issues and Metadata`,
        );
      }
    }
  }
  const repos: Array<{ repo: string; visible: boolean; push: boolean }> = [];
  for (const name of scope.names) {
    const ref = parseRepo(name)!;
    const data = await credential(() =>
      github.rest.repos
        .get({ owner: ref.owner, repo: ref.repo, ...requestOptions(bounds) })
        .then((r) => r.data)
        .catch((error: unknown) => {
          const status = (error as { status?: number }).status;
          if (status === 404 || status === 403) return undefined;
          throw error;
        }),
    );
    if (data === undefined) {
      repos.push({ repo: name, visible: false, push: false });
      warnings.push(`${name} is not visible to the credentials`);
    } else repos.push({ repo: name, visible: true, push: data.permissions?.push === true });
  }
  if (writes && repos.length > 0 && !repos.some((r) => r.push)) {
    warnings.push(
      'write tools are enabled but the credentials cannot push to any configured repository',
    );
  }
  return { identity, scopes, repos, warnings };
}

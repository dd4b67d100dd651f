import { TargetScope } from '@gatehouse/core/saas';
import type { GitHubConfig } from './config.js';
import { parseRepo } from './names.js';
import type { RepoRef } from './names.js';

export { OWNER_NAME, REPO_NAME, parseRepo } from './names.js';
export type { RepoRef } from './names.js';

/** The repositories this server may touch: GITHUB_REPOS ∩ the `github:` allow-list patterns. */
export type RepoScope = TargetScope;

export function repoScope(
  config: Pick<GitHubConfig, 'GITHUB_REPOS' | 'GATEHOUSE_ALLOW_TARGETS'>,
): RepoScope {
  return new TargetScope({
    kind: 'github',
    variable: 'GITHUB_REPOS',
    noun: 'repository',
    configured: config.GITHUB_REPOS,
    allowTargets: config.GATEHOUSE_ALLOW_TARGETS,
    canonical: (name) => {
      const ref = parseRepo(name);
      return ref === undefined ? undefined : `${ref.owner}/${ref.repo}`;
    },
    caseInsensitive: true,
  });
}

/** The `owner/repo` of a reference. */
export const repoName = (ref: RepoRef): string => `${ref.owner}/${ref.repo}`;

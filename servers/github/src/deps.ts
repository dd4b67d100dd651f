import { PolicyError, ToolError } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import type { GitHub } from './client.js';
import type { GitHubConfig } from './config.js';
import { parseRepo } from './scope.js';
import type { RepoRef, RepoScope } from './scope.js';
import type { TrustCache } from './trust.js';

/** What the tools, resources and prompts share; built once per process. */
export interface GitHubDeps {
  readonly config: GitHubConfig;
  readonly github: GitHub;
  readonly scope: RepoScope;
  /** Set in trusted-authors mode. */
  readonly trust: TrustCache | undefined;
  readonly logger: Logger;
}

/** Parses and checks a `repo` argument against the allow-list; a clear refusal otherwise. */
export function allowedRepo(deps: GitHubDeps, text: string): RepoRef {
  const ref = parseRepo(text);
  if (ref === undefined) {
    throw new ToolError(`"${text}" is not a repository name; use owner/repo.`, {
      code: 'invalid_repo',
    });
  }
  if (!deps.scope.allows(ref)) {
    throw new PolicyError(
      'repo_allow_list',
      `${ref.owner}/${ref.repo} is not one of this server's repositories (${deps.scope.describe()}).`,
      { code: 'repo_not_allowed' },
    );
  }
  return ref;
}

/** The targets a repo argument maps to, for policy and audit (`github:owner/repo`). */
export function repoTarget(text: string, number?: number): string {
  return number === undefined ? `github:${text}` : `github:${text}#${number}`;
}

/** The targets of a search over the whole scope. */
export function scopeTargets(scope: RepoScope): string[] {
  return [...scope.repos.map((r) => `github:${r}`), ...scope.owners.map((o) => `github:${o}/*`)];
}

import { repoName } from './scope.js';
import { PolicyError, ToolError, neutralizeMarkdown } from '@gatehouse/core';
import type { Logger } from '@gatehouse/core';
import type { GitHubAccounts } from './acting.js';
import type { GitHubConfig } from './config.js';
import type { GitHubIssue } from './format.js';
import { repoOf } from './format.js';
import { parseRepo } from './scope.js';
import type { RepoRef, RepoScope } from './scope.js';

/** What the tools, resources and prompts share; built once per process. */
export interface GitHubDeps {
  readonly config: GitHubConfig;
  /** Who each call acts as on GitHub, with that account's client and caches. */
  readonly accounts: GitHubAccounts;
  readonly scope: RepoScope;
  readonly logger: Logger;
  /** Hosts links in GitHub content may keep pointing to (see {@link safeMarkdown}). */
  readonly linkHosts: readonly string[];
}

/** Parses and checks a `repo` argument against the allow-list; a clear refusal otherwise. */
export function allowedRepo(deps: GitHubDeps, text: string): RepoRef {
  const ref = parseRepo(text);
  if (ref === undefined) {
    throw new ToolError(`"${text}" is not a repository name; use owner/repo.`, {
      code: 'invalid_repo',
    });
  }
  if (!deps.scope.allows(repoName(ref))) {
    throw new PolicyError(
      'repo_allow_list',
      `${ref.owner}/${ref.repo} is not one of this server's repositories (${deps.scope.describe()}).`,
      { code: 'repo_not_allowed' },
    );
  }
  return ref;
}

/**
 * A prompt's target: its `repo` argument parsed and checked against the allow-list. The runner
 * calls it before the handler, so a handler gets only a repository it may use (ADR 0016).
 */
export function promptRepoTarget(deps: GitHubDeps, text: string, number?: string): string {
  const ref = allowedRepo(deps, text);
  return repoTarget(repoName(ref), number === undefined ? undefined : Number(number));
}

/** A `repo` argument a prompt's target has already checked, as a reference. */
export const checkedRepo = (text: string): RepoRef => parseRepo(text)!;

/**
 * Whether an issue GitHub returned lives in an allowed repository. GitHub may answer with
 * others: search results beyond the qualifiers, an issue transferred elsewhere (a request
 * for acme/api#5 is redirected to where it lives now). Every path that shows issues checks.
 */
export function inScope(deps: GitHubDeps, issue: GitHubIssue): boolean {
  const ref = parseRepo(repoOf(issue));
  return ref !== undefined && deps.scope.allows(repoName(ref));
}

/** The issue the caller asked for, unless it now lives outside the allowed repositories. */
export function requireInScope(deps: GitHubDeps, issue: GitHubIssue, asked: string): void {
  if (inScope(deps, issue)) return;
  throw new PolicyError(
    'repo_allow_list',
    // Named only as far as the caller may see: never the repository it went to.
    `${asked} was moved to a repository outside this server's repositories (${deps.scope.describe()}).`,
  );
}

/** The hosts links in GitHub content may point to and stay links: GitHub's own. */
export function linkHosts(config: Pick<GitHubConfig, 'GITHUB_API_URL'>): string[] {
  const host = new URL(config.GITHUB_API_URL).hostname.toLowerCase();
  return host === 'api.github.com' ? ['github.com'] : [host];
}

/**
 * Third-party Markdown as the model gets it: images, raw HTML and links to other hosts made
 * inert, so a client that renders it fetches nothing and hides no URL (docs/security.md).
 */
export function safeMarkdown(deps: GitHubDeps, text: string): string {
  return neutralizeMarkdown(text, { linkHosts: deps.linkHosts });
}

/** The targets a repo argument maps to, for policy and audit (`github:owner/repo`). */
export function repoTarget(text: string, number?: number): string {
  return number === undefined ? `github:${text}` : `github:${text}#${number}`;
}

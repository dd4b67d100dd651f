import { createAllowList } from '@gatehouse/core';
import type { GitHubConfig } from './config.js';

/** `owner/repo` split and normalised (GitHub names are case-insensitive). */
export interface RepoRef {
  readonly owner: string;
  readonly repo: string;
}

/**
 * An owner as GitHub allows it: letters, digits and single hyphens, not at either end, at most
 * 39 characters.
 */
export const OWNER_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/;

/**
 * A repository name as GitHub allows it: letters, digits, `.`, `-` and `_`, at most 100, and
 * not `.`, `..` or any name of dots only (which a URL path would normalise to another endpoint:
 * `acme/..` is not a repository of acme), nor ending in `.git`.
 */
export const REPO_NAME = /^(?!\.+$)(?!.*\.git$)[A-Za-z0-9._-]{1,100}$/i;

/** Parses `owner/repo`; undefined when it is not one GitHub would accept. */
export function parseRepo(text: string): RepoRef | undefined {
  const [owner, repo, ...rest] = text.trim().split('/');
  if (owner === undefined || repo === undefined || rest.length > 0) return undefined;
  return OWNER_NAME.test(owner) && REPO_NAME.test(repo) ? { owner, repo } : undefined;
}

/**
 * The repositories this server may touch: GITHUB_REPOS, narrowed by any `github:` patterns of
 * GATEHOUSE_ALLOW_TARGETS. Every tool, resource, prompt and search goes through it.
 */
export class RepoScope {
  /** Exact repositories, as configured (`acme/api`). */
  readonly repos: readonly string[];
  /** Owners whose every repository is allowed (`acme` for `acme/*`). */
  readonly owners: readonly string[];
  private readonly coreAllows: (target: string) => boolean;

  constructor(config: Pick<GitHubConfig, 'GITHUB_REPOS' | 'GATEHOUSE_ALLOW_TARGETS'>) {
    const allow = createAllowList(config.GATEHOUSE_ALLOW_TARGETS);
    this.coreAllows = (target) => allow(target).allow;
    const repos = config.GITHUB_REPOS.filter((p) => !p.endsWith('/*')).filter((r) =>
      this.coreAllows(`github:${r}`),
    );
    const owners: string[] = [];
    for (const owner of config.GITHUB_REPOS.filter((p) => p.endsWith('/*')).map((p) =>
      p.slice(0, -2),
    )) {
      if (this.coreAllows(`github:${owner}/*`)) {
        owners.push(owner);
        continue;
      }
      // The allow-list narrows owner/* to some of its repositories: use those by name.
      for (const pattern of config.GATEHOUSE_ALLOW_TARGETS) {
        const ref = pattern.startsWith('github:') ? parseRepo(pattern.slice(7)) : undefined;
        if (ref !== undefined && ref.owner.toLowerCase() === owner.toLowerCase()) {
          repos.push(`${ref.owner}/${ref.repo}`);
        }
      }
    }
    this.repos = [...new Set(repos)];
    this.owners = owners;
  }

  /** Whether owner/repo is inside both lists. */
  allows(ref: RepoRef): boolean {
    const name = `${ref.owner}/${ref.repo}`.toLowerCase();
    const configured =
      this.repos.some((r) => r.toLowerCase() === name) ||
      this.owners.some((o) => o.toLowerCase() === ref.owner.toLowerCase());
    return configured && this.coreAllows(`github:${ref.owner}/${ref.repo}`);
  }

  /** The allowed list in words, for error messages. */
  describe(): string {
    return [...this.repos, ...this.owners.map((o) => `${o}/*`)].join(', ');
  }
}

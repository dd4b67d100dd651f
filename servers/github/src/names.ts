// GitHub's names for owners and repositories, with no other import (config and scope use them).

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

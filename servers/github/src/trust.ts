import type { Logger } from '@gatehouse/core';
import type { CallBounds, GitHub } from './client.js';
import { requestOptions } from './client.js';
import type { RepoRef } from './scope.js';

const TTL_MS = 5 * 60_000;

/**
 * Trusted-authors mode: is a login allowed to push to the repository? Answers are cached for
 * five minutes per repository and login; a failed lookup counts as untrusted (fails closed).
 * One cache per account asking (acting.ts): what GitHub shows depends on who asks.
 */
export class TrustCache {
  private readonly cache = new Map<string, { trusted: boolean; at: number }>();
  constructor(private readonly logger: Logger) {}

  async trusted(
    github: GitHub,
    bounds: CallBounds,
    repo: RepoRef,
    login: string,
  ): Promise<boolean> {
    const key = `${repo.owner}/${repo.repo}#${login}`.toLowerCase();
    const hit = this.cache.get(key);
    if (hit !== undefined && Date.now() - hit.at < TTL_MS) return hit.trusted;
    let trusted = false;
    try {
      const { data } = await github.rest.repos.getCollaboratorPermissionLevel({
        owner: repo.owner,
        repo: repo.repo,
        username: login,
        ...requestOptions(bounds),
      });
      trusted = ['admin', 'maintain', 'write'].includes(data.role_name ?? data.permission);
    } catch (error) {
      if (bounds.signal.aborted) throw bounds.signal.reason;
      this.logger.debug({ err: error, login }, 'permission lookup failed; treating as untrusted');
    }
    this.cache.set(key, { trusted, at: Date.now() });
    return trusted;
  }

  /** Trust of several logins at once (each looked up once). */
  async map(
    github: GitHub,
    bounds: CallBounds,
    repo: RepoRef,
    logins: Iterable<string>,
  ): Promise<Map<string, boolean>> {
    const unique = [...new Set(logins)];
    const results = await Promise.all(unique.map((l) => this.trusted(github, bounds, repo, l)));
    return new Map(unique.map((l, i) => [l, results[i]!]));
  }
}

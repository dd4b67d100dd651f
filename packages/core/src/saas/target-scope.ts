/**
 * What a SaaS server may reach: the names its own setting lists (GITHUB_REPOS, SLACK_CHANNELS,
 * JIRA_PROJECTS), narrowed by the operator's GATEHOUSE_ALLOW_TARGETS patterns of its kind. Names
 * are canonicalised once; every tool, resource, prompt and search asks the same scope, and its
 * `describe()` is what errors and instructions show.
 */
import { ConfigError } from '../errors.js';
import { createAllowList } from '../policy.js';

/** Options of a {@link TargetScope}. */
export interface TargetScopeOptions {
  /** The target kind of the allow-list: `github`, `slack`, `jira`, `pg`. */
  readonly kind: string;
  /** The setting that lists the names, for errors (`GITHUB_REPOS`). */
  readonly variable: string;
  /** What one name is, for errors (`repository`, `channel`, `project`, `schema`). */
  readonly noun: string;
  /** The configured names; `parent/*` stands for everything under `parent`. */
  readonly configured: readonly string[];
  /** GATEHOUSE_ALLOW_TARGETS. */
  readonly allowTargets: readonly string[];
  /**
   * A name in canonical form, or undefined when it is not a valid name. Default: as written.
   * Names compare case-insensitively when `caseInsensitive` is set (GitHub, Jira keys).
   */
  readonly canonical?: (name: string) => string | undefined;
  readonly caseInsensitive?: boolean;
}

export class TargetScope {
  readonly kind: string;
  /** Exact names inside both lists, as configured. */
  readonly names: readonly string[];
  /** Parents whose every child is inside both lists (`acme` for `acme/*`). */
  readonly parents: readonly string[];
  /** Configured names the allow-list removed (for a start-up warning). */
  readonly dropped: readonly string[];
  readonly #allowed: (target: string) => boolean;
  readonly #fold: (name: string) => string;
  readonly #canonical: (name: string) => string | undefined;

  constructor(options: TargetScopeOptions) {
    this.kind = options.kind;
    this.#fold = options.caseInsensitive === true ? (n) => n.toLowerCase() : (n) => n;
    // Names the vendor compares case-insensitively are matched against the allow-list so too.
    const allow = createAllowList(
      options.allowTargets.map((p) => (p.startsWith(`${this.kind}:`) ? this.#fold(p) : p)),
    );
    this.#allowed = (target) => allow(this.#fold(target)).allow;
    this.#canonical = options.canonical ?? ((n) => n);
    const names: string[] = [];
    const parents: string[] = [];
    const dropped: string[] = [];
    for (const entry of options.configured) {
      if (entry.endsWith('/*')) {
        const parent = entry.slice(0, -2);
        if (this.#allowed(`${this.kind}:${parent}/*`)) {
          parents.push(parent);
          continue;
        }
        // The allow-list narrows parent/* to some of its children: use those by name.
        const children = options.allowTargets
          .filter((p) => p.startsWith(`${this.kind}:`))
          .map((p) => this.#canonical(p.slice(this.kind.length + 1)))
          .filter(
            (n): n is string =>
              n !== undefined && this.#fold(n).startsWith(`${this.#fold(parent)}/`),
          );
        if (children.length === 0) dropped.push(entry);
        names.push(...children);
      } else if (this.#allowed(this.target(entry))) names.push(entry);
      else dropped.push(entry);
    }
    this.names = [...new Set(names)];
    this.parents = parents;
    this.dropped = dropped;
    if (this.names.length + this.parents.length === 0) {
      throw new ConfigError([
        `${options.variable}: no ${options.noun} is left inside GATEHOUSE_ALLOW_TARGETS (${options.configured.join(', ')} configured)`,
      ]);
    }
  }

  /** The policy/audit target of a name (`github:acme/api`), with an optional suffix (`#12`). */
  target(name: string, suffix = ''): string {
    return `${this.kind}:${name}${suffix}`;
  }

  /** Whether a name (already canonical) is inside both lists. */
  allows(name: string): boolean {
    const folded = this.#fold(name);
    const configured =
      this.names.some((n) => this.#fold(n) === folded) ||
      this.parents.some((p) => folded.startsWith(`${this.#fold(p)}/`));
    return configured && this.#allowed(this.target(name));
  }

  /** Every target of the scope (for a search over all of it). */
  targets(): string[] {
    return [
      ...this.names.map((n) => this.target(n)),
      ...this.parents.map((p) => this.target(`${p}/*`)),
    ];
  }

  /** The scope as a list: each name, and each parent as `parent/*`. */
  list(): string[] {
    return [...this.names, ...this.parents.map((p) => `${p}/*`)];
  }

  /** The scope in words, for errors and docs (instructions bound it with `namesInWords`). */
  describe(): string {
    return this.list().join(', ');
  }
}

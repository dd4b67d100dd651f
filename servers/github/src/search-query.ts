import { ToolError } from '@gatehouse/core';
import type { RepoRef, RepoScope } from './scope.js';

/** The structured search the model fills in; the server writes the query string. */
export interface SearchFilters {
  text?: string | undefined;
  state?: 'open' | 'closed' | undefined;
  type?: 'issue' | 'pr' | undefined;
  labels?: readonly string[] | undefined;
  exclude_labels?: readonly string[] | undefined;
  author?: string | undefined;
  assignee?: string | undefined;
  mentions?: string | undefined;
  milestone?: string | undefined;
  no?: ReadonlyArray<'label' | 'assignee' | 'milestone'> | undefined;
  created_after?: string | undefined;
  updated_after?: string | undefined;
}

const LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/;

/**
 * A qualifier value: quoted when it has spaces. A double quote cannot be expressed, and a
 * backslash could escape the closing quote (if GitHub reads `\"` as an escape, the value leaves
 * its quotes), so both are refused.
 */
function value(name: string, v: string): string {
  if (/["\\]/.test(v)) {
    throw new ToolError(
      `${name} cannot contain a double quote or a backslash (GitHub search cannot escape them).`,
      { code: 'invalid_search' },
    );
  }
  return /[\s:()]/.test(v) ? `"${v}"` : v;
}

function login(name: string, v: string): string {
  if (!LOGIN.test(v)) {
    throw new ToolError(`${name} must be a GitHub login (letters, digits, hyphens).`, {
      code: 'invalid_search',
    });
  }
  return v;
}

/**
 * Builds the `q` of GitHub issue search. The scope comes first and only from the allow-list
 * (`repo:` for each repository, `user:` for each owner/*); the model's free text is split into
 * words and each is quoted, so nothing it writes — `repo:other/x`, `OR`, parentheses — can act
 * as a qualifier or widen the scope.
 */
export function buildSearchQuery(scope: RepoScope, filters: SearchFilters, repo?: RepoRef): string {
  const parts: string[] = [];
  if (repo !== undefined) {
    parts.push(`repo:${repo.owner}/${repo.repo}`);
  } else {
    parts.push(...scope.names.map((r) => `repo:${r}`), ...scope.parents.map((o) => `user:${o}`));
  }
  parts.push(`is:${filters.type ?? 'issue'}`);
  if (filters.state !== undefined) parts.push(`is:${filters.state}`);
  for (const l of filters.labels ?? []) parts.push(`label:${value('labels', l)}`);
  for (const l of filters.exclude_labels ?? []) parts.push(`-label:${value('exclude_labels', l)}`);
  if (filters.author !== undefined) parts.push(`author:${login('author', filters.author)}`);
  if (filters.assignee !== undefined) parts.push(`assignee:${login('assignee', filters.assignee)}`);
  if (filters.mentions !== undefined) parts.push(`mentions:${login('mentions', filters.mentions)}`);
  if (filters.milestone !== undefined)
    parts.push(`milestone:${value('milestone', filters.milestone)}`);
  for (const n of filters.no ?? []) parts.push(`no:${n}`);
  if (filters.created_after !== undefined) parts.push(`created:>=${filters.created_after}`);
  if (filters.updated_after !== undefined) parts.push(`updated:>=${filters.updated_after}`);
  // The model's words: each one quoted, with no quote or backslash inside a quoted term.
  const words = (filters.text ?? '')
    .replace(/["\\]/g, ' ')
    .split(/\s+/)
    .filter((w) => w !== '');
  for (const word of words.slice(0, 20)) parts.push(`"${word}"`);
  const q = parts.join(' ');
  if (q.length > 256) {
    throw new ToolError(
      'The search is longer than GitHub accepts (256 characters): use fewer words or labels, or name one repo.',
      { code: 'invalid_search' },
    );
  }
  return q;
}

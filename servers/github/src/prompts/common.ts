import type { Completer } from '@gatehouse/core';
import type { GitHubDeps } from '../deps.js';

/** Completes a repo argument from the allow-list. */
export function repoCompleter(deps: GitHubDeps): Completer {
  return (value) => deps.scope.names.filter((r) => r.toLowerCase().startsWith(value.toLowerCase()));
}

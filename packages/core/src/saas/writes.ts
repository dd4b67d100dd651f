import type { BaseConfig } from '../config.js';
import type { ToolDefinition } from '../define.js';
import { createToolPolicy } from '../policy.js';
import { ANONYMOUS } from '../principal.js';

/**
 * Whether the configuration switches on any of these write tools — the same policy that lists
 * and guards them, so instructions and start-up checks never disagree with what is callable.
 */
export function writesEnabled(config: BaseConfig, tools: readonly ToolDefinition[]): boolean {
  const policy = createToolPolicy(config);
  const everyScope = { ...ANONYMOUS, scopes: ['*'] };
  return tools.some((t) => t.access === 'write' && policy.toolVisible(t, everyScope).allow);
}

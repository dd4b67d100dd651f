import type { BaseConfig } from './config.js';
import type { ToolDefinition } from './define.js';
import type { Principal } from './principal.js';

/** A policy verdict; `rule` names the setting that decided, for the audit trail and the error. */
export type Decision =
  | { readonly allow: true; readonly rule: string }
  | { readonly allow: false; readonly rule: string; readonly reason: string };

/**
 * The policy stage of the pipeline. `tools/list` shows a tool exactly when `toolVisible`
 * allows it, and `tools/call` runs the same function first: a tool that is not listed cannot be
 * called. The guard issue adds scopes, allow-lists and rate limits behind the same interface.
 */
export interface Policy {
  /** Is this tool enabled for this principal? Used by tools/list and tools/call alike. */
  toolVisible(tool: ToolDefinition, principal: Principal): Decision;
}

const ALLOW_READ: Decision = Object.freeze({ allow: true, rule: 'read_tool' });
const ALLOW_WRITE: Decision = Object.freeze({ allow: true, rule: 'writes_enabled' });

/**
 * The enable/disable and read-only policy from the base config:
 * read-only overrides everything; a disabled tool is off; with an enable list only the named
 * tools are on; write tools are off unless writes are enabled or the tool is named.
 */
export function createToolPolicy(
  config: Pick<
    BaseConfig,
    | 'GATEHOUSE_READ_ONLY'
    | 'GATEHOUSE_ENABLE_WRITES'
    | 'GATEHOUSE_TOOLS_ENABLE'
    | 'GATEHOUSE_TOOLS_DISABLE'
  >,
): Policy {
  const enabled = new Set(config.GATEHOUSE_TOOLS_ENABLE);
  const disabled = new Set(config.GATEHOUSE_TOOLS_DISABLE);
  return {
    toolVisible(tool) {
      if (tool.access === 'write' && config.GATEHOUSE_READ_ONLY) {
        return { allow: false, rule: 'read_only', reason: 'the server runs read-only' };
      }
      if (disabled.has(tool.name)) {
        return {
          allow: false,
          rule: 'tools_disable',
          reason: 'the tool is disabled by configuration',
        };
      }
      if (enabled.size > 0 && !enabled.has(tool.name)) {
        return {
          allow: false,
          rule: 'tools_enable',
          reason: 'the tool is not in the enabled list',
        };
      }
      if (tool.access === 'write' && !config.GATEHOUSE_ENABLE_WRITES && !enabled.has(tool.name)) {
        return { allow: false, rule: 'writes_off', reason: 'write tools are off by default' };
      }
      return tool.access === 'write' ? ALLOW_WRITE : ALLOW_READ;
    },
  };
}

/** Names in the enable/disable lists that match no tool: a typo the operator must hear about. */
export function unknownToolNames(
  config: Pick<BaseConfig, 'GATEHOUSE_TOOLS_ENABLE' | 'GATEHOUSE_TOOLS_DISABLE'>,
  tools: readonly ToolDefinition[],
): string[] {
  const known = new Set(tools.map((t) => t.name));
  const problems: string[] = [];
  for (const [key, names] of [
    ['GATEHOUSE_TOOLS_ENABLE', config.GATEHOUSE_TOOLS_ENABLE],
    ['GATEHOUSE_TOOLS_DISABLE', config.GATEHOUSE_TOOLS_DISABLE],
  ] as const) {
    for (const name of names) {
      if (!known.has(name)) {
        problems.push(`${key}: no tool named "${name}" (known: ${[...known].join(', ')})`);
      }
    }
  }
  return problems;
}

import type { BaseConfig } from './config.js';
import { serviceOf } from './define.js';
import type { ServerDefinition, ToolDefinition } from './define.js';
import type { Principal } from './principal.js';

/** A policy verdict; `rule` names the setting that decided, for the audit trail and the error. */
export type Decision =
  | { readonly allow: true; readonly rule: string }
  | { readonly allow: false; readonly rule: string; readonly reason: string };

/**
 * The policy stage of the pipeline. `tools/list` shows a tool exactly when `toolVisible`
 * allows it, and `tools/call` runs the same function first: a tool that is not listed cannot be
 * called. `targetAllowed` guards what a call acts on, on every path that declares a target.
 */
export interface Policy {
  /** Is this tool enabled, and does the principal hold its scope? Used by tools/list and tools/call alike. */
  toolVisible(tool: ToolDefinition, principal: Principal): Decision;
  /**
   * Does the principal hold this scope? Resources, resource templates, prompts and completions
   * are listed, read, got and completed only when it does (the same call decides both).
   */
  scopeAllowed(scope: string, principal: Principal): Decision;
  /** Is this target inside the allow-list? (Allowed when no pattern covers its kind.) */
  targetAllowed(target: string): Decision;
}

/**
 * The scope a tool needs: its own — which defineServer sets from the server's name where the
 * tool has none (`gatehouse-postgres` → `postgres:read`) — or, for a tool never placed in a
 * server, `<prefix>:<access>` from its name.
 */
export function toolScope(tool: Pick<ToolDefinition, 'name' | 'scope' | 'access'>): string {
  return tool.scope ?? `${tool.name.split(/[_.-]/)[0]}:${tool.access}`;
}

/**
 * The scope of a server's resources, prompts and completions unless they name their own: the
 * definition's `readScope`, else `<service>:read` from the server's own name (`gatehouse-postgres`
 * → `postgres:read`) — never from a tool's name, which may come from a file (a curated query's
 * `my_orders` would have made it `my:read`, a scope of another service).
 */
export function readScope(definition: Pick<ServerDefinition, 'name' | 'readScope'>): string {
  return definition.readScope ?? `${serviceOf(definition)}:read`;
}

/** Whether a principal's scopes grant `scope` (`*` grants everything, `github:*` all of github). */
export function hasScope(principal: Principal, scope: string): boolean {
  const [service] = scope.split(':');
  return principal.scopes.some((s) => s === '*' || s === scope || s === `${service}:*`);
}

/**
 * A target pattern: `kind:value` where `*` matches within one path segment and `**` across
 * segments (`github:acme/*`, `slack:C0123ABC`, `pg:analytics/public`, `jira:OPS`).
 */
function patternRegExp(pattern: string): RegExp {
  const escaped = pattern
    .split('**')
    .map((part) =>
      part
        .split('*')
        .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
        .join('[^/]*'),
    )
    .join('.*');
  // A pattern also covers what lies below it: `github:acme/api` allows `github:acme/api#45`.
  return new RegExp(`^${escaped}(?:[#/].*)?$`);
}

/** The allow-list of target patterns, default deny per kind once a kind has any pattern. */
export function createAllowList(patterns: readonly string[]): Policy['targetAllowed'] {
  const byKind = new Map<string, RegExp[]>();
  for (const pattern of patterns) {
    const kind = pattern.split(':')[0]!;
    byKind.set(kind, [...(byKind.get(kind) ?? []), patternRegExp(pattern)]);
  }
  return (target) => {
    const kind = target.split(':')[0]!;
    const rules = byKind.get(kind);
    if (rules === undefined) return { allow: true, rule: 'no_allow_list' };
    if (rules.some((r) => r.test(target))) return { allow: true, rule: 'allow_list' };
    const allowed = patterns.filter((p) => p.startsWith(`${kind}:`)).join(', ');
    return {
      allow: false,
      rule: 'allow_list',
      reason: `${target} is outside the allowed targets (${allowed})`,
    };
  };
}

const ALLOW_READ: Decision = Object.freeze({ allow: true, rule: 'read_tool' });
const ALLOW_WRITE: Decision = Object.freeze({ allow: true, rule: 'writes_enabled' });
const ALLOW_SCOPE: Decision = Object.freeze({ allow: true, rule: 'scope' });

/**
 * The policy from the base config:
 * read-only overrides everything; a disabled tool (by name or toolset) is off; with an enable
 * list only the named tools and toolsets are on; write tools are off unless writes are enabled
 * or the tool (or its toolset) is named; a principal without the tool's scope does not see it.
 */
export function createToolPolicy(
  config: Pick<
    BaseConfig,
    | 'GATEHOUSE_READ_ONLY'
    | 'GATEHOUSE_ENABLE_WRITES'
    | 'GATEHOUSE_TOOLS_ENABLE'
    | 'GATEHOUSE_TOOLS_DISABLE'
    | 'GATEHOUSE_ALLOW_TARGETS'
  >,
): Policy {
  const enabled = new Set(config.GATEHOUSE_TOOLS_ENABLE);
  const disabled = new Set(config.GATEHOUSE_TOOLS_DISABLE);
  const named = (set: ReadonlySet<string>, tool: ToolDefinition): boolean =>
    set.has(tool.name) || (tool.toolset !== undefined && set.has(tool.toolset));
  return {
    toolVisible(tool, principal) {
      if (tool.access === 'write' && config.GATEHOUSE_READ_ONLY) {
        return { allow: false, rule: 'read_only', reason: 'the server runs read-only' };
      }
      if (named(disabled, tool)) {
        return {
          allow: false,
          rule: 'tools_disable',
          reason: 'the tool is disabled by configuration',
        };
      }
      if (enabled.size > 0 && !named(enabled, tool)) {
        return {
          allow: false,
          rule: 'tools_enable',
          reason: 'the tool is not in the enabled list',
        };
      }
      if (tool.access === 'write' && !config.GATEHOUSE_ENABLE_WRITES && !named(enabled, tool)) {
        return { allow: false, rule: 'writes_off', reason: 'write tools are off by default' };
      }
      const scope = toolScope(tool);
      if (!hasScope(principal, scope)) {
        return { allow: false, rule: 'scope', reason: `the principal lacks the scope ${scope}` };
      }
      return tool.access === 'write' ? ALLOW_WRITE : ALLOW_READ;
    },
    scopeAllowed(scope, principal) {
      return hasScope(principal, scope)
        ? ALLOW_SCOPE
        : { allow: false, rule: 'scope', reason: `the principal lacks the scope ${scope}` };
    },
    targetAllowed: createAllowList(config.GATEHOUSE_ALLOW_TARGETS),
  };
}

/** Names in the enable/disable lists that match no tool or toolset: a typo the operator must hear about. */
export function unknownToolNames(
  config: Pick<BaseConfig, 'GATEHOUSE_TOOLS_ENABLE' | 'GATEHOUSE_TOOLS_DISABLE'>,
  tools: readonly ToolDefinition[],
): string[] {
  const known = new Set(
    tools.flatMap((t) => (t.toolset === undefined ? [t.name] : [t.name, t.toolset])),
  );
  const problems: string[] = [];
  for (const [key, names] of [
    ['GATEHOUSE_TOOLS_ENABLE', config.GATEHOUSE_TOOLS_ENABLE],
    ['GATEHOUSE_TOOLS_DISABLE', config.GATEHOUSE_TOOLS_DISABLE],
  ] as const) {
    for (const name of names) {
      if (!known.has(name)) {
        problems.push(
          `${key}: no tool or toolset named "${name}" (known: ${[...known].join(', ')})`,
        );
      }
    }
  }
  return problems;
}

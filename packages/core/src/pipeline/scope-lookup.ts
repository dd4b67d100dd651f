/**
 * The scope each request of a server needs, for the HTTP layer's check before anything runs (a
 * 403 the client can step up from). The pipeline checks the same scopes again with the same
 * policy; both read them from the same prepared definition.
 */
import type { ServerDefinition, ToolDefinition } from '../define.js';
import type { ScopeNeed } from '../http.js';
import { readScope, toolScope } from '../policy.js';
import { findResource, normalizeUri, prepareResources } from './prepare.js';

export function createScopeLookup(
  definition: ServerDefinition,
  toolEnabled: (tool: ToolDefinition) => boolean,
): (method: string, params: Record<string, unknown> | undefined) => ScopeNeed | undefined {
  const tools = new Map(definition.tools.map((t) => [t.name, t]));
  const prompts = new Map((definition.prompts ?? []).map((p) => [p.name, p]));
  const resources = prepareResources(definition);
  const fallback = readScope(definition);
  const promptNeed = (method: ScopeNeed['method'], name: unknown): ScopeNeed | undefined => {
    const prompt = typeof name === 'string' ? prompts.get(name) : undefined;
    return prompt === undefined
      ? undefined
      : { method, name: prompt.name, scope: prompt.scope ?? fallback };
  };
  return (method, params) => {
    if (method === 'tools/call') {
      const tool = typeof params?.name === 'string' ? tools.get(params.name) : undefined;
      return tool === undefined || !toolEnabled(tool)
        ? undefined
        : { method, name: tool.name, scope: toolScope(tool) };
    }
    if (method === 'prompts/get') return promptNeed(method, params?.name);
    if (method === 'resources/read') {
      const uri = params?.uri;
      const normalized = typeof uri === 'string' ? normalizeUri(uri) : undefined;
      if (normalized === undefined) return undefined;
      const found = findResource(resources, uri as string, normalized);
      return found === undefined
        ? undefined
        : { method, name: uri as string, scope: found.definition.scope ?? fallback };
    }
    if (method === 'completion/complete') {
      const ref = params?.ref as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
      if (ref?.type === 'ref/prompt') return promptNeed(method, ref.name);
      const template = resources.templates.find((t) => t.definition.uriTemplate === ref?.uri);
      return template === undefined
        ? undefined
        : {
            method,
            name: template.definition.uriTemplate,
            scope: template.definition.scope ?? fallback,
          };
    }
    return undefined;
  };
}

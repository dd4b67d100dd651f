/**
 * A server definition prepared once per process: tool listings and their hashes, the schema
 * calls are validated with, resources by URI, compiled templates, prompts, capabilities.
 */
import { sha256Canonical } from '@gatehouse/audit';
import { UriTemplate } from '@modelcontextprotocol/server';
import type { ServerCapabilities, Tool } from '@modelcontextprotocol/server';
import * as z from 'zod';
import type {
  PromptDefinition,
  ServerDefinition,
  StaticResourceDefinition,
  TemplateResourceDefinition,
  ToolDefinition,
} from '../define.js';
import { readScope } from '../policy.js';

/** A tool prepared once per process: its listing and the hash of that listing. */
export interface PreparedTool {
  readonly definition: ToolDefinition;
  /** The schema calls are validated with: the tool's, plus `dry_run` for write tools. */
  readonly input: z.ZodObject;
  readonly listing: Tool;
  readonly hash: string;
}

export interface PreparedTemplate {
  readonly definition: TemplateResourceDefinition;
  readonly template: UriTemplate;
}

/** A server's resources, prepared once: statics by normalised URI, templates compiled. */
export interface PreparedResources {
  readonly statics: ReadonlyMap<string, StaticResourceDefinition>;
  readonly templates: readonly PreparedTemplate[];
}

/** Everything about a server that does not change between requests. */
export interface PreparedServer {
  readonly definition: ServerDefinition;
  readonly tools: readonly PreparedTool[];
  readonly toolsByName: ReadonlyMap<string, PreparedTool>;
  readonly resources: PreparedResources;
  readonly prompts: ReadonlyMap<string, PromptDefinition>;
  /** The scope of resources, templates and prompts that name none. */
  readonly defaultScope: string;
  readonly capabilities: ServerCapabilities;
  readonly serverInfo: { name: string; version: string; title?: string };
}

const DRY_RUN = z
  .boolean()
  .optional()
  .describe('Preview: return exactly what would be sent, and send nothing.');

/** The structured result of a dry run of a write tool that has an output schema. */
const DRY_RUN_RESULT = z.object({
  dry_run: z.literal(true),
  summary: z.string(),
  would_send: z.unknown(),
});

function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

export function prepareTool(definition: ToolDefinition): PreparedTool {
  const input =
    definition.access === 'write'
      ? definition.input.extend({ dry_run: DRY_RUN })
      : definition.input;
  const listing: Tool = {
    name: definition.name,
    title: definition.title,
    description: definition.description,
    inputSchema: z.toJSONSchema(input, { io: 'input' }) as Tool['inputSchema'],
    annotations: { title: definition.title, ...definition.annotations },
  };
  if (definition.output !== undefined) {
    const output = z.toJSONSchema(definition.output, { io: 'output' });
    // A write tool also answers dry runs, whose structured result is the preview.
    listing.outputSchema =
      definition.access === 'write'
        ? {
            type: 'object',
            anyOf: [withoutDialect(output), withoutDialect(z.toJSONSchema(DRY_RUN_RESULT))],
          }
        : output;
  }
  return { definition, input, listing, hash: sha256Canonical(listing) };
}

/** Name, access class and definition hash of every tool (for the start record). */
export function describeTools(
  definition: ServerDefinition,
): Array<{ name: string; access: 'read' | 'write'; definition_hash: string }> {
  return definition.tools.map((t) => ({
    name: t.name,
    access: t.access,
    definition_hash: prepareTool(t).hash,
  }));
}

export function normalizeUri(uri: string): string | undefined {
  try {
    return new URL(uri).toString();
  } catch {
    return undefined;
  }
}

/** URI template variables as plain strings (exploded lists joined with commas). */
export function flatVariables(match: Record<string, string | string[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(match).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
  );
}

export function prepareResources(definition: ServerDefinition): PreparedResources {
  const statics = new Map<string, StaticResourceDefinition>();
  const templates: PreparedTemplate[] = [];
  for (const r of definition.resources ?? []) {
    if (r.kind === 'static') statics.set(normalizeUri(r.uri) ?? r.uri, r);
    else templates.push({ definition: r, template: new UriTemplate(r.uriTemplate) });
  }
  return { statics, templates };
}

/** The resource an absolute URI names: a static one, or the first template that matches it. */
export function findResource(
  resources: PreparedResources,
  uri: string,
  normalized: string,
):
  | { kind: 'static'; definition: StaticResourceDefinition }
  | { kind: 'template'; definition: TemplateResourceDefinition; variables: Record<string, string> }
  | undefined {
  const fixed = resources.statics.get(normalized);
  if (fixed !== undefined) return { kind: 'static', definition: fixed };
  for (const { definition, template } of resources.templates) {
    const match = template.match(uri);
    if (match !== null) return { kind: 'template', definition, variables: flatVariables(match) };
  }
  return undefined;
}

export function prepareServer(definition: ServerDefinition): PreparedServer {
  const tools = definition.tools.map(prepareTool);
  const resources = prepareResources(definition);
  const prompts = new Map((definition.prompts ?? []).map((p) => [p.name, p]));
  const hasCompletions =
    resources.templates.some((t) => t.definition.complete !== undefined) ||
    [...prompts.values()].some((p) =>
      Object.values(p.arguments ?? {}).some((a) => a.complete !== undefined),
    );
  return {
    definition,
    tools,
    toolsByName: new Map(tools.map((t) => [t.definition.name, t])),
    resources,
    prompts,
    defaultScope: readScope(definition),
    capabilities: {
      tools: {},
      ...(resources.statics.size + resources.templates.length > 0 ? { resources: {} } : {}),
      ...(prompts.size > 0 ? { prompts: {} } : {}),
      ...(hasCompletions ? { completions: {} } : {}),
      ...(definition.logging ? { logging: {} } : {}),
    },
    serverInfo: {
      name: definition.name,
      version: definition.version,
      ...(definition.title === undefined ? {} : { title: definition.title }),
    },
  };
}

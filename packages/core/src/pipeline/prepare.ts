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
import { sanitizeDeep } from '../sanitize.js';
import { framingSchema } from './frame-structured.js';

/** A tool prepared once per process: its listing and the hash of that listing. */
export interface PreparedTool {
  readonly definition: ToolDefinition;
  /** The schema calls are validated with: the tool's, plus `dry_run` for write tools. */
  readonly input: z.ZodObject;
  readonly listing: Tool;
  readonly hash: string;
  /** The output schema structured results are framed by, when it marks untrusted strings. */
  readonly framing?: Record<string, unknown> | undefined;
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

const DRY_RUN = z.boolean().optional().describe('Preview what would be sent; send nothing.');

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

/** Validation detail the listing leaves to the server (its error names the rule a call broke). */
const SERVER_SIDE = new Set([
  '$schema',
  'pattern',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
]);

/** Keywords whose value is a map of names to schemas: the names are the tool's, not keywords. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions']);
/** Keywords whose value is data (or a list of names), copied as it is. */
const DATA = new Set(['enum', 'const', 'default', 'examples', 'required']);

/**
 * The types of alternatives that each say nothing but `type` (one type, none twice: JSON Schema
 * wants a type list's items unique), else undefined.
 */
function bareTypes(alternatives: readonly unknown[]): string[] | undefined {
  const types: string[] = [];
  for (const alternative of alternatives) {
    if (alternative === null || typeof alternative !== 'object') return undefined;
    const type = (alternative as { type?: unknown }).type;
    if (Object.keys(alternative).length !== 1 || typeof type !== 'string') return undefined;
    if (types.includes(type)) return undefined;
    types.push(type);
  }
  return types.length > 0 ? types : undefined;
}

/**
 * The input schema as the model reads it, in every conversation: what it needs to form a call —
 * types, enums, formats, numeric ranges, defaults, required, one description per argument —
 * without what only checks one: `$schema` (2020-12 is MCP's default dialect), `additionalProperties:
 * false` (an unknown argument is refused by name), regex patterns (zod
 * writes 330 bytes for an ISO date), string and array lengths, the ±2^53 bounds zod puts on every
 * integer, and descriptions nested under an argument's own (its items, its alternatives); and
 * alternatives that are bare types (`anyOf: [{type: string}, {type: null}]`) become one list of
 * types (`type: [string, null]`), the same schema in half the bytes. The server validates every
 * call with the full zod schema, so nothing it relies on is lost; a call that breaks a rule gets
 * an error naming it. Only schema keywords are dropped: an argument
 * called `pattern` or `minLength`, or a default value with such a key, stays.
 */
export function listedSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const lean = (node: unknown, described: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item) => lean(item, described));
    if (node === null || typeof node !== 'object') return node;
    const own = node as Record<string, unknown>;
    const inner = described || typeof own.description === 'string';
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(own)) {
      if (SERVER_SIDE.has(key)) continue;
      if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
      if (key === 'minimum' && value === Number.MIN_SAFE_INTEGER) continue;
      if (key === 'description' && described) continue;
      if (key === 'additionalProperties' && value === false) continue;
      // Bare-type alternatives as one type list (above).
      if (key === 'anyOf' && Array.isArray(value) && !('type' in own)) {
        const types = bareTypes(value.map((v) => lean(v, inner)));
        if (types !== undefined) {
          out.type = types;
          continue;
        }
      }
      if (DATA.has(key)) out[key] = value;
      else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object')
        out[key] = Object.fromEntries(
          Object.entries(value).map(([name, sub]) => [name, lean(sub, false)]),
        );
      else out[key] = lean(value, inner);
    }
    return out;
  };
  return lean(schema, false) as Record<string, unknown>;
}

/**
 * Prepares a tool's listing. Its output schema is listed only with `structuredOutput`
 * (GATEHOUSE_STRUCTURED_OUTPUT): listing one obliges every answer to carry a structured copy
 * beside the text, which a model pays for twice (ADR 0014); the listing is then what decides
 * whether an answer carries one. Results are checked against the output schema either way.
 */
export function prepareTool(definition: ToolDefinition, structuredOutput: boolean): PreparedTool {
  const input =
    definition.access === 'write'
      ? definition.input.extend({ dry_run: DRY_RUN })
      : definition.input;
  // Every listing string is cleaned like vendor text, whatever its source: a tool may be made
  // from a file (a curated query's title and descriptions), not only from code.
  const listing: Tool = sanitizeDeep(
    {
      name: definition.name,
      title: definition.title,
      description: definition.description,
      inputSchema: listedSchema(z.toJSONSchema(input, { io: 'input' })) as Tool['inputSchema'],
      annotations: { title: definition.title, ...definition.annotations },
    },
    new Set(),
  );
  if (definition.output !== undefined && structuredOutput) {
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
  return {
    definition,
    input,
    listing,
    hash: sha256Canonical(listing),
    framing: framingSchema(definition.output),
  };
}

/**
 * Name, access class and definition hash of every tool (for the start record): the hash of the
 * listing as served, the one each call's record carries too.
 */
export function describeTools(
  prepared: PreparedServer,
): Array<{ name: string; access: 'read' | 'write'; definition_hash: string }> {
  return prepared.tools.map((t) => ({
    name: t.definition.name,
    access: t.definition.access,
    definition_hash: t.hash,
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

export function prepareServer(
  definition: ServerDefinition,
  options: { structuredOutput?: boolean } = {},
): PreparedServer {
  const structuredOutput = options.structuredOutput ?? false;
  const tools = definition.tools.map((t) => prepareTool(t, structuredOutput));
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

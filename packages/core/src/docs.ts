/**
 * `@gatehouse/core/docs`: what generated docs and review snapshots are made of — the config
 * table of a schema, and the surface a model is told about (every tool's listing, resource,
 * template and prompt), exactly as `tools/list` & co. send it.
 */
import * as z from 'zod';
import type { ServerDefinition, ToolDefinition } from './define.js';
import type { Logger } from './logger.js';
import { prepareServer } from './pipeline/prepare.js';
import { loadConfig } from './config.js';
import { createLogger } from './logger.js';

export { configTable, describeConfig } from './config.js';
export type { ConfigVariable } from './config.js';
export { describeTools } from './pipeline/prepare.js';

/**
 * Everything a model is told about a server: tool names, titles, descriptions, input and output
 * schemas and annotations; resources, resource templates and prompts with their arguments. A
 * committed copy of it makes every change to what a model reads a visible diff in review.
 */
export function surfaceSnapshot(definition: ServerDefinition): Record<string, unknown> {
  // The full contract, output schemas included (as listed with GATEHOUSE_STRUCTURED_OUTPUT).
  const prepared = prepareServer(definition, { structuredOutput: true });
  const described = (r: { title?: string; description?: string; mimeType?: string }) => ({
    ...(r.title === undefined ? {} : { title: r.title }),
    ...(r.description === undefined ? {} : { description: r.description }),
    ...(r.mimeType === undefined ? {} : { mimeType: r.mimeType }),
  });
  return {
    server: {
      name: definition.name,
      title: definition.title,
      instructions: definition.instructions,
    },
    tools: prepared.tools.map((t) => ({ ...t.listing, access: t.definition.access })),
    resources: [...prepared.resources.statics.values()].map((r) => ({
      uri: r.uri,
      name: r.name,
      ...described(r),
    })),
    resourceTemplates: prepared.resources.templates.map(({ definition: t }) => ({
      uriTemplate: t.uriTemplate,
      name: t.name,
      ...described(t),
      completes: Object.keys(t.complete ?? {}).sort(),
    })),
    prompts: [...prepared.prompts.values()].map((p) => ({
      name: p.name,
      title: p.title,
      description: p.description,
      arguments: Object.entries(p.arguments ?? {}).map(([name, a]) => ({
        name,
        description: a.description,
        required: a.required === true,
      })),
    })),
  };
}

/**
 * What a server package exports for its generated docs (`scripts/gen-docs.mjs`): its README gets
 * a tool table (`<!-- generated:<id>-tools -->`) and a table of its own variables
 * (`<!-- generated:<id>-config -->`, the keys starting with `<ID>_`) for free.
 */
export interface ServerDocs {
  /** The server's short name: README markers and the variable prefix (`github` → `GITHUB_`). */
  readonly id: string;
  readonly schema: z.ZodObject;
  /** A representative environment; building the definition from it must send nothing. */
  readonly exampleEnv: Readonly<Record<string, string>>;
  readonly create: (config: never, deps: { logger: Logger }) => ServerDefinition;
  /** Further generated regions of the README: marker → Markdown. */
  readonly regions?: () => Record<string, string>;
  /** Whole generated files of the server's folder (a JSON Schema it documents): path → content. */
  readonly files?: () => Record<string, string>;
}

/** A tool table from tool definitions: name, title, access, description, arguments. */
export function toolTable(tools: readonly ToolDefinition[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  // What the model reads: the input JSON schema (descriptions of wrapped fields included).
  const args = (tool: ToolDefinition) => {
    const schema = z.toJSONSchema(tool.input, { io: 'input' }) as {
      properties?: Record<string, { description?: string }>;
      required?: string[];
    };
    return Object.entries(schema.properties ?? {})
      .map(
        ([name, property]) =>
          `\`${name}\`${(schema.required ?? []).includes(name) ? ' (required)' : ''}: ${property.description ?? ''}`,
      )
      .join('<br>');
  };
  return [
    '| tool | what the model reads | arguments |',
    '|---|---|---|',
    ...tools.map(
      (t) =>
        `| \`${t.name}\` — ${t.title}${t.access === 'write' ? ' (write: off unless enabled; takes `dry_run`)' : ''} | ${cell(t.description)} | ${cell(args(t))} |`,
    ),
  ].join('\n');
}

/**
 * The surface snapshot of a server package, as committed (`test/__toolsnaps__/surface.json`):
 * its definition built from the `docs` example configuration, nothing sent anywhere.
 */
export async function surfaceSnapshotOf(docs: ServerDocs): Promise<string> {
  const definition = docs.create(loadConfig(docs.schema, docs.exampleEnv) as never, {
    logger: createLogger({ level: 'silent' }),
  });
  try {
    return `${JSON.stringify(surfaceSnapshot(definition), null, 2)}\n`;
  } finally {
    await definition.close?.();
  }
}

// What a server asks of whoever installs it, read from what it declares: the variables of its
// example configuration (described as its configuration schema describes them, secrets marked
// secret, required unless the schema's default is empty) and whether it has write tools. The MCP
// Bundle (scripts/mcpb.mjs) and the registry entry (docker/registry.mjs) both ask from this, so
// they ask for the same things.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The oldest Node a server runs on (the bin refuses older ones). */
export const MIN_NODE = '22.19.0';

/** Read once per server and process: the bundle and its registry entry both ask. */
const read = new Map();

/** The package, definition and settings of server `id` (its folder under servers/). */
export function serverSettings(id) {
  if (!read.has(id)) read.set(id, load(id));
  return read.get(id);
}

async function load(id) {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'servers', id, 'package.json'), 'utf8'));
  const { docs } = await import(pkg.name);
  const { describeConfig } = await import('@gatehouse/core/docs');
  const { createLogger } = await import('@gatehouse/core/runtime');
  const definition = docs.create(docs.schema.parse(docs.exampleEnv), {
    logger: createLogger({ level: 'silent' }),
  });
  await definition.close?.();
  const described = new Map(describeConfig(docs.schema).map((v) => [v.name, v]));
  const variables = Object.keys(docs.exampleEnv).map((name) => {
    const v = described.get(name);
    return {
      name,
      description: v?.description || name,
      required: v?.default !== '(empty)',
      secret: v?.secret === true,
    };
  });
  return {
    pkg,
    definition,
    title: definition.title ?? `Gatehouse ${id.charAt(0).toUpperCase()}${id.slice(1)}`,
    variables,
    writes: definition.tools.some((t) => t.access === 'write'),
  };
}

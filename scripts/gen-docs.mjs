// Regenerates the generated parts of the docs from the code, so they never drift:
//   node scripts/gen-docs.mjs                      rewrite them
//   node scripts/gen-docs.mjs --check              exit 1 when a file is out of date (the tests)
//   node scripts/gen-docs.mjs --scope core|<server id>   only that part (each package's test checks its own)
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as prettier from 'prettier';

const { values } = parseArgs({
  options: { check: { type: 'boolean' }, scope: { type: 'string' } },
});
const check = values.check === true;
const inScope = (scope) => values.scope === undefined || values.scope === scope;

/** Whole generated files: { file, body }. */
const wholeFiles = [];
/** Marked regions inside hand-written files: { file, marker, body }. */
const regions = [];
const { configTable, toolTable } = await import('@gatehouse/core/docs');

if (inScope('core')) {
  const { auditRecordSchema } = await import('@gatehouse/audit');
  const { baseConfigSchema } = await import('@gatehouse/core');
  wholeFiles.push({
    file: new URL('../docs/audit.schema.json', import.meta.url),
    body: `${JSON.stringify(auditRecordSchema, null, 2)}\n`,
  });
  regions.push({
    file: new URL('../docs/configuration.md', import.meta.url),
    marker: 'core-config',
    body: configTable(baseConfigSchema),
  });
}

// Every server package exports `docs` (ServerDocs of @gatehouse/core/docs): its README's tool
// table and variable table come from that alone; a new server needs nothing here.
const { createLogger } = await import('@gatehouse/core/runtime');
const { documentedEntry } = await import('./client-config.mjs');
const serversDir = new URL('../servers/', import.meta.url);
for (const dir of readdirSync(serversDir).sort()) {
  const manifest = JSON.parse(readFileSync(new URL(`${dir}/package.json`, serversDir), 'utf8'));
  const { docs } = await import(manifest.name);
  if (docs === undefined) throw new Error(`${manifest.name} exports no \`docs\` (ServerDocs)`);
  if (!inScope(docs.id)) continue;
  const readme = new URL(`${dir}/README.md`, serversDir);
  const definition = docs.create(docs.schema.parse(docs.exampleEnv), {
    logger: createLogger({ level: 'silent' }),
  });
  await definition.close?.();
  regions.push({ file: readme, marker: `${docs.id}-tools`, body: toolTable(definition.tools) });
  const prefix = `${docs.id.toUpperCase()}_`;
  const own = Object.fromEntries(
    Object.keys(docs.schema.shape)
      .filter((k) => k.startsWith(prefix))
      .map((k) => [k, true]),
  );
  regions.push({
    file: readme,
    marker: `${docs.id}-config`,
    body: configTable(docs.schema.pick(own)),
  });
  regions.push({ file: readme, marker: `${docs.id}-client`, body: await documentedEntry(docs.id) });
  for (const [marker, body] of Object.entries(docs.regions?.() ?? {})) {
    regions.push({ file: readme, marker, body });
  }
  for (const [path, body] of Object.entries(docs.files?.() ?? {})) {
    wholeFiles.push({ file: new URL(`${dir}/${path}`, serversDir), body });
  }
}

let stale = 0;
async function format(path, text) {
  return prettier.format(text, { ...(await prettier.resolveConfig(path)), filepath: path });
}
function report(path) {
  stale++;
  console.log(`${check ? 'out of date' : 'updated'}: ${path}`);
}

for (const { file, body } of wholeFiles) {
  const path = fileURLToPath(file);
  const next = await format(path, body);
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // not generated yet
  }
  if (current !== next) {
    report(path);
    if (!check) writeFileSync(file, next);
  }
}

// Regions of one file are applied together, then the file is formatted once.
const byFile = new Map();
for (const region of regions) {
  const key = fileURLToPath(region.file);
  byFile.set(key, [...(byFile.get(key) ?? []), region]);
}
for (const [path, fileRegions] of byFile) {
  const text = readFileSync(path, 'utf8');
  let next = text;
  for (const { marker, body } of fileRegions) {
    const start = `<!-- generated:${marker} -->`;
    const end = `<!-- /generated:${marker} -->`;
    const [before, rest] = next.split(start);
    if (rest === undefined) throw new Error(`${path}: marker ${start} missing`);
    const after = rest.split(end)[1];
    next = `${before}${start}\n${body}\n${end}${after}`;
  }
  next = await format(path, next);
  if (next !== text) {
    report(path);
    if (!check) writeFileSync(path, next);
  }
}
if (check && stale > 0) process.exit(1);

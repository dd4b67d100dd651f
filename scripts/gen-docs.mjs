// Regenerates the generated parts of the docs from the code, so they never drift:
//   node scripts/gen-docs.mjs                      rewrite them
//   node scripts/gen-docs.mjs --check              exit 1 when a file is out of date (the tests)
//   node scripts/gen-docs.mjs --scope core|postgres|github  only that part (each package's test checks its own)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as prettier from 'prettier';

const { values } = parseArgs({
  options: { check: { type: 'boolean' }, scope: { type: 'string' } },
});
const check = values.check === true;
const inScope = (scope) => values.scope === undefined || values.scope === scope;

/** A tool table from tool definitions: name, title, access, description, arguments. */
function toolTable(tools) {
  const cell = (text) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const args = (tool) =>
    Object.entries(tool.input.shape)
      .map(
        ([name, field]) =>
          `\`${name}\`${field.safeParse(undefined).success ? '' : ' (required)'}: ${field.description ?? ''}`,
      )
      .join('<br>');
  return [
    '| tool | what the model reads | arguments |',
    '|---|---|---|',
    ...tools.map(
      (t) =>
        `| \`${t.name}\` — ${t.title}${t.access === 'write' ? ' (write: off unless enabled; takes `dry_run`)' : ''} | ${cell(t.description)} | ${cell(args(t))} |`,
    ),
  ].join('\n');
}

/** Whole generated files: { file, body }. */
const wholeFiles = [];
/** Marked regions inside hand-written files: { file, marker, body }. */
const regions = [];

if (inScope('core')) {
  const { auditRecordSchema } = await import('@gatehouse/audit');
  const { baseConfigSchema, configTable } = await import('@gatehouse/core');
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

if (inScope('postgres')) {
  const { configTable, createLogger } = await import('@gatehouse/core');
  const { PostgresConfigSchema, createPostgresServer } = await import('@gatehouse/server-postgres');
  const readme = new URL('../servers/postgres/README.md', import.meta.url);
  // A representative configuration; nothing connects (the pool opens on first use).
  const config = PostgresConfigSchema.parse({
    POSTGRES_URL: 'postgres://gatehouse_ro@db.internal:5432/company',
  });
  const server = createPostgresServer(config, { logger: createLogger({ level: 'silent' }) });
  await server.close();
  regions.push({ file: readme, marker: 'postgres-tools', body: toolTable(server.tools) });
  const own = Object.fromEntries(
    Object.keys(PostgresConfigSchema.shape)
      .filter((k) => k.startsWith('POSTGRES_'))
      .map((k) => [k, true]),
  );
  regions.push({
    file: readme,
    marker: 'postgres-config',
    body: configTable(PostgresConfigSchema.pick(own)),
  });
  regions.push({
    file: readme,
    marker: 'postgres-role-sql',
    body: `\`\`\`sql\n${readFileSync(new URL('../servers/postgres/demo/readonly-role.sql', import.meta.url), 'utf8').trimEnd()}\n\`\`\``,
  });
}

if (inScope('github')) {
  const { configTable, createLogger } = await import('@gatehouse/core');
  const { GitHubConfigSchema, createGitHubServer } = await import('@gatehouse/server-github');
  const readme = new URL('../servers/github/README.md', import.meta.url);
  // A representative configuration; nothing is sent to GitHub (the check runs at start only).
  const config = GitHubConfigSchema.parse({
    GITHUB_TOKEN: 'github_pat_example',
    GITHUB_REPOS: 'acme/api,acme/web',
  });
  const server = createGitHubServer(config, { logger: createLogger({ level: 'silent' }) });
  regions.push({ file: readme, marker: 'github-tools', body: toolTable(server.tools) });
  const own = Object.fromEntries(
    Object.keys(GitHubConfigSchema.shape)
      .filter((k) => k.startsWith('GITHUB_'))
      .map((k) => [k, true]),
  );
  regions.push({
    file: readme,
    marker: 'github-config',
    body: configTable(GitHubConfigSchema.pick(own)),
  });
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

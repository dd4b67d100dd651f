#!/usr/bin/env node
// A server.json per server: the MCP Registry's description of a server (ADR 0020), for a company
// that runs a private registry (the public one takes no private servers — do not publish there).
// Written by `npm run bundle` next to the bundles, from what each server declares: its name (the
// image's `io.modelcontextprotocol.server.name` label), version, the MCP Bundle (by URL and
// SHA-256) and the image (run with stdio) as packages, the variables it needs — secrets marked
// `isSecret`, no example value copied in — and, when given, the URL a deployment serves it at.
//
//   npm run server-json -- check FILE… [--schema FILE]
//
// checks files against the registry's rules as docker/registry.schema.json writes them down, or
// against another schema file (the published one, downloaded: --schema server.schema.json).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020.js';
import { serverSettings } from '../scripts/server-settings.mjs';

export const SCHEMA_URL =
  'https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json';
const RULES = fileURLToPath(new URL('registry.schema.json', import.meta.url));
const SOURCE = 'https://github.com/gatehouse/gatehouse';

/** The registry name of server `id`: the image's label (docker/Dockerfile) says the same. */
export const serverName = (id) => `io.github.gatehouse/${id}`;

const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/**
 * The server.json of server `id`. `bundle`: the .mcpb file, published under `bundleUrl`;
 * `imagePrefix`: where its image is pushed (`registry.acme.example/platform/`); `remoteUrl`: where
 * a deployment serves it over Streamable HTTP (`{server}` is replaced by the id), if any.
 */
export async function serverJson(id, { bundle, bundleUrl, imagePrefix = 'localhost/', remoteUrl }) {
  const { pkg, definition, title, variables, writes } = await serverSettings(id);
  const environment = variables.map((v) => ({
    name: v.name,
    description: v.description,
    isRequired: v.required,
    isSecret: v.secret,
    format: 'string',
  }));
  if (writes) {
    environment.push({
      name: 'GATEHOUSE_ENABLE_WRITES',
      description:
        'Off: the server only reads. On: the write tools are listed too (each write audited, refused outside the allow-lists).',
      isRequired: false,
      isSecret: false,
      format: 'boolean',
      default: 'false',
    });
  }
  const packages = [];
  if (bundle !== undefined) {
    packages.push({
      registryType: 'mcpb',
      identifier: new URL(basename(bundle), bundleUrl).href,
      version: pkg.version,
      fileSha256: sha256(bundle),
      transport: { type: 'stdio' },
    });
  }
  packages.push({
    registryType: 'oci',
    identifier: `${imagePrefix}gatehouse-${id}:${pkg.version}`,
    runtimeHint: 'docker',
    transport: { type: 'stdio' },
    environmentVariables: [
      {
        name: 'GATEHOUSE_TRANSPORT',
        description:
          'The image serves Streamable HTTP by default; run by a client, it speaks stdio.',
        value: 'stdio',
      },
      ...environment,
    ],
  });
  const remotes =
    remoteUrl === undefined
      ? undefined
      : [
          {
            type: 'streamable-http',
            url: remoteUrl.replaceAll('{server}', id),
            headers: [
              {
                name: 'Authorization',
                description:
                  'An API key of the deployment (or an OAuth access token) as a bearer token.',
                isRequired: true,
                isSecret: true,
                value: 'Bearer {token}',
                variables: {
                  token: {
                    description: 'The API key or access token',
                    isRequired: true,
                    isSecret: true,
                  },
                },
              },
            ],
          },
        ];
  return {
    $schema: SCHEMA_URL,
    name: serverName(id),
    title,
    description: pkg.description,
    version: pkg.version,
    repository: { url: SOURCE, source: 'github', subfolder: `servers/${id}` },
    packages,
    ...(remotes ? { remotes } : {}),
    _meta: {
      'io.modelcontextprotocol.registry/publisher-provided': {
        'io.gatehouse/tools': definition.tools.map((t) => ({ name: t.name, access: t.access })),
      },
    },
  };
}

/** Compiled validators by schema file (a bundle run checks every server against one). */
const compiled = new Map();

/** A validator for a JSON Schema file (draft-07, or 2020-12 when it says so). */
function validator(schemaFile) {
  if (!compiled.has(schemaFile)) compiled.set(schemaFile, compile(schemaFile));
  return compiled.get(schemaFile);
}

function compile(schemaFile) {
  const schema = JSON.parse(readFileSync(schemaFile, 'utf8'));
  const ajv = new (String(schema.$schema).includes('2020-12') ? Ajv2020 : Ajv)({
    allErrors: true,
    // The published file carries OpenAPI words (`example`, `discriminator`) draft-07 does not know.
    strict: false,
  });
  // RFC 3986's shape: a scheme, then anything but whitespace (URL.canParse alone takes `a b:c`).
  ajv.addFormat('uri', (s) => /^[a-z][a-z0-9+.-]*:\S*$/i.test(s) && URL.canParse(s));
  return ajv.compile(schema);
}

/** `{name}` references in a string. */
const references = (s) => [...String(s).matchAll(/\{([^{}]*)\}/g)].map((m) => m[1]);

/**
 * What is wrong with `doc` as a server.json, as "path: problem" lines (none: it is valid):
 * the schema (ours, docker/registry.schema.json, or `schema`), then what a schema cannot say —
 * a secret given a value in the file, a `{reference}` to no variable, a name given twice.
 */
export function registryProblems(doc, { schema = RULES } = {}) {
  const validate = validator(schema);
  const problems = [];
  for (const e of validate(doc) ? [] : validate.errors) {
    // "must match then": the error inside the branch says what; a key's name checked against
    // the known keys reports twice (the enum, then the name): keep one, in plain words.
    if (e.keyword === 'if' || e.schemaPath.includes('/propertyNames/')) continue;
    const key = e.params?.additionalProperty ?? e.params?.propertyName;
    const said =
      e.keyword === 'propertyNames' || key !== undefined ? `unknown key "${key}"` : e.message;
    problems.push(`${e.instancePath || '/'}: ${said}`);
  }
  const inputs = (list, path) => {
    const seen = new Set();
    (Array.isArray(list) ? list : []).forEach((input, i) => {
      const at = `${path}/${i}`;
      if (seen.has(input?.name)) problems.push(`${at}: ${input.name} is named twice`);
      seen.add(input?.name);
      const literal = input?.value !== undefined && references(input.value).length === 0;
      if (input?.isSecret === true && (input.default !== undefined || literal))
        problems.push(
          `${at}: ${input.name} is secret, so the file must not give it a value or default`,
        );
      for (const ref of references(input?.value ?? '')) {
        if (!Object.hasOwn(input.variables ?? {}, ref))
          problems.push(`${at}: {${ref}} names no entry of its variables`);
      }
    });
  };
  (doc?.packages ?? []).forEach((p, i) => {
    inputs(p?.environmentVariables, `/packages/${i}/environmentVariables`);
    inputs(p?.transport?.headers, `/packages/${i}/transport/headers`);
  });
  (doc?.remotes ?? []).forEach((r, i) => {
    inputs(r?.headers, `/remotes/${i}/headers`);
    for (const ref of references(r?.url ?? '')) {
      if (!Object.hasOwn(r.variables ?? {}, ref))
        problems.push(`/remotes/${i}/url: {${ref}} names no entry of its variables`);
    }
  });
  return problems;
}

/** Writes the server.json of `id` to `out/<id>/server.json`, refusing one that is not valid. */
export async function writeServerJson(id, options, out) {
  const doc = await serverJson(id, options);
  const problems = registryProblems(doc);
  if (problems.length > 0) {
    throw new Error(`the server.json of ${id} is not valid:\n  ${problems.join('\n  ')}`);
  }
  mkdirSync(join(out, id), { recursive: true });
  const file = join(out, id, 'server.json');
  writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  return file;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { schema: { type: 'string' } },
  });
  const [command, ...files] = positionals;
  if (command !== 'check' || files.length === 0) {
    process.stderr.write('usage: npm run server-json -- check FILE… [--schema SCHEMA.json]\n');
    process.exit(2);
  }
  let failed = false;
  for (const file of files) {
    let problems;
    try {
      problems = registryProblems(JSON.parse(readFileSync(file, 'utf8')), {
        ...(values.schema ? { schema: values.schema } : {}),
      });
    } catch (error) {
      problems = [error.message];
    }
    failed ||= problems.length > 0;
    const against = values.schema ?? 'the registry rules (docker/registry.schema.json)';
    process.stdout.write(
      problems.length === 0
        ? `${file}: valid against ${against}\n`
        : `${file}: NOT valid against ${against}\n${problems.map((p) => `  ${p}\n`).join('')}`,
    );
  }
  process.exit(failed ? 1 : 0);
}

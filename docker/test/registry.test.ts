// The server.json checker (docker/registry.mjs): each rule of the MCP Registry's format it holds
// refuses a document that breaks it, naming where; the command says which file and why; and
// --schema checks against another schema file. (Every server's own server.json is checked where
// its bundle is built: bundles.test.ts.)
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, sh } from './container.ts';

const { registryProblems, SCHEMA_URL } = (await import(join(ROOT, 'docker/registry.mjs'))) as {
  registryProblems: (doc: unknown, options?: { schema?: string }) => string[];
  SCHEMA_URL: string;
};

/** A valid entry with every part the rules look at. */
const valid = () => ({
  $schema: SCHEMA_URL,
  name: 'io.github.gatehouse/github',
  title: 'Gatehouse GitHub',
  description: 'Gatehouse GitHub MCP server.',
  version: '0.1.0',
  repository: {
    url: 'https://github.com/gatehouse/gatehouse',
    source: 'github',
    subfolder: 'servers/github',
  },
  packages: [
    {
      registryType: 'mcpb',
      identifier: 'https://artifacts.acme.example/gatehouse-github-0.1.0.mcpb',
      version: '0.1.0',
      fileSha256: 'a'.repeat(64),
      transport: { type: 'stdio' },
    },
    {
      registryType: 'oci',
      identifier: 'registry.acme.example/platform/gatehouse-github:0.1.0',
      runtimeHint: 'docker',
      transport: { type: 'stdio' },
      environmentVariables: [
        { name: 'GATEHOUSE_TRANSPORT', value: 'stdio' },
        { name: 'GITHUB_TOKEN', isRequired: true, isSecret: true, format: 'string' },
      ],
    },
  ],
  remotes: [
    {
      type: 'streamable-http',
      url: 'https://gatehouse.acme.example/github/mcp',
      headers: [
        {
          name: 'Authorization',
          isSecret: true,
          value: 'Bearer {token}',
          variables: { token: { isSecret: true, isRequired: true } },
        },
      ],
    },
  ],
});
type Doc = ReturnType<typeof valid> & Record<string, unknown>;

it('takes a valid entry', () => {
  expect(registryProblems(valid())).toEqual([]);
});

// Each: a change that breaks one rule, and the place and words the refusal must carry.
const broken: Array<[string, (d: Doc) => void, RegExp]> = [
  [
    'another schema release',
    (d) => (d.$schema = d.$schema.replace('2025-12-11', '2025-07-09')),
    /^\/\$schema: must be equal to constant/,
  ],
  ['a name without its namespace', (d) => (d.name = 'github'), /^\/name: must match pattern/],
  [
    'a name with two slashes',
    (d) => (d.name = 'io.github/gatehouse/github'),
    /^\/name: must match pattern/,
  ],
  [
    'a description over 100 characters',
    (d) => (d.description = 'x'.repeat(101)),
    /^\/description: must NOT have more than 100 characters/,
  ],
  [
    'no version',
    (d) => delete (d as Partial<Doc>).version,
    /^\/: must have required property 'version'/,
  ],
  ['version "latest"', (d) => (d.version = 'latest'), /^\/version: must NOT be valid/],
  ['a version range', (d) => (d.version = '^0.1.0'), /^\/version: must NOT be valid/],
  ['a wildcard version', (d) => (d.version = '0.x'), /^\/version: must NOT be valid/],
  [
    'a package version range',
    (d) => (d.packages[0]!.version = '>=0.1'),
    /^\/packages\/0\/version: must NOT be valid/,
  ],
  [
    'a bundle without its SHA-256',
    (d) => delete (d.packages[0] as Partial<Doc['packages'][0]>).fileSha256,
    /^\/packages\/0: must have required property 'fileSha256'/,
  ],
  [
    'a SHA-256 in capitals',
    (d) => (d.packages[0]!.fileSha256 = 'A'.repeat(64)),
    /^\/packages\/0\/fileSha256: must match pattern/,
  ],
  [
    'a bundle that is not a URL',
    (d) => (d.packages[0]!.identifier = 'gatehouse-github.mcpb'),
    /^\/packages\/0\/identifier: must match format "uri"/,
  ],
  [
    'an image without a tag or digest',
    (d) => (d.packages[1]!.identifier = 'registry.acme.example:5000/gatehouse-github'),
    /^\/packages\/1\/identifier: must match pattern/,
  ],
  [
    'an unknown registry type',
    (d) => (d.packages[1]!.registryType = 'docker'),
    /^\/packages\/1\/registryType: must be equal to one of the allowed values/,
  ],
  [
    'snake_case fields of the first release',
    (d) => ((d.packages[1]!.environmentVariables![1] as Record<string, unknown>).is_secret = true),
    /^\/packages\/1\/environmentVariables\/1: unknown key "is_secret"$/,
  ],
  [
    'an unknown key',
    (d) => ((d.packages[0] as Record<string, unknown>).sha = 'x'),
    /^\/packages\/0: unknown key "sha"$/,
  ],
  [
    'an unknown input format',
    (d) => (d.packages[1]!.environmentVariables![1]!.format = 'secret'),
    /^\/packages\/1\/environmentVariables\/1\/format: must be equal to one of the allowed values/,
  ],
  [
    'a remote that is not http(s)',
    (d) => (d.remotes[0]!.url = 'ftp://gatehouse.acme.example/mcp'),
    /^\/remotes\/0\/url: must match pattern/,
  ],
  [
    'stdio as a remote',
    (d) => (d.remotes[0]!.type = 'stdio'),
    /^\/remotes\/0\/type: must be equal to one of the allowed values/,
  ],
  [
    'a stdio transport with a URL',
    (d) => ((d.packages[0]!.transport as Record<string, unknown>).url = 'https://x.example'),
    /^\/packages\/0\/transport: unknown key "url"$/,
  ],
  [
    'a secret with a value in the file',
    (d) =>
      ((d.packages[1]!.environmentVariables![1] as Record<string, unknown>).value = 'ghp_0123'),
    /^\/packages\/1\/environmentVariables\/1: GITHUB_TOKEN is secret, so the file must not give it a value or default/,
  ],
  [
    'a secret with a default',
    (d) =>
      ((d.packages[1]!.environmentVariables![1] as Record<string, unknown>).default = 'ghp_0123'),
    /GITHUB_TOKEN is secret, so the file must not give it a value or default/,
  ],
  [
    'a variable named twice',
    (d) =>
      d.packages[1]!.environmentVariables!.push({ name: 'GITHUB_TOKEN', isSecret: true } as never),
    /^\/packages\/1\/environmentVariables\/2: GITHUB_TOKEN is named twice/,
  ],
  [
    'a reference to no variable',
    (d) => (d.remotes[0]!.headers[0]!.value = 'Bearer {key}'),
    /^\/remotes\/0\/headers\/0: \{key\} names no entry of its variables/,
  ],
  [
    'a URL template without its variable',
    (d) => (d.remotes[0]!.url = 'https://{tenant}.acme.example/mcp'),
    /^\/remotes\/0\/url: \{tenant\} names no entry of its variables/,
  ],
  [
    'a repository subfolder that climbs out',
    (d) => (d.repository.subfolder = '../elsewhere'),
    /^\/repository\/subfolder: must match pattern/,
  ],
];

describe('refuses, naming where and why,', () => {
  it.each(broken)('%s', (_, change, expected) => {
    const doc = valid() as Doc;
    change(doc);
    const problems = registryProblems(doc);
    expect(
      problems.some((p) => expected.test(p)),
      problems.join('\n'),
    ).toBe(true);
  });
});

describe('npm run server-json -- check', () => {
  const dir = mkdtempSync(join(tmpdir(), 'server-json-'));
  const good = join(dir, 'good.json');
  const bad = join(dir, 'bad.json');
  writeFileSync(good, JSON.stringify(valid()));
  writeFileSync(bad, JSON.stringify({ ...valid(), version: 'latest', name: 'github' }));
  const check = (...args: string[]) =>
    sh('node', [join(ROOT, 'docker/registry.mjs'), 'check', ...args]);

  it('says each file is valid, or names every problem and fails', async () => {
    const ok = await check(good);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toBe(
      `${good}: valid against the registry rules (docker/registry.schema.json)\n`,
    );
    const failed = await check(good, bad);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain(`${good}: valid`);
    expect(failed.stdout).toContain(`${bad}: NOT valid`);
    expect(failed.stdout).toMatch(/\/name: must match pattern/);
    expect(failed.stdout).toMatch(/\/version: must NOT be valid/);
  });

  it('says what is wrong with a file that is no JSON, and exits 2 on bad usage', async () => {
    const notJson = join(dir, 'not.json');
    writeFileSync(notJson, '{ "name": ');
    const result = await check(notJson);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/not\.json: NOT valid[\s\S]*JSON/);
    expect((await sh('node', [join(ROOT, 'docker/registry.mjs')])).code).toBe(2);
  });

  it('checks against another schema file with --schema (draft-07 or 2020-12), as the published one would be', async () => {
    const draft7 = join(dir, 'needs-website.json');
    writeFileSync(
      draft7,
      JSON.stringify({
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        required: ['websiteUrl'],
        example: 'OpenAPI words are ignored, as in the published file',
      }),
    );
    const result = await check(good, '--schema', draft7);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`NOT valid against ${draft7}`);
    expect(result.stdout).toContain("must have required property 'websiteUrl'");
    const draft2020 = join(dir, 'short-name.json');
    writeFileSync(
      draft2020,
      JSON.stringify({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { name: { maxLength: 5 } },
        $defs: { unused: true },
      }),
    );
    const strict = await check(good, '--schema', draft2020);
    expect(strict.code).toBe(1);
    expect(strict.stdout).toMatch(/\/name: must NOT have more than 5 characters/);
  });
});

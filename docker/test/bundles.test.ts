// The MCP Bundles (scripts/mcpb.mjs, `npm run bundle`): built for every server, checked by the
// official mcpb CLI, unpacked as Claude Desktop unpacks them, and the server started from the
// unpacked bundle exactly as its manifest says — node, the entry point, the env made from the
// user's answers — answering through a real MCP client over stdio.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectStdio, resultText } from '@gatehouse/testkit';
import type { UpstreamModule } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';
import { ROOT, must, serverModule, serverNames } from './container.ts';

const MCPB = join(ROOT, 'node_modules/.bin/mcpb');
const { buildBundle } = (await import(join(ROOT, 'scripts/mcpb.mjs'))) as {
  buildBundle: (id: string, out: string) => Promise<string>;
};

interface Manifest {
  manifest_version: string;
  name: string;
  version: string;
  server: {
    type: string;
    entry_point: string;
    mcp_config: { command: string; args: string[]; env: Record<string, string> };
  };
  tools: Array<{ name: string; description: string }>;
  prompts: Array<{ name: string; arguments: string[] }>;
  compatibility: { runtimes: { node: string }; platforms: string[] };
  user_config: Record<
    string,
    { type: string; title: string; required: boolean; sensitive?: boolean; default?: unknown }
  >;
}

const { writeServerJson, registryProblems } = (await import(join(ROOT, 'docker/registry.mjs'))) as {
  writeServerJson: (id: string, options: Record<string, string>, out: string) => Promise<string>;
  registryProblems: (doc: unknown) => string[];
};

interface ServerJson {
  name: string;
  version: string;
  packages: Array<{
    registryType: string;
    identifier: string;
    environmentVariables?: Array<{
      name: string;
      isSecret?: boolean;
      value?: string;
      default?: string;
    }>;
  }>;
  remotes?: Array<{ url: string }>;
  _meta: Record<string, Record<string, Array<{ name: string }>>>;
}

const out = mkdtempSync(join(tmpdir(), 'bundles-'));
/** What the README promises of a bundle's size ("under 1.2 MB"). */
const MAX_BUNDLE_BYTES = 1_200_000;
/** The manifest of a bundle the first test unpacked. */
const manifestOf = (server: string) =>
  JSON.parse(readFileSync(join(out, server, 'manifest.json'), 'utf8')) as Manifest;

describe.each(serverNames())('the %s bundle', (server) => {
  it('is a valid MCP Bundle: the official CLI validates, packs and unpacks it', async () => {
    const file = await buildBundle(server, out);
    const version = (
      JSON.parse(readFileSync(join(ROOT, 'servers', server, 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    expect(file).toBe(join(out, `gatehouse-${server}-${version}.mcpb`));
    expect(statSync(file).size).toBeLessThan(MAX_BUNDLE_BYTES);
    const info = await must(MCPB, ['info', file]);
    expect(info).toContain(`gatehouse-${server}`);
    const dir = join(out, server);
    await must(MCPB, ['unpack', file, dir]);
    await must(MCPB, ['validate', join(dir, 'manifest.json')]);
    expect(readdirSync(dir).sort()).toEqual(['manifest.json', 'node_modules', 'server']);
  });

  it('asks for what the server needs — secrets as sensitive (the keychain) — and runs from the unpacked bundle', async () => {
    const dir = join(out, server);
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Manifest;
    expect(manifest).toMatchObject({
      manifest_version: '0.3',
      name: `gatehouse-${server}`,
      server: { type: 'node', entry_point: 'server/index.js' },
      compatibility: { runtimes: { node: '>=22.19.0' } },
    });
    const { mcp_config: config } = manifest.server;
    expect(config.command).toBe('node');
    expect(config.args).toEqual(['${__dirname}/server/index.js']);
    // Every answer reaches the server, and every secret of the configuration is asked as one.
    const { docs } = (await serverModule(server)) as {
      docs: { schema: unknown; exampleEnv: Record<string, string> };
    };
    const { secretKeys } = (await import('@gatehouse/core/runtime')) as {
      secretKeys: (schema: unknown) => string[];
    };
    const secrets = new Set(secretKeys(docs.schema));
    for (const [name, template] of Object.entries(config.env)) {
      const answer = /^\$\{user_config\.(\w+)\}$/.exec(template)?.[1];
      expect(answer, `${name} comes from the user's answers`).toBeDefined();
      expect(manifest.user_config[answer!], name).toBeDefined();
      if (secrets.has(name)) expect(manifest.user_config[answer!]!.sensitive, name).toBe(true);
    }
    for (const name of Object.keys(docs.exampleEnv))
      expect(config.env[name], `${name} is asked for`).toBeDefined();

    // Started as Claude Desktop starts it: the answers (here: the test upstream's values), node,
    // the entry point under the unpacked folder. The upstream's address (a loopback fake, a test
    // database) is added to the environment: a user's bundle talks to the vendor's real one.
    const up = await (
      (await import(join(ROOT, 'servers', server, 'test/upstream.ts'))) as UpstreamModule
    ).upstream();
    try {
      // Writes on: the listing is then every tool the manifest names.
      const answers: Record<string, string> = { enable_writes: 'true' };
      for (const [name, template] of Object.entries(config.env)) {
        const answer = /^\$\{user_config\.(\w+)\}$/.exec(template)![1]!;
        answers[answer] ??= up.env[name] ?? docs.exampleEnv[name] ?? '';
      }
      const env = Object.fromEntries(
        Object.entries(config.env).map(([name, template]) => [
          name,
          template.replace(/\$\{user_config\.(\w+)\}/, (_m, k: string) => answers[k]!),
        ]),
      );
      const connection = await connectStdio(
        process.execPath,
        config.args.map((a) => a.replace('${__dirname}', dir)),
        { env: { ...up.env, ...env, PATH: process.env.PATH ?? '' } },
      );
      try {
        const { tools } = await connection.client.listTools();
        expect(tools.map((t) => t.name).sort()).toEqual(manifest.tools.map((t) => t.name).sort());
        expect(tools.length).toBeGreaterThan(0);
        const result = await connection.client.callTool(up.call);
        expect(result.isError, resultText(result)).toBeFalsy();
        expect(resultText(result)).toContain(up.expect);
      } finally {
        await connection.close();
      }
    } finally {
      await up.close();
    }
  });

  it('has a server.json for a private MCP registry: valid, its bundle by SHA-256, its secrets marked, no example value', async () => {
    const file = join(out, `gatehouse-${server}-${manifestOf(server).version}.mcpb`);
    const written = await writeServerJson(
      server,
      {
        bundle: file,
        bundleUrl: 'https://artifacts.acme.example/gatehouse/',
        imagePrefix: 'registry.acme.example/platform/',
        remoteUrl: 'https://gatehouse.acme.example/{server}/mcp',
      },
      join(out, 'registry'),
    );
    expect(written).toBe(join(out, 'registry', server, 'server.json'));
    const entry = JSON.parse(readFileSync(written, 'utf8')) as ServerJson;
    expect(registryProblems(entry)).toEqual([]);
    // The name is the image's label (docker/Dockerfile), with this server's id.
    const label = /io\.modelcontextprotocol\.server\.name="([^"]+)"/.exec(
      readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8'),
    )?.[1];
    expect(entry.name).toBe(label!.replace('${SERVER}', server));
    const [bundle, image] = entry.packages;
    expect(bundle).toMatchObject({
      registryType: 'mcpb',
      identifier: `https://artifacts.acme.example/gatehouse/gatehouse-${server}-${entry.version}.mcpb`,
      fileSha256: createHash('sha256').update(readFileSync(file)).digest('hex'),
    });
    expect(image).toMatchObject({
      registryType: 'oci',
      identifier: `registry.acme.example/platform/gatehouse-${server}:${entry.version}`,
      transport: { type: 'stdio' },
    });
    expect(entry.remotes?.[0]?.url).toBe(`https://gatehouse.acme.example/${server}/mcp`);
    // Every variable the bundle asks for, secret exactly where the configuration says so, and not
    // one example value (a placeholder token, a sample host) written into the entry.
    const { docs } = (await serverModule(server)) as {
      docs: { schema: unknown; exampleEnv: Record<string, string> };
    };
    const { secretKeys } = (await import('@gatehouse/core/runtime')) as {
      secretKeys: (schema: unknown) => string[];
    };
    const secrets = new Set(secretKeys(docs.schema));
    const variables = image!.environmentVariables!;
    for (const name of Object.keys(docs.exampleEnv)) {
      const variable = variables.find((v) => v.name === name);
      expect(variable, `${name} is named`).toBeDefined();
      expect(variable!.isSecret, name).toBe(secrets.has(name));
    }
    const given = variables.flatMap((v) => [v.value, v.default]).filter((v) => v !== undefined);
    for (const value of Object.values(docs.exampleEnv)) expect(given).not.toContain(value);
    expect(given.sort()).toEqual(
      [
        'stdio',
        ...(variables.some((v) => v.name === 'GATEHOUSE_ENABLE_WRITES') ? ['false'] : []),
      ].sort(),
    );
    // The tools it lists are the bundle's.
    const provided = entry._meta['io.modelcontextprotocol.registry/publisher-provided']!;
    const tools = provided['io.gatehouse/tools']!.map((t) => t.name);
    expect(tools).toEqual(manifestOf(server).tools.map((t) => t.name));
  });
});

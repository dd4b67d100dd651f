/**
 * `@gatehouse/contract`: what every Gatehouse server must hold, as one vitest suite. A server's
 * `test/contract.test.ts` is three lines:
 *
 *   import { serverContract } from '@gatehouse/contract';
 *   import { docs } from '../src/server.ts';
 *   import { upstream } from './upstream.ts';
 *   serverContract(docs, upstream);
 *
 * It checks the surface a model is told against the reviewed snapshot, that the surface does not
 * change with the configuration, the tools' names, annotations and strict input schemas, the
 * README's generated tables, the deployment declaration in package.json against the
 * configuration schema, and one real call through the server's upstream (`test/upstream.ts`) with
 * a real client in the default text view. Then the built binary: that call over stdio and over
 * Streamable HTTP in both protocol eras, the official conformance suite's server-agnostic
 * scenarios (those of resources and prompts when it has them), no secret in its log, exit 0 on SIGTERM, exit 2 naming the variable (and audited)
 * when the upstream rejects its credential, and a clear refusal on a Node.js that is too old.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_LISTED_TEXT, loadConfig } from '@gatehouse/core';
import { describeConfig, surfaceSnapshot, surfaceSnapshotOf } from '@gatehouse/core/docs';
import type { ServerDocs } from '@gatehouse/core/docs';
import { checkAtStart } from '@gatehouse/core/runtime';
import { captureLogger, createTestHarness } from '@gatehouse/core/testing';
import {
  checkGeneratedDocs,
  connectHttp,
  connectInMemory,
  connectStdio,
  resultText as textOf,
  runConformance,
  runOnOldNode,
  spawnServer,
} from '@gatehouse/testkit';
import type { Connection, ServerUpstream } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

type Json = Record<string, unknown>;

/**
 * The official conformance suite's scenarios that hold for any server (docs/conformance.md), with
 * the capability each needs; the others call the suite's "everything" fixture's own tools by name
 * (packages/fixture runs them). A server without resources or prompts does not declare them (a
 * client then does not ask), so their scenarios run only where they are declared.
 */
const CONFORMANCE: ReadonlyArray<readonly [string, ReadonlyArray<'resources' | 'prompts'>]> = [
  ['server-initialize', []],
  ['ping', []],
  ['tools-list', []],
  ['resources-list', ['resources']],
  ['prompts-list', ['prompts']],
  ['sep-2164-resource-not-found', ['resources']],
  ['dns-rebinding-protection', []],
  ['caching', ['resources', 'prompts']],
  ['http-header-validation', []],
];

/**
 * The surface without what names the deployment on purpose: the server's own instructions (what it
 * is set up for) and static resources' URIs (a resource of the configured database is
 * `postgres://<database>/schemas`, as the server's templates address it).
 */
async function listings(docs: ServerDocs, env: Readonly<Record<string, string>>) {
  const definition = docs.create(loadConfig(docs.schema, env) as never, {
    logger: captureLogger().logger,
  });
  try {
    const { server: _server, resources, ...rest } = surfaceSnapshot(definition);
    return {
      ...rest,
      resources: (resources as Json[]).map(({ uri: _uri, ...resource }) => resource),
    };
  } finally {
    await definition.close?.();
  }
}

type Field = { safeParse(input: unknown): { success: boolean; data?: unknown } };

/**
 * The example configuration with `change` applied to each setting: `change` gets a setting's
 * current value (the example's, else its default) and returns the values to try in order; the
 * first that the setting and the whole configuration accept (rules across keys included) is
 * kept, else the setting keeps its value.
 */
function changedEnv(
  docs: ServerDocs,
  change: (value: unknown, key: string, env: Readonly<Record<string, string>>) => string[],
): Record<string, string> {
  const env: Record<string, string> = { ...docs.exampleEnv };
  for (const [key, field] of Object.entries(docs.schema.shape) as [string, Field][]) {
    const current = field.safeParse(env[key]);
    if (!current.success || current.data === undefined) continue;
    for (const candidate of change(current.data, key, env)) {
      const parsed = field.safeParse(candidate);
      if (!parsed.success || JSON.stringify(parsed.data) === JSON.stringify(current.data)) continue;
      try {
        loadConfig(docs.schema, { ...env, [key]: candidate });
        env[key] = candidate;
        break;
      } catch {
        // A rule across keys refuses it: try the next.
      }
    }
  }
  return env;
}

/**
 * The example configuration with every number and list it leaves at its default set to another
 * valid value: a page size, a row cap, a schema list (`public` → `public,gatehouse_varied`). A
 * listing that prints one of them differs under it. Switches and choices stay: they decide which
 * tools exist (writes, curated queries), and each such configuration has its own tests.
 */
export function variedEnv(docs: ServerDocs): Record<string, string> {
  return changedEnv(docs, (value, key, env) =>
    key in env
      ? []
      : typeof value === 'number'
        ? [value + 1, value - 1, value * 2].map(String)
        : Array.isArray(value) && value.length > 0
          ? [[...(value as unknown[]), 'gatehouse_varied'].join(',')]
          : [],
  );
}

/**
 * The example configuration with every list setting (repositories, projects, schemas, masked
 * columns…) as long as its schema allows, up to 300 entries made from its first one
 * (`acme/api` → `acme/api1`, `acme/api2`, …): what a large deployment puts in the instructions.
 */
export function longListsEnv(docs: ServerDocs): Record<string, string> {
  return changedEnv(docs, (value) => {
    const list = Array.isArray(value) ? (value as unknown[]) : [];
    const first = list[0];
    if (typeof first !== 'string') return [];
    return [300, 100, 30, 10].map((length) =>
      [...list, ...Array.from({ length }, (_, i) => `${first}${i + 1}`)].join(','),
    );
  });
}

/**
 * The contract suite of one server. `docs` is what its `src/server.ts` exports for the generated
 * docs; `upstream` starts what the server talks to (docs/adding-a-server.md).
 */
export function serverContract(docs: ServerDocs, upstream: () => Promise<ServerUpstream>): void {
  it('what the model is told matches the reviewed snapshot (test/__toolsnaps__/surface.json)', async () => {
    await expect(await surfaceSnapshotOf(docs)).toMatchFileSnapshot(
      join(process.cwd(), 'test/__toolsnaps__/surface.json'),
    );
  });
  inProcessContract(docs, upstream);
  binaryContract(docs, upstream);
}

/** The server in process, through a real client: its listings, a call, its README, its deploy. */
function inProcessContract(docs: ServerDocs, upstream: () => Promise<ServerUpstream>): void {
  const manifest = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as {
    name: string;
    gatehouse?: { deploy?: Json };
  };

  describe(`the ${docs.id} server's contract`, () => {
    let up: ServerUpstream;
    let connection: Connection;
    let harness: ReturnType<typeof createTestHarness>;
    const env = () => ({ ...docs.exampleEnv, ...up.env });

    beforeAll(async () => {
      up = await upstream();
      const config = loadConfig(docs.schema, { GATEHOUSE_PRINCIPAL: 'contract', ...env() });
      harness = createTestHarness(config as never);
      const definition = docs.create(config as never, { logger: harness.logger });
      await checkAtStart(definition, harness.logger);
      connection = await connectInMemory(harness.factory(definition));
    });
    afterAll(async () => {
      await connection?.close();
      await up?.close();
    });

    it('tells the model the same in every configuration (no setting in a listing)', async () => {
      // The example configuration, the upstream's (other URLs, lists, credentials) and one with
      // every number and list changed: what tools, resources and prompts say must not differ, so
      // one snapshot covers every deployment (ADR 0018).
      const example = await listings(docs, docs.exampleEnv);
      expect(await listings(docs, env())).toEqual(example);
      const varied = variedEnv(docs);
      expect(Object.keys(varied).length).toBeGreaterThan(Object.keys(docs.exampleEnv).length);
      expect(await listings(docs, varied)).toEqual(example);
    });

    it('keeps every description and its instructions within 2 048 characters (clients cut longer ones silently)', async () => {
      const texts: Array<[string, string]> = [];
      const walk = (node: unknown, where: string): void => {
        if (Array.isArray(node)) node.forEach((item, i) => walk(item, `${where}[${i}]`));
        else if (node !== null && typeof node === 'object')
          for (const [key, value] of Object.entries(node)) {
            if ((key === 'description' || key === 'instructions') && typeof value === 'string')
              texts.push([`${where}.${key}`, value]);
            else walk(value, `${where}.${key}`);
          }
      };
      walk(JSON.parse(await surfaceSnapshotOf(docs)), docs.id);
      // The instructions of a large deployment: every configured list at its longest.
      const longEnv = longListsEnv(docs);
      expect(Object.entries(longEnv).some(([k, v]) => docs.exampleEnv[k] !== v)).toBe(true);
      const long = docs.create(loadConfig(docs.schema, longEnv) as never, {
        logger: captureLogger().logger,
      });
      try {
        texts.push(['long lists: instructions', long.instructions ?? '']);
      } finally {
        await long.close?.();
      }
      expect(texts.some(([where]) => where.endsWith('.instructions'))).toBe(true);
      const over = texts.filter(([, text]) => text.length > MAX_LISTED_TEXT);
      expect(over.map(([where]) => where)).toEqual([]);
    });

    it(`names every tool ${docs.id}_…, with a title, annotations and an input schema that refuses unknown arguments`, async () => {
      const { tools } = await connection.client.listTools();
      expect(tools.length).toBeGreaterThan(0);
      for (const tool of tools) {
        expect(tool.name).toMatch(new RegExp(`^${docs.id}_[a-z][a-z0-9_]*$`));
        expect(tool.title, tool.name).toBeTruthy();
        expect(tool.description?.length ?? 0, tool.name).toBeGreaterThan(20);
        expect(typeof tool.annotations?.readOnlyHint, tool.name).toBe('boolean');
        expect(typeof tool.annotations?.openWorldHint, tool.name).toBe('boolean');
        expect(tool.inputSchema.type, tool.name).toBe('object');
      }
    });

    it('answers its upstream call through a real client, in the default text view, and audits it', async () => {
      const result = await connection.client.callTool(up.call);
      expect(result.isError, textOf(result)).toBeFalsy();
      expect(result.structuredContent).toBeUndefined();
      expect(textOf(result)).toContain(up.expect);
      expect(harness.records.at(-1)).toMatchObject({
        event: { action: 'tools/call', outcome: 'success' },
        tool: { name: up.call.name },
      });
    });

    it('refuses an unknown tool and an unknown argument, naming them', async () => {
      // An unknown tool is a protocol error (the MCP specification's "Unknown tool").
      await expect(
        connection.client.callTool({ name: `${docs.id}_no_such_tool`, arguments: {} }),
      ).rejects.toThrow(`${docs.id}_no_such_tool`);
      const extra = await connection.client.callTool({
        name: up.call.name,
        arguments: { ...up.call.arguments, zz_not_an_argument: 1 },
      });
      expect(extra.isError).toBe(true);
      expect(textOf(extra)).toContain('zz_not_an_argument');
    });

    it('keeps the generated parts of its README in step with the code (npm run docs)', async () => {
      expect(await checkGeneratedDocs(docs.id)).toBe('');
    });

    it('declares its deployment with variables its configuration has (package.json gatehouse.deploy)', () => {
      const deploy = manifest.gatehouse?.deploy as
        { upstream?: { variable?: string }; settings?: Json } | undefined;
      expect(deploy, `${manifest.name}: package.json has no gatehouse.deploy`).toBeDefined();
      const variables = new Map(describeConfig(docs.schema).map((v) => [v.name, v]));
      const credential = deploy!.upstream?.variable ?? '';
      expect(variables.get(credential)?.secret, `${credential} is a secret of the schema`).toBe(
        true,
      );
      for (const name of Object.keys(deploy!.settings ?? {}))
        expect(variables.has(name), `${name} is a variable of the schema`).toBe(true);
    });
  });
}

/** The built bin as clients start it: stdio, HTTP in both eras, conformance, refusals. */
function binaryContract(docs: ServerDocs, upstream: () => Promise<ServerUpstream>): void {
  describe(`the built ${docs.id} binary (dist/index.js)`, () => {
    let up: ServerUpstream;
    const bin = join(process.cwd(), 'dist/index.js');
    // The child gets the example configuration, the upstream's, and this PATH — nothing else.
    // eslint-disable-next-line no-restricted-syntax -- a test passing PATH to a child process
    const path = process.env.PATH ?? '';
    const env = () => ({ ...docs.exampleEnv, ...up.env, PATH: path });
    /** The node flags the bin's first line names (`#!/usr/bin/env -S node …`). */
    const binFlags = () => readFileSync(bin, 'utf8').split('\n', 1)[0]!.split(/\s+/).slice(3);
    /** The values of the configuration's secrets in this environment: never in a log line. */
    const secrets = () => {
      const names = new Set(
        describeConfig(docs.schema)
          .filter((v) => v.secret)
          .map((v) => v.name),
      );
      return Object.entries(env())
        .filter(([name, value]) => names.has(name) && value.length >= 8)
        .map(([, value]) => value);
    };
    beforeAll(async () => {
      up = await upstream();
    });
    afterAll(async () => {
      await up?.close();
    });

    it('serves its upstream call over stdio, and never logs a secret', async () => {
      const connection = await connectStdio(process.execPath, [bin], { env: env() });
      try {
        const result = await connection.client.callTool(up.call);
        expect(result.isError, textOf(result)).toBeFalsy();
        expect(textOf(result)).toContain(up.expect);
      } finally {
        await connection.close();
      }
      const stderr = connection.stderr.join('\n');
      expect(stderr).toContain('"msg":"server started"');
      for (const secret of secrets()) expect(stderr).not.toContain(secret);
    });

    it('serves it over Streamable HTTP in both eras, passes the conformance scenarios, drains on SIGTERM: exit 0', async () => {
      const server = await spawnServer(process.execPath, [bin], {
        env: { ...env(), GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0' },
      });
      try {
        // Started as `node <bin>`, without the flags of its first line: it runs with them anyway,
        // as the same process (an MCP Bundle, the image and most clients start it so).
        const cmdline = readFileSync(`/proc/${server.child.pid}/cmdline`, 'utf8').split('\0');
        for (const flag of binFlags()) expect(cmdline, 'node flags of the bin').toContain(flag);
        let declared: Record<string, unknown> = {};
        for (const era of ['legacy', 'modern'] as const) {
          const { client, close } = await connectHttp(server.url!, { era });
          try {
            const result = await client.callTool(up.call);
            expect(textOf(result), era).toContain(up.expect);
            declared = client.getServerCapabilities() ?? {};
          } finally {
            await close();
          }
        }
        for (const [scenario, needs] of CONFORMANCE) {
          if (needs.some((capability) => declared[capability] === undefined)) continue;
          const run = await runConformance(server.url!, { scenario }, 55_000);
          expect(run.checks, `${scenario}\n${run.output}`).toBeDefined();
          expect(run.checks!.failed, `${scenario}\n${run.output}`).toBe(0);
          expect(run.checks!.passed, `${scenario}\n${run.output}`).toBeGreaterThan(0);
        }
        expect(await server.stop('SIGTERM')).toBe(0);
        for (const secret of secrets()) expect(JSON.stringify(server.logs)).not.toContain(secret);
      } finally {
        await server.stop('SIGKILL');
      }
    }, 180_000);

    it('keeps a node flag it is given (NODE_OPTIONS) and adds only those it lacks', async () => {
      const server = await spawnServer(process.execPath, [bin], {
        env: {
          ...env(),
          GATEHOUSE_TRANSPORT: 'http',
          GATEHOUSE_PORT: '0',
          NODE_OPTIONS: '--max-old-space-size=300',
        },
      });
      try {
        const cmdline = readFileSync(`/proc/${server.child.pid}/cmdline`, 'utf8').split('\0');
        const own = binFlags().filter((f) => !f.startsWith('--max-old-space-size='));
        for (const flag of own) expect(cmdline).toContain(flag);
        expect(cmdline.filter((f) => f.startsWith('--max-old-space-size='))).toEqual([]);
      } finally {
        await server.stop('SIGKILL');
      }
    });

    it('refuses to start on a credential the upstream rejects: exit 2 naming the variable, audited, the value nowhere', async () => {
      const { variable, value, said } = up.rejected;
      const auditFile = join(mkdtempSync(join(tmpdir(), `${docs.id}-refused-`)), 'audit.jsonl');
      const server = await spawnServer(process.execPath, [bin], {
        env: {
          ...env(),
          [variable]: value,
          GATEHOUSE_AUDIT_SINKS: 'file',
          GATEHOUSE_AUDIT_FILE: auditFile,
        },
        waitForStart: false,
      });
      expect(await server.exited()).toBe(2);
      const output = server.logs
        .map((l) => (typeof l.raw === 'string' ? l.raw : JSON.stringify(l)))
        .join('\n');
      expect(output).toContain(`${variable}: ${said}`);
      const audit = readFileSync(auditFile, 'utf8');
      const first = JSON.parse(audit.split('\n')[0]!) as {
        event: { action: string };
        gatehouse?: { reason?: string };
      };
      expect(first.event.action).toBe('gatehouse/start_refused');
      expect(first.gatehouse?.reason).toMatch(new RegExp(`^${variable}: `));
      // A URL's password is a secret of its own (POSTGRES_URL).
      const password = URL.canParse(value) ? decodeURIComponent(new URL(value).password) : '';
      for (const text of [output, audit])
        for (const secret of [value, password].filter((s) => s.length >= 8))
          expect(text).not.toContain(secret);
    });

    it("says which Node.js it needs on one that is too old, instead of failing on syntax (the machine's Node 20)", () => {
      const old = runOnOldNode(bin);
      expect(old.version).toMatch(/^20\./);
      expect(old).toMatchObject({ status: 1, stderr: old.refusal });
    });
  });
}

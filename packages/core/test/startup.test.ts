import { ConfigError, CredentialError, UpstreamError, defineServer } from '@gatehouse/core';
import type { StartupReport } from '@gatehouse/core';
import { checkAtStart } from '@gatehouse/core/runtime';
import { captureLogger } from '@gatehouse/core/testing';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { spawnServer, startRedis } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';

// The start-up check: the server says what to check, the core decides what happens.

const capture = captureLogger;

const definition = (check: () => Promise<StartupReport>, extra: { recheckMs?: number } = {}) => {
  let closed = 0;
  return {
    closed: () => closed,
    definition: defineServer({
      name: 'gatehouse-acme',
      version: '1',
      tools: [],
      startup: { upstream: 'Acme', check, ...extra },
      ready: async () => ({ ready: true }),
      close: async () => {
        closed++;
      },
    }),
  };
};
const down = () =>
  new UpstreamError({ service: 'Acme', status: 503, message: 'Acme is unreachable' });

describe('checkAtStart', () => {
  it('logs what passed and each warning, then serves with the server’s own readiness', async () => {
    const { logger, logs } = capture();
    const { definition: d } = definition(async () => ({
      message: 'Acme access checked',
      details: { identity: 'bot' },
      warnings: ['the token may also delete projects; use a narrower one'],
    }));
    const ready = await checkAtStart(d, logger);
    expect(await ready()).toEqual({ ready: true });
    expect(logs()).toContain('"identity":"bot","msg":"Acme access checked"');
    expect(logs()).toMatch(/"level":"warn".*the token may also delete projects/);
  });

  it('refuses the start for rejected credentials, naming the variable, and closes', async () => {
    const { logger } = capture();
    const { definition: d, closed } = definition(async () => {
      throw new CredentialError('ACME_TOKEN', 'Acme rejected the credentials (401)');
    });
    const refused = checkAtStart(d, logger);
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toMatchObject({
      problems: ['ACME_TOKEN: Acme rejected the credentials (401)'],
    });
    expect(closed()).toBe(1);
  });

  it('starts unready when the upstream is down, and checks again until it passes', async () => {
    const { logger, logs } = capture();
    let up = false;
    let checks = 0;
    const { definition: d } = definition(
      async () => {
        checks++;
        if (!up) throw down();
        return { message: 'Acme access checked' };
      },
      { recheckMs: 0 },
    );
    const ready = await checkAtStart(d, logger);
    expect(logs()).toContain('Acme is unreachable; starting unready');
    expect(await ready()).toEqual({ ready: false, detail: 'Acme is unreachable' });
    up = true;
    expect(await ready()).toEqual({ ready: true });
    const after = checks;
    // Once passed, readiness is the server's own: the check does not run again.
    expect(await ready()).toEqual({ ready: true });
    expect(checks).toBe(after);
  });

  it('re-checks at most every recheckMs while the upstream is down', async () => {
    const { logger } = capture();
    let checks = 0;
    const { definition: d } = definition(
      async () => {
        checks++;
        throw down();
      },
      { recheckMs: 60_000 },
    );
    const ready = await checkAtStart(d, logger);
    await ready();
    await ready();
    expect(checks).toBe(1);
  });

  it('any other failure stops the start as it is', async () => {
    const { logger } = capture();
    const { definition: d, closed } = definition(async () => {
      throw new TypeError('bug in the check');
    });
    await expect(checkAtStart(d, logger)).rejects.toThrow('bug in the check');
    expect(closed()).toBe(1);
  });
});

describe('a server process that starts in steps', () => {
  const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

  it('a step that fails closes what the steps before it opened, records why, and exits', async () => {
    // The rate-limit store connects (a real Redis), then the metrics port is taken: the process
    // must end (no client left holding the event loop), exit 1, with a start_refused record.
    const redis = await startRedis();
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const server = await spawnServer(process.execPath, [demoServer], {
        env: {
          GATEHOUSE_REDIS_URL: redis.url,
          GATEHOUSE_METRICS_PORT: String(port),
          GATEHOUSE_METRICS_HOST: '127.0.0.1',
        },
        waitForStart: false,
      });
      expect(await server.exited()).toBe(1);
      const refused = server
        .auditRecords()
        .filter((r) => r.event.action === 'gatehouse/start_refused');
      expect(refused).toHaveLength(1);
      expect(refused[0]!.gatehouse.reason).toMatch(/could not listen for metrics on 127\.0\.0\.1:/);
      expect(
        server.logs.some(
          (l) => l.msg === 'rate-limit store (redis) connected: limits are shared by the replicas',
        ),
      ).toBe(true);
    } finally {
      taken.close();
      await redis.stop();
    }
  });

  it('a plain http:// upstream allowed by GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM is a security override on record', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_AUTH: 'oauth',
        GATEHOUSE_PUBLIC_URL: 'http://127.0.0.1/mcp',
        GATEHOUSE_OAUTH_ISSUER: 'https://idp.acme.example/',
        GATEHOUSE_OAUTH_JWKS_URL: 'http://idp.acme.example/jwks',
        GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM: 'true',
      },
    });
    try {
      const overrides = server
        .auditRecords()
        .filter((r) => r.event.action === 'gatehouse/security_override');
      expect(overrides.map((r) => r.gatehouse)).toEqual([
        {
          setting: 'GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM',
          variable: 'GATEHOUSE_OAUTH_JWKS_URL',
          host: 'idp.acme.example',
        },
      ]);
      expect(
        server.logs.some(
          (l) =>
            l.level === 'warn' &&
            l.msg === 'SECURITY CHECK OVERRIDDEN by GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM',
        ),
      ).toBe(true);
    } finally {
      await server.stop();
    }
  });
});

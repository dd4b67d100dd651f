import { readFileSync } from 'node:fs';
import { get } from 'node:http';
import { fileURLToPath } from 'node:url';
import {
  connectHttp,
  connectStdio,
  eventually,
  spawnServer,
  startTcpProxy,
} from '@gatehouse/testkit';
import type { ServerProcess } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, text } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// The built binary, as Claude Desktop (stdio) and a platform team (HTTP) run it; and what it
// does when the database goes away and comes back.

const BIN = fileURLToPath(new URL('../dist/index.js', import.meta.url));
let company: CompanyDatabase;
let password: string;

beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'process');
  password = new URL(company.url).password;
});
afterAll(async () => {
  await company?.close();
});

function env(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    POSTGRES_URL: company.url,
    GATEHOUSE_STRUCTURED_OUTPUT: 'true',
    ...extra,
  };
}

describe('over stdio', () => {
  it('runs as an executable whose first line asks node for --liftoff-only and the heap sizing', async () => {
    expect(readFileSync(BIN, 'utf8').split('\n')[0]).toBe(
      '#!/usr/bin/env -S node --liftoff-only --max-semi-space-size=8 --max-old-space-size=256',
    );
    // Executed directly (as npx does), through that line, with the default configuration.
    const connection = await connectStdio(BIN, [], {
      env: { PATH: process.env.PATH ?? '', POSTGRES_URL: company.url },
    });
    try {
      const { tools } = await connection.client.listTools();
      expect(tools).toHaveLength(4);
      // By default the model gets one copy of each answer: no output schemas listed, no
      // structured content — the framed text carries the rows (ADR 0014).
      expect(tools.every((t) => t.outputSchema === undefined)).toBe(true);
      const result = await connection.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT id, name FROM customers WHERE id = 1' },
      });
      expect(result.structuredContent).toBeUndefined();
      expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(
        /^1 row.*\nid \(integer\) \| name \(text\)\n1 \| \S/s,
      );
    } finally {
      await connection.close();
    }
    expect(connection.stderr.join('\n')).not.toContain('without --liftoff-only');
  });

  it('serves tools, resources and prompts to a real client, without leaking the password', async () => {
    const connection = await connectStdio(process.execPath, [BIN], {
      env: env({ POSTGRES_MASK_COLUMNS: '*.email' }),
    });
    try {
      const result = await connection.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT name, email FROM customers ORDER BY id LIMIT 1' },
      });
      expect(result.structuredContent).toMatchObject({ rows: [[expect.any(String), '[masked]']] });
      const resources = await connection.client.listResources();
      expect(resources.resources.length).toBeGreaterThan(5);
      const prompt = await connection.client.getPrompt({
        name: 'postgres_explore_schema',
        arguments: {},
      });
      expect(prompt.messages).toHaveLength(1);
    } finally {
      await connection.close();
    }
    const stderr = connection.stderr.join('\n');
    expect(stderr).toContain('"msg":"server started"');
    expect(stderr).toContain('[secret]');
    // The effective config is written once (in the gatehouse/start record on stderr), one marker.
    expect(stderr.match(/"POSTGRES_URL":/g)).toHaveLength(1);
    expect(stderr).not.toContain('[redacted]');
    expect(stderr).not.toContain(password);
  });
});

/** A TCP proxy in front of the test database: cutting it is a database outage or network cut. */
function proxy(target: URL) {
  return startTcpProxy({ host: target.hostname, port: Number(target.port) });
}

/** GET /readyz on a fresh connection (no keep-alive socket the server may just have closed). */
function readyz(server: ServerProcess): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get(new URL('/readyz', server.url), { agent: false }, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

/** The server over HTTP, connecting to PostgreSQL through the proxy on `port`. */
function httpServerBehind(port: number): Promise<ServerProcess> {
  const viaProxy = new URL(company.url);
  viaProxy.port = String(port);
  return spawnServer(process.execPath, [BIN], {
    env: env({
      POSTGRES_URL: viaProxy.toString(),
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_PORT: '0',
      POSTGRES_CONNECT_TIMEOUT_MS: '1000',
    }),
  });
}

describe('over HTTP, with the database going away', () => {
  it('serves both eras, reports outages clearly, turns unready and recovers by itself', async () => {
    const tcp = await proxy(new URL(company.url));
    const server = await httpServerBehind(tcp.port);
    try {
      const legacy = await connectHttp(server.url!, { era: 'legacy' });
      const modern = await connectHttp(server.url!, { era: 'modern' });
      const count = (client = legacy.client) =>
        client.callTool({
          name: 'postgres_query',
          arguments: { sql: 'SELECT count(*)::int FROM orders' },
        });
      expect((await count()).structuredContent).toMatchObject({ rows: [[2000]] });
      expect((await count(modern.client)).structuredContent).toMatchObject({ rows: [[2000]] });
      expect((await readyz(server)).status).toBe(200);
      const schema = await modern.client.readResource({
        uri: `postgres://${company.db.name}/public/orders/schema`,
      });
      expect((schema.contents[0] as { text: string }).text).toContain('orders_customer_id_idx');
      const prompt = await legacy.client.getPrompt({
        name: 'postgres_write_safe_query',
        arguments: { question: 'How many orders per customer?' },
      });
      expect(prompt.messages.length).toBeGreaterThan(1);

      tcp.cut();
      const down = await count();
      expect(down.isError).toBe(true);
      expect(text(down)).toBe(
        'PostgreSQL failed (503); this is not caused by your request. Try again later.',
      );
      const unready = await eventually(
        () => readyz(server),
        (r) => r.status === 503,
      );
      expect(unready.status).toBe(503);
      expect(unready.body).toContain('PostgreSQL is unreachable');

      tcp.restore();
      const back = await eventually(
        () => readyz(server),
        (r) => r.status === 200,
      );
      expect(back.status).toBe(200);
      expect((await count(modern.client)).structuredContent).toMatchObject({ rows: [[2000]] });

      // A restart kills every session: the next call still succeeds on a fresh connection.
      await company.admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gatehouse-postgres'",
      );
      expect((await count()).structuredContent).toMatchObject({ rows: [[2000]] });

      await legacy.close();
      await modern.close();
      const logs = JSON.stringify(server.logs);
      expect(logs).not.toContain(password);
      // Nothing above ended the process: it stops cleanly when asked.
      expect(await server.stop()).toBe(0);
    } finally {
      await server.stop();
      tcp.cut();
      await tcp.close();
    }
  });

  it('survives a connection cut in the middle of a query, and serves the next call', async () => {
    // A checked-out pg client whose connection drops emits 'error'; pg-pool listens only while
    // the client is idle, so without a listener of ours that was an uncaught exception.
    const tcp = await proxy(new URL(company.url));
    const server = await httpServerBehind(tcp.port);
    try {
      const { client, close } = await connectHttp(server.url!, { era: 'modern' });
      const slow = client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT count(*) FROM orders a, orders b, orders c' },
      });
      await eventually(
        () =>
          company.admin.query(
            "SELECT 1 FROM pg_stat_activity WHERE query LIKE '%orders a, orders b%' AND application_name = 'gatehouse-postgres'",
          ),
        (r) => r.rowCount === 1,
      );
      tcp.cut();
      const cut = await slow;
      expect(cut.isError).toBe(true);
      expect(text(cut)).toBe(
        'PostgreSQL failed (503); this is not caused by your request. Try again later.',
      );
      tcp.restore();
      const next = await client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT count(*)::int FROM orders' },
      });
      expect(next.structuredContent).toMatchObject({ rows: [[2000]] });
      await close();
      expect(server.logs.some((l) => l.msg === 'uncaught exception')).toBe(false);
    } finally {
      expect(await server.stop()).toBe(0);
      await tcp.close();
    }
  });

  it('starts while the database is down, unready until it answers', async () => {
    const tcp = await proxy(new URL(company.url));
    tcp.cut();
    const server = await httpServerBehind(tcp.port);
    try {
      expect(
        server.logs.some((l) => /PostgreSQL is unreachable; starting unready/.test(l.msg ?? '')),
      ).toBe(true);
      expect((await readyz(server)).status).toBe(503);
      tcp.restore();
      expect(
        (
          await eventually(
            () => readyz(server),
            (r) => r.status === 200,
          )
        ).status,
      ).toBe(200);
      const client = await connectHttp(server.url!);
      const result = await client.client.callTool({
        name: 'postgres_query',
        arguments: { sql: 'SELECT 1 AS ok' },
      });
      expect(result.structuredContent).toMatchObject({ rows: [[1]] });
      await client.close();
    } finally {
      await server.stop();
      tcp.cut();
      await tcp.close();
    }
  });
});

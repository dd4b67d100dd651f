import { fileURLToPath } from 'node:url';
import { connectHttp, initializeRequest, spawnServer } from '@gatehouse/testkit';
import type { Era, ServerProcess } from '@gatehouse/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'node:http';
import { raw, rawSocket } from './raw-http.ts';
import { expectSchemaValid } from './schema.ts';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

function start(env: Record<string, string> = {}): Promise<ServerProcess> {
  return spawnServer(process.execPath, [demoServer], {
    env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0', ...env },
  });
}

const MCP_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
};
const INITIALIZE = JSON.stringify(initializeRequest());

describe('Streamable HTTP', () => {
  let server: ServerProcess;
  beforeAll(async () => {
    server = await start({
      GATEHOUSE_ALLOWED_ORIGINS: 'https://app.example.com',
      GATEHOUSE_MAX_BODY_BYTES: '4096',
    });
  });
  afterAll(async () => {
    expect(await server?.stop()).toBe(0);
  });

  it('binds to 127.0.0.1 by default', () => {
    expect(server.url!.hostname).toBe('127.0.0.1');
  });

  it.each<Era>(['legacy', 'modern'])('serves a real %s-era client statelessly', async (era) => {
    const { client, close } = await connectHttp(server.url!, { era });
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(
        era === 'modern' ? '2026-07-28' : '2025-11-25',
      );
      const result = await client.callTool({ name: 'demo_echo', arguments: { text: 'http' } });
      expect(result.content).toEqual([{ type: 'text', text: 'http' }]);
      const error = await client.callTool({ name: 'nope', arguments: {} }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: -32602 });
    } finally {
      await close();
    }
    // On HTTP the audit trail goes to stdout by default (the container log).
    await expect
      .poll(() =>
        server.auditRecords().some((r) => r.mcp?.era === era && r.mcp?.name === 'demo_echo'),
      )
      .toBe(true);
    const record = server
      .auditRecords()
      .find((r) => r.mcp?.era === era && r.mcp?.name === 'demo_echo')!;
    expect(record).toMatchObject({
      user: { id: 'anonymous' },
      auth: { method: 'none' },
      mcp: { transport: 'http' },
      source: { ip: '127.0.0.1' },
    });
    expect(record.user_agent.original).toBeTruthy();
    expectSchemaValid(server.auditRecords());
  });

  it('rejects a foreign Origin with 403 and accepts localhost and configured origins', async () => {
    const evil = await raw(server.url!, {
      headers: { ...MCP_HEADERS, origin: 'http://evil.example' },
      body: INITIALIZE,
    });
    expect(evil.status).toBe(403);
    expect(JSON.parse(evil.body)).toMatchObject({
      error: { message: 'Forbidden: Origin not allowed' },
    });
    for (const origin of ['http://localhost:5173', 'https://app.example.com']) {
      const ok = await raw(server.url!, { headers: { ...MCP_HEADERS, origin }, body: INITIALIZE });
      expect(ok.status, origin).toBe(200);
    }
    const sameHostWrongPort = await raw(server.url!, {
      headers: { ...MCP_HEADERS, origin: 'https://app.example.com:8443' },
      body: INITIALIZE,
    });
    expect(sameHostWrongPort.status).toBe(403);
  });

  it('rejects a foreign Host header with 403 (DNS rebinding)', async () => {
    const rebound = await raw(server.url!, {
      headers: { ...MCP_HEADERS, host: `attacker.example:${server.url!.port}` },
      body: INITIALIZE,
    });
    expect(rebound.status).toBe(403);
    const local = await raw(server.url!, {
      headers: { ...MCP_HEADERS, host: `localhost:${server.url!.port}` },
      body: INITIALIZE,
    });
    expect(local.status).toBe(200);
  });

  it('answers an oversized body with 413 before parsing it', async () => {
    const big = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { pad: 'x'.repeat(8000) },
    });
    const response = await raw(server.url!, { headers: MCP_HEADERS, body: big });
    expect(response.status).toBe(413);
    expect(response.body).toContain('4096 bytes');
  });

  it('answers a chunked body over the limit with 413, not a reset connection', async () => {
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: server.url!.hostname,
          port: server.url!.port,
          path: server.url!.pathname,
          method: 'POST',
          headers: MCP_HEADERS,
          agent: false,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (c: string) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      // No Content-Length: Node sends it chunked, 64 KiB in 1 KiB chunks.
      for (let i = 0; i < 64; i++) req.write('x'.repeat(1024));
      req.end();
    });
    expect(response.status).toBe(413);
    expect(response.body).toContain('4096 bytes');
  });

  // Framing variants (RFC 9112 §6): whatever a proxy in front might read differently is refused.
  // (The control: `raw` sends every other test's body chunked over HTTP/1.1, and it is served.)
  it.each([
    ['HTTP/1.0 with chunked', 'HTTP/1.0', 'Transfer-Encoding: chunked'],
    ['HTTP/1.0 with identity', 'HTTP/1.0', 'Transfer-Encoding: identity'],
    ['a coding before chunked', 'HTTP/1.1', 'Transfer-Encoding: gzip, chunked'],
    ['chunked twice', 'HTTP/1.1', 'Transfer-Encoding: chunked, chunked'],
    [
      'chunked beside Content-Length',
      'HTTP/1.1',
      'Transfer-Encoding: chunked\r\nContent-Length: 5',
    ],
  ])('refuses %s with 400', async (_, version, framing) => {
    const body = `${INITIALIZE.length.toString(16)}\r\n${INITIALIZE}\r\n0\r\n\r\n`;
    const response = await rawSocket(
      server.url!,
      `POST /mcp ${version}\r\nHost: 127.0.0.1:${server.url!.port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n${framing}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(response.status).toBe(400);
  });

  it('answers 404, 405, 406 and 415 where HTTP says so', async () => {
    expect((await raw(server.url!, { path: '/nothing', method: 'GET' })).status).toBe(404);
    expect(
      (await raw(server.url!, { method: 'GET', headers: { accept: 'text/event-stream' } })).status,
    ).toBe(405);
    expect((await raw(server.url!, { method: 'DELETE' })).status).toBe(405);
    expect((await raw(server.url!, { method: 'POST', path: '/healthz' })).status).toBe(405);
    const notAcceptable = await raw(server.url!, {
      headers: { 'content-type': 'application/json', accept: 'text/html' },
      body: INITIALIZE,
    });
    expect(notAcceptable.status).toBe(406);
    const unsupported = await raw(server.url!, {
      headers: { 'content-type': 'text/plain', accept: MCP_HEADERS.accept },
      body: INITIALIZE,
    });
    expect(unsupported.status).toBe(415);
    const garbage = await raw(server.url!, { headers: MCP_HEADERS, body: '{not json' });
    expect(garbage.status).toBe(400);
    expect(JSON.parse(garbage.body)).toMatchObject({ error: { code: -32700 } });
  });

  it('reports liveness and readiness', async () => {
    const health = await raw(server.url!, { path: '/healthz', method: 'GET' });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toEqual({ status: 'ok' });
    const ready = await raw(server.url!, { path: '/readyz', method: 'GET' });
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'ready' });
  });
});

describe('HTTP lifecycle', () => {
  const started: ServerProcess[] = [];
  afterEach(async () => {
    for (const s of started.splice(0)) await s.stop('SIGKILL');
  });

  it('reports not ready when the server check fails', async () => {
    const server = await start({ DEMO_READY: 'false' });
    started.push(server);
    const ready = await raw(server.url!, { path: '/readyz', method: 'GET' });
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toEqual({ status: 'not_ready', detail: 'demo upstream down' });
  });

  it('drains on SIGTERM: readiness flips at once, the in-flight call finishes, exit 0', async () => {
    const server = await start();
    started.push(server);
    const { client, close } = await connectHttp(server.url!, { era: 'modern' });
    const call = client.callTool({ name: 'demo_slow', arguments: { ms: 1_000 } });
    await server.waitForLog((l) => l.msg === 'server started');
    await server.waitForLog((l) => l.msg === 'demo_slow started');
    server.child.kill('SIGTERM');
    await server.waitForLog((l) => l.msg === 'shutting down');
    const ready = await raw(server.url!, { path: '/readyz', method: 'GET' });
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.body)).toEqual({ status: 'draining' });
    const late = await raw(server.url!, { headers: MCP_HEADERS, body: INITIALIZE });
    expect(late.status).toBe(503);
    expect(late.headers['retry-after']).toBe('1');
    const result = await call;
    expect(result.content).toEqual([{ type: 'text', text: 'waited 1000 ms' }]);
    await close();
    expect(await server.exited()).toBe(0);
    const stopped = await server.waitForLog((l) => l.msg === 'stopped');
    expect(stopped.drained).toBe(true);
    const records = server.auditRecords();
    expect(records.some((r) => r.mcp?.name === 'demo_slow' && r.event.reason === 'ok')).toBe(true);
    // The trail ends closed: a stop record, then the closing checkpoint.
    expect(records.slice(-2).map((r) => r.event.action)).toEqual([
      'gatehouse/stop',
      'audit/checkpoint',
    ]);
  });

  it('stops calls that outlive the drain deadline with a tool error, and says so in the exit code', async () => {
    const server = await start({ GATEHOUSE_DRAIN_MS: '300' });
    started.push(server);
    const { client, close } = await connectHttp(server.url!, { era: 'legacy' });
    const call = client.callTool({
      name: 'demo_slow',
      arguments: { ms: 1_400, ignoreAbort: true },
    });
    await server.waitForLog((l) => l.msg === 'demo_slow started');
    server.child.kill('SIGTERM');
    const result = await call;
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain('shutting down');
    await close();
    expect(await server.exited()).toBe(1);
    const record = server.auditRecords().find((r) => r.mcp?.name === 'demo_slow');
    expect(record!.event.reason).toBe('cancelled');
  });

  it('answers 429 with Retry-After when the process is at its in-flight cap', async () => {
    const server = await start({ GATEHOUSE_MAX_INFLIGHT: '1' });
    started.push(server);
    const { client, close } = await connectHttp(server.url!);
    const slow = client.callTool({ name: 'demo_slow', arguments: { ms: 800 } });
    await server.waitForLog((l) => l.msg === 'demo_slow started');
    const refused = await raw(server.url!, { headers: MCP_HEADERS, body: INITIALIZE });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect((await slow).content).toEqual([{ type: 'text', text: 'waited 800 ms' }]);
    expect((await raw(server.url!, { headers: MCP_HEADERS, body: INITIALIZE })).status).toBe(200);
    await close();
  });

  it('refuses to listen unauthenticated beyond loopback', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_HOST: '0.0.0.0', GATEHOUSE_PORT: '0' },
      waitForStart: false,
    });
    started.push(server);
    expect(await server.exited()).toBe(2);
    const text = server.logs.map((l) => String(l.raw ?? '')).join('\n');
    expect(text).toContain(
      'GATEHOUSE_HOST: 0.0.0.0 is not a loopback address and GATEHOUSE_AUTH is none',
    );
    expect(text).toContain('GATEHOUSE_ALLOWED_HOSTS: required');
  });
});

// Traces (an in-process exporter), Prometheus metrics (a real process), HTTP timeouts.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import * as z from 'zod';
import { baseConfigSchema, defineServer, defineTool, loadConfig } from '@gatehouse/core';
import { Metrics, enableTracing, startHttpServer } from '@gatehouse/core/runtime';
import { timedFetch } from '@gatehouse/core/saas';
import { createDemoServer } from './fixtures/demo.ts';
import { createTestHarness } from '@gatehouse/core/testing';
import { connectHttp, connectInMemory, seededRandom, spawnServer } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';
const MARKER = 'argument-value-7f3c';

const exporter = new InMemorySpanExporter();
let upstream: ReturnType<typeof createServer>;
let upstreamUrl: string;

beforeAll(async () => {
  await enableTracing(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  upstream = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'application/json' }).end('"pong"'),
  );
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/secret/path?q=${MARKER}`;
});
afterAll(() => upstream?.close());

function tracedServer() {
  return defineServer({
    name: 'traced',
    version: '1.0.0',
    tools: [
      defineTool({
        name: 'traced_fetch',
        title: 'Fetch',
        description: 'Asks the upstream once.',
        access: 'read',
        annotations: {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: true,
        },
        input: z.strictObject({ note: z.string().describe('Anything') }),
        handler: async () => (await timedFetch(2_000)(upstreamUrl)).text(),
      }),
    ],
  });
}

const harness = () =>
  createTestHarness(loadConfig(baseConfigSchema, { GATEHOUSE_PRINCIPAL: 'tester' }));
/** The traced server over Streamable HTTP on a loopback port, in this process. */
function serveHttp(extra: { keepAliveTimeoutMs?: number; headersTimeoutMs?: number } = {}) {
  const h = harness();
  return startHttpServer(h.factory(tracedServer()), {
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    allowedHosts: [],
    allowedOrigins: [],
    maxBodyBytes: 1_000_000,
    logger: h.logger,
    ...extra,
  });
}
const byName = (spans: ReadableSpan[], name: string) => spans.find((s) => s.name === name)!;
const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('traces', () => {
  it('a span per request, a child per stage, the upstream under the handler, parent from _meta', async () => {
    exporter.reset();
    const { client, close } = await connectInMemory(harness().factory(tracedServer()));
    try {
      const result = await client.callTool({
        name: 'traced_fetch',
        arguments: { note: MARKER },
        _meta: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
      });
      expect(result.isError).toBeFalsy();
    } finally {
      await close();
    }
    const spans = exporter.getFinishedSpans();
    const request = byName(spans, 'tools/call traced_fetch');
    expect(request.spanContext().traceId).toBe(TRACE_ID);
    expect(parentOf(request)).toBe(PARENT_ID);
    expect(request.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'traced_fetch',
      'gen_ai.operation.name': 'execute_tool',
      'gatehouse.outcome': 'ok',
    });
    const stages = spans
      .filter((s) => parentOf(s) === request.spanContext().spanId)
      .map((s) => s.name);
    expect(stages).toEqual([
      'gatehouse.validate',
      'gatehouse.rate_limit',
      'gatehouse.handler',
      'gatehouse.result',
      'gatehouse.audit',
    ]);
    const fetchSpan = byName(spans, 'HTTP GET');
    expect(parentOf(fetchSpan)).toBe(byName(spans, 'gatehouse.handler').spanContext().spanId);
    expect(fetchSpan.attributes).toMatchObject({
      'http.request.method': 'GET',
      'server.address': '127.0.0.1',
      'http.response.status_code': 200,
    });
    // No argument, path or query in any span.
    const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes]));
    expect(everything).not.toContain(MARKER);
    expect(everything).not.toContain('/secret/path');
  });

  it('a resource read and a prompt get are spans too, and a resource URI never appears', async () => {
    exporter.reset();
    const { client, close } = await connectInMemory(harness().factory(createDemoServer()));
    try {
      await client.readResource({ uri: 'demo://boards/general' });
      await client.getPrompt({ name: 'demo_summarise', arguments: { board: 'general' } });
    } finally {
      await close();
    }
    const spans = exporter.getFinishedSpans();
    // Named by what they resolved to (the template, the prompt), never by the URI asked for.
    for (const name of ['resources/read board', 'prompts/get demo_summarise']) {
      const request = byName(spans, name);
      expect(request.attributes['gatehouse.outcome'], name).toBe('ok');
      const stages = spans.filter((s) => parentOf(s) === request.spanContext().spanId);
      expect(stages.map((s) => s.name)).toEqual([
        'gatehouse.validate',
        'gatehouse.rate_limit',
        'gatehouse.handler',
        'gatehouse.result',
        'gatehouse.audit',
      ]);
    }
    expect(JSON.stringify(spans.map((s) => [s.name, s.attributes]))).not.toContain('demo://');
  });

  it('a failure sets error.type and an error status; the parent may come from the HTTP header', async () => {
    exporter.reset();
    const http = await serveHttp();
    const { client, close } = await connectHttp(http.url, {
      era: 'modern',
      headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` },
    });
    try {
      const result = await client.callTool({ name: 'traced_fetch', arguments: { note: 42 } });
      expect(result.isError).toBe(true);
    } finally {
      await close();
      await http.shutdown(100);
    }
    const spans = exporter.getFinishedSpans();
    const request = byName(spans, 'tools/call traced_fetch');
    expect(request.spanContext().traceId).toBe(TRACE_ID);
    // Over HTTP the MCP request is a child of the HTTP request's span, itself the header's child.
    const httpSpan = spans.find(
      (s) => s.name === 'POST /mcp' && s.spanContext().spanId === parentOf(request),
    )!;
    expect(parentOf(httpSpan)).toBe(PARENT_ID);
    expect(httpSpan.attributes).toMatchObject({
      'http.request.method': 'POST',
      'http.route': '/mcp',
      'http.response.status_code': 200,
    });
    expect(request.attributes['error.type']).toBe('invalid_params');
    expect(request.attributes['network.transport']).toBe('tcp');
    expect(request.attributes['mcp.protocol.version']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(request.status.code).toBe(2); // SpanStatusCode.ERROR
  });
});

describe('OTLP export from the standard OTEL_* variables', () => {
  it('exports the spans of a real process to the configured collector; none without the variable', async () => {
    const received: Array<{ path: string; type: string; body: Buffer }> = [];
    const collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({
          path: req.url ?? '',
          type: req.headers['content-type'] ?? '',
          body: Buffer.concat(chunks),
        });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
    try {
      for (const exporterName of ['otlp', undefined]) {
        const server = await spawnServer(process.execPath, [demoServer], {
          env: {
            GATEHOUSE_TRANSPORT: 'http',
            GATEHOUSE_PORT: '0',
            OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
            ...(exporterName === undefined ? {} : { OTEL_TRACES_EXPORTER: exporterName }),
          },
        });
        const { client, close } = await connectHttp(server.url!, { era: 'modern' });
        await client.callTool({ name: 'demo_echo', arguments: { text: MARKER } });
        await close();
        expect(await server.stop()).toBe(0); // the shutdown flushes the batch
      }
    } finally {
      collector.close();
    }
    expect(received).toHaveLength(1);
    expect(received[0]!.path).toBe('/v1/traces');
    expect(received[0]!.type).toBe('application/json'); // OTLP/HTTP with JSON bodies
    const body = received[0]!.body.toString('utf8');
    expect(body).toContain('tools/call demo_echo');
    expect(body).toContain('gatehouse.handler');
    expect(body).not.toContain(MARKER);
  });
});

describe('Prometheus metrics on their own port', () => {
  const KEY = 'metrics-test-api-key-0123456789';
  it('counts calls by tool and outcome, refusals by reason, and is not on the MCP port', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_PORT: '0',
        GATEHOUSE_METRICS_PORT: '0',
        GATEHOUSE_RATE_READ_PER_MIN: '6',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_API_KEYS: JSON.stringify([
          {
            id: 'k1',
            sha256: createHash('sha256').update(KEY).digest('hex'),
            principal: 'ci-bot',
            scopes: ['*'],
          },
        ]),
      },
    });
    try {
      const started = await server.waitForLog((l) => l.msg === 'server started');
      const metricsUrl = new URL(started.metrics as string);
      expect(metricsUrl.port).not.toBe(server.url!.port);
      const { client, close } = await connectHttp(server.url!, {
        era: 'legacy',
        headers: { authorization: `Bearer ${KEY}` },
      });
      try {
        for (let i = 0; i < 9; i++)
          await client.callTool({ name: 'demo_echo', arguments: { text: 'x' } });
      } finally {
        await close();
      }
      expect((await fetch(server.url!, { method: 'POST' })).status).toBe(401);
      expect((await fetch(new URL('/metrics', server.url))).status).toBe(404);

      const text = await (await fetch(metricsUrl)).text();
      // The value of the sample `name` whose labels include `labels` (every sample carries service_name).
      const value = (name: string, labels: Record<string, string> = {}) => {
        const want = { service_name: 'demo', ...labels };
        for (const line of text.split('\n')) {
          const match = /^(\w+)(?:\{(.*)\})? (\S+)$/.exec(line);
          if (match?.[1] !== name) continue;
          const got = Object.fromEntries(
            [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]),
          );
          if (Object.entries(want).every(([k, v]) => got[k] === v)) return Number(match[3]);
        }
        return undefined;
      };
      const calls = { mcp_method_name: 'tools/call', gen_ai_tool_name: 'demo_echo' };
      expect(
        value('mcp_server_operation_duration_seconds_count', { ...calls, outcome: 'ok' }),
      ).toBe(6);
      expect(
        value('mcp_server_operation_duration_seconds_count', { ...calls, outcome: 'rate_limited' }),
      ).toBe(3);
      expect(value('gatehouse_rate_limited_total', { rule: 'rate' })).toBe(3);
      expect(value('gatehouse_auth_refused_total', { reason: 'missing_credentials' })).toBe(1);
      expect(value('gatehouse_audit_sink_up', { sink: 'stdout' })).toBe(1);
      expect(value('gatehouse_inflight_requests')).toBe(0);
      expect(value('gatehouse_build_info', { version: '1.0.0' })).toBe(1);
      const mcpPosts = { http_request_method: 'POST', http_route: 'mcp' };
      expect(
        value('http_server_request_duration_seconds_count', {
          ...mcpPosts,
          http_response_status_code: '200',
        }),
      ).toBeGreaterThanOrEqual(9);
      expect(
        value('http_server_request_duration_seconds_count', {
          ...mcpPosts,
          http_response_status_code: '401',
        }),
      ).toBe(1);
      expect(text).toContain('process_resident_memory_bytes');
      // Bounded labels: no principal, key id or argument.
      expect(text).not.toMatch(/ci-bot|k1"|"x"/);
      expect((await fetch(new URL('/other', metricsUrl))).status).toBe(404);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});

describe('names from the caller', () => {
  it('never become label values or span names: 10 000 random names, one series and one span name', async () => {
    exporter.reset();
    const metrics = new Metrics({
      service: { name: 'demo', version: '1.0.0' },
      inflight: () => 0,
      auditSinks: () => [],
    });
    const h = harness();
    const { client, close } = await connectInMemory(h.factory(createDemoServer(), { metrics }));
    const random = seededRandom(22);
    const names = Array.from(
      { length: 10_000 },
      (_, i) => `x${i}_${random().toString(36).slice(2)}`,
    );
    try {
      // Tools, prompts and resources alike; the registered names still get their own series.
      for (const name of names) {
        await client.callTool({ name, arguments: {} }).catch(() => undefined);
      }
      for (const name of names.slice(0, 200)) {
        await client.getPrompt({ name }).catch(() => undefined);
        await client.readResource({ uri: `demo://${name}` }).catch(() => undefined);
      }
      await client.callTool({ name: 'demo_echo', arguments: { text: 'x' } });
    } finally {
      await close();
    }
    const text = await metrics.registry.metrics();
    const labels = new Set([...text.matchAll(/gen_ai_tool_name="([^"]*)"/g)].map((m) => m[1]));
    expect([...labels].sort()).toEqual(['', 'demo_echo', 'unknown']);
    expect(text.split('\n').length).toBeLessThan(500);
    expect(text).not.toContain(names[0]);
    const spanNames = new Set(exporter.getFinishedSpans().map((s) => s.name));
    expect([...spanNames].filter((n) => !n.startsWith('gatehouse.')).sort()).toEqual([
      'prompts/get unknown',
      'resources/read unknown',
      'tools/call demo_echo',
      'tools/call unknown',
    ]);
    // The records still say what was asked for (sanitised): that is their job, not the metrics'.
    expect(h.records.some((r) => r.mcp?.name === names[1])).toBe(true);
  }, 120_000);
});

describe('HTTP timeouts', () => {
  it('keeps idle connections above a load balancer idle timeout by default, configurable', async () => {
    const start = serveHttp;
    const defaults = await start();
    expect(defaults.server.keepAliveTimeout).toBe(65_000);
    expect(defaults.server.headersTimeout).toBe(30_000);
    await defaults.shutdown(10);
    const set = await start({ keepAliveTimeoutMs: 120_000, headersTimeoutMs: 10_000 });
    expect(set.server.keepAliveTimeout).toBe(120_000);
    expect(set.server.headersTimeout).toBe(10_000);
    await set.shutdown(10);
    const config = loadConfig(baseConfigSchema, {});
    expect(config.GATEHOUSE_HTTP_KEEPALIVE_MS).toBe(65_000);
    expect(() => loadConfig(baseConfigSchema, { GATEHOUSE_HTTP_KEEPALIVE_MS: '10' })).toThrow(
      /GATEHOUSE_HTTP_KEEPALIVE_MS/,
    );
  });
});

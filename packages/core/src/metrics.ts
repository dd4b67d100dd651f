/**
 * Prometheus metrics (prom-client), on their own listener: `GATEHOUSE_METRICS_PORT` serves
 * `GET /metrics` and nothing else, never on the MCP port, so an ingress that publishes the MCP
 * endpoint cannot publish the metrics, and a scraper needs no MCP credential (docs/adr/0013).
 * Loaded only when that port is set. Names are the OpenTelemetry semantic conventions in
 * Prometheus form (`mcp.server.operation.duration` → `mcp_server_operation_duration_seconds`,
 * `mcp.method.name` → `mcp_method_name`); labels are bounded: method, tool name, outcome, route,
 * status — never a principal, a target or an argument.
 */
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { PipelineMetrics } from './pipeline/runtime-type.js';

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** What the process reports besides the pipeline's own events. */
export interface MetricsSources {
  service: { name: string; version: string };
  /** MCP requests being answered now. */
  inflight: () => number;
  /** Audit sinks by name, and whether their last write succeeded. */
  auditSinks: () => ReadonlyArray<{ name: string; up: boolean }>;
  /** Whether the shared rate-limit store answers; absent without one. */
  rateLimitStoreUp?: () => boolean;
}

/** The metrics of one server process. */
export class Metrics implements PipelineMetrics {
  readonly registry = new Registry();
  readonly #operations: Histogram<'mcp_method_name' | 'gen_ai_tool_name' | 'outcome'>;
  readonly #http: Histogram<'http_request_method' | 'http_route' | 'http_response_status_code'>;
  readonly #limited: Counter<'rule'>;
  readonly #auth: Counter<'reason'>;

  constructor(sources: MetricsSources) {
    const registers = [this.registry];
    this.registry.setDefaultLabels({ service_name: sources.service.name });
    collectDefaultMetrics({ register: this.registry });
    this.#operations = new Histogram({
      name: 'mcp_server_operation_duration_seconds',
      help: 'Duration of MCP requests the server answered (tools/call, resources/read, prompts/get), by method, tool and outcome (the audit reason: ok, tool_error, denied, rate_limited, …).',
      labelNames: ['mcp_method_name', 'gen_ai_tool_name', 'outcome'],
      buckets: SECONDS,
      registers,
    });
    this.#http = new Histogram({
      name: 'http_server_request_duration_seconds',
      help: 'Duration of HTTP requests, by method, route (mcp, healthz, readyz, metadata, other) and status code.',
      labelNames: ['http_request_method', 'http_route', 'http_response_status_code'],
      buckets: SECONDS,
      registers,
    });
    this.#limited = new Counter({
      name: 'gatehouse_rate_limited_total',
      help: 'Calls refused by a limit, by rule (rate, concurrency, inflight, rate_store).',
      labelNames: ['rule'],
      registers,
    });
    this.#auth = new Counter({
      name: 'gatehouse_auth_refused_total',
      help: 'HTTP requests refused by authentication or authorisation, by reason (missing_credentials, invalid_token, insufficient_scope, …).',
      labelNames: ['reason'],
      registers,
    });
    new Gauge({
      name: 'gatehouse_inflight_requests',
      help: 'MCP requests being answered now.',
      registers,
      collect() {
        this.set(sources.inflight());
      },
    });
    new Gauge({
      name: 'gatehouse_audit_sink_up',
      help: '1 when the audit sink accepted its last write, 0 when it is failing.',
      labelNames: ['sink'],
      registers,
      collect() {
        for (const sink of sources.auditSinks()) this.set({ sink: sink.name }, sink.up ? 1 : 0);
      },
    });
    const storeUp = sources.rateLimitStoreUp;
    if (storeUp !== undefined) {
      new Gauge({
        name: 'gatehouse_rate_limit_store_up',
        help: '1 when the shared rate-limit store (Redis) answers, 0 when the fallback is in force.',
        registers,
        collect() {
          this.set(storeUp() ? 1 : 0);
        },
      });
    }
    new Gauge({
      name: 'gatehouse_build_info',
      help: 'The server and its version (always 1).',
      labelNames: ['version', 'node'],
      registers,
    }).set({ version: sources.service.version, node: process.version }, 1);
  }

  operation(method: string, tool: string, outcome: string, seconds: number): void {
    this.#operations.observe({ mcp_method_name: method, gen_ai_tool_name: tool, outcome }, seconds);
  }

  rateLimited(rule: string): void {
    this.#limited.inc({ rule });
  }

  authRefused(reason: string): void {
    this.#auth.inc({ reason });
  }

  httpRequest(method: string, route: string, status: number, seconds: number): void {
    this.#http.observe(
      { http_request_method: method, http_route: route, http_response_status_code: status },
      seconds,
    );
  }
}

/** Serves `GET /metrics` on its own port; everything else is 404. */
export async function serveMetrics(
  metrics: Metrics,
  host: string,
  port: number,
): Promise<{ url: URL; close(): void; server: Server }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res
        .writeHead(404, { 'content-type': 'text/plain' })
        .end('not found: metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    metrics.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const hostForUrl = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: new URL(`http://${hostForUrl}:${address.port}/metrics`),
    server,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

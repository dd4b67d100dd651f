/**
 * OpenTelemetry traces, off by default. The pipeline speaks only `@opentelemetry/api`; until
 * {@link enableTracing} registers a provider nothing is created or extracted (one boolean per
 * call). When on: one SERVER span per MCP request (tools/call, resources/read, prompts/get,
 * completion/complete), named `{mcp.method.name} {target}` as the MCP semantic conventions say,
 * with a child span per pipeline stage and, under the handler stage, a CLIENT span per upstream
 * request. The parent comes from the request's `_meta.traceparent` (stdio and HTTP), else from
 * the HTTP `traceparent` header. No arguments, results or resource URIs are put in spans.
 */
import type * as OpenTelemetry from '@opentelemetry/api';
import type { Context, Span, TextMapGetter, TracerProvider } from '@opentelemetry/api';

type Api = typeof OpenTelemetry;
/** The OpenTelemetry API, loaded by enableTracing: importing it costs every cold start ~14 ms. */
let api: Api | undefined;
const tracer = () => api!.trace.getTracer('@gatehouse/core');

/**
 * Registers `provider` (with the AsyncLocalStorage context manager and the W3C propagators) and
 * turns the spans of the pipeline on. `startTracing` calls it from the standard `OTEL_*`
 * variables; tests call it with an in-memory exporter.
 */
export async function enableTracing(provider: TracerProvider): Promise<void> {
  const [loaded, { AsyncLocalStorageContextManager }, otelCore] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  const { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } = otelCore;
  loaded.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  loaded.propagation.setGlobalPropagator(
    new CompositePropagator({
      propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()],
    }),
  );
  loaded.trace.setGlobalTracerProvider(provider);
  api = loaded;
}

/** Whether spans are being made. */
export function tracingEnabled(): boolean {
  return api !== undefined;
}

/**
 * Tracing from the standard OpenTelemetry variables: on when `OTEL_TRACES_EXPORTER` names an
 * exporter (`otlp` — OTLP over HTTP with JSON bodies, configured by `OTEL_EXPORTER_OTLP_*` — or `console`), off
 * when it is unset or `none`, or when `OTEL_SDK_DISABLED=true`. Returns the shutdown (flushes).
 */
export async function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  service: { name: string; version: string },
): Promise<(() => Promise<void>) | undefined> {
  const exporterName = env.OTEL_TRACES_EXPORTER?.trim().toLowerCase();
  if (env.OTEL_SDK_DISABLED === 'true' || !exporterName || exporterName === 'none')
    return undefined;
  const sdk = await import('@opentelemetry/sdk-trace');
  const { resourceFromAttributes } = await import('@opentelemetry/resources');
  let processor;
  if (exporterName === 'console') {
    processor = new sdk.SimpleSpanProcessor({ exporter: new sdk.ConsoleSpanExporter() });
  } else if (exporterName === 'otlp') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    processor = new sdk.BatchSpanProcessor({ exporter: new OTLPTraceExporter() });
  } else {
    throw new Error(`OTEL_TRACES_EXPORTER: expected otlp, console or none, got ${exporterName}`);
  }
  const provider = new sdk.TracerProvider({
    resource: resourceFromAttributes({
      'service.name': env.OTEL_SERVICE_NAME ?? service.name,
      'service.version': service.version,
    }),
    spanProcessors: [processor],
  });
  await enableTracing(provider);
  return () => provider.shutdown();
}

/** Reads a carrier that is a plain object (`_meta`) or a Fetch `Headers`. */
const getter: TextMapGetter<Record<string, unknown> | Headers> = {
  get: (carrier, key) => {
    const value = carrier instanceof Headers ? carrier.get(key) : carrier[key];
    return typeof value === 'string' ? value : undefined;
  },
  keys: (carrier) => (carrier instanceof Headers ? [...carrier.keys()] : Object.keys(carrier)),
};

/** What the request span is told about the request. */
export interface RequestSpanInfo {
  method: string;
  /** Tool, prompt or resource template name — never a URI or an argument. */
  target?: string;
  tool?: string;
  requestId?: string | number;
  transport: 'stdio' | 'http' | 'memory';
  meta?: Record<string, unknown> | undefined;
  headers?: Headers | undefined;
}

/** The spans of one MCP request: the request span, the current stage, and its context. */
export class RequestTrace {
  #stage: Span | undefined;
  #stageContext: Context;

  private constructor(
    readonly span: Span,
    readonly context: Context,
  ) {
    this.#stageContext = context;
  }

  static start(info: RequestSpanInfo): RequestTrace {
    if (api === undefined) return NOOP;
    const { ROOT_CONTEXT, SpanKind, propagation, trace } = api;
    // The parent: the client's _meta.traceparent; else the HTTP request's span (itself a child
    // of the traceparent header); else the header.
    const active = api.context.active();
    const parent =
      typeof info.meta?.traceparent === 'string'
        ? propagation.extract(ROOT_CONTEXT, info.meta, getter)
        : trace.getSpan(active) !== undefined
          ? active
          : info.headers === undefined
            ? ROOT_CONTEXT
            : propagation.extract(ROOT_CONTEXT, info.headers, getter);
    const span = tracer().startSpan(
      info.target === undefined ? info.method : `${info.method} ${info.target}`,
      {
        kind: SpanKind.SERVER,
        attributes: {
          'mcp.method.name': info.method,
          ...(info.tool === undefined
            ? {}
            : { 'gen_ai.tool.name': info.tool, 'gen_ai.operation.name': 'execute_tool' }),
          ...(info.requestId === undefined ? {} : { 'jsonrpc.request.id': String(info.requestId) }),
          'network.transport':
            info.transport === 'http' ? 'tcp' : info.transport === 'stdio' ? 'pipe' : 'inproc',
        },
      },
      parent,
    );
    return new RequestTrace(span, trace.setSpan(parent, span));
  }

  /** Ends the current stage span, if any, and starts `gatehouse.<name>` as a child of the request. */
  stage(name: string): void {
    if (this === NOOP) return;
    this.#stage?.end();
    this.#stage = tracer().startSpan(`gatehouse.${name}`, {}, this.context);
    this.#stageContext = api!.trace.setSpan(this.context, this.#stage);
  }

  /** Runs `fn` with the current stage as the active span (upstream spans become its children). */
  within<T>(fn: () => T): T {
    return this === NOOP ? fn() : api!.context.with(this.#stageContext, fn);
  }

  /** Ends the stage and the request span with the outcome (`error.type` on failure). */
  end(outcome: string, failed: boolean, protocolVersion?: string): void {
    if (this === NOOP) return;
    this.#stage?.end();
    this.#stage = undefined;
    this.span.setAttribute('gatehouse.outcome', outcome);
    if (protocolVersion !== undefined)
      this.span.setAttribute('mcp.protocol.version', protocolVersion);
    if (failed) {
      this.span.setAttribute('error.type', outcome === 'tool_error' ? 'tool_error' : outcome);
      this.span.setStatus({ code: api!.SpanStatusCode.ERROR });
    }
    this.span.end();
  }
}

const NOOP: RequestTrace = Object.create(RequestTrace.prototype) as RequestTrace;

/**
 * A CLIENT span around one upstream request (the SaaS kit's fetch, a database query), child of
 * the active stage. Attributes are the caller's: the method and the server address, never a
 * path, query or body.
 */
export async function traceUpstream<T>(
  name: string,
  attributes: Record<string, string | number>,
  fn: () => Promise<T>,
  status?: (result: T) => Record<string, string | number>,
): Promise<T> {
  if (api === undefined) return fn();
  const { SpanKind, SpanStatusCode } = api;
  return tracer().startActiveSpan(name, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    try {
      const result = await fn();
      if (status !== undefined) span.setAttributes(status(result));
      return result;
    } catch (error) {
      span.setAttribute('error.type', error instanceof Error ? error.name : 'error');
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * A SERVER span around one HTTP request to the MCP endpoint (`POST /mcp`), the parent of the
 * MCP request spans it carries; its parent is the `traceparent` header. Method, route and
 * status only.
 */
export function traceHttpRequest(
  req: { method?: string | undefined; headers: Record<string, string | string[] | undefined> },
  res: { statusCode: number; once(event: 'finish' | 'close', listener: () => void): unknown },
  route: string,
  fn: () => Promise<void>,
): Promise<void> {
  if (api === undefined) return fn();
  const { ROOT_CONTEXT, SpanKind, SpanStatusCode, context, propagation, trace } = api;
  const method = req.method ?? 'GET';
  const parent = propagation.extract(ROOT_CONTEXT, req.headers, getter);
  const span = tracer().startSpan(
    `${method} ${route}`,
    { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'http.route': route } },
    parent,
  );
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    span.setAttribute('http.response.status_code', res.statusCode);
    if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end();
  };
  res.once('finish', end);
  res.once('close', end);
  return context.with(trace.setSpan(parent, span), fn);
}

import type { IncomingMessage, ServerResponse } from 'node:http';
import { userInfo } from 'node:os';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type * as z from 'zod';
import { fdSink, AuditLog } from '@gatehouse/audit';
import {
  auditMessage,
  auditSinkNames,
  callerText,
  lifecycleEntry,
  openAuditLog,
  openWitnesses,
  scopeDeniedEntry,
} from './audit.js';
import { connectEntry, scrubRecordText } from './audit.js';
import type { AuditWriter } from './audit.js';
import {
  loadConfig,
  plainHttpUpstreams,
  redactConfig,
  secretKeys,
  unknownVariables,
} from './config.js';
import { MIN_SECRET_LENGTH } from './secrets.js';
import type { BaseConfig } from './config.js';
import type { ReadyResult, ServerDefinition, ToolDefinition } from './define.js';
import { ConfigError, CredentialError } from './errors.js';
import type { HttpServerOptions, RunningHttpServer } from './http.js';
import { createLogger } from './logger.js';
import type { Logger } from './logger.js';
import { Limits, redisLimiterStore } from './limits.js';
import type { SharedLimiterStore } from './limits.js';
import { createToolPolicy, readScope, toolScope, unknownToolNames } from './policy.js';
import { ANONYMOUS, localPrincipal } from './principal.js';
import type { Principal } from './principal.js';
import {
  InflightTracker,
  createScopeLookup,
  createServerFactory,
  describeTools,
} from './server.js';
import { LineTransport } from './stdio.js';
import { checkAtStart } from './startup.js';
import { startTracing } from './tracing.js';
import type { Metrics } from './metrics.js';
import type { PipelineMetrics } from './pipeline/runtime-type.js';
import type { Readiness } from './startup.js';
import type { Runtime } from './server.js';
import type { UpstreamIdentity } from './identity/mode.js';
import { disconnectCommand } from './identity/command.js';

/** Options of {@link runServer}. */
export interface RunServerOptions<S extends z.ZodObject> {
  /** The server's config schema (`defineConfig(...)`). */
  schema: S;
  /** Builds the definition from the parsed config; may open upstream clients. */
  create: (
    config: z.output<S>,
    deps: { logger: Logger },
  ) => ServerDefinition | Promise<ServerDefinition>;
  /** Environment to read; defaults to `process.env`. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Name and version for the record of a refused configuration (before the definition exists). */
  service?: { name: string; version: string };
  /**
   * The command line after the program (defaults to `process.argv`): empty to serve;
   * `disconnect …` runs the operator's command of ADR 0026 and exits.
   */
  argv?: readonly string[];
}

/** A running server, as returned by {@link runServer}. */
export interface RunningServer {
  readonly logger: Logger;
  /** Set when serving HTTP. */
  readonly http?: RunningHttpServer;
  /** Graceful shutdown; resolves with the exit code. */
  shutdown(reason: string): Promise<number>;
}

/** Exit codes of a server process. */
export const EXIT = { ok: 0, failure: 1, config: 2 } as const;

/** Builds the runtime (policy, audit, principal) for a definition and its config. */
export function createRuntime(
  config: BaseConfig,
  logger: Logger,
  options: {
    audit: AuditWriter;
    inflight?: InflightTracker;
    limiterStore?: SharedLimiterStore;
    metrics?: PipelineMetrics;
    /** Set by runServer: records of reads may follow their answer (GATEHOUSE_AUDIT_READ_RECORDS). */
    readsAfterAnswer?: boolean;
  },
): Runtime {
  const operator = localPrincipal(config.GATEHOUSE_PRINCIPAL ?? `local:${userInfo().username}`);
  const transport = config.GATEHOUSE_TRANSPORT;
  return {
    logger,
    policy: createToolPolicy(config),
    audit: options.audit,
    auditFailureMode: config.GATEHOUSE_AUDIT_ON_FAILURE,
    // Only where an answer leaves the process (the bins: stdio, HTTP) is there anything to gain;
    // a server embedded in memory records every call before answering.
    auditReadsAfterAnswer:
      options.readsAfterAnswer === true && config.GATEHOUSE_AUDIT_READ_RECORDS === 'after_answer',
    transport,
    toolTimeoutMs: config.GATEHOUSE_TOOL_TIMEOUT_MS,
    principal: (ctx): Principal =>
      transport === 'stdio'
        ? operator
        : ((ctx.authInfo?.extra as { principal?: Principal } | undefined)?.principal ?? ANONYMOUS),
    limits: new Limits(config, {
      onStoreFailure: config.GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE,
      ...(options.limiterStore === undefined ? {} : { store: options.limiterStore }),
    }),
    maxOutputBytes: config.GATEHOUSE_MAX_OUTPUT_BYTES,
    structuredOutput: config.GATEHOUSE_STRUCTURED_OUTPUT,
    ...(config.GATEHOUSE_CONFIRM_WRITES
      ? { confirmWrites: { fallback: config.GATEHOUSE_CONFIRM_FALLBACK } }
      : {}),
    ...(options.inflight === undefined ? {} : { inflight: options.inflight }),
    ...(config.GATEHOUSE_STATE_KEY === undefined ? {} : { stateKey: config.GATEHOUSE_STATE_KEY }),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  };
}

/**
 * What the steps of {@link runServer} open, each closed once, the last opened first — the shape
 * of Node 24's `AsyncDisposableStack`, which Node 22 (still supported) lacks.
 */
class Closers {
  readonly #closers: Array<() => unknown> = [];
  /** Registers `close` to run on {@link closeAll}. */
  defer(close: () => unknown): void {
    this.#closers.push(close);
  }
  /** Runs every closer, last first; one that fails is reported and the rest still run. */
  async closeAll(onError: (error: unknown) => void): Promise<void> {
    for (let close = this.#closers.pop(); close !== undefined; close = this.#closers.pop()) {
      try {
        await close();
      } catch (error) {
        onError(error);
      }
    }
  }
}

/** `fn` run at most once; later calls get the first call's promise. */
function once(fn: (() => void | Promise<void>) | undefined): () => Promise<void> {
  let done: Promise<void> | undefined;
  return () => (done ??= Promise.resolve(fn?.()));
}

type Service = { name: string; version: string };
const UNKNOWN_SERVICE: Service = { name: 'gatehouse', version: 'unknown' };

/** How long a stop waits for the witnesses to take the closing checkpoint. */
const WITNESS_CLOSE_MS = 3_000;

/** What the operator must fix, as one "Invalid configuration" block; undefined for anything else. */
function configProblem(error: unknown): ConfigError | undefined {
  if (error instanceof ConfigError) return error;
  if (error instanceof CredentialError)
    return new ConfigError([`${error.variable}: ${error.message}`]);
  return undefined;
}

/**
 * Step 1: the configuration. Every problem at once, under its variable, on stderr; the refusal
 * is an audit event too, and its sink cannot come from the refused config: stderr.
 */
function configure<S extends z.ZodObject>(
  options: RunServerOptions<S>,
  env: Readonly<Record<string, string | undefined>>,
): z.output<S> | undefined {
  try {
    return loadConfig(options.schema, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    const refusal = new AuditLog({
      sinks: [fdSink(2, 'stderr')],
      service: options.service ?? UNKNOWN_SERVICE,
      scrub: scrubRecordText,
    });
    refusal.append(
      lifecycleEntry(
        'gatehouse/config_refused',
        { problems: error.problems },
        { outcome: 'failure' },
      ),
    );
    refusal.close();
    process.exitCode = EXIT.config;
    return undefined;
  }
}

/** Configuration that parses but is probably not what the operator meant: said at once. */
function warnAboutConfig(
  schema: z.ZodObject,
  env: Readonly<Record<string, string | undefined>>,
  config: object,
  logger: Logger,
): void {
  for (const { name, suggestion } of unknownVariables(schema, env)) {
    logger.warn(
      { variable: name, ...(suggestion === undefined ? {} : { suggestion }) },
      `unknown variable ${name} is ignored${suggestion === undefined ? '' : `: did you mean ${suggestion}?`}`,
    );
  }
  for (const key of secretKeys(schema)) {
    const value = (config as Record<string, unknown>)[key];
    if (typeof value === 'string' && value.length < MIN_SECRET_LENGTH) {
      logger.warn(
        { variable: key },
        `${key} is shorter than ${MIN_SECRET_LENGTH} characters: it cannot be told apart from ordinary text, so it is not redacted from output`,
      );
    }
  }
}

/**
 * A start that went no further: a configuration or credential problem is one "Invalid
 * configuration" block on stderr and exit 2; anything else is logged with its error, exit 1.
 * Either is a `gatehouse/start_refused` record, in the trail the operator configured.
 */
async function refuseStart(
  error: unknown,
  base: BaseConfig,
  service: Service,
  logger: Logger,
  audit: AuditLog | undefined,
  closers: Closers,
): Promise<void> {
  const problem = configProblem(error);
  if (problem !== undefined) process.stderr.write(`${problem.message}\n`);
  else logger.fatal({ err: error }, 'server could not start');
  process.exitCode = problem === undefined ? EXIT.failure : EXIT.config;
  // The record goes to the trail the steps opened (closed below with everything else), or to
  // one opened for it when the start failed before the trail was.
  let log = audit;
  if (log === undefined) {
    try {
      log = openAuditLog(base, service);
    } catch {
      log = new AuditLog({ sinks: [fdSink(2, 'stderr')], service, scrub: scrubRecordText });
    }
    const own = log;
    closers.defer(() => own.close());
  }
  const reason =
    problem !== undefined
      ? problem.problems.join('; ')
      : error instanceof Error
        ? `${error.name}: ${error.message}`
        : String(error);
  log.append(
    lifecycleEntry(
      'gatehouse/start_refused',
      { reason: auditMessage(reason), exit_code: process.exitCode },
      { outcome: 'failure' },
    ),
  );
  // Every closer of the steps that ran, last first — the trail's closing checkpoint and its
  // witnesses among them: nothing is left to hold the process open.
  await closers.closeAll((e) => logger.error({ err: e }, 'closing after a refused start failed'));
}

/**
 * Step 3: the audit trail and its witnesses, both on the closer stack — the witnesses first, so
 * they close last, after the trail's closing checkpoint was handed to them.
 */
async function openTrail(
  base: BaseConfig,
  service: Service,
  log: Logger,
  closers: Closers,
): Promise<AuditLog> {
  const witnesses = await openWitnesses(base, service, log);
  closers.defer(() => Promise.all(witnesses.map((w) => w.close(WITNESS_CLOSE_MS))));
  const trail = openAuditLog(base, service, witnesses);
  closers.defer(() => trail.close());
  return trail;
}

/** Step 2: the server's definition (upstream clients), its tool names, its start-up check. */
async function createDefinition<S extends z.ZodObject>(
  options: RunServerOptions<S>,
  config: z.output<S>,
  logger: Logger,
  closers: Closers,
): Promise<{ definition: ServerDefinition; readiness: Readiness }> {
  const created = await options.create(config, { logger });
  const definition: ServerDefinition = { ...created, close: once(created.close) };
  closers.defer(definition.close!);
  const unknown = unknownToolNames(config as unknown as BaseConfig, definition.tools);
  if (unknown.length > 0) throw new ConfigError(unknown);
  // Over stdio the configured credential already is the person's own (ADR 0026).
  if (definition.identity !== undefined && (config as BaseConfig).GATEHOUSE_TRANSPORT !== 'http') {
    throw new ConfigError([
      `GATEHOUSE_TRANSPORT: acting as each person upstream needs the HTTP transport; over stdio the configured ${definition.identity.vendor} credential is already the local user's own`,
    ]);
  }
  const problems = identityProblems(config, definition);
  if (problems.length > 0) throw new ConfigError(problems);
  return { definition, readiness: await checkAtStart(definition, logger) };
}

/**
 * `disconnect …`: the operator revokes a person's grant with the deployment's configuration,
 * without serving. The exit code says how it went (a grant file held by a running instance is
 * refused, naming the holder).
 */
async function runDisconnect<S extends z.ZodObject>(
  options: RunServerOptions<S>,
  config: z.output<S>,
  logger: Logger,
  args: readonly string[],
): Promise<void> {
  let definition: ServerDefinition | undefined;
  try {
    definition = await options.create(config, { logger });
    const { code, message } = await disconnectCommand(definition.identity, args);
    (code === 0 ? process.stdout : process.stderr).write(`${message}\n`);
    process.exitCode = code;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exitCode = EXIT.config;
  } finally {
    await definition?.close?.();
  }
}

/** The `/connect` pages, each visit that linked or refused audited. */
function connectPages(identity: UpstreamIdentity, audit: AuditLog) {
  return (req: IncomingMessage, res: ServerResponse) =>
    identity.connect.handle(req, res, (outcome) =>
      audit.append(connectEntry(outcome, req.socket.remoteAddress)),
    );
}

/**
 * What the identity mode asks of the server itself: a server told to act as each person that
 * built no identity would act as the service for everyone — refused, as is a read fallback that
 * names anything but one of its read tools.
 */
function identityProblems(config: Record<string, unknown>, definition: ServerDefinition): string[] {
  const { identity } = definition;
  if (config.GATEHOUSE_IDENTITY === 'user' && identity === undefined) {
    return [`GATEHOUSE_IDENTITY: ${definition.name} cannot act as each person; use service`];
  }
  const reads = new Set(definition.tools.filter((t) => t.access === 'read').map((t) => t.name));
  return [...(identity?.readFallback ?? [])]
    .filter((name) => !reads.has(name))
    .map(
      (name) =>
        `GATEHOUSE_IDENTITY_READ_FALLBACK: ${name} is not a read tool of this server (${[...reads].join(', ')})`,
    );
}

/** Step 4: rate limits shared by the replicas (Redis); each up/down transition logged and audited. */
async function openLimiterStore(
  base: BaseConfig,
  name: string,
  log: Logger,
  audit: AuditLog,
  closers: Closers,
): Promise<SharedLimiterStore | undefined> {
  if (base.GATEHOUSE_REDIS_URL === undefined) return undefined;
  const fallback = base.GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE;
  const store = await redisLimiterStore(base.GATEHOUSE_REDIS_URL, name, (up, detail) => {
    if (up) log.info('rate-limit store (redis) connected: limits are shared by the replicas');
    else
      log.error(
        { detail, fallback },
        fallback === 'closed'
          ? 'rate-limit store (redis) unreachable: refusing calls until it is back'
          : 'rate-limit store (redis) unreachable: limiting per replica until it is back',
      );
    audit.append(
      lifecycleEntry(
        'gatehouse/rate_limit_store',
        { store: 'redis', state: up ? 'up' : 'down', fallback, detail: auditMessage(detail) },
        up ? {} : { outcome: 'failure' },
      ),
    );
  });
  closers.defer(() => store.close());
  return store;
}

/** Step 5: Prometheus metrics on their own port, loaded only when asked for. */
async function openMetrics(
  base: BaseConfig,
  service: Service,
  parts: { inflight: InflightTracker; audit: AuditLog; limiterStore?: SharedLimiterStore },
  closers: Closers,
): Promise<{ metrics?: Metrics; url?: URL }> {
  if (base.GATEHOUSE_METRICS_PORT === undefined) return {};
  const { Metrics: MetricsClass, serveMetrics } = await import('./metrics.js');
  const { inflight, audit, limiterStore } = parts;
  const metrics = new MetricsClass({
    service,
    inflight: () => inflight.count,
    auditSinks: () =>
      auditSinkNames(base).map((name) => ({
        name,
        up: ![...audit.failures.keys()].some((failed) => failed.startsWith(name)),
      })),
    ...(limiterStore === undefined ? {} : { rateLimitStoreUp: () => limiterStore.healthy() }),
  });
  const host = base.GATEHOUSE_METRICS_HOST ?? base.GATEHOUSE_HOST;
  const listener = await serveMetrics(metrics, host, base.GATEHOUSE_METRICS_PORT).catch(
    (error: unknown) => {
      throw new Error(`could not listen for metrics on ${host}:${base.GATEHOUSE_METRICS_PORT}`, {
        cause: error,
      });
    },
  );
  closers.defer(() => listener.close());
  return { metrics, url: listener.url };
}

/** Step 6: traces from the standard OTEL_* variables (off unless OTEL_TRACES_EXPORTER names one). */
async function openTracing(
  env: Readonly<Record<string, string | undefined>>,
  service: Service,
  log: Logger,
  closers: Closers,
): Promise<void> {
  try {
    const stop = await startTracing(env, service);
    if (stop !== undefined) closers.defer(stop);
  } catch (error) {
    log.warn({ err: error }, 'tracing is off: its configuration was refused');
  }
}

/** What /readyz says: the audit trail, then the upstream, then the shared rate-limit store. */
function readinessOf(
  base: BaseConfig,
  audit: AuditLog,
  upstream: Readiness,
  limiterStore: SharedLimiterStore | undefined,
): () => Promise<ReadyResult> {
  return async () => {
    if (audit.failures.size > 0)
      return { ready: false, detail: 'the audit trail cannot be written' };
    const result = await upstream();
    if (limiterStore === undefined || limiterStore.healthy() || !result.ready) return result;
    return base.GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE === 'closed'
      ? { ready: false, detail: 'the shared rate-limit store (redis) is unreachable' }
      : {
          ready: true,
          detail:
            'degraded: the shared rate-limit store (redis) is unreachable; limits are per replica',
        };
  };
}

/** A transport serving the factory: drained on shutdown. */
interface Served {
  http?: RunningHttpServer;
  /** Lets in-flight work finish within `drainMs` (then aborts it); true when all finished. */
  drain(drainMs: number, inflight: InflightTracker): Promise<boolean>;
}

/** Step 7a: stdio. stdout belongs to the protocol: stray console output goes to stderr. */
function serveOverStdio(
  factory: McpServerFactory,
  log: Logger,
  audit: AuditLog,
  maxSubscriptions: number,
): Served {
  for (const method of ['log', 'info', 'debug'] as const) {
    // eslint-disable-next-line no-console
    console[method] = (...args: unknown[]) => console.error(...args);
  }
  const lines = new LineTransport(process.stdin, process.stdout, {
    onRefused: (problem) => log.info({ problem }, 'refused a malformed message'),
    // A pipe write is synchronous on Linux: the answer is with the client, so the records
    // of reads deferred until after it are written now, not at the end of the turn.
    onSent: () => audit.flush(),
  });
  const stdio = serveStdio(factory, {
    transport: lines,
    maxSubscriptions,
    onerror: (error) => log.warn({ err: error }, 'stdio transport error'),
  });
  return {
    async drain(drainMs, inflight) {
      const deadline = Date.now() + drainMs;
      let drained = await inflight.idle(drainMs);
      if (!drained) inflight.abortAll();
      // Every request read is answered before stdout closes (a ping, a listing, a refusal);
      // the close answers each open subscription stream; every answer leaves before the exit.
      drained = (await lines.answered(Math.max(0, deadline - Date.now()))) && drained;
      await stdio.close();
      return (await lines.flushed(Math.max(1_000, deadline - Date.now()))) && drained;
    },
  };
}

/** The HTTP transport's audit hooks: refused authentication, missing scopes. */
function httpAuditHooks(
  definition: ServerDefinition,
  hashes: ReadonlyMap<string, string>,
  audit: AuditLog,
  metrics: Metrics | undefined,
): Pick<HttpServerOptions, 'onAuthFailure' | 'onScopeDenied'> {
  return {
    onAuthFailure: (outcome, peer) => {
      metrics?.authRefused(outcome.error ?? 'missing_credentials');
      audit.append(
        lifecycleEntry(
          'gatehouse/auth_failure',
          {
            status: outcome.status,
            error: outcome.error ?? 'missing_credentials',
            // What a token's verifier said about it: text the caller may have shaped.
            description:
              outcome.description === undefined ? undefined : callerText(outcome.description, 512),
          },
          {
            outcome: 'failure',
            ...(peer.sourceIp === undefined ? {} : { sourceIp: peer.sourceIp }),
          },
        ),
      );
    },
    onScopeDenied: (principal, need, peer) => {
      metrics?.authRefused('insufficient_scope');
      const tool =
        need.method === 'tools/call'
          ? definition.tools.find((t) => t.name === need.name)
          : undefined;
      const described =
        tool === undefined
          ? {}
          : {
              tool: {
                name: tool.name,
                access: tool.access,
                readOnly: tool.annotations.readOnlyHint,
                hash: hashes.get(tool.name)!,
              },
            };
      audit.append(
        scopeDeniedEntry(
          principal,
          { method: need.method, name: need.name, ...described },
          need.scope,
          peer,
        ),
      );
    },
  };
}

/** Step 7b: Streamable HTTP, with authentication and the scope each request needs. */
async function serveOverHttp(
  base: BaseConfig,
  parts: {
    definition: ServerDefinition;
    factory: ReturnType<typeof createServerFactory>;
    runtime: Runtime;
    hashes: ReadonlyMap<string, string>;
    audit: AuditLog;
    metrics: Metrics | undefined;
    ready: () => Promise<ReadyResult>;
    log: Logger;
  },
): Promise<Served> {
  const { definition, factory, runtime, log, metrics } = parts;
  const enabled = (tool: ToolDefinition): boolean =>
    runtime.policy.toolVisible(tool, { ...ANONYMOUS, scopes: ['*'] }).allow;
  // Loaded here, not at the top: a stdio server never pays for node:http, tls, http2 and
  // zlib (~40 ms of a cold start) or the authentication code.
  const [{ startHttpServer }, { createAuthenticator }] = await Promise.all([
    import('./http.js'),
    import('./auth.js'),
  ]);
  const authenticator = await createAuthenticator(base, {
    scopes: [...definition.tools.map(toolScope), readScope(definition)],
    resourceName: definition.title ?? definition.name,
  });
  const http = await startHttpServer(factory, {
    host: base.GATEHOUSE_HOST,
    port: base.GATEHOUSE_PORT,
    path: base.GATEHOUSE_HTTP_PATH,
    allowedHosts: base.GATEHOUSE_ALLOWED_HOSTS,
    allowedOrigins: base.GATEHOUSE_ALLOWED_ORIGINS,
    maxBodyBytes: base.GATEHOUSE_MAX_BODY_BYTES,
    logger: log,
    ready: parts.ready,
    ...(authenticator === undefined ? {} : { authenticator }),
    requiredScope: createScopeLookup(definition, enabled),
    maxInflight: base.GATEHOUSE_MAX_INFLIGHT,
    maxSubscriptions: base.GATEHOUSE_MAX_SUBSCRIPTIONS,
    keepAliveTimeoutMs: base.GATEHOUSE_HTTP_KEEPALIVE_MS,
    headersTimeoutMs: base.GATEHOUSE_HTTP_HEADERS_TIMEOUT_MS,
    ...(metrics === undefined ? {} : { onRequestDone: metrics.httpRequest.bind(metrics) }),
    ...(definition.identity === undefined
      ? {}
      : { pages: connectPages(definition.identity, parts.audit) }),
    ...httpAuditHooks(definition, parts.hashes, parts.audit, metrics),
  }).catch((error: unknown) => {
    throw new Error(`could not listen on ${base.GATEHOUSE_HOST}:${base.GATEHOUSE_PORT}`, {
      cause: error,
    });
  });
  return { http, drain: (drainMs, inflight) => http.shutdown(drainMs, () => inflight.abortAll()) };
}

/** Step 8: the `gatehouse/start` record, the security overrides in force, the start log line. */
function recordStart<S extends z.ZodObject>(
  options: RunServerOptions<S>,
  config: z.output<S>,
  parts: {
    definition: ServerDefinition;
    runtime: Runtime;
    described: ReturnType<typeof describeTools>;
    audit: AuditLog;
    log: Logger;
    served: Served;
    metricsUrl: URL | undefined;
  },
): void {
  const { definition, runtime, audit, log, served } = parts;
  const base = config as unknown as BaseConfig;
  const effectiveConfig = redactConfig(options.schema, config);
  const tools = parts.described.map((t) => ({
    ...t,
    enabled: runtime.policy.toolVisible(
      definition.tools.find((d) => d.name === t.name)!,
      ANONYMOUS,
    ).allow,
  }));
  const url = served.http?.url.href;
  audit.append(
    lifecycleEntry('gatehouse/start', {
      config: effectiveConfig,
      tools,
      node: process.version,
      ...(url === undefined ? {} : { url }),
      ...(definition.startDetails === undefined ? {} : { server: definition.startDetails }),
    }),
  );
  const securityOverride = (setting: string, details: Record<string, unknown>): void => {
    log.warn({ setting, ...details }, `SECURITY CHECK OVERRIDDEN by ${setting}`);
    audit.append(lifecycleEntry('gatehouse/security_override', { setting, ...details }));
  };
  for (const plain of plainHttpUpstreams(options.schema, config))
    securityOverride('GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM', plain);
  definition.onStart?.({ securityOverride });
  // The effective config is in the gatehouse/start record. When that record goes to the
  // terminal or container log too (stderr/stdout sinks), the log line does not repeat it.
  const auditInLog = auditSinkNames(base).some((s) => s !== 'file');
  log.info(
    {
      config: auditInLog ? 'in the gatehouse/start audit record' : effectiveConfig,
      tools: tools.filter((t) => t.enabled).map((t) => t.name),
      audit: { stream: audit.stream, sinks: auditSinkNames(base) },
      ...(url === undefined ? {} : { url }),
      ...(parts.metricsUrl === undefined ? {} : { metrics: parts.metricsUrl.href }),
    },
    'server started',
  );
}

/** Step 9: signals, the end of stdin, crashes. */
function onProcessEnd(
  transport: BaseConfig['GATEHOUSE_TRANSPORT'],
  shutdown: (reason: string) => Promise<number>,
  crash: (error: Error) => void,
  log: Logger,
  audit: AuditLog,
): void {
  const stop = (reason: string): void => {
    void shutdown(reason).then((code) => process.exit(code));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  // The client closing stdin ends the session (stdio spec: exit when stdin closes).
  if (transport === 'stdio') process.stdin.once('end', () => stop('stdin closed'));
  // Records of reads answered in this turn are written even when the process ends in it.
  process.on('exit', () => audit.flush());
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', (error) => {
    log.error({ err: error }, 'unhandled promise rejection');
  });
}

/**
 * The whole life of a server process, as steps: configuration → definition → audit trail →
 * rate-limit store → metrics → tracing → transport → start record → signals. Each step that
 * opens something registers its closer once; a step that fails closes what the steps before it
 * opened and refuses the start (see {@link refuseStart}). Bad config is reported at once on
 * stderr, every problem under its variable name, exit code 2 before anything listens.
 * SIGTERM/SIGINT drain and exit 0.
 */
export async function runServer<S extends z.ZodObject>(
  options: RunServerOptions<S>,
): Promise<RunningServer | undefined> {
  // The one place that reads the process environment (docs/configuration.md).
  // eslint-disable-next-line no-restricted-syntax
  const env = options.env ?? process.env;
  const config = configure(options, env);
  if (config === undefined) return undefined;
  const base = config as unknown as BaseConfig;
  const logger = createLogger({
    level: base.GATEHOUSE_LOG_LEVEL,
    redact: secretKeys(options.schema).map((k) => `config.${k}`),
  });
  warnAboutConfig(options.schema, env, config, logger);
  const argv = options.argv ?? process.argv.slice(2);
  if (argv[0] === 'disconnect') {
    await runDisconnect(options, config, logger, argv.slice(1));
    return undefined;
  }
  const closers = new Closers();
  let audit: AuditLog | undefined;
  try {
    const { definition, readiness } = await createDefinition(options, config, logger, closers);
    const service = { name: definition.name, version: definition.version };
    const log = logger.child({ service });
    audit = await openTrail(base, service, log, closers);
    const inflight = new InflightTracker();
    const limiterStore = await openLimiterStore(base, definition.name, log, audit, closers);
    const { metrics, url: metricsUrl } = await openMetrics(
      base,
      service,
      { inflight, audit, ...(limiterStore === undefined ? {} : { limiterStore }) },
      closers,
    );
    await openTracing(env, service, log, closers);
    const runtime = createRuntime(base, log, {
      audit,
      inflight,
      readsAfterAnswer: true,
      ...(limiterStore === undefined ? {} : { limiterStore }),
      ...(metrics === undefined ? {} : { metrics }),
    });
    const factory = createServerFactory(definition, runtime);
    // Every tool's definition hash, of the listing clients are served (prepared once, by the
    // factory), for the start record and the HTTP tool metadata.
    const described = describeTools(factory.prepared);
    const served =
      base.GATEHOUSE_TRANSPORT === 'stdio'
        ? serveOverStdio(factory, log, audit, base.GATEHOUSE_MAX_SUBSCRIPTIONS)
        : await serveOverHttp(base, {
            definition,
            factory,
            runtime,
            hashes: new Map(described.map((t) => [t.name, t.definition_hash])),
            audit,
            metrics,
            ready: readinessOf(base, audit, readiness, limiterStore),
            log,
          });
    const trail = audit;
    const stopRecord = (details: Record<string, unknown>, failed = false): void => {
      trail.append(lifecycleEntry('gatehouse/stop', details, failed ? { outcome: 'failure' } : {}));
    };
    let stopping: Promise<number> | undefined;
    const shutdown = (reason: string): Promise<number> => {
      stopping ??= (async () => {
        log.info({ reason, inflight: inflight.count }, 'shutting down');
        const drained = await served.drain(base.GATEHOUSE_DRAIN_MS, inflight);
        stopRecord({ reason, drained });
        // Everything the steps opened, last first: the trail's closing checkpoint, and its
        // delivery off the host, come last.
        await closers.closeAll((error) => log.error({ err: error }, 'closing on stop failed'));
        log.info({ drained }, drained ? 'stopped' : 'stopped after the drain deadline');
        logger.flush();
        return drained ? EXIT.ok : EXIT.failure;
      })();
      return stopping;
    };
    onProcessEnd(
      base.GATEHOUSE_TRANSPORT,
      shutdown,
      (error) => {
        log.fatal({ err: error }, 'uncaught exception');
        // Close the chain on the way down: every record so far is on disk, and the end is signed.
        stopRecord({ reason: 'crash', error: error.name }, true);
        trail.close();
        logger.flush();
        void trail.closeWitnesses(1_000).finally(() => process.exit(EXIT.failure));
      },
      log,
      trail,
    );
    // Said only once a signal can be handled: a SIGTERM right after "server started" drains.
    recordStart(options, config, {
      definition,
      runtime,
      described,
      audit,
      log,
      served,
      metricsUrl,
    });
    return { logger: log, ...(served.http === undefined ? {} : { http: served.http }), shutdown };
  } catch (error) {
    await refuseStart(error, base, options.service ?? UNKNOWN_SERVICE, logger, audit, closers);
    return undefined;
  }
}

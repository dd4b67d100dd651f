import { userInfo } from 'node:os';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import type * as z from 'zod';
import { fdSink, AuditLog } from '@gatehouse/audit';
import {
  auditMessage,
  auditSinkNames,
  callerText,
  lifecycleEntry,
  openAuditLog,
  scopeDeniedEntry,
} from './audit.js';
import type { AuditWriter } from './audit.js';
import { loadConfig, redactConfig, secretKeys, unknownVariables } from './config.js';
import { MIN_SECRET_LENGTH } from './secrets.js';
import type { BaseConfig } from './config.js';
import type { ReadyResult, ServerDefinition, ToolDefinition } from './define.js';
import { ConfigError } from './errors.js';
import type { RunningHttpServer } from './http.js';
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
import type { PipelineMetrics } from './pipeline/runtime.js';
import type { Readiness } from './startup.js';
import type { Runtime } from './server.js';

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

/** Writes the `gatehouse/start_refused` record of a start that failed, then closes its chain. */
function auditRefusedStart(
  config: BaseConfig,
  service: { name: string; version: string } | undefined,
  error: unknown,
  exitCode: number,
): void {
  const who = service ?? { name: 'gatehouse', version: 'unknown' };
  let log: AuditLog;
  try {
    log = openAuditLog(config, who);
  } catch {
    log = new AuditLog({ sinks: [fdSink(2, 'stderr')], service: who });
  }
  log.append(
    lifecycleEntry(
      'gatehouse/start_refused',
      {
        reason: auditMessage(
          error instanceof ConfigError
            ? error.problems.join('; ')
            : error instanceof Error
              ? `${error.name}: ${error.message}`
              : String(error),
        ),
        exit_code: exitCode,
      },
      { outcome: 'failure' },
    ),
  );
  log.close();
}

/**
 * The whole life of a server process: config → definition → transport → signals. Bad config
 * is reported at once on stderr, with every problem under its variable name, and the process
 * exits with code 2 before anything listens. SIGTERM/SIGINT drain and exit 0.
 */
export async function runServer<S extends z.ZodObject>(
  options: RunServerOptions<S>,
): Promise<RunningServer | undefined> {
  // The one place that reads the process environment (docs/configuration.md).
  // eslint-disable-next-line no-restricted-syntax
  const env = options.env ?? process.env;
  let config: z.output<S>;
  try {
    config = loadConfig(options.schema, env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    // The refusal is an audit event too; its sink cannot come from the refused config: stderr.
    const refusal = new AuditLog({
      sinks: [fdSink(2, 'stderr')],
      service: options.service ?? { name: 'gatehouse', version: 'unknown' },
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
  const base = config as unknown as BaseConfig;
  const logger = createLogger({
    level: base.GATEHOUSE_LOG_LEVEL,
    redact: secretKeys(options.schema).map((k) => `config.${k}`),
  });
  // Configuration that parses but is probably not what the operator meant: said at once.
  for (const { name, suggestion } of unknownVariables(options.schema, env)) {
    logger.warn(
      { variable: name, ...(suggestion === undefined ? {} : { suggestion }) },
      `unknown variable ${name} is ignored${suggestion === undefined ? '' : `: did you mean ${suggestion}?`}`,
    );
  }
  for (const key of secretKeys(options.schema)) {
    const value = (config as Record<string, unknown>)[key];
    if (typeof value === 'string' && value.length < MIN_SECRET_LENGTH) {
      logger.warn(
        { variable: key },
        `${key} is shorter than ${MIN_SECRET_LENGTH} characters: it cannot be told apart from ordinary text, so it is not redacted from output`,
      );
    }
  }

  let definition: ServerDefinition;
  let readiness: Readiness;
  try {
    definition = await options.create(config, { logger });
    readiness = await checkAtStart(definition, logger);
  } catch (error) {
    // A configuration problem found while starting (e.g. credentials that are too powerful)
    // reads like any other: plain text under the variable's name, then the structured log.
    if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    logger.fatal({ err: error }, 'server could not start');
    process.exitCode = error instanceof ConfigError ? EXIT.config : EXIT.failure;
    // A refused start (a role that can write, a rejected credential, a wrong password) is an
    // audit event like a refused configuration, in the trail the operator configured.
    auditRefusedStart(base, options.service, error, process.exitCode);
    return undefined;
  }
  const unknown = unknownToolNames(base, definition.tools);
  if (unknown.length > 0) {
    process.stderr.write(`${new ConfigError(unknown).message}\n`);
    await definition.close?.();
    process.exitCode = EXIT.config;
    return undefined;
  }

  const log = logger.child({ service: { name: definition.name, version: definition.version } });
  let audit: AuditLog;
  try {
    audit = openAuditLog(base, { name: definition.name, version: definition.version });
  } catch (error) {
    log.fatal({ err: error }, 'the audit trail could not be opened');
    await definition.close?.();
    process.exitCode = EXIT.failure;
    return undefined;
  }
  const inflight = new InflightTracker();
  // Rate limits shared by the replicas (Redis): each up/down transition is logged and audited.
  const limiterStore =
    base.GATEHOUSE_REDIS_URL === undefined
      ? undefined
      : await redisLimiterStore(base.GATEHOUSE_REDIS_URL, definition.name, (up, detail) => {
          const fallback = base.GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE;
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
  // Prometheus metrics on their own port, loaded only when asked for.
  let metrics: Metrics | undefined;
  let metricsListener: { url: URL; close(): void } | undefined;
  if (base.GATEHOUSE_METRICS_PORT !== undefined) {
    const { Metrics: MetricsClass, serveMetrics } = await import('./metrics.js');
    metrics = new MetricsClass({
      service: { name: definition.name, version: definition.version },
      inflight: () => inflight.count,
      auditSinks: () =>
        auditSinkNames(base).map((name) => ({
          name,
          up: ![...audit.failures.keys()].some((failed) => failed.startsWith(name)),
        })),
      ...(limiterStore === undefined ? {} : { rateLimitStoreUp: () => limiterStore.healthy() }),
    });
    try {
      metricsListener = await serveMetrics(
        metrics,
        base.GATEHOUSE_METRICS_HOST ?? base.GATEHOUSE_HOST,
        base.GATEHOUSE_METRICS_PORT,
      );
    } catch (error) {
      log.fatal({ err: error }, 'could not listen for metrics');
      await definition.close?.();
      await limiterStore?.close();
      process.exitCode = EXIT.failure;
      return undefined;
    }
  }
  // Traces from the standard OTEL_* variables (off unless OTEL_TRACES_EXPORTER names one).
  let stopTracing: (() => Promise<void>) | undefined;
  try {
    stopTracing = await startTracing(env, { name: definition.name, version: definition.version });
  } catch (error) {
    log.warn({ err: error }, 'tracing is off: its configuration was refused');
  }
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
  const ready = async (): Promise<ReadyResult> => {
    if (audit.failures.size > 0)
      return { ready: false, detail: 'the audit trail cannot be written' };
    const upstream = await readiness();
    if (limiterStore === undefined || limiterStore.healthy() || !upstream.ready) return upstream;
    return base.GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE === 'closed'
      ? { ready: false, detail: 'the shared rate-limit store (redis) is unreachable' }
      : {
          ready: true,
          detail:
            'degraded: the shared rate-limit store (redis) is unreachable; limits are per replica',
        };
  };

  let http: RunningHttpServer | undefined;
  let stdio: { close(): Promise<void> } | undefined;
  let lineTransport: LineTransport | undefined;
  if (base.GATEHOUSE_TRANSPORT === 'stdio') {
    // stdout belongs to the protocol: send any stray console output to stderr instead.
    for (const method of ['log', 'info', 'debug'] as const) {
      // eslint-disable-next-line no-console
      console[method] = (...args: unknown[]) => console.error(...args);
    }
    lineTransport = new LineTransport(process.stdin, process.stdout, {
      onRefused: (problem) => log.info({ problem }, 'refused a malformed message'),
      // A pipe write is synchronous on Linux: the answer is with the client, so the records
      // of reads deferred until after it are written now, not at the end of the turn.
      onSent: () => audit.flush(),
    });
    stdio = serveStdio(factory, {
      transport: lineTransport,
      onerror: (error) => log.warn({ err: error }, 'stdio transport error'),
    });
  } else {
    const hashes = new Map(described.map((t) => [t.name, t.definition_hash]));
    const enabled = (tool: ToolDefinition): boolean =>
      runtime.policy.toolVisible(tool, { ...ANONYMOUS, scopes: ['*'] }).allow;
    try {
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
      http = await startHttpServer(factory, {
        host: base.GATEHOUSE_HOST,
        port: base.GATEHOUSE_PORT,
        path: base.GATEHOUSE_HTTP_PATH,
        allowedHosts: base.GATEHOUSE_ALLOWED_HOSTS,
        allowedOrigins: base.GATEHOUSE_ALLOWED_ORIGINS,
        maxBodyBytes: base.GATEHOUSE_MAX_BODY_BYTES,
        logger: log,
        ready,
        ...(authenticator === undefined ? {} : { authenticator }),
        requiredScope: createScopeLookup(definition, enabled),
        maxInflight: base.GATEHOUSE_MAX_INFLIGHT,
        keepAliveTimeoutMs: base.GATEHOUSE_HTTP_KEEPALIVE_MS,
        headersTimeoutMs: base.GATEHOUSE_HTTP_HEADERS_TIMEOUT_MS,
        ...(metrics === undefined ? {} : { onRequestDone: metrics.httpRequest.bind(metrics) }),
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
                  outcome.description === undefined
                    ? undefined
                    : callerText(outcome.description, 512),
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
          audit.append(
            scopeDeniedEntry(
              principal,
              {
                method: need.method,
                name: need.name,
                ...(tool === undefined
                  ? {}
                  : {
                      tool: {
                        name: tool.name,
                        access: tool.access,
                        readOnly: tool.annotations.readOnlyHint,
                        hash: hashes.get(tool.name)!,
                      },
                    }),
              },
              need.scope,
              peer,
            ),
          );
        },
      });
    } catch (error) {
      log.fatal({ err: error }, 'could not listen');
      await definition.close?.();
      process.exitCode = EXIT.failure;
      return undefined;
    }
  }

  const policy = runtime.policy;
  const effectiveConfig = redactConfig(options.schema, config);
  const tools = described.map((t) => ({
    ...t,
    enabled: policy.toolVisible(
      definition.tools.find((d) => d.name === t.name)!,
      ANONYMOUS,
    ).allow,
  }));
  audit.append(
    lifecycleEntry('gatehouse/start', {
      config: effectiveConfig,
      tools,
      node: process.version,
      ...(http === undefined ? {} : { url: http.url.href }),
    }),
  );
  definition.onStart?.({
    securityOverride: (setting, details) => {
      log.warn({ setting, ...details }, `SECURITY CHECK OVERRIDDEN by ${setting}`);
      audit.append(lifecycleEntry('gatehouse/security_override', { setting, ...details }));
    },
  });
  // The effective config is in the gatehouse/start record. When that record goes to the
  // terminal or container log too (stderr/stdout sinks), the log line does not repeat it.
  const auditInLog = auditSinkNames(base).some((s) => s !== 'file');
  log.info(
    {
      ...(auditInLog
        ? { config: 'in the gatehouse/start audit record' }
        : { config: effectiveConfig }),
      tools: tools.filter((t) => t.enabled).map((t) => t.name),
      audit: { stream: audit.stream, sinks: auditSinkNames(base) },
      ...(http === undefined ? {} : { url: http.url.href }),
      ...(metricsListener === undefined ? {} : { metrics: metricsListener.url.href }),
    },
    'server started',
  );
  const closeAudit = (details: Record<string, unknown>, failed = false): void => {
    audit.append(lifecycleEntry('gatehouse/stop', details, failed ? { outcome: 'failure' } : {}));
    audit.close();
  };

  let stopping: Promise<number> | undefined;
  const shutdown = (reason: string): Promise<number> => {
    stopping ??= (async () => {
      log.info({ reason, inflight: inflight.count }, 'shutting down');
      let drained: boolean;
      if (http !== undefined) {
        drained = await http.shutdown(base.GATEHOUSE_DRAIN_MS, () => inflight.abortAll());
      } else {
        const deadline = Date.now() + base.GATEHOUSE_DRAIN_MS;
        drained = await inflight.idle(base.GATEHOUSE_DRAIN_MS);
        if (!drained) inflight.abortAll();
        // Every request read is answered before stdout closes (a ping, a listing, a refusal).
        drained =
          (await lineTransport?.answered(Math.max(0, deadline - Date.now()))) !== false && drained;
        await stdio?.close();
      }
      try {
        await definition.close?.();
        await limiterStore?.close();
        metricsListener?.close();
        await stopTracing?.();
      } catch (error) {
        log.error({ err: error }, 'closing upstream clients failed');
      }
      closeAudit({ reason, drained });
      log.info({ drained }, drained ? 'stopped' : 'stopped after the drain deadline');
      logger.flush();
      return drained ? EXIT.ok : EXIT.failure;
    })();
    return stopping;
  };

  const onSignal = (signal: NodeJS.Signals): void => {
    void shutdown(signal).then((code) => process.exit(code));
  };
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  if (base.GATEHOUSE_TRANSPORT === 'stdio') {
    // The client closing stdin ends the session (stdio spec: exit when stdin closes).
    process.stdin.once('end', () => {
      void shutdown('stdin closed').then((code) => process.exit(code));
    });
  }
  // Records of reads answered in this turn are written even when the process ends in it.
  process.on('exit', () => audit.flush());
  process.on('uncaughtException', (error) => {
    log.fatal({ err: error }, 'uncaught exception');
    // Close the chain on the way down: every record so far is on disk, and the end is signed.
    closeAudit({ reason: 'crash', error: error.name }, true);
    logger.flush();
    process.exit(EXIT.failure);
  });
  process.on('unhandledRejection', (error) => {
    log.error({ err: error }, 'unhandled promise rejection');
  });

  return { logger: log, ...(http === undefined ? {} : { http }), shutdown };
}

/**
 * `@gatehouse/core/runtime`: how a definition becomes a running server — the runtime, the
 * server factory, the start-up check, the HTTP front door, authentication, the logger — for
 * tests, benchmarks, scripts and embedders. `runServer` (package root) does all of this; server
 * code never needs it. Only what is used outside the core is exported (test/exports.test.ts
 * keeps the list, ADR 0018).
 */
export { lifecycleEntry, redactArgs, scrubRecordText } from './audit.js';
export type { AuditFailureMode, AuditWriter } from './audit.js';
export { createAuthenticator } from './auth.js';
export type { AuthOutcome, Authenticator, ResourceMetadata } from './auth.js';
export { isLoopbackHost, plainHttpUpstreams, redactConfig, secretKeys } from './config.js';
export type { ApiKey } from './config.js';
export { originAllowed, startHttpServer } from './http.js';
export type { HttpServerOptions, Peer, RunningHttpServer } from './http.js';
export { memoryLimiter } from './limits.js';
export type { LimiterFactory, Limited, RateLimiter, SharedLimiterStore } from './limits.js';
export { createLogger } from './logger.js';
export type { LoggerOptions } from './logger.js';
export type { Decision, Policy } from './policy.js';
export type { AuthMethod } from './principal.js';
export { createRuntime } from './run.js';
export { checkAtStart } from './startup.js';
export type { Readiness } from './startup.js';
export { registerSecretValues, scrubSecrets } from './secrets.js';
export { createServerFactory } from './server.js';
export type { Runtime } from './server.js';
export { Metrics } from './metrics.js';
export type { MetricsSources } from './metrics.js';
export type { PipelineMetrics } from './pipeline/runtime-type.js';
export { enableTracing } from './tracing.js';

/**
 * `@gatehouse/core/runtime`: how a definition becomes a running server — the runtime, the
 * server factory, the HTTP front door, authentication, limits, policy, audit wiring and the
 * logger. `runServer` (package root) does all of this; tests, benchmarks and embedders use the
 * pieces. Server code never needs them.
 */
export {
  argsShape,
  auditMessage,
  auditSinks,
  lifecycleEntry,
  openAuditLog,
  redactArgs,
  scrubRecordText,
} from './audit.js';
export type { AuditFailureMode, AuditWriter } from './audit.js';
export { createAuthenticator } from './auth.js';
export type { AuthOutcome, Authenticator, ResourceMetadata } from './auth.js';
export {
  ApiKeySchema,
  isLoopbackHost,
  parseApiKeys,
  plainHttpUpstreams,
  redactConfig,
  secretKeys,
  unknownVariables,
} from './config.js';
export type { ApiKey } from './config.js';
export { originAllowed, startHttpServer } from './http.js';
export type { HttpServerOptions, Peer, RunningHttpServer } from './http.js';
export { Limits, memoryLimiter } from './limits.js';
export type { LimiterFactory, Limited, RateLimiter } from './limits.js';
export { REDACT_PATHS, createLogger } from './logger.js';
export type { LoggerOptions } from './logger.js';
export {
  createAllowList,
  createToolPolicy,
  hasScope,
  toolScope,
  unknownToolNames,
} from './policy.js';
export type { Decision, Policy } from './policy.js';
export { ANONYMOUS, localPrincipal } from './principal.js';
export type { AuthMethod } from './principal.js';
export { createRuntime } from './run.js';
export { checkAtStart } from './startup.js';
export type { Readiness } from './startup.js';
export { frameUntrusted, truncateText } from './sanitize.js';
export { MIN_SECRET_LENGTH, registerSecretValues, scrubSecrets, secretKinds } from './secrets.js';
export {
  CancelledError,
  DeadlineExceededError,
  InflightTracker,
  ShutdownError,
  createServerFactory,
} from './server.js';
export type { Runtime } from './server.js';
export { Metrics, serveMetrics } from './metrics.js';
export type { MetricsSources } from './metrics.js';
export type { PipelineMetrics } from './pipeline/runtime.js';
export { enableTracing, startTracing, tracingEnabled } from './tracing.js';
export { redisLimiterStore } from './limits.js';
export type { SharedLimiterStore } from './limits.js';

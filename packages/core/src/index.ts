/**
 * `@gatehouse/core`: the shared runtime of every Gatehouse MCP server. Named exports only.
 */
export {
  argsShape,
  auditMessage,
  auditSinks,
  lifecycleEntry,
  openAuditLog,
  redactArgs,
} from './audit.js';
export type { AuditFailureMode, AuditWriter } from './audit.js';
export { createAuthenticator } from './auth.js';
export type { AuthOutcome, Authenticator, ResourceMetadata } from './auth.js';
export {
  ApiKeySchema,
  baseConfigSchema,
  baseConfigShape,
  configTable,
  defineConfig,
  describeConfig,
  envBoolean,
  envInt,
  envList,
  isLoopbackHost,
  loadConfig,
  parseApiKeys,
  redactConfig,
  secret,
  secretKeys,
  unknownVariables,
} from './config.js';
export type { ApiKey, BaseConfig, ConfigVariable, LoadConfigOptions } from './config.js';
export {
  READ_ONLY_ANNOTATIONS,
  definePrompt,
  defineResource,
  defineServer,
  defineTool,
} from './define.js';
export type {
  Access,
  Completer,
  DryRunPreview,
  PlainToolResult,
  PromptArgument,
  PromptDefinition,
  PromptHandlerResult,
  ReadyResult,
  RequestContext,
  ResourceBody,
  ResourceDefinition,
  ServerDefinition,
  ServerHost,
  StaticResourceDefinition,
  StructuredToolResult,
  TemplateResourceDefinition,
  ToolAnnotations,
  ToolContext,
  ToolDefinition,
  ToolHandlerResult,
} from './define.js';
export { ConfigError, PolicyError, ToolError, UpstreamError } from './errors.js';
export type { UpstreamErrorOptions } from './errors.js';
export { originAllowed, startHttpServer } from './http.js';
export type { HttpServerOptions, Peer, RunningHttpServer } from './http.js';
export { Limits, memoryLimiter } from './limits.js';
export { neutralizeMarkdown } from './markdown.js';
export type { MarkdownOptions } from './markdown.js';
export type { LimiterFactory, Limited } from './limits.js';
export { REDACT_PATHS, createLogger } from './logger.js';
export type { Logger, LoggerOptions } from './logger.js';
export { paginate } from './pagination.js';
export {
  createAllowList,
  createToolPolicy,
  hasScope,
  toolScope,
  unknownToolNames,
} from './policy.js';
export type { Decision, Policy } from './policy.js';
export { ANONYMOUS, localPrincipal } from './principal.js';
export type { AuthMethod, Principal } from './principal.js';
export { isRetryable, withRetry } from './retry.js';
export type { RetryOptions } from './retry.js';
export { EXIT, createRuntime, runServer } from './run.js';
export type { RunServerOptions, RunningServer } from './run.js';
export { frameUntrusted, sanitizeDeep, sanitizeText, truncateText } from './sanitize.js';
export { MIN_SECRET_LENGTH, registerSecretValues, scrubSecrets } from './secrets.js';
export type { SanitizeFlag, Sanitized } from './sanitize.js';
export {
  CancelledError,
  DeadlineExceededError,
  InflightTracker,
  ShutdownError,
  createServerFactory,
} from './server.js';
export type { Runtime } from './server.js';

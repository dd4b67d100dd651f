/**
 * `@gatehouse/core`: what a server author uses — definitions, the context a handler gets, the
 * errors it throws, its config schema, and `runServer`. Named exports only.
 *
 * Everything else sits behind a subpath: `@gatehouse/core/saas` (the kit of SaaS servers:
 * upstream errors, rate-limit waits, timeouts, idempotent writes, target scope, start-up
 * checks), `@gatehouse/core/runtime` (wiring: runtime, factory, HTTP, auth, audit, policy),
 * `@gatehouse/core/testing` (an in-memory harness for a server's tests) and
 * `@gatehouse/core/docs` (config tables and tool listings for generated docs).
 */
export {
  baseConfigSchema,
  baseConfigShape,
  defineConfig,
  envBoolean,
  envInt,
  envList,
  loadConfig,
  secret,
  secretText,
  upstreamUrl,
} from './config.js';
export type { BaseConfig, ConfigCheck, ConfigExtras, LoadConfigOptions } from './config.js';
export {
  MAX_LISTED_TEXT,
  IDEMPOTENT_WRITE_ANNOTATIONS,
  READ_ONLY_ANNOTATIONS,
  definePrompt,
  defineResource,
  defineServer,
  defineTool,
  namesInWords,
} from './define.js';
export type {
  Access,
  BoundParameter,
  CallBounds,
  Completer,
  DryRunPreview,
  EffectiveUser,
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
  StartupCheck,
  StartupReport,
  StaticResourceDefinition,
  StructuredToolResult,
  TemplateResourceDefinition,
  ToolAnnotations,
  ToolContext,
  ToolDefinition,
  ToolHandlerResult,
} from './define.js';
export { ConfigError, CredentialError, PolicyError, ToolError, UpstreamError } from './errors.js';
export type { UpstreamErrorOptions } from './errors.js';
export type { Logger } from './logger.js';
export type { UpstreamCredential } from './identity/mode.js';
export { neutralizeMarkdown } from './markdown.js';
export type { MarkdownOptions } from './markdown.js';
export { paginate } from './pagination.js';
export type { Principal } from './principal.js';
export { isRetryable, withRetry } from './retry.js';
export type { RetryOptions } from './retry.js';
export { EXIT, runServer } from './run.js';
export type { RunServerOptions, RunningServer } from './run.js';
export { sanitizeDeep, sanitizeText } from './sanitize.js';
export { untrusted } from './pipeline/frame-structured.js';
export { traceUpstream } from './tracing.js';
export type { SanitizeFlag, Sanitized } from './sanitize.js';

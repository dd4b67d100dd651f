/**
 * `@gatehouse/core/saas`: what every server in front of a SaaS API needs, written once —
 * upstream error mapping, rate-limit waits and pacing, a per-request timeout that fires,
 * idempotent writes, the target scope. See docs/adding-a-server.md.
 */
export { ambiguous, dedupeKey, postOnce } from './post-once.js';
export type { PostOnceOptions, PostOutcome } from './post-once.js';
export { Pacer, mayWait, retryAfterSeconds, sleep, waitingOutRateLimits } from './rate-limits.js';
export type { RateLimitWaitOptions, ResetHeaders, WaitRule } from './rate-limits.js';
export { checkCredential, startupBounds } from './credential-check.js';
export { TargetScope } from './target-scope.js';
export type { TargetScopeOptions } from './target-scope.js';
export {
  RedirectRefusedError,
  RequestTimeoutError,
  UnexpectedAnswerError,
  boundedFetch,
  timedFetch,
} from './timed-fetch.js';
export type { BoundedFetch, FetchRules } from './timed-fetch.js';
export { createUpstreamErrors, refusedRedirect } from './upstream-errors.js';
export { framedStrings } from './framed-strings.js';
export type { UpstreamFailure, UpstreamProfile } from './upstream-errors.js';
export { writesEnabled } from './writes.js';

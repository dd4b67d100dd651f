/**
 * The one place an upstream failure becomes what the model sees: not found vs no access vs rate
 * limited (with the wait) vs invalid (with the vendor's field errors) vs the vendor being down.
 * A server describes its vendor once (an {@link UpstreamProfile}); tokens and request URLs never
 * appear, and 5xx detail goes to the log only.
 */
import { UpstreamError } from '../errors.js';
import { retryAfterSeconds } from './rate-limits.js';
import type { ResetHeaders } from './rate-limits.js';
import { sanitizeText } from '../sanitize.js';
import { RedirectRefusedError, RequestTimeoutError, UnexpectedAnswerError } from './timed-fetch.js';

/** A failed request, as a vendor client reports it, normalised. */
export interface UpstreamFailure {
  /** HTTP status, or the vendor's equivalent; undefined when nothing answered. */
  readonly status?: number | undefined;
  /** Response headers, lower-case names. */
  readonly headers?: Readonly<Record<string, string | undefined>>;
  /** The parsed error body. */
  readonly data?: unknown;
  /** The client's own message (for network failures: ECONNREFUSED, timeouts). */
  readonly message?: string | undefined;
  /** The original error, kept as the cause (never shown). */
  readonly cause: unknown;
}

/** What a server tells the kit about its vendor. */
export interface UpstreamProfile {
  /** The vendor as users know it: `GitHub`, `Slack`, `Jira`. */
  readonly service: string;
  /** The config variable of the per-request timeout, named when a request times out. */
  readonly timeoutVariable?: string;
  /** The header carrying the vendor's request id (`x-github-request-id`). */
  readonly requestIdHeader?: string;
  /** The rate-limit reset headers, besides Retry-After. */
  readonly reset?: ResetHeaders;
  /** The vendor's message in an error body (default: `message`, else `errorMessages[0]`). */
  readonly messageOf?: (data: unknown) => string | undefined;
  /** The vendor's field errors of a 400/422, each one short line. */
  readonly fieldErrors?: (data: unknown) => readonly string[];
  /** What a 404 means at this vendor, in the model's words. */
  readonly notFound?: string;
  /**
   * Vendor quirks before the common ladder: a 403 that is a rate limit, a 410 with a meaning.
   * Return the status and message to use, or undefined for the common rules.
   */
  readonly classify?: (
    failure: UpstreamFailure & {
      vendorMessage: string | undefined;
      retryAfter: number | undefined;
    },
  ) => { status: number; message: string } | undefined;
}

/** The redirect a request was refused in an error's cause chain, if that is what failed. */
export function refusedRedirect(error: unknown): RedirectRefusedError | undefined {
  return causeOf(error, RedirectRefusedError);
}

/** The first error of one of `types` in an error's cause chain (a vendor client wraps ours). */
function causeOf<T extends Array<abstract new (...args: never[]) => Error>>(
  error: unknown,
  ...types: T
): InstanceType<T[number]> | undefined {
  let current = error;
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    if (types.some((type) => current instanceof type)) return current as InstanceType<T[number]>;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A vendor's message as shown: one line, cleaned, at most 300 characters. */
function shownMessage(message: string | undefined): string | undefined {
  if (message === undefined) return undefined;
  const line = sanitizeText(message.replace(/\s+/g, ' ').trim()).text;
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

function defaultMessageOf(data: unknown): string | undefined {
  const d = data as { message?: unknown; errorMessages?: unknown } | undefined;
  if (typeof d?.message === 'string') return d.message;
  if (Array.isArray(d?.errorMessages) && typeof d.errorMessages[0] === 'string') {
    return d.errorMessages[0];
  }
  return undefined;
}

/** Maps failures of one vendor to {@link UpstreamError}s; errors already mapped pass through. */
export function createUpstreamErrors(
  profile: UpstreamProfile,
): (failure: UpstreamFailure) => UpstreamError {
  const { service } = profile;
  return (failure) => {
    if (failure.cause instanceof UpstreamError) return failure.cause;
    const headers = failure.headers ?? {};
    const requestId =
      profile.requestIdHeader === undefined ? undefined : headers[profile.requestIdHeader];
    const common = {
      service,
      cause: failure.cause,
      ...(requestId === undefined ? {} : { requestId }),
    };
    const refused = causeOf(failure.cause, RedirectRefusedError, UnexpectedAnswerError);
    if (refused !== undefined) {
      const status = refused instanceof RedirectRefusedError ? refused.status : 502;
      return new UpstreamError({ ...common, status, message: refused.message, shown: true });
    }
    const timedOut = causeOf(failure.cause, RequestTimeoutError);
    if (timedOut instanceof RequestTimeoutError) {
      const variable = profile.timeoutVariable === undefined ? '' : ` (${profile.timeoutVariable})`;
      return new UpstreamError({
        ...common,
        status: 504,
        message: `it did not answer within ${timedOut.ms / 1000} s${variable}`,
        shown: true,
      });
    }
    const { status } = failure;
    if (status === undefined) {
      return /timeout|timed out|aborted/i.test(String(failure.message))
        ? new UpstreamError({
            ...common,
            status: 504,
            message: `${service} did not answer in time`,
          })
        : new UpstreamError({ ...common, status: 503, message: `${service} is unreachable` });
    }
    // Only the vendor's documented message field is quoted, on one line, cleaned and capped.
    const vendorMessage = shownMessage((profile.messageOf ?? defaultMessageOf)(failure.data));
    const retryAfter = retryAfterSeconds(headers, profile.reset);
    const retry = retryAfter === undefined ? {} : { retryAfterSeconds: retryAfter };
    const special = profile.classify?.({ ...failure, vendorMessage, retryAfter });
    if (special !== undefined) {
      return new UpstreamError({ ...common, ...special, ...(special.status === 429 ? retry : {}) });
    }
    switch (status) {
      case 429:
        return new UpstreamError({ ...common, status, message: 'rate limit', ...retry });
      case 401:
        return new UpstreamError({
          ...common,
          status,
          message: `${service} rejected this server's credentials; the operator must renew them`,
        });
      case 403:
        return new UpstreamError({
          ...common,
          status,
          message: `${vendorMessage ?? 'forbidden'} (this server's credentials lack the permission)`,
        });
      case 404:
        return new UpstreamError({
          ...common,
          status,
          message: profile.notFound ?? 'not found, or this server cannot see it',
        });
      case 400:
      case 422: {
        const fields = profile.fieldErrors?.(failure.data) ?? [];
        const detail = fields.length === 0 ? '' : `: ${fields.slice(0, 5).join('; ')}`;
        return new UpstreamError({
          ...common,
          status,
          message: `${vendorMessage ?? 'invalid request'}${detail}`,
        });
      }
      default:
        return new UpstreamError({
          ...common,
          status,
          message: vendorMessage ?? `status ${status}`,
          ...retry,
        });
    }
  };
}

/**
 * One table from a failure to what the caller sees and what the audit records. tools/call
 * answers with a tool error the model can act on (`isError: true`); resources/read and
 * prompts/get have no such result, so the same row gives their JSON-RPC error.
 */
import type { OutcomeReason } from '@gatehouse/audit';
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
} from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { PolicyError, ToolError, UpstreamError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Decision } from '../policy.js';
import { sanitizeText } from '../sanitize.js';
import { CancelledError, DeadlineExceededError, ShutdownError } from './lifetime.js';

/** Where a failure happened: the method, the tool/prompt/URI, the event. */
export interface FailureSite {
  readonly method: Method;
  readonly name: string;
  readonly eventId: string;
  readonly logger: Logger;
}

/** The methods that go through the runner (runner.ts). */
export type Method =
  'tools/call' | 'resources/read' | 'resources/list' | 'prompts/get' | 'completion/complete';

/**
 * Why the runner stopped a request before (or instead of) its handler. Each is a row of the
 * table below, so every method answers it in its own shape from one place.
 */
export type RefusalKind =
  | 'not_found'
  /** Not listed for this caller, so answered exactly as `not_found` (the record says denied). */
  | 'hidden'
  | 'audit_unavailable'
  | 'invalid_params'
  | 'denied'
  | 'rate_limited';

const REFUSAL_REASONS: Readonly<Record<RefusalKind, OutcomeReason>> = {
  not_found: 'not_found',
  hidden: 'denied',
  audit_unavailable: 'audit_unavailable',
  invalid_params: 'invalid_params',
  denied: 'denied',
  rate_limited: 'rate_limited',
};

/** A typed early exit of the runner: what the caller reads, and the decision to record. */
export class Refusal extends Error {
  override readonly name = 'Refusal';
  constructor(
    readonly kind: RefusalKind,
    message: string,
    readonly decision?: Decision,
    /** The JSON-RPC error's `data` (a resource URI, why it is invalid, when to retry). */
    readonly data?: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** A failure, classified. */
export interface Failure {
  readonly reason: OutcomeReason;
  /** The policy decision to record, when the failure is a denial. */
  readonly decision?: Decision;
  /** tools/call: the tool error; undefined when the failure travels as a protocol error. */
  readonly toolResult?: CallToolResult;
  /** resources/read and prompts/get: the JSON-RPC error to throw. */
  readonly protocolError: Error;
}

interface Row<E> {
  readonly is: (error: unknown) => error is E;
  readonly reason: (error: E) => OutcomeReason;
  readonly decision?: (error: E) => Decision;
  /** What the model reads from a tool; `undefined` rethrows the error as is. */
  readonly tool: (error: E, site: FailureSite) => string | undefined;
  readonly protocol: (error: E, site: FailureSite) => Error;
  /** Logged (with the stack) for the operator; the caller sees only the incident id. */
  readonly log?: (
    error: E,
    site: FailureSite,
  ) => { level: 'warn' | 'error'; message: string } | undefined;
}

const instance =
  <E>(type: abstract new (...args: never[]) => E) =>
  (error: unknown): error is E =>
    error instanceof type;

const invalidParams = (message: string): ProtocolError =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, sanitizeText(message).text);
const internal = (message: string): ProtocolError =>
  new ProtocolError(ProtocolErrorCode.InternalError, message);
const protocolReason = (error: ProtocolError): OutcomeReason =>
  (error.code as ProtocolErrorCode) === ProtocolErrorCode.InvalidParams
    ? 'invalid_params'
    : 'internal_error';
const upstreamReason = (error: UpstreamError): OutcomeReason =>
  error.status === 429 ? 'rate_limited' : 'upstream_error';

const row = <E>(r: Row<E>): Row<unknown> => r as Row<unknown>;

/** What was asked, as a JSON-RPC error names it: the method, and the name or URI if any. */
const asked = (s: FailureSite): string =>
  s.name === s.method ? s.method : `${s.method} ${sanitizeText(s.name).text.slice(0, 256)}`;

/** First match wins; the last row catches everything else. */
const TABLE: readonly Row<unknown>[] = [
  row<Refusal>({
    is: instance(Refusal),
    reason: (e) => REFUSAL_REASONS[e.kind],
    decision: (e) => e.decision!,
    // A name that is not there (or not for this caller) is a protocol error in every method.
    tool: (e) => (e.kind === 'not_found' || e.kind === 'hidden' ? undefined : e.message),
    protocol: (e, s) => {
      if (e.kind === 'not_found' || e.kind === 'hidden') {
        return s.method === 'resources/read'
          ? new ResourceNotFoundError(sanitizeText(s.name).text.slice(0, 256))
          : invalidParams(e.message);
      }
      const code =
        e.kind === 'invalid_params' || e.kind === 'denied'
          ? ProtocolErrorCode.InvalidParams
          : ProtocolErrorCode.InternalError;
      return new ProtocolError(code, sanitizeText(e.message).text, {
        reason: e.kind,
        ...e.data,
      });
    },
  }),
  row<PolicyError>({
    is: instance(PolicyError),
    reason: () => 'denied',
    decision: (e) => ({ allow: false, rule: e.rule, reason: e.message }),
    tool: (e) => e.message,
    protocol: (e) => invalidParams(e.message),
  }),
  row<ToolError>({
    is: instance(ToolError),
    reason: () => 'tool_error',
    tool: (e) => e.message,
    protocol: (e) => invalidParams(e.message),
  }),
  row<UpstreamError>({
    is: instance(UpstreamError),
    reason: upstreamReason,
    tool: (e) => e.toolMessage(),
    protocol: (e) => internal(e.toolMessage()),
    log: (e) => (e.status >= 500 ? { level: 'warn', message: 'upstream failure' } : undefined),
  }),
  row<DeadlineExceededError>({
    is: instance(DeadlineExceededError),
    reason: () => 'timeout',
    tool: (e, s) =>
      `${s.name} did not finish within ${e.ms / 1000}s and was stopped. Try a narrower request, or try again later.`,
    protocol: (e, s) =>
      internal(`${asked(s)} did not finish within ${e.ms / 1000}s and was stopped`),
  }),
  row<ShutdownError>({
    is: instance(ShutdownError),
    reason: () => 'cancelled',
    tool: (_, s) => `The server is shutting down; ${s.name} was stopped. Retry shortly.`,
    protocol: (_, s) => internal(`${asked(s)} was cancelled: the server is shutting down`),
  }),
  // The client cancelled: it gets no response at all, so nothing to phrase.
  row<CancelledError>({
    is: instance(CancelledError),
    reason: () => 'cancelled',
    tool: () => undefined,
    protocol: (_, s) => internal(`${asked(s)} was cancelled`),
  }),
  // A deliberate protocol error from a handler travels as it is.
  row<ProtocolError>({
    is: instance(ProtocolError),
    reason: protocolReason,
    tool: () => undefined,
    protocol: (e) => e,
  }),
  row<unknown>({
    is: (_e: unknown): _e is unknown => true,
    reason: () => 'internal_error',
    tool: (_, s) =>
      `${s.name} failed with an internal error (incident ${s.eventId}). The details are in the server log; retrying is unlikely to help.`,
    protocol: (_, s) =>
      internal(`Internal error (incident ${s.eventId}); the details are in the server log`),
    log: (_, s) => ({
      level: 'error',
      message: s.method === 'tools/call' ? 'tool handler failed' : 'handler failed',
    }),
  }),
];

/** Classifies a failure of a handler (or of the pipeline around it) at `site`. */
export function classifyFailure(error: unknown, site: FailureSite): Failure {
  const r = TABLE.find((candidate) => candidate.is(error))!;
  const log = r.log?.(error, site);
  if (log !== undefined) {
    site.logger[log.level](
      { err: error, method: site.method, name: site.name, eventId: site.eventId },
      log.message,
    );
  }
  const text = site.method === 'tools/call' ? r.tool(error, site) : undefined;
  const decision = r.decision?.(error) ?? undefined;
  return {
    reason: r.reason(error),
    ...(decision === undefined ? {} : { decision }),
    ...(text === undefined ? {} : { toolResult: toolErrorResult(text) }),
    protocolError: r.protocol(error, site),
  };
}

/** A tool error result: the text the model reads, sanitised. */
export function toolErrorResult(text: string): CallToolResult {
  return { content: [{ type: 'text', text: sanitizeText(text).text }], isError: true };
}

/** The text of the -32602 for a name that does not exist (or that the policy hides: same answer). */
export function unknownName(kind: 'tool' | 'prompt', name: string): string {
  return `Unknown ${kind}: ${sanitizeText(name).text.slice(0, 128)}`;
}
